// The hybrid scheduler: a reader thread streams the database (a BlockSource: a pass of
// io's BlockStore, or blocks a workload makes) into a bounded BlockQueue; CPU workers
// (oneTBB tasks, one block at a time: cpu_pool.hpp) and GPU feeders (one host thread per
// GPU, up to K blocks per batch) drain it at the same time;
// a device that runs only the early stages posts its blocks to the post-queue, which CPU
// workers serve first; a failed device batch goes back to the queue and the CPU finishes
// it. Every batch leaves a TraceRow.
//
// The scheduler knows blocks, stages and costs, not the workload: the per-block work is a
// Workload (CPU) and a GpuBackend (device) supplied by the caller, which also owns where
// results go (typically a ResultSink, so that they come out in database order).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/block.hpp"
#include "core/defaults.hpp"

namespace duet::scheduler {

// Sequences and residues a stage works on (the cost of a trace row).
struct StageWork {
  std::int64_t sequences = 0, residues = 0;
};

// The CPU side of a workload. Called from several threads at once; `worker` (0 to
// workers-1, feeders after the CPU workers) lets it keep per-thread state.
class Workload {
 public:
  virtual ~Workload() = default;
  // Cost of one residue, in DP cells (the model length for hmmsearch).
  virtual std::int64_t cells_per_residue() const = 0;
  // Runs every stage on a block and delivers its results; returns the survivors of the
  // last stage.
  virtual std::int64_t run_block(const Block& block, int worker) = 0;
  // Runs the CPU-only stages of a block whose early stages a device ran, from one part of
  // what the device left of it (GpuBlockOutcome::post); delivers its results; returns the
  // survivors. A workload whose devices run every stage never gets one.
  virtual std::int64_t run_post(const Block& block, PostState& state, int worker) = 0;
  // What run_post will work on (called just before it, on the same thread): for the
  // trace. Default: the whole block.
  virtual StageWork post_work(const Block& block, const PostState& /*state*/) const {
    return {static_cast<std::int64_t>(block.sequences()), block.residue_count()};
  }
};

// What a device batch did with one of its blocks.
struct GpuBlockOutcome {
  // Early stages only: what remains of the block, in parts that go to the post-queue with
  // it, each its own task (run_post once per part; parts let several workers share the
  // block's post stage). Empty: nothing remains.
  std::vector<PostStatePtr> post;
  std::int64_t survivors = 0;  // sequences passing the stages the device ran
};

// Runs body(i) for i in [0, n) in chunks, sharing the work with CPU workers that are idle
// or finish a task meanwhile (CpuPool::run_host_loop); returns when all are done.
using HostLoopRunner = std::function<void(std::size_t n, std::size_t chunk,
                                          const std::function<void(std::size_t)>& body)>;
// The same on the calling thread alone (no scheduler: tests, tools).
void run_host_loop_serially(std::size_t n, std::size_t chunk,
                            const std::function<void(std::size_t)>& body);

// A device. run() is called from its feeder thread only. On failure it throws, and must
// not have delivered any result of the batch (the blocks are redone by the CPU).
class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual std::string name() const = 0;
  // Stages the device runs, for the trace ("all" or e.g. "msv+bias+viterbi").
  virtual std::string stages() const = 0;
  // Whether the device is set up (its context made on another thread: device::
  // start_gpu_warmup), so that start() will not wait for it. The feeder asks every few
  // milliseconds while the CPU workers run blocks, and gives the device up if no work is
  // left for it by then; unavailable (the reason in `problem`): a hybrid run goes on
  // without the device (a warning), a GPU-only run fails.
  enum class Readiness { pending, ready, unavailable };
  virtual Readiness readiness(std::string& /*problem*/) { return Readiness::ready; }
  // Called once on the feeder's thread before its first batch, once the device is ready,
  // while the CPU workers already run: device set-up belongs here, and the runner of host
  // loops that run() may use for its host work. An exception fails the whole run.
  virtual void start(const HostLoopRunner& /*run_host_loop*/) {}
  virtual std::vector<GpuBlockOutcome> run(std::span<const BlockPtr> blocks, int worker) = 0;

