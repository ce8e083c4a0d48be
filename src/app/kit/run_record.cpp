#include "app/kit/run_record.hpp"

#include <algorithm>
#include <thread>

#include "app/kit/cluster.hpp"
#include "app/kit/run_context.hpp"
#include "device/gpu_info.hpp"

namespace duet::app {

void write_run_header(io::Hdf5Writer& file, const RunHeader& header) {
  file.create_group("/run");
  file.set_attribute("/run", "program", header.program);
  file.set_attribute("/run", "version", std::string(DUET_VERSION));
  file.set_attribute("/run", "command_line", header.command_line);
  file.set_attribute("/run", "isa", header.isa);
  file.set_attribute("/run", "machine_host", host_name());
  file.set_attribute("/run", "machine_cpu", cpu_model());
  file.set_attribute("/run", "machine_cores",
                     static_cast<std::int64_t>(std::thread::hardware_concurrency()));
  file.set_attribute("/run", "started", header.started);
  file.set_attribute("/run", "wall_seconds", header.wall_seconds);
  // A job of ranks: how many, and the host of each (/trace has each batch's rank).
  const Cluster* job = cluster();
  file.set_attribute("/run", "ranks", static_cast<std::int64_t>(job ? job->size() : 1));
  file.write("/run/rank_host", job ? job->hosts() : std::vector<std::string>{host_name()});
}

void DeviceTotals::add(const scheduler::RunSummary& s) {
  const auto feeders = static_cast<std::size_t>(s.gpu_feeders);
  feeder_work_.resize(std::max(feeder_work_.size(), feeders), 0);
  feeder_cells_.resize(std::max(feeder_cells_.size(), feeders), 0);
  feeder_seconds_.resize(std::max(feeder_seconds_.size(), feeders), 0);
  for (const scheduler::TraceRow& r : s.trace) {
    const int k = r.worker - s.cpu_workers;
    if (r.device == scheduler::Device::gpu && !r.failed && k >= 0 && k < s.gpu_feeders) {
      feeder_work_[static_cast<std::size_t>(k)] += r.residues;
      feeder_cells_[static_cast<std::size_t>(k)] += r.cells;
      feeder_seconds_[static_cast<std::size_t>(k)] += r.end - r.start;
    }
  }
  work_ += s.residues;
  cpu_work_ += s.cpu_residues;
  gpu_work_ += s.gpu_residues;
  faults_ += s.gpu_faults;
  reused_ += s.reused_blocks;
  blocks_ += s.blocks;
  cpu_cells_ += s.cpu_cells;
  gpu_cells_ += s.gpu_cells;
  post_cells_ += s.post_cells;
  cpu_stage_ += s.cpu_stage_seconds;
  gpu_stage_ += s.gpu_stage_seconds;
  post_seconds_ += s.post_seconds;
  seconds_ += s.seconds;
  idle_tail_ += s.idle_tail_seconds;
  worker_idle_tail_ += s.worker_idle_tail_seconds;
  cpu_workers_ = s.cpu_workers;
  gpu_feeders_ = s.gpu_feeders;
}

void DeviceTotals::write(io::Hdf5Writer& file) const {
  const std::string r = "/run";
  const double total = static_cast<double>(std::max<std::int64_t>(work_, 1));
  const auto rate = [](std::int64_t cells, double seconds) {
    return seconds > 0 ? static_cast<double>(cells) / seconds : 0.0;
  };
  file.set_attribute(r, "cpu_workers", cpu_workers_);
  file.set_attribute(r, "gpu_feeders", gpu_feeders_);
  file.set_attribute(
      r, "gpu_backend",
      std::string(gpu_feeders_ == 0 ? "none"
                  : test_double_ ? "TEST DOUBLE (CPU kernels on the feeder thread; debug setting)"
                                 : "cuda"));
  file.set_attribute(r, "test_double_output", std::int64_t{test_double_ ? 1 : 0});
  // The SMs each GPU's kernels ran on (--gpu-sms's share, else the whole GPU's).
  file.set_attribute(r, "gpu_sms_requested", std::int64_t{device::gpu_sm_limit()});
  file.set_attribute(
      r, "gpu_sms",
      std::int64_t{gpu_feeders_ > 0 && !test_double_ ? device::gpu_sms_per_gpu() : 0});
  file.set_attribute(r, "work_unit", work_unit_);
  file.set_attribute(r, "work_total", work_);
  file.set_attribute(r, "cpu_share", static_cast<double>(cpu_work_) / total);
  file.set_attribute(r, "gpu_share", static_cast<double>(gpu_work_) / total);
  // Cells per second of a device kind: over the busy time of its rows, per worker.
  file.set_attribute(r, "cpu_cells_per_second",
                     rate(cpu_cells_, cpu_stage_ / std::max(1, cpu_workers_)));
  file.set_attribute(r, "gpu_cells_per_second",
                     rate(gpu_cells_, gpu_stage_ / std::max(1, gpu_feeders_)));
  for (std::size_t k = 0; k < feeder_work_.size(); ++k) {
    const std::string gpu = "gpu" + std::to_string(k);
    file.set_attribute(r, gpu + "_share", static_cast<double>(feeder_work_[k]) / total);
    file.set_attribute(r, gpu + "_cells_per_second", rate(feeder_cells_[k], feeder_seconds_[k]));
  }
  file.set_attribute(r, "post_seconds", post_seconds_);
  file.set_attribute(r, "post_cells", post_cells_);
  file.set_attribute(r, "scheduler_seconds", seconds_);
  file.set_attribute(r, "idle_tail_seconds", idle_tail_);
  file.set_attribute(r, "worker_idle_tail_seconds", worker_idle_tail_);
  file.set_attribute(
      r, "idle_tail_definition",
      std::string("per pass, run end minus the moment the first device (the CPU workers together, "
                  "or one GPU) ended its last batch; worker_: each CPU worker and GPU feeder on "
                  "its own; summed over passes"));
  file.set_attribute(r, "gpu_faults", faults_);
  file.set_attribute(r, "blocks", blocks_);
  file.set_attribute(r, "reused_blocks", reused_);
}

}  // namespace duet::app
