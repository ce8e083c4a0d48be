// `duet makedb`: a FASTA database (plain or gzip) made into a packed database
// (io/packed_database.hpp) that every command taking a sequence database maps
// instead of parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

namespace duet::app {

// Adds the subcommand to `app` and its run function to `commands`.
void add_makedb_command(CLI::App& app,
                        std::vector<std::pair<CLI::App*, std::function<int()>>>& commands);

}  // namespace duet::app
