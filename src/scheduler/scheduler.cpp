// run_blocks: the reader thread, CPU workers, GPU feeders and the progress line; see
// scheduler.hpp.
#include "scheduler/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "scheduler/block_queue.hpp"
#include "scheduler/block_reader.hpp"

namespace duet::scheduler {

namespace {

using Clock = std::chrono::steady_clock;

struct Shared {
  BlockQueue queue;
  Clock::time_point start = Clock::now();
  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<std::int64_t> cpu_residues{0}, gpu_residues{0}, cells{0};
  std::atomic<std::uint64_t> bytes_read{0}, file_size{0};

  explicit Shared(std::size_t depth) : queue(depth) {}
  double now() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
  void fail(std::exception_ptr e) {
    {
      std::lock_guard lock(error_mutex);
      if (!error) error = e;
    }
    queue.cancel();
  }
};

void read_blocks(Shared& shared, const std::string& database, const Alphabet& alphabet,
                 const SchedulerOptions& options, bool have_gpus, std::int64_t& blocks_out) {
  BlockReader reader(database, alphabet, options.block_residues);
  shared.file_size = reader.file_size();
  double cpu_assigned = 0, all_assigned = 0;
  while (BlockPtr block = reader.next()) {
    shared.bytes_read = reader.bytes_read();
    if (options.stop && options.stop->load()) break;
    if (have_gpus && options.gpu_only) {
      block->affinity = Affinity::gpu_only;
    } else if (have_gpus && options.policy == SplitPolicy::static_fraction) {
      const auto r = static_cast<double>(block->residue_count());
      const bool to_cpu = cpu_assigned + r / 2 <= options.static_cpu_fraction * (all_assigned + r);
      block->affinity = to_cpu ? Affinity::cpu_only : Affinity::gpu_only;
      if (to_cpu) cpu_assigned += r;
      all_assigned += r;
    }
    ++blocks_out;
    if (!shared.queue.push(std::move(block))) return;
  }
  shared.bytes_read = reader.bytes_read();
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
    row.residues += b->residue_count();
  }
  row.cells = row.residues * cells_per_residue;
  return row;
}

void cpu_worker(Shared& shared, Workload& workload, int worker, const SchedulerOptions& options,
                std::vector<TraceRow>& trace) {
  while (auto task = shared.queue.pop_for_cpu()) {
    if (options.stop && options.stop->load()) {
      shared.queue.cancel();
      return;
    }
    const double start = shared.now();
    const bool post = task->kind == CpuTask::Kind::post;
    const std::int64_t survivors =
        post ? workload.run_post(*task->block, worker) : workload.run_block(*task->block, worker);
    const BlockPtr blocks[] = {task->block};
    TraceRow row = row_for(shared, worker, Device::cpu, post ? "post" : "all", start, blocks,
                           workload.cells_per_residue());
    row.survivors = survivors;
    if (!post) {
      shared.cpu_residues += row.residues;
      shared.cells += row.cells;
    }
    trace.push_back(std::move(row));
  }
}

void gpu_feeder(Shared& shared, GpuBackend& gpu, std::int64_t cells_per_residue, int worker,
                const SchedulerOptions& options, std::vector<TraceRow>& trace, std::int64_t& faults) {
  std::int64_t batches = 0;
  for (;;) {
    std::vector<BlockPtr> batch =
        shared.queue.pop_batch_for_gpu(options.gpu_batch_blocks, options.gpu_batch_residues);
    if (batch.empty()) return;
    if (options.stop && options.stop->load()) {
      shared.queue.cancel();
      shared.queue.end_gpu_batch();
      return;
    }
    ++batches;
    const double start = shared.now();
    std::vector<GpuBlockOutcome> outcomes;
    std::string failure;
    try {
      if (options.fault_every > 0 && batches % options.fault_every == 0) {
        throw std::runtime_error("injected fault (debug setting: every " +
                                 std::to_string(options.fault_every) + " batches)");
      }
      outcomes = gpu.run(batch, worker);
      if (outcomes.size() != batch.size()) throw std::logic_error("GpuBackend returned a wrong number of outcomes");
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (!failure.empty()) {
      TraceRow row = row_for(shared, worker, Device::gpu, "fault", start, batch, cells_per_residue);
      row.failed = true;
      trace.push_back(std::move(row));
      ++faults;
      std::fprintf(stderr, "duet: warning: %s failed on blocks %lld..%lld (%s); the CPU redoes them\n",
                   gpu.name().c_str(), static_cast<long long>(batch.front()->index),
                   static_cast<long long>(batch.back()->index), failure.c_str());
      shared.queue.requeue(std::move(batch));
      shared.queue.end_gpu_batch();
      continue;
    }
    TraceRow row = row_for(shared, worker, Device::gpu, gpu.stages(), start, batch, cells_per_residue);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      row.survivors += outcomes[i].survivors;
      if (outcomes[i].needs_post) shared.queue.post(batch[i]);
    }
    shared.gpu_residues += row.residues;
    shared.cells += row.cells;
    trace.push_back(std::move(row));
    shared.queue.end_gpu_batch();
  }
}

void progress_line(const Shared& shared, std::int64_t total_hint) {
  const double t = shared.now();
  const auto cpu = static_cast<double>(shared.cpu_residues.load());
  const auto gpu = static_cast<double>(shared.gpu_residues.load());
  const double done = cpu + gpu;
  const double size = static_cast<double>(shared.file_size.load());
  const double fraction = size > 0 ? static_cast<double>(shared.bytes_read.load()) / size : 0;
  char left[32] = "?";
  if (fraction > 0.01 && total_hint == 0) {
    std::snprintf(left, sizeof left, "%.0f s", t / fraction - t);
  }
  std::fprintf(stderr, "\r\033[K[duet] %.1f Mres, file %.0f%%, %.2f Gc/s, CPU %.0f%% GPU %.0f%%, left %s",
               done / 1e6, fraction * 100, t > 0 ? static_cast<double>(shared.cells.load()) / t / 1e9 : 0,
               done > 0 ? cpu / done * 100 : 0, done > 0 ? gpu / done * 100 : 0, left);
  std::fflush(stderr);
}

}  // namespace

