// The run settings every workload shares: which devices, how the work is split, the queue,
// the workers' priority, and the debug settings. Their defaults are declared once, in
// io::Config ([scheduler]); a workload's options (hmmsearch's HybridOptions, pairhmm's
// PairhmmRunOptions) extend RunOptions with what only it has.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

#include "io/config.hpp"
#include "scheduler/scheduler.hpp"

namespace duet::app {

class Cluster;

// [scheduler] policy as the scheduler's SplitPolicy ("static" is static_fraction; "auto" is
// `automatic`, the workload's own choice).
scheduler::SplitPolicy split_policy(
    const std::string& name, scheduler::SplitPolicy automatic = scheduler::SplitPolicy::dynamic);

struct RunOptions {
  // auto_detect: the GPUs found, if the workload decides they pay; off: CPU only; only:
  // fresh work to GPUs only (the CPU runs CPU-only stages and redoes failed batches).
  enum class Gpu { auto_detect, off, only } gpu = Gpu::auto_detect;
  scheduler::SplitPolicy policy = split_policy(io::SchedulerConfig{}.policy);
  double static_cpu_fraction = io::SchedulerConfig{}.static_cpu_fraction;
  std::size_t queue_depth = static_cast<std::size_t>(io::SchedulerConfig{}.queue_depth);
  // Blocks per GPU batch; 0: the workload's own default (its blocks differ in size).
  std::size_t gpu_batch_blocks = static_cast<std::size_t>(io::SchedulerConfig{}.gpu_batch_blocks);
  int worker_nice = io::SchedulerConfig{}.worker_nice;
  int gpu_sms = 0;  // SMs per GPU for the kernels ([gpu] sms); 0: the whole GPU
  // Debug settings (environment DUET_DEBUG_TEST_GPU, DUET_DEBUG_GPU_FAULT_EVERY): feeders
  // of the CPU-backed test-double GPU, and every Nth GPU batch failing.
  int test_gpus = 0;
  int fault_every = 0;
  bool progress = false;
  bool warnings = true;  // device faults reported on stderr
  const std::atomic<bool>* stop = nullptr;
  // The MPI job this process is a rank of (kit/cluster.hpp): the workload runs the
  // chunks of its work that the job's coordinator hands this rank. Null: all of it.
  Cluster* cluster = nullptr;
};

// The shared settings of `config` ([scheduler], [gpu] sms); the rest stays at RunOptions'
// defaults. Policy "auto" becomes `automatic`, the workload's choice.
RunOptions run_options(const io::Config& config,
                       scheduler::SplitPolicy automatic = scheduler::SplitPolicy::dynamic);

// What a command adds that is not configuration, and the process-wide settings: the SM limit
// of the GPUs (device::set_gpu_sm_limit, before any GPU starts), the debug settings from the
// environment (with a warning on stderr when the GPU is a test double), the progress line (on a
// terminal, unless quiet, on rank 0 of a job), device warnings (unless quiet), the
// interrupt flag, and the job this process is a rank of.
void add_process_settings(RunOptions& options, bool quiet);

// The scheduler's options for `options` with `cpu_workers` workers; a gpu_batch_blocks of
// 0 becomes `default_batch_blocks`, the workload's.
scheduler::SchedulerOptions scheduler_options(const RunOptions& options, int cpu_workers,
                                              std::size_t default_batch_blocks);

// A device's readiness as the warm-up thread has it (device::gpu_warmup_state), for the
// backends' GpuBackend::readiness.
scheduler::GpuBackend::Readiness warmup_readiness(int device, std::string& problem);

}  // namespace duet::app
