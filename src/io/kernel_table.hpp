// The GPU kernel-choice table: which hmmsearch kernels (MSV thread-group size, Viterbi
// strategy; src/device/hmmsearch/hmm_gpu.hpp) run a model of a given length, as measured on one GPU
// by `duet tune` (src/app/tune_command.cpp). A TOML file, by default configs/gpu-kernels.toml:
//
//   device = "NVIDIA H100 80GB HBM3"      # the GPU it was measured on (not empty)
//   measured = "2026-11-22T08:00:00Z"     # when (not empty)
//   command = "duet tune -o ..."          # optional: how it was made
//   [[row]]                               # one or more, max_length strictly increasing
//   max_length = 128                      # 1 to 100000: models of up to this many nodes
//   msv_group_threads = 8                 # 8, 16 or 32
//   viterbi_strategy = "warp"             # warp, thread or strip
//
//   [tuning]                              # optional; each key optional (defaults below)
//   forward_max_steps = 100000            # 1 to 2^40: hmmsearch, rows x striped vectors
//                                         #   past which a target's Forward runs on the host
//   lane_residues = 67108864              # 1 to 2^40: hmmsearch, a batch below this many
//                                         #   residues runs several models at once
//   max_lanes = 16                        # 1 to 64: ... at most this many
//   pairhmm_gpu_only_workers = 8          # 1 to 1024: pairhmm --gpu-only, CPU workers
//   pairhmm_cores_per_feeder = 4          # 0 to 64: pairhmm hybrid, cores left per feeder
//   pairhmm_feeders_per_gpu = 3           # 1 to 8: pairhmm, feeder threads per GPU
//   pairhmm_gpu_min_cells_per_worker = 2000000000  # pairhmm's default mode: CPU only below
//                                          # this many cells per CPU worker
//
//   [pairhmm_shapes]                      # optional: the pair-HMM intra-task kernel's
//   ftz = [                               #   shapes by arithmetic (ftz, ieee; both or
//     { shape = "8x4", cycles_per_warp_step = 146, cycles_per_warp = 689,
//       latency_per_step = 278 },         #   neither), lanes x rows per lane (lanes 4, 8,
//   ]                                     #   16 or 32; rows 1, 2, 4 or 8; each shape once),
//   ieee = [ ... ]                        #   costs in cycles (device/pairhmm/pairhmm_gpu.hpp,
//                                         #   ShapeCost: per warp step and latency per step
//                                         #   > 0, per warp >= 0); none: the built-in costs
//
// A model longer than the last row's max_length takes the last row. Reading is strict as
// for the configuration (io/config.hpp): any unknown key, wrong type, value out of range,
// missing key or syntax error throws duet::InputError naming the file and the line.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace duet::io {

struct KernelTableRow {
  int max_length = 0;
  int msv_group_threads = 0;     // 8, 16 or 32
  std::string viterbi_strategy;  // "warp", "thread" or "strip"
  std::string note;              // written as a comment above the row; not read back

  friend bool operator==(const KernelTableRow& a, const KernelTableRow& b) {
    return a.max_length == b.max_length && a.msv_group_threads == b.msv_group_threads &&
           a.viterbi_strategy == b.viterbi_strategy;
  }
};

// The GPU paths' tuning constants, measured on the table's device (bench/RESULTS.md):
// the [tuning] table, else these defaults.
struct GpuTuning {
  std::int64_t forward_max_steps = 100000;
  std::int64_t lane_residues = std::int64_t{64} << 20;
  int max_lanes = 16;
  int pairhmm_gpu_only_workers = 8;
  int pairhmm_cores_per_feeder = 4;
  int pairhmm_feeders_per_gpu = 3;
  std::int64_t pairhmm_gpu_min_cells_per_worker = 2'000'000'000;

  friend bool operator==(const GpuTuning&, const GpuTuning&) = default;
};

// A pair-HMM intra-task shape with its measured costs ([pairhmm_shapes]).
struct PairhmmShapeRow {
  int lanes = 0, rows_per_lane = 0;
  double cycles_per_warp_step = 0, cycles_per_warp = 0, latency_per_step = 0;
  std::int64_t line = 0;  // the row's line in its file (0: not read from one); not compared

  friend bool operator==(const PairhmmShapeRow& a, const PairhmmShapeRow& b) {
    return a.lanes == b.lanes && a.rows_per_lane == b.rows_per_lane &&
           a.cycles_per_warp_step == b.cycles_per_warp_step &&
           a.cycles_per_warp == b.cycles_per_warp && a.latency_per_step == b.latency_per_step;
  }
};

// The shapes of each arithmetic; both empty: the table has none (the built-in costs).
struct PairhmmShapeTable {
  std::vector<PairhmmShapeRow> ftz, ieee;
  bool empty() const { return ftz.empty() && ieee.empty(); }

  friend bool operator==(const PairhmmShapeTable&, const PairhmmShapeTable&) = default;
};

struct KernelTable {
  std::string device, measured, command;
  std::vector<KernelTableRow> rows;
  GpuTuning tuning;
  PairhmmShapeTable pairhmm_shapes;

  friend bool operator==(const KernelTable&, const KernelTable&) = default;
};

KernelTable load_kernel_table(const std::string& path);
KernelTable parse_kernel_table(std::string_view toml_text, const std::string& source_name);

// The row for a model of M nodes: the first whose max_length >= M, else the last.
const KernelTableRow& choose_kernels(const KernelTable& table, int M);

// The kernels for a model of M nodes: the table's row (no table: msv_group_threads 0, the
// engine's built-in rule by length, and "strip", which the engine runs up to 1,024 nodes
// and replaces with the warp kernel past them), with `strategy_option` (--gpu-strategy;
// "" = not given) replacing the Viterbi strategy. The result's max_length is M.
KernelTableRow plan_kernels(const KernelTable* table, int M, const std::string& strategy_option);

// The table as TOML that parse_kernel_table reads back equal (notes as comments), headed
// by a comment saying how to regenerate it.
std::string to_toml(const KernelTable& table);

// Kernel times measured at one model length by `duet tune` (milliseconds; a candidate
// not measured is left out).
struct KernelTimingPoint {
  int length = 0;
  std::vector<std::pair<int, double>> msv_ms;  // (group threads, ms)
  double viterbi_warp_ms = 0, viterbi_thread_ms = 0;
  double viterbi_strip_ms = std::numeric_limits<double>::infinity();  // infinity: not timed
};

// The table of the fastest choice per length (ties: the smaller group, the warp
// strategy), adjacent lengths with the same choice merged into one row whose max_length
// is the longest of them; each row's note lists its lengths' times. Throws
// std::invalid_argument for no points, a length given twice, or a point without an MSV time.
std::vector<KernelTableRow> rows_from_timings(std::vector<KernelTimingPoint> points);

// Where the table comes from: `option` (--gpu-kernel-table) if given, else `configured`
// ([gpu] kernel_table), else the first of `defaults` that exists; "" = none (the
// built-in rule).
std::string resolve_kernel_table_path(const std::string& option, const std::string& configured,
                                      const std::vector<std::string>& defaults);

}  // namespace duet::io