RunSummary run_blocks(const std::string& database, const Alphabet& alphabet, Workload& workload,
                      std::span<GpuBackend* const> gpus, const SchedulerOptions& options) {
  const int feeders = static_cast<int>(gpus.size());
  const int workers = std::max(options.cpu_workers, feeders > 0 ? std::max(options.cpu_workers, 1) : 1);
  const std::size_t depth =
      options.queue_depth ? options.queue_depth : static_cast<std::size_t>(2 * (workers + feeders));
  Shared shared(depth);
  const std::int64_t cells_per_residue = workload.cells_per_residue();

  std::vector<std::vector<TraceRow>> traces(static_cast<std::size_t>(workers + feeders));
  std::vector<std::int64_t> faults(static_cast<std::size_t>(feeders), 0);
  std::int64_t blocks_read = 0;
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
  threads.emplace_back(guarded([&] { read_blocks(shared, database, alphabet, options, feeders > 0, blocks_read); }));
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back(guarded([&, w] { cpu_worker(shared, workload, w, options, traces[static_cast<std::size_t>(w)]); }));
  }
  for (int g = 0; g < feeders; ++g) {
    const int worker = workers + g;
    threads.emplace_back(guarded([&, g, worker] {
      gpu_feeder(shared, *gpus[static_cast<std::size_t>(g)], cells_per_residue, worker, options,
                 traces[static_cast<std::size_t>(worker)], faults[static_cast<std::size_t>(g)]);
    }));
  }
  std::mutex progress_mutex;
  std::condition_variable progress_done;
  bool finished = false;
  std::thread progress;
  if (options.progress) {
    progress = std::thread([&] {
      std::unique_lock lock(progress_mutex);
      while (!progress_done.wait_for(lock, std::chrono::milliseconds(500), [&] { return finished; })) {
        progress_line(shared, 0);
      }
    });
  }
  for (auto& t : threads) t.join();
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
  s.stopped = options.stop && options.stop->load();
  for (const GpuBackend* g : gpus) s.test_double = s.test_double || g->test_double();
  s.blocks = blocks_read;
  double first_idle = s.seconds;
  for (auto& rows : traces) {
    first_idle = std::min(first_idle, rows.empty() ? 0.0 : rows.back().end);
    for (TraceRow& r : rows) s.trace.push_back(std::move(r));
  }
  s.idle_tail_seconds = s.seconds - first_idle;
  std::stable_sort(s.trace.begin(), s.trace.end(), [](const TraceRow& a, const TraceRow& b) {
    return a.start != b.start ? a.start < b.start : a.worker < b.worker;
  });
  double cpu_cells = 0, gpu_cells = 0;
  for (const TraceRow& r : s.trace) {
    const double busy = r.end - r.start;
    if (r.failed) continue;
    if (r.device == Device::cpu) {
      s.cpu_busy_seconds += busy;
      if (r.stage == "post") continue;
      s.cpu_residues += r.residues;
      s.sequences += r.sequences;
      cpu_cells += static_cast<double>(r.cells);
    } else {
      s.gpu_busy_seconds += busy;
      s.gpu_residues += r.residues;
      s.sequences += r.sequences;
      gpu_cells += static_cast<double>(r.cells);
    }
  }
  for (auto f : faults) s.gpu_faults += f;
  s.residues = s.cpu_residues + s.gpu_residues;
  // Throughput of a device kind: cells per second of wall time while any of its workers
  // ran, approximated by busy time divided by the number of its workers.
  if (s.cpu_busy_seconds > 0) s.cpu_cells_per_second = cpu_cells / (s.cpu_busy_seconds / workers);
  if (s.gpu_busy_seconds > 0) s.gpu_cells_per_second = gpu_cells / (s.gpu_busy_seconds / feeders);
  return s;
}

}  // namespace duet::scheduler
