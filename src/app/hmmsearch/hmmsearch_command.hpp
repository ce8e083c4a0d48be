// The `duet hmmsearch` and `duet hmmscan` subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

namespace duet::app {

// Register `hmmsearch` and `hmmscan` on `app`; their actions join `commands`.
void add_hmmsearch_command(CLI::App& app,
                           std::vector<std::pair<CLI::App*, std::function<int()>>>& commands,
                           int argc, char** argv);
void add_hmmscan_command(CLI::App& app,
                         std::vector<std::pair<CLI::App*, std::function<int()>>>& commands,
                         int argc, char** argv);

}  // namespace duet::app
