// PaPaRa's scoring through the hybrid scheduler (src/scheduler): every query against every
// edge's profile, each query's best edge chosen whatever the split between devices.
//
// Work units: a block is a run of queries crossed with a range of edges (all edges, or
// ranges of at most max_block_edges on large trees), of about block_cells DP cells
// (edges x columns x query residues, as PaPaRa counts them). Blocks of one edge range come
// one after another, so a GPU batch is one launch per edge range. Each block's result is
// merged into its queries' choices (core/papara/papara_choice.hpp): the merge does not
// depend on order, so the choice is the same whoever ran which block.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "app/kit/run_options.hpp"
#include "core/papara/papara_choice.hpp"
#include "core/papara/papara_kernel.hpp"
#include "scheduler/scheduler.hpp"

namespace duet::app {

// DP cells per block unless --block-cells says: DNA; protein (-a, int32 lanes: about a
// quarter of DNA's cells a second on a core) a block of about the same CPU time, so that
// a CPU worker's last block ends near the GPU's (500 taxa x 4,000 protein reads on the H100
// machine: 2^27 against 2^30, GPU-only 0.50 against 0.60 s, the default mode 0.52 against
// 0.53 to 0.62 s; bench/RESULTS.md).
inline constexpr std::int64_t kPaparaBlockCells = std::int64_t{1} << 30;
inline constexpr std::int64_t kPaparaProteinBlockCells = std::int64_t{1} << 27;

// Blocks per GPU batch unless [scheduler] gpu_batch_blocks says.
inline constexpr std::size_t kPaparaGpuBatchBlocks = 256;

// The queries' residues, concatenated: query q is residues[offsets[q], offsets[q + 1]).
struct QueryResidues {
  std::vector<std::uint8_t> residues;
  std::vector<std::int64_t> offsets{0};
  std::size_t size() const { return offsets.size() - 1; }
  std::span<const std::uint8_t> query(std::size_t q) const {
    return {residues.data() + offsets[q], static_cast<std::size_t>(offsets[q + 1] - offsets[q])};
  }
};

// The block size run_papara uses: `block_cells` where given (> 0), else the alphabet's.
std::int64_t papara_block_cells(std::int64_t block_cells, papara::Alphabet alphabet);

struct PaparaRunOptions : RunOptions {
  int cpu_workers = 0;           // 0: one per core less one per GPU
  std::string isa = "auto";      // CPU kernel: auto, scalar, sse4.1, avx2, avx512
  std::int64_t block_cells = 0;  // 0: the alphabet's (papara_block_cells)
  int max_block_edges = 4096;    // a multiple of kEdgeAlign
};

struct PaparaRun {
  std::vector<papara::Choice> choices;  // per query
  std::int64_t cells = 0;
  std::int64_t block_cells = 0;        // the block size used
  std::string cpu_kernel, gpu_kernel;  // names of the kernels used ("" : no GPU)
  bool test_double_gpus = false;
  scheduler::RunSummary schedule;
  double seconds = 0;
  bool stopped = false;
};

// Called once per query as soon as its choice is final (all of its blocks are in), on the
// thread that delivered its last block: a CPU worker or a GPU feeder (keep it short).
using FinalChoice = std::function<void(std::size_t query, const papara::Choice& choice)>;

PaparaRun run_papara(const papara::ProfileView& profiles, const QueryResidues& queries,
                     const papara::Scoring& scoring, const PaparaRunOptions& options,
                     const FinalChoice& final_choice = {});

}  // namespace duet::app
