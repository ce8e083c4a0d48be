// run_blocks: the reader thread, the CPU pool (cpu_pool.hpp: oneTBB), GPU feeders and the
// progress line; see scheduler.hpp. The reader, each feeder and the progress line are
// threads of their own: they wait on a file, the queue or a device, not on the CPU.
#include "scheduler/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include "core/thread_cpu.hpp"
#include "scheduler/block_queue.hpp"
#include "scheduler/cpu_pool.hpp"

namespace duet::scheduler {

namespace {

using Clock = std::chrono::steady_clock;

// Trace rows by start time, ties by worker.
void sort_by_start(std::vector<TraceRow>& trace) {
  std::stable_sort(trace.begin(), trace.end(), [](const TraceRow& a, const TraceRow& b) {
    return a.start != b.start ? a.start < b.start : a.worker < b.worker;
  });
}

// A summary's cells per second of each device kind, summed over its workers: each
// worker's cells per busy second, i.e. cells over busy time divided by the workers.
void set_rates(RunSummary& s) {
  if (s.cpu_stage_seconds > 0)
    s.cpu_cells_per_second =
        static_cast<double>(s.cpu_cells) / (s.cpu_stage_seconds / std::max(1, s.cpu_workers));
  if (s.gpu_stage_seconds > 0)
    s.gpu_cells_per_second =
        static_cast<double>(s.gpu_cells) / (s.gpu_stage_seconds / std::max(1, s.gpu_feeders));
}

struct Shared {
  BlockQueue queue;
  Clock::time_point start = Clock::now();
  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<std::int64_t> cpu_residues{0}, gpu_residues{0}, cells{0};
  // For progress and the adaptive policy: residues read so far, taken by a worker or
  // feeder so far, the share of the database read, and the total when known.
  std::atomic<std::int64_t> read_residues{0}, started_residues{0};
  std::atomic<double> fraction_read{0};
  std::atomic<bool> reader_done{false};
  std::int64_t known_total = 0;
  std::vector<std::atomic<double>> gpu_rates;  // residues per second of each feeder (0: unknown)
  // Feeders whose device has started and that still take blocks.
  std::vector<std::atomic<bool>> gpu_taking;

