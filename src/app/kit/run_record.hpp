// /run, as every workload writes it: what ran, on which machine and when (RunHeader), and
// how the work was shared between the devices (DeviceTotals), under the same attribute
// names for every workload. A workload adds its own attributes beside these.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/hdf5_file.hpp"
#include "scheduler/scheduler.hpp"

namespace duet::app {

struct RunHeader {
  std::string program;  // "duet hmmsearch"
  std::string command_line;
  std::string started;  // ISO 8601
  std::string isa;      // the CPU kernels
  double wall_seconds = 0;
};

// Creates /run with program, version, command_line, isa, machine_host, machine_cpu,
// machine_cores, started and wall_seconds; ranks (1 unless an MPI job: kit/cluster.hpp),
// and the dataset /run/rank_host, each rank's host.
void write_run_header(io::Hdf5Writer& file, const RunHeader& header);

// The scheduler's figures summed over the passes of a run (a pass: one scheduler run over
// the work; pairhmm has one, hmmsearch one per group of models).
class DeviceTotals {
 public:
  // `work_unit` says what the scheduler counted as a block's size ("residues" for
  // hmmsearch; pairhmm counts DP cells in units of 256 per pair).
  // `test_double_gpus`: the GPU feeders ran test doubles (kit/test_double_gpu.hpp).
  DeviceTotals(std::string work_unit, bool test_double_gpus)
      : work_unit_(std::move(work_unit)), test_double_(test_double_gpus) {}
  void add(const scheduler::RunSummary& pass);
  // Writes, on /run: cpu_workers, gpu_feeders, gpu_backend, test_double_output, gpu_sms
  // (the SMs each GPU's kernels ran on; 0 without a GPU) and gpu_sms_requested (--gpu-sms;
  // 0: none), work_unit,
  // work_total, cpu_share, gpu_share and gpu<k>_share (of the work, completed there),
  // cpu_cells_per_second, gpu_cells_per_second and gpu<k>_cells_per_second, post_seconds,
  // post_cells, scheduler_seconds, idle_tail_seconds, worker_idle_tail_seconds (with
  // idle_tail_definition), gpu_faults, blocks and reused_blocks.
  void write(io::Hdf5Writer& file) const;

 private:
  std::string work_unit_;
  std::int64_t work_ = 0, cpu_work_ = 0, gpu_work_ = 0, faults_ = 0, reused_ = 0, blocks_ = 0;
  std::int64_t cpu_cells_ = 0, gpu_cells_ = 0, post_cells_ = 0;
  double cpu_stage_ = 0, gpu_stage_ = 0, post_seconds_ = 0, seconds_ = 0;
  double idle_tail_ = 0, worker_idle_tail_ = 0;
  bool test_double_ = false;
  int cpu_workers_ = 0, gpu_feeders_ = 0;
  // Per GPU feeder (worker cpu_workers + k): work, cells and busy seconds of the batches
  // it completed.
  std::vector<std::int64_t> feeder_work_, feeder_cells_;
  std::vector<double> feeder_seconds_;
};

}  // namespace duet::app
