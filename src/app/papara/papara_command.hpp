// `duet papara`: PaPaRa 2.5's phylogeny-aware alignment of queries to a reference
// alignment and its tree (see papara_command.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

namespace duet::app {

void add_papara_command(CLI::App& app,
                        std::vector<std::pair<CLI::App*, std::function<int()>>>& commands, int argc,
                        char** argv);

}  // namespace duet::app
