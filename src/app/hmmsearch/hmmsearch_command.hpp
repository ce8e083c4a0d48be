// The `duet hmmsearch` subcommand.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

namespace duet::app {

// Registers `hmmsearch` on `app`; its action joins `commands`.
void add_hmmsearch_command(CLI::App& app,
                           std::vector<std::pair<CLI::App*, std::function<int()>>>& commands,
                           int argc, char** argv);

}  // namespace duet::app
