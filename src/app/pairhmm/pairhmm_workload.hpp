// The pair-HMM workload as the app runs it: every pair of an Input scored through the
// hybrid scheduler (src/scheduler), results in input order whatever the split.
//
// Blocks of pairs: the scheduler takes its blocks from a BlockSource that makes them in
// memory. Pairs are grouped as the CPU kernel groups them (simd::pairhmm::group_pairs,
// 16,384 pairs of input order at a time), a block holds whole groups of about
// block_cells cells, and the CPU kernel takes the groups as they are (its `grouped` form):
// grouping over more pairs than a block holds leaves fewer lanes idle. A block's
// "sequences" are its pairs in that grouped order (it holds no residues); its cost is its
// own (Block::work_units: kCellsPerUnit DP cells per pair, at least one, the unit the
// scheduler balances; Block::work_cells: its exact DP cells, which the trace records).
// Results are put back in input order.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "app/kit/run_options.hpp"
#include "core/pairhmm/pairhmm_input.hpp"
#include "core/pairhmm/pairhmm_model.hpp"
#include "io/kernel_table.hpp"
#include "scheduler/scheduler.hpp"

namespace duet::app {

inline constexpr std::int64_t kCellsPerUnit = 256;

// Blocks per GPU batch unless [scheduler] gpu_batch_blocks says (blocks of about
// block_cells cells).
inline constexpr std::size_t kPairhmmGpuBatchBlocks = 256;

// The settings every workload shares (RunOptions) and pairhmm's own.
struct PairhmmRunOptions : RunOptions {
  int cpu_workers = 0;              // 0: one per core less 4 per GPU (GPU-only: 8)
  std::string isa = "auto";         // CPU kernel: auto, scalar, avx2, avx512
  std::string gpu_kernel = "auto";  // auto, inter (a thread per pair), intra (a warp per pair)
  std::int64_t block_cells = 1 << 22;
  int gpu_parts = 2;  // parts per GPU batch, overlapped on two streams (1: none)
  // Feeder threads per GPU, each with its own batches and streams; 0: the tuning's
  // pairhmm_feeders_per_gpu.
  int gpu_feeders = 0;
  // The default mode runs on the CPU alone below this many DP cells; -1: the tuning's
  // pairhmm_gpu_min_cells_per_worker per CPU worker of a CPU-only run.
  std::int64_t gpu_min_cells = -1;
  // Workers beside the GPUs (pairhmm_gpu_only_workers, pairhmm_cores_per_feeder): the
  // kernel-choice table's [tuning], else its defaults.
  io::GpuTuning tuning;
  // The intra-task kernel's shape costs: the table's [pairhmm_shapes] (checked by
  // check_pairhmm_shapes); empty: the built-in ones.
  io::PairhmmShapeTable shapes;
};

struct PairhmmRun {
  std::vector<double> log10_likelihood;  // input order
  std::vector<std::uint8_t> in_double;   // 1 where the float sum was below 1e-28
  // A rank of a job (RunOptions::cluster): 1 for the pairs this rank scored (input order);
  // the others' entries above are 0. Empty: every pair.
  std::vector<std::uint8_t> scored;
  std::int64_t pairs = 0, cells = 0, pairs_in_double = 0;
  std::string cpu_kernel, gpu_kernel;  // names of the kernels used (GPU: "" or "none (why)")
  bool test_double_gpus = false;       // the GPUs were test doubles (DUET_DEBUG_TEST_GPU)
  // Feeder threads a real GPU gets (gpu_feeders, else the tuning's), whether or not one ran.
  int gpu_feeders_per_gpu = 0;
  scheduler::RunSummary schedule;
  double seconds = 0;
  double grouping_seconds = 0;  // grouping the pairs for the CPU kernel, before the scheduler
  double block_seconds = 0;     // making blocks, on the scheduler's reader thread
  bool stopped = false;
};

PairhmmRun run_pairhmm(const pairhmm::Input& input, const pairhmm::Model& model,
                       const PairhmmRunOptions& options);

// A job of ranks (kit/cluster.hpp): what a rank's run adds to the job's (its pairs'
// results and its scheduler summary), and rank 0's merge of its own run and the other
// ranks' (index: rank; ranks[0] is not read) into the run one process would have made. Throws where
// a pair was scored by no rank or by two.
std::string pack_pairhmm_rank(const PairhmmRun& run);
PairhmmRun merge_pairhmm_ranks(PairhmmRun own, const std::vector<std::string>& ranks);

}  // namespace duet::app
