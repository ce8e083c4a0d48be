// `duet bench SWEEP.toml -o DIR`: runs a throughput-study sweep (io/sweep.hpp), one
// `duet hmmsearch` process per run writing DIR/runs/<sweep>-<n>.h5, and writes
// DIR/summary.csv with a row per run and query: wall time, Gc/s in all and per device
// and stage, device shares, idle tail, and the hybrid efficiency (hybrid throughput over
// the sum of the CPU-only and GPU-only throughputs of the same settings).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

namespace duet::app {

void add_bench_command(CLI::App& app,
                       std::vector<std::pair<CLI::App*, std::function<int()>>>& commands);

}  // namespace duet::app