  // Batches the device holds at once. Above 1, the feeder uses submit() and finish()
  // instead of run(): it submits the next batch before finishing the one before, so that
  // the host prepares one batch while the device runs another. submit() starts a batch
  // (the blocks stay alive until it is finished); finish() completes the oldest batch
  // submitted, delivers its results and returns its outcomes. Either may throw, delivering
  // nothing of the batch it was working on; the feeder then calls abandon(), which must drop
  // every batch in flight undelivered, and all of them go back to the queue for the CPU.
  virtual int batches_in_flight() const { return 1; }
  virtual void submit(std::span<const BlockPtr> /*blocks*/, int /*worker*/) {
    throw std::logic_error("GpuBackend::submit: batches_in_flight() is 1");
  }
  virtual std::vector<GpuBlockOutcome> finish(int /*worker*/) {
    throw std::logic_error("GpuBackend::finish: batches_in_flight() is 1");
  }
  virtual void abandon() noexcept {}
};

// dynamic: self-scheduling (every device takes work when it is free).
// static_fraction: a fixed share of residues for the CPU, decided as blocks are read.
// adaptive: dynamic, with GPU batches sized from measured throughput: a feeder takes
//   about half of what it can do in the time the whole machine needs for the rest
//   (at most gpu_batch_residues), so that near the end batches shrink and the devices
//   finish within about one CPU block of each other.
enum class SplitPolicy { dynamic, static_fraction, adaptive };

struct SchedulerOptions {
  int cpu_workers =
      1;  // >= 0 ; 0 only with a GPU (then faults and the post-queue still need one: see run())
  // Fresh blocks waiting; 0 = 2 per worker and two batches (gpu_batch_blocks) per feeder.
  std::size_t queue_depth = static_cast<std::size_t>(defaults::kQueueDepth);
  std::size_t gpu_batch_blocks = defaults::kGpuBatchBlocks;
  std::int64_t gpu_batch_residues = defaults::kGpuBatchResidues;
  SplitPolicy policy = SplitPolicy::dynamic;
  // static: share of residues given to the CPU up front
  double static_cpu_fraction = defaults::kStaticCpuFraction;
  bool gpu_only = false;  // fresh blocks to GPUs only (CPU: post-queue and faults)
  // With GPUs, the dynamic and adaptive policies: while a GPU feeder takes blocks, the CPU
  // workers take no fresh block; they serve the post-queue and failed batches, and take
  // fresh blocks only while no GPU is ready (a device already set up counts from the pass's
  // start) and once none takes blocks any more (so a GPU that never starts leaves every
  // block to the CPU). For passes whose CPU blocks are long against a GPU batch: many
  // models at once (bench/RESULTS.md).
  bool cpu_leaves_blocks_to_gpus = false;
  int fault_every = 0;                      // debug: every Nth GPU batch fails (0 = never)
  bool progress = false;                    // one-line progress on stderr
  bool warnings = true;                     // device faults reported on stderr (off with --quiet)
  const std::atomic<bool>* stop = nullptr;  // set (e.g. by SIGINT) to stop early
  // With GPU feeders, each CPU worker thread raises its nice value by this much (0 to 19;
  // 0 = unchanged), so that a feeder or parser thread that wakes gets a core at once. The
  // threads are oneTBB's and outlive the pass: they stay lowered.
  int worker_nice = defaults::kWorkerNice;
  // Another run may share the cores at the same time (hmmsearch's model split: the CPU's
  // passes beside the GPUs'): this run's CPU tasks (its post stage, its feeders' host
  // loops) go first, oneTBB's workers taking them before the other run's at every task's
  // end.
  bool favoured = false;
};

