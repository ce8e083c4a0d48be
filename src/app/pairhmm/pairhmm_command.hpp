// `duet pairhmm`: GATK's pair-HMM Forward over read/haplotype pairs.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

namespace duet::app {

// Adds the subcommand to `app`; registers its run function in `commands`.
void add_pairhmm_command(CLI::App& app,
                         std::vector<std::pair<CLI::App*, std::function<int()>>>& commands,
                         int argc, char** argv);

}  // namespace duet::app
