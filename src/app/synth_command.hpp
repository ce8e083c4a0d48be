// `duet synth-model` and `duet synth-db`: synthetic workloads for throughput studies.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace duet::app {

// Adds both subcommands to `app`; each sets `action` to its run function when parsed.
void add_synth_commands(CLI::App& app, std::vector<std::pair<CLI::App*, std::function<int()>>>& commands);

}  // namespace duet::app
