#include "app/kit/run_flags.hpp"

#include <cctype>
#include <sstream>

#include "app/kit/run_context.hpp"
#include "core/error.hpp"

namespace duet::app {

std::string help_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void check_number(const CLI::Option* option, std::string_view key, double value) {
  if (option->count() != 0) check_option_number(option->get_name(), key, value);
}

RunFlags::RunFlags(CLI::App& cmd, const std::string& work, std::size_t default_batch_blocks) {
  const io::Config d;
  const io::SchedulerConfig& s = d.scheduler;
  cmd.add_option("--config", config_path_,
                 "TOML configuration file (configs/hmmsearch-defaults.toml lists every key)");
  h5_option_ = cmd.add_option("--h5", h5_, "HDF5 result file (default " + d.run.h5 + ")");
  text_option_ = cmd.add_option("-o", text_,
                                "text output to this file instead of standard output (as in "
                                "HMMER; the result file is --h5)");
  cpu_option_ = cmd.add_option("--cpu", cpu_,
                               "CPU worker threads (default: one per core, less what the GPU "
                               "feeders need)");
  quiet_option_ = cmd.add_flag("--quiet", quiet_, "nothing on standard output, no progress line");
  no_gpu_option_ = cmd.add_flag("--no-gpu", no_gpu_, "run on the CPU only");
  gpu_only_option_ = cmd.add_flag("--gpu-only", gpu_only_,
                                  "fresh work to GPUs only (the CPU runs CPU-only stages and "
                                  "redoes failed batches)")
                         ->excludes("--no-gpu");
  policy_option_ =
      cmd.add_option("--policy", policy_,
                     "CPU/GPU split: dynamic (self-scheduling), static, adaptive (GPU "
                     "batches sized from measured throughput), or auto (the workload's: "
                     "adaptive for hmmsearch, dynamic for pairhmm and papara) (default " +
                         s.policy + ")")
          ->check(CLI::IsMember({"auto", "dynamic", "static", "adaptive"}));
  static_cpu_fraction_option_ =
      cmd.add_option("--static-cpu-fraction", static_cpu_fraction_,
                     "static policy: share of the " + work + " for the CPU (default " +
                         help_number(s.static_cpu_fraction) + ")");
  queue_depth_option_ = cmd.add_option(
      "--queue-depth", queue_depth_,
      "blocks waiting in the queue (memory budget; 0 = 2 per worker and 2 GPU batches per "
      "GPU) (default " +
          std::to_string(s.queue_depth) + ")");
  gpu_batch_blocks_option_ =
      cmd.add_option("--gpu-batch-blocks", gpu_batch_blocks_,
                     "blocks per GPU batch (default " + std::to_string(default_batch_blocks) + ")");
  worker_nice_option_ = cmd.add_option(
      "--worker-nice", worker_nice_,
      "with GPUs, raise the CPU workers' nice value by N (0 to 19), so that GPU feeders and "
      "the reader get a core at once; 0 = unchanged (default " +
          std::to_string(s.worker_nice) + ")");
  gpu_sms_option_ = cmd.add_option(
      "--gpu-sms", gpu_sms_,
      "run the GPU kernels on N SMs of each GPU (rounded up to the GPU's partition size, 8 on "
      "Hopper), to stand in for a smaller GPU; 0 = the whole GPU (default " +
          std::to_string(d.gpu.sms) + ")");
}

io::Config RunFlags::config() const {
  check_number(cpu_option_, "cpu", cpu_);
  check_number(static_cpu_fraction_option_, "static_cpu_fraction", static_cpu_fraction_);
  check_number(queue_depth_option_, "queue_depth", static_cast<double>(queue_depth_));
  check_number(gpu_batch_blocks_option_, "gpu_batch_blocks",
               static_cast<double>(gpu_batch_blocks_));
  check_number(worker_nice_option_, "worker_nice", worker_nice_);
  check_number(gpu_sms_option_, "sms", static_cast<double>(gpu_sms_));
  io::Config config = config_path_.empty() ? io::Config{} : io::load_config(config_path_);
  if (h5_option_->count()) config.run.h5 = h5_;
  if (text_option_->count()) {
    // Before --h5 existed, -o named the HDF5 file: say where that went.
    std::string lower = text_;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.ends_with(".h5") || lower.ends_with(".hdf5"))
      throw UsageError("-o " + text_ +
                       ": -o names the text output file, as in HMMER; the HDF5 result file is "
                       "--h5 " +
                       text_);
    config.run.text = text_;
  }
  if (cpu_option_->count()) config.run.cpu = cpu_;
  if (quiet_option_->count()) config.run.quiet = true;
  io::SchedulerConfig& s = config.scheduler;
  if (no_gpu_option_->count()) {
    s.no_gpu = true;
    s.gpu_only = false;
  }
  if (gpu_only_option_->count()) {
    s.gpu_only = true;
    s.no_gpu = false;
  }
  if (policy_option_->count()) s.policy = policy_;
  if (static_cpu_fraction_option_->count()) s.static_cpu_fraction = static_cpu_fraction_;
  if (queue_depth_option_->count()) s.queue_depth = queue_depth_;
  if (gpu_batch_blocks_option_->count()) s.gpu_batch_blocks = gpu_batch_blocks_;
  if (worker_nice_option_->count()) s.worker_nice = worker_nice_;
  if (gpu_sms_option_->count()) config.gpu.sms = static_cast<int>(gpu_sms_);
  return config;
}

}  // namespace duet::app
