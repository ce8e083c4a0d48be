// `duet tune`: measures the hmmsearch GPU kernels (MSV thread-group sizes, Viterbi
// strategies) kernel-only at a list of model lengths and writes the kernel-choice table
// (io/kernel_table.hpp) that `duet hmmsearch` reads.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

namespace duet::app {

void add_tune_command(CLI::App& app,
                      std::vector<std::pair<CLI::App*, std::function<int()>>>& commands, int argc,
                      char** argv);

}  // namespace duet::app
