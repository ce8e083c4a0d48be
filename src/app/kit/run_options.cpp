#include "app/kit/run_options.hpp"

#include <unistd.h>

#include <iostream>
#include <stdexcept>

#include "app/kit/cluster.hpp"
#include "app/kit/run_context.hpp"
#include "device/gpu_info.hpp"

namespace duet::app {

scheduler::SplitPolicy split_policy(const std::string& name, scheduler::SplitPolicy automatic) {
  if (name == "auto") return automatic;
  if (name == "dynamic") return scheduler::SplitPolicy::dynamic;
  if (name == "static") return scheduler::SplitPolicy::static_fraction;
  if (name == "adaptive") return scheduler::SplitPolicy::adaptive;
  throw std::logic_error("unknown split policy '" + name + "'");  // io::Config checked it
}

RunOptions run_options(const io::Config& config, scheduler::SplitPolicy automatic) {
  const io::SchedulerConfig& c = config.scheduler;
  RunOptions r;
  r.gpu = c.no_gpu     ? RunOptions::Gpu::off
          : c.gpu_only ? RunOptions::Gpu::only
                       : RunOptions::Gpu::auto_detect;
  r.policy = split_policy(c.policy, automatic);
  r.static_cpu_fraction = c.static_cpu_fraction;
  r.queue_depth = static_cast<std::size_t>(c.queue_depth);
  r.gpu_batch_blocks = static_cast<std::size_t>(c.gpu_batch_blocks);
  r.worker_nice = c.worker_nice;
  r.gpu_sms = config.gpu.sms;
  return r;
}

void add_process_settings(RunOptions& options, bool quiet) {
  device::set_gpu_sm_limit(options.gpu_sms);
  options.test_gpus = debug_setting("DUET_DEBUG_TEST_GPU");
  options.fault_every = debug_setting("DUET_DEBUG_GPU_FAULT_EVERY");
  if (options.test_gpus > 0 && options.gpu != RunOptions::Gpu::off) {
    std::cerr << "duet: warning: DUET_DEBUG_TEST_GPU: the GPU is a TEST DOUBLE running CPU "
                 "kernels; the output file records it\n";
  }
  options.cluster = cluster();
  options.progress = !quiet && ::isatty(STDERR_FILENO) &&
                     (options.cluster == nullptr || options.cluster->rank() == 0);
  options.warnings = !quiet;
  options.stop = &g_interrupted;
}

scheduler::SchedulerOptions scheduler_options(const RunOptions& options, int cpu_workers,
                                              std::size_t default_batch_blocks) {
  scheduler::SchedulerOptions s;
  s.cpu_workers = cpu_workers;
  s.queue_depth = options.queue_depth;
  s.gpu_batch_blocks =
      options.gpu_batch_blocks > 0 ? options.gpu_batch_blocks : default_batch_blocks;
  s.policy = options.policy;
  s.static_cpu_fraction = options.static_cpu_fraction;
  s.gpu_only = options.gpu == RunOptions::Gpu::only;
  s.fault_every = options.fault_every;
  s.worker_nice = options.worker_nice;
  s.progress = options.progress;
  s.warnings = options.warnings;
  s.stop = options.stop;
  return s;
}

scheduler::GpuBackend::Readiness warmup_readiness(int device, std::string& problem) {
  switch (device::gpu_warmup_state(device, &problem)) {
    case device::WarmupState::ready:
      return scheduler::GpuBackend::Readiness::ready;
    case device::WarmupState::unavailable:
      return scheduler::GpuBackend::Readiness::unavailable;
    case device::WarmupState::pending:
      break;
  }
  return scheduler::GpuBackend::Readiness::pending;
}

}  // namespace duet::app