enum class Device : std::uint8_t { cpu = 0, gpu = 1 };

struct TraceRow {
  int rank = 0;  // the rank of a distributed run (merge_run_summaries); 0 otherwise
  int worker = 0;
  Device device = Device::cpu;
  std::string stage;          // "all", the device's stages, "post", or "fault"
  double start = 0, end = 0;  // seconds from the start of the run
  std::int64_t block = 0;     // first block of the batch
  // Sequences and residues the row worked on: a post row counts only the sequences the
  // device left to the CPU; cells = residues x cells_per_residue.
  std::int64_t blocks = 0, sequences = 0, residues = 0, cells = 0, survivors = 0;
  bool failed = false;
};

struct RunSummary {
  std::vector<TraceRow> trace;  // sorted by start time
  double seconds = 0;
  std::int64_t blocks = 0, sequences = 0, residues = 0;
  std::int64_t cpu_residues = 0, gpu_residues = 0;    // residues of batches that completed there
  double cpu_busy_seconds = 0, gpu_busy_seconds = 0;  // every row, post rows included
  // Cells per second of a device kind: cells of its full-cascade (CPU) or device-stage
  // (GPU) rows (failed ones excluded) over the busy time of those rows (stage seconds),
  // summed over its workers: cells / (stage seconds / workers).
  std::int64_t cpu_cells = 0, gpu_cells = 0;
  double cpu_stage_seconds = 0, gpu_stage_seconds = 0;
  double cpu_cells_per_second = 0, gpu_cells_per_second = 0;
  double post_seconds = 0;      // CPU time spent in post rows
  std::int64_t post_cells = 0;  // cells of post rows
  // Idle tail: the end of the run minus the moment the first device went idle for good
  // (a device: the CPU workers together, or one GPU; it is idle for good once its last
  // row ended; a device that ran nothing counts from 0). Worker idle tail: the same with
  // every CPU worker and GPU feeder counted on its own.
  double idle_tail_seconds = 0;
  double worker_idle_tail_seconds = 0;
  std::int64_t gpu_faults = 0;
  std::int64_t reused_blocks = 0;  // blocks this pass took from the BlockStore's memory
  int cpu_workers = 0, gpu_feeders = 0;
  bool stopped = false;  // stopped through options.stop: results are incomplete
};

// One summary of a pass that several ranks of a distributed run shared
// (distributed_source.hpp), from each rank's own (index: rank; its clock starts with its
// own pass). Trace rows get their rank, and workers new numbers: every rank's CPU workers
// first (rank 0's, then rank 1's...), then every rank's GPU feeders, so that worker k is
// a GPU feeder from cpu_workers on, as in one rank's summary. Counts, cells and busy
// times are summed, seconds is the longest rank's, the rates are recomputed, and the idle
// tails run from the first moment any rank's device (or worker) went idle for good.
RunSummary merge_run_summaries(std::vector<RunSummary> ranks);

// The adaptive policy's residue budget for a device's next batch: half of what the device
// (own_rate residues/s) does in the time the machine (machine_rate residues/s, every
// device together) needs for `remaining` residues, within [1, max_residues]; max/4 while
// own_rate is not yet measured (0).
std::int64_t adaptive_batch_residues(double own_rate, double machine_rate, double remaining,
                                     std::int64_t max_residues);

// Runs one pass of `blocks` (one query). `gpus` may be empty. Blocks reach the Workload or
// a GpuBackend exactly once each (a failed GPU batch delivers nothing and is redone by a
// CPU worker). With GPUs and cpu_workers == 0, one CPU worker is still started to serve
// the post-queue and failed batches. Rethrows the first exception of any thread after
// stopping the others.
RunSummary run_blocks(BlockSource& blocks, Workload& workload, std::span<GpuBackend* const> gpus,
                      const SchedulerOptions& options);

}  // namespace duet::scheduler