  Shared(std::size_t depth, int feeders)
      : queue(depth),
        gpu_rates(static_cast<std::size_t>(feeders)),
        gpu_taking(static_cast<std::size_t>(feeders)) {}
  double now() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
  void fail(std::exception_ptr e) {
    {
      std::lock_guard lock(error_mutex);
      if (!error) error = e;
    }
    queue.cancel();
  }
  // Residues not yet taken by anyone: exact once the reader is done, else extrapolated
  // from the share of the file read.
  double remaining_residues() const {
    const auto read = static_cast<double>(read_residues.load());
    double total = read;
    if (known_total > 0) {
      total = static_cast<double>(known_total);
    } else if (!reader_done.load()) {
      total = read / std::max(0.01, fraction_read.load());
    }
    return std::max(0.0, total - static_cast<double>(started_residues.load()));
  }
};

// SchedulerOptions::cpu_leaves_blocks_to_gpus: whether a GPU feeder takes blocks now.
bool gpus_take_blocks(const Shared& shared) {
  return std::any_of(shared.gpu_taking.begin(), shared.gpu_taking.end(),
                     [](const std::atomic<bool>& taking) { return taking.load(); });
}

bool stop_requested(const SchedulerOptions& options) {
  return options.stop && options.stop->load();
}

void read_blocks(Shared& shared, BlockSource& pass, const SchedulerOptions& options, bool have_gpus,
                 std::int64_t& blocks_out, std::int64_t& reused_out) {
  double cpu_assigned = 0, all_assigned = 0;
  while (BlockPtr block = pass.next()) {
    shared.read_residues += block->work();
    shared.fraction_read = pass.fraction_done();
    reused_out = pass.reused_blocks();
    if (stop_requested(options)) break;
    Affinity affinity = Affinity::any;
    if (have_gpus && options.gpu_only) {
      affinity = Affinity::gpu_only;
    } else if (have_gpus && options.policy == SplitPolicy::static_fraction) {
      const auto r = static_cast<double>(block->work());
      const bool to_cpu = cpu_assigned + r / 2 <= options.static_cpu_fraction * (all_assigned + r);
      affinity = to_cpu ? Affinity::cpu_only : Affinity::gpu_only;
      if (to_cpu) cpu_assigned += r;
      all_assigned += r;
    }
    ++blocks_out;
    if (!shared.queue.push(std::move(block), affinity)) return;
  }
  shared.fraction_read = 1.0;
  shared.reader_done = true;
  shared.queue.close();
}

TraceRow row_for(const Shared& shared, int worker, Device device, std::string stage, double start,
                 std::span<const BlockPtr> blocks, std::int64_t cells_per_residue) {
  TraceRow row;
  row.worker = worker;
  row.device = device;
  row.stage = std::move(stage);
  row.start = start;
  row.end = shared.now();
  row.block = blocks.empty() ? 0 : blocks.front()->index;
  row.blocks = static_cast<std::int64_t>(blocks.size());
  for (const BlockPtr& b : blocks) {
    row.sequences += static_cast<std::int64_t>(b->sequences());
    row.residues += b->work();
    row.cells += b->work_cells > 0 ? b->work_cells : b->work() * cells_per_residue;
  }
  return row;
}

// A CPU worker's task (CpuPool::RunTask): a block's every stage, or the post stage of a
// block a device ran the early stages of; one trace row.
void run_cpu_task(Shared& shared, Workload& workload, int worker, CpuTask& task,
                  const SchedulerOptions& options, std::vector<TraceRow>& trace) {
  if (stop_requested(options)) {
    shared.queue.cancel();
    return;
  }
  const double start = shared.now();
  const BlockPtr blocks[] = {task.block};
  if (task.kind == CpuTask::Kind::post) {
    const StageWork work = workload.post_work(*task.block, *task.post);
    const std::int64_t survivors = workload.run_post(*task.block, *task.post, worker);
    TraceRow row =
        row_for(shared, worker, Device::cpu, "post", start, blocks, workload.cells_per_residue());
    row.sequences = work.sequences;
    row.residues = work.residues;
    row.cells = work.residues * workload.cells_per_residue();
    row.survivors = survivors;
    trace.push_back(std::move(row));
    return;
  }
  shared.started_residues += task.block->work();
  const std::int64_t survivors = workload.run_block(*task.block, worker);
  TraceRow row =
      row_for(shared, worker, Device::cpu, "all", start, blocks, workload.cells_per_residue());
  row.survivors = survivors;
  shared.cpu_residues += row.residues;
  shared.cells += row.cells;
  trace.push_back(std::move(row));
}

// The residue budget of the next batch of an adaptive feeder (adaptive_batch_residues).
std::int64_t adaptive_budget(const Shared& shared, std::size_t feeder,
                             const SchedulerOptions& options) {
  const double elapsed = shared.now();
  double machine = elapsed > 0 ? static_cast<double>(shared.cpu_residues.load()) / elapsed : 0;
  for (const auto& rate : shared.gpu_rates) machine += rate.load();
  return adaptive_batch_residues(shared.gpu_rates[feeder].load(), machine,
                                 shared.remaining_residues(), options.gpu_batch_residues);
}

void gpu_feeder(Shared& shared, CpuPool& pool, GpuBackend& gpu, std::int64_t cells_per_residue,
                int worker, std::size_t feeder, const SchedulerOptions& options,
                std::vector<TraceRow>& trace, std::int64_t& faults) {
  // However the feeder ends, its device takes no more blocks, and the CPU workers that left
  // blocks to it ask again (SchedulerOptions::cpu_leaves_blocks_to_gpus).
  struct StopsTaking {
    Shared& shared;
    std::size_t feeder;
    ~StopsTaking() {
      shared.gpu_taking[feeder] = false;
      shared.queue.resume_cpu_workers();
    }
  } stops_taking{shared, feeder};
  // The device's set-up may still run on another thread: the CPU workers go on meanwhile.
  for (;;) {
    std::string problem;
    const GpuBackend::Readiness readiness = gpu.readiness(problem);
    if (readiness == GpuBackend::Readiness::ready) break;
    if (readiness == GpuBackend::Readiness::unavailable) {
      if (options.gpu_only)
        throw std::runtime_error(gpu.name() + " cannot be used (" + problem + ")");
      if (options.warnings) {
        std::fprintf(stderr, "duet: warning: %s cannot be used (%s); the CPU goes on without it\n",
                     gpu.name().c_str(), problem.c_str());
      }
      return;
    }
    if (!shared.queue.gpu_work_may_come() || stop_requested(options)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  gpu.start(
      [&pool](std::size_t n, std::size_t chunk, const std::function<void(std::size_t)>& body) {
        pool.run_host_loop(n, chunk, body);
      });
  // From here until it returns, the device takes blocks (gpus_take_blocks).
  shared.gpu_taking[feeder] = true;
  std::int64_t batches = 0;
  double busy = 0;
  std::int64_t done = 0;
  // A batch that failed (or was dropped with one that did): a fault row, its blocks back
  // to the queue for the CPU.
  const auto failed = [&](std::vector<BlockPtr>& batch, double start, std::int64_t residues,
                          const std::string& failure) {
    TraceRow row = row_for(shared, worker, Device::gpu, "fault", start, batch, cells_per_residue);
    row.failed = true;
    trace.push_back(std::move(row));
    ++faults;
    shared.started_residues -= residues;  // back in the queue
    if (options.warnings) {
      std::fprintf(stderr,
                   "duet: warning: %s failed on blocks %lld..%lld (%s); the CPU redoes them\n",
                   gpu.name().c_str(), static_cast<long long>(batch.front()->index),
                   static_cast<long long>(batch.back()->index), failure.c_str());
    }
    shared.queue.requeue(std::move(batch));
    shared.queue.end_gpu_batch();
  };
  // A batch done: its trace row (from `start`), what it left to the CPU's post stage, the
  // device's rate. Returns the row's end.
  const auto succeeded = [&](std::span<const BlockPtr> batch, double start,
                             std::vector<GpuBlockOutcome>& outcomes) {
    TraceRow row =
        row_for(shared, worker, Device::gpu, gpu.stages(), start, batch, cells_per_residue);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      row.survivors += outcomes[i].survivors;
      for (PostStatePtr& part : outcomes[i].post) {
        if (part) shared.queue.post(batch[i], std::move(part));
      }
    }
    shared.gpu_residues += row.residues;
    shared.cells += row.cells;
    busy += row.end - row.start;
    done += row.residues;
    if (busy > 0) shared.gpu_rates[feeder] = static_cast<double>(done) / busy;
    const double end = row.end;
    trace.push_back(std::move(row));
    shared.queue.end_gpu_batch();
    return end;
  };
  // The next batch (empty: none); without waiting when `wait` is false.
  const auto next_batch = [&](bool wait) {
    const std::int64_t budget = options.policy == SplitPolicy::adaptive
                                    ? adaptive_budget(shared, feeder, options)
                                    : options.gpu_batch_residues;
    return shared.queue.pop_batch_for_gpu(options.gpu_batch_blocks, budget, wait);
  };
  const auto residues_of = [](std::span<const BlockPtr> batch) {
    std::int64_t residues = 0;
    for (const BlockPtr& b : batch) residues += b->work();
    return residues;
  };
  const auto inject_fault = [&] {
    if (options.fault_every > 0 && batches % options.fault_every == 0) {
      throw std::runtime_error("injected fault (debug setting: every " +
                               std::to_string(options.fault_every) + " batches)");
    }
  };

  const int depth = std::max(1, gpu.batches_in_flight());
  if (depth > 1) {
    // Several batches in flight: the next is submitted before the oldest is finished. A
    // batch's row starts when it was submitted or when the one before it ended, whichever
    // is later, so that the rows of one device do not overlap.
    struct InFlight {
      std::vector<BlockPtr> batch;
      double start = 0;
      std::int64_t residues = 0;
    };
    std::deque<InFlight> flight;
    double last_end = 0;
    const auto drop_all = [&](const std::string& why) {
      gpu.abandon();
      for (InFlight& f : flight) failed(f.batch, f.start, f.residues, why);
      flight.clear();
    };
    for (;;) {
      if (stop_requested(options)) {
        shared.queue.cancel();
        gpu.abandon();
        for (std::size_t i = 0; i < flight.size(); ++i) shared.queue.end_gpu_batch();
        return;
      }
      while (static_cast<int>(flight.size()) < depth) {
        InFlight f;
        f.batch = next_batch(flight.empty());
        if (f.batch.empty()) break;
        ++batches;
        f.residues = residues_of(f.batch);
        shared.started_residues += f.residues;
        f.start = shared.now();
        try {
          inject_fault();
          gpu.submit(f.batch, worker);
        } catch (const std::exception& e) {
          drop_all("dropped with a batch that failed");
          failed(f.batch, f.start, f.residues, e.what());
          continue;
        }
        flight.push_back(std::move(f));
      }
      if (flight.empty()) return;
      std::vector<GpuBlockOutcome> outcomes;
      try {
        outcomes = gpu.finish(worker);
        if (outcomes.size() != flight.front().batch.size())
          throw std::logic_error("GpuBackend returned a wrong number of outcomes");
      } catch (const std::exception& e) {
        InFlight oldest = std::move(flight.front());
        flight.pop_front();
        drop_all("dropped with a batch that failed");
        failed(oldest.batch, oldest.start, oldest.residues, e.what());
        continue;
      }
      InFlight oldest = std::move(flight.front());
      flight.pop_front();
      last_end = succeeded(oldest.batch, std::max(oldest.start, last_end), outcomes);
    }
  }
  for (;;) {
    std::vector<BlockPtr> batch = next_batch(true);
    if (batch.empty()) return;
    if (stop_requested(options)) {
      shared.queue.cancel();
      shared.queue.end_gpu_batch();
      return;
    }
    ++batches;
    const std::int64_t batch_residues = residues_of(batch);
    shared.started_residues += batch_residues;
    const double start = shared.now();
    std::vector<GpuBlockOutcome> outcomes;
    std::string failure;
    try {
      inject_fault();
      outcomes = gpu.run(batch, worker);
      if (outcomes.size() != batch.size())
        throw std::logic_error("GpuBackend returned a wrong number of outcomes");
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (!failure.empty()) {
      failed(batch, start, batch_residues, failure);
      continue;
    }
    succeeded(batch, start, outcomes);
  }
}

void progress_line(const Shared& shared) {
  const double t = shared.now();
  const auto cpu = static_cast<double>(shared.cpu_residues.load());
  const auto gpu = static_cast<double>(shared.gpu_residues.load());
  const double done = cpu + gpu;
  // The total: known after a first pass, else what was read so far extrapolated from the
  // share of the file read (exact once the reader is done).
  const auto read = static_cast<double>(shared.read_residues.load());
  const bool known = shared.known_total > 0 || shared.reader_done.load();
  const double total = shared.known_total > 0 ? static_cast<double>(shared.known_total)
                       : shared.reader_done.load()
                           ? read
                           : read / std::max(0.01, shared.fraction_read.load());
  const double fraction = total > 0 ? std::min(1.0, done / total) : 0;
  char left[32] = "?";
  if (fraction > 0.01 && fraction < 1) std::snprintf(left, sizeof left, "%.0f s", t / fraction - t);
  std::fprintf(
      stderr,
      "\r\033[K[duet] %.1f of %s%.1f Mres (%.0f%%), %.2f Gc/s, CPU %.0f%% GPU %.0f%%, left %s",
      done / 1e6, known ? "" : "~", total / 1e6, fraction * 100,
      t > 0 ? static_cast<double>(shared.cells.load()) / t / 1e9 : 0,
      done > 0 ? cpu / done * 100 : 0, done > 0 ? gpu / done * 100 : 0, left);
  std::fflush(stderr);
}

}  // namespace

void run_host_loop_serially(std::size_t n, std::size_t,
                            const std::function<void(std::size_t)>& body) {
  for (std::size_t i = 0; i < n; ++i) body(i);
}

std::int64_t adaptive_batch_residues(double own_rate, double machine_rate, double remaining,
                                     std::int64_t max_residues) {
  if (own_rate <= 0) return std::max<std::int64_t>(1, max_residues / 4);  // first batch: measure
  const double seconds_left = remaining / std::max(machine_rate, own_rate);
  const double budget = 0.5 * own_rate * seconds_left;
  return static_cast<std::int64_t>(std::clamp(budget, 1.0, static_cast<double>(max_residues)));
}

RunSummary run_blocks(BlockSource& blocks, Workload& workload, std::span<GpuBackend* const> gpus,
                      const SchedulerOptions& options) {
  const int feeders = static_cast<int>(gpus.size());
  const int workers = std::max(options.cpu_workers, 1);
  const std::size_t depth =
      options.queue_depth ? options.queue_depth
                          : 2 * static_cast<std::size_t>(workers) +
                                2 * options.gpu_batch_blocks * static_cast<std::size_t>(feeders);
  Shared shared(depth, feeders);
  shared.known_total = blocks.known_work();
  const std::int64_t cells_per_residue = workload.cells_per_residue();
  if (options.cpu_leaves_blocks_to_gpus && feeders > 0 && !options.gpu_only &&
      options.policy != SplitPolicy::static_fraction) {
    shared.queue.set_cpu_should_take([&shared] { return !gpus_take_blocks(shared); });
    // A device already set up (an earlier pass) takes blocks from the start: the CPU
    // workers, which start first, leave them to it.
    for (int g = 0; g < feeders; ++g) {
      std::string problem;
      if (gpus[static_cast<std::size_t>(g)]->readiness(problem) == GpuBackend::Readiness::ready)
        shared.gpu_taking[static_cast<std::size_t>(g)] = true;
    }
  }

  std::vector<std::vector<TraceRow>> traces(static_cast<std::size_t>(workers + feeders));
  std::vector<std::int64_t> faults(static_cast<std::size_t>(feeders), 0);
  std::int64_t blocks_read = 0, reused = 0;
  auto guarded = [&shared](auto&& body) {
    return [&shared, body = std::forward<decltype(body)>(body)]() mutable {
      try {
        body();
      } catch (...) {
        shared.fail(std::current_exception());
      }
    };
  };

  std::vector<std::thread> threads;
  // A thread the system cannot make (too many asked for, a process limit) fails the run
  // like any other error: the threads already made are stopped and joined below.
  bool start_failed = false;
  const auto start = [&](auto&& body) {
    if (start_failed) return;
    try {
      threads.emplace_back(guarded(std::forward<decltype(body)>(body)));
    } catch (const std::system_error& e) {
      start_failed = true;
      shared.fail(std::make_exception_ptr(
          std::runtime_error("cannot start a scheduler thread (" + std::to_string(threads.size()) +
                             " running): " + e.what() + "; ask for fewer with --cpu")));
    }
  };
  CpuPool pool(workers, feeders, options.worker_nice, options.favoured);
  pool.start(
      shared.queue,
      [&](int w, CpuTask& task) {
        run_cpu_task(shared, workload, w, task, options, traces[static_cast<std::size_t>(w)]);
      },
      [&shared](std::exception_ptr e) { shared.fail(std::move(e)); });
  start([&] {
    ThreadCpuAccount account("reader (hand-out)");
    read_blocks(shared, blocks, options, feeders > 0, blocks_read, reused);
  });
  for (int g = 0; g < feeders; ++g) {
    const int worker = workers + g;
    start([&, g, worker] {
      ThreadCpuAccount account("GPU feeders");
      gpu_feeder(shared, pool, *gpus[static_cast<std::size_t>(g)], cells_per_residue, worker,
                 static_cast<std::size_t>(g), options, traces[static_cast<std::size_t>(worker)],
                 faults[static_cast<std::size_t>(g)]);
    });
  }
  std::mutex progress_mutex;
  std::condition_variable progress_done;
  bool finished = false;
  std::thread progress;
  if (options.progress) {
    progress = std::thread([&] {
      std::unique_lock lock(progress_mutex);
      while (
          !progress_done.wait_for(lock, std::chrono::milliseconds(500), [&] { return finished; })) {
        progress_line(shared);
      }
    });
  }
  for (auto& t : threads) t.join();
  pool.wait();
  if (progress.joinable()) {
    {
      std::lock_guard lock(progress_mutex);
      finished = true;
    }
    progress_done.notify_all();
    progress.join();
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  if (shared.error) std::rethrow_exception(shared.error);

  RunSummary s;
  s.seconds = shared.now();
  s.cpu_workers = workers;
  s.gpu_feeders = feeders;
  s.stopped = stop_requested(options);
  s.blocks = blocks_read;
  s.reused_blocks = reused;
  // Idle tails: when each worker, and each device, ended its last row.
  double cpu_last = 0, first_worker_idle = s.seconds, first_device_idle = s.seconds;
  for (std::size_t w = 0; w < traces.size(); ++w) {
    double last = 0;
    for (const TraceRow& r : traces[w]) last = std::max(last, r.end);
    first_worker_idle = std::min(first_worker_idle, last);
    if (static_cast<int>(w) < workers) {
      cpu_last = std::max(cpu_last, last);
    } else {
      first_device_idle = std::min(first_device_idle, last);
    }
    for (TraceRow& r : traces[w]) s.trace.push_back(std::move(r));
  }
  first_device_idle = std::min(first_device_idle, cpu_last);
  s.idle_tail_seconds = s.seconds - first_device_idle;
  s.worker_idle_tail_seconds = s.seconds - first_worker_idle;
  sort_by_start(s.trace);
  double cpu_cells = 0, gpu_cells = 0, cpu_block_seconds = 0, gpu_block_seconds = 0;
  for (const TraceRow& r : s.trace) {
    const double busy = r.end - r.start;
    if (r.device == Device::cpu) {
      s.cpu_busy_seconds += busy;
      if (r.stage == "post") {
        s.post_seconds += busy;
        s.post_cells += r.cells;
        continue;
      }
      cpu_block_seconds += busy;
      s.cpu_residues += r.residues;
      s.sequences += r.sequences;
      cpu_cells += static_cast<double>(r.cells);
    } else {
      s.gpu_busy_seconds += busy;
      if (r.failed) continue;
      gpu_block_seconds += busy;
      s.gpu_residues += r.residues;
      s.sequences += r.sequences;
      gpu_cells += static_cast<double>(r.cells);
    }
  }
  for (auto f : faults) s.gpu_faults += f;
  s.residues = s.cpu_residues + s.gpu_residues;
  s.cpu_cells = static_cast<std::int64_t>(cpu_cells);
  s.gpu_cells = static_cast<std::int64_t>(gpu_cells);
  s.cpu_stage_seconds = cpu_block_seconds;
  s.gpu_stage_seconds = gpu_block_seconds;
  set_rates(s);
  return s;
}

RunSummary merge_run_summaries(std::vector<RunSummary> ranks) {
  RunSummary m;
  if (ranks.empty()) return m;
  int cpu_workers = 0;
  for (const RunSummary& r : ranks) cpu_workers += r.cpu_workers;
  int cpu_offset = 0, feeder_offset = cpu_workers;
  double first_device_idle = 0, first_worker_idle = 0;
  bool first = true;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    RunSummary& r = ranks[k];
    for (TraceRow& row : r.trace) {
      row.rank = static_cast<int>(k);
      row.worker += row.worker < r.cpu_workers ? cpu_offset : feeder_offset - r.cpu_workers;
      m.trace.push_back(std::move(row));
    }
    cpu_offset += r.cpu_workers;
    feeder_offset += r.gpu_feeders;
    const double device_idle = r.seconds - r.idle_tail_seconds;
    const double worker_idle = r.seconds - r.worker_idle_tail_seconds;
    first_device_idle = first ? device_idle : std::min(first_device_idle, device_idle);
    first_worker_idle = first ? worker_idle : std::min(first_worker_idle, worker_idle);
    first = false;
    m.seconds = std::max(m.seconds, r.seconds);
    m.blocks += r.blocks;
    m.sequences += r.sequences;
    m.residues += r.residues;
    m.cpu_residues += r.cpu_residues;
    m.gpu_residues += r.gpu_residues;
    m.cpu_busy_seconds += r.cpu_busy_seconds;
    m.gpu_busy_seconds += r.gpu_busy_seconds;
    m.cpu_cells += r.cpu_cells;
    m.gpu_cells += r.gpu_cells;
    m.cpu_stage_seconds += r.cpu_stage_seconds;
    m.gpu_stage_seconds += r.gpu_stage_seconds;
    m.post_seconds += r.post_seconds;
    m.post_cells += r.post_cells;
    m.gpu_faults += r.gpu_faults;
    m.reused_blocks += r.reused_blocks;
    m.cpu_workers += r.cpu_workers;
    m.gpu_feeders += r.gpu_feeders;
    m.stopped = m.stopped || r.stopped;
  }
  m.idle_tail_seconds = m.seconds - first_device_idle;
  m.worker_idle_tail_seconds = m.seconds - first_worker_idle;
  sort_by_start(m.trace);
  set_rates(m);
  return m;
}

}  // namespace duet::scheduler
