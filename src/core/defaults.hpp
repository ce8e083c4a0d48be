// Defaults that more than one layer needs, declared once: the TOML configuration
// (io/config.hpp, which the command-line flags show), the scheduler's options
// (scheduler/scheduler.hpp) and the block reader's (io/block_reader.hpp) take theirs from
// here. tests/app_kit_test.cpp checks that they agree.
#pragma once

#include <cstddef>
#include <cstdint>

namespace duet::defaults {

inline constexpr std::int64_t kBlockResidues = std::int64_t{1} << 20;  // residues per block
inline constexpr int kReaderThreads = 0;  // parser threads: 0 = one per core, at most 4
// Fresh blocks waiting: 0 = 2 per CPU worker and two GPU batches per feeder.
inline constexpr std::int64_t kQueueDepth = 0;
// Blocks per GPU batch (hmmsearch's; a workload may have its own) and residues per batch.
inline constexpr std::size_t kGpuBatchBlocks = 128;
inline constexpr std::int64_t kGpuBatchResidues = std::int64_t{128} << 20;
inline constexpr double kStaticCpuFraction = 0.5;  // the static policy's CPU share
inline constexpr int kWorkerNice = 19;             // with GPUs, the CPU workers' nice increment

}  // namespace duet::defaults
