// The hybrid scheduler (src/scheduler): the BlockQueue and ResultSink on their own; the
// invariant that hmmsearch results are identical, bit for bit, whatever the worker count,
// block size, split policy, test-double GPU and injected faults; edge databases; Ctrl-C.
#include "scheduler/scheduler.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "app/hmmsearch/report.hpp"
#include "app/hmmsearch/result_stream.hpp"
#include "app/hmmsearch/search.hpp"
#include "core/error.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/text_reader.hpp"
#include "core/thread_cpu.hpp"
#include "device/gpu_info.hpp"
#include "io/block_store.hpp"
#include "io/hdf5_file.hpp"
#include "scheduler/block_queue.hpp"
#include "scheduler/cpu_pool.hpp"
#include "scheduler/distributed_source.hpp"
#include "scheduler/helper_team.hpp"
#include "scheduler/result_sink.hpp"
#include "search_compare.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

const std::string kModel = "/usr/share/doc/hmmer/examples/tutorial/globins4.hmm";

// Database and block sizes: DUET_TEST_QUICK (set by the sanitizer runs in CI) divides
// them by 8 (the number of blocks stays the same);
// every case still runs, on fewer sequences.
int scaled(int count) {
  return std::getenv("DUET_TEST_QUICK") ? std::max(1, count / 8) : count;
}

io::Config relaxed_config(int workers) {
  io::Config config;
  config.run.cpu = workers;
  // Filters relaxed so that many targets reach Forward (and the post-queue).
  config.search.F1 = 0.3;
  config.search.F2 = 0.05;
  config.search.F3 = 0.01;
  return config;
}

app::SearchRun search(const std::string& db, int workers, const app::HybridOptions& hybrid) {
  static const std::vector<HmmModel> models = read_hmm_file(kModel);
  return app::run_hmmsearch(models, db, relaxed_config(workers), hybrid);
}

TEST(SchedulerInvariant, ResultsIdenticalAcrossWorkersBlocksPoliciesAndFaults) {
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, scaled(1500));
  app::HybridOptions base;
  base.gpu = app::HybridOptions::Gpu::off;
  const app::SearchRun reference = search(db, 1, base);
  ASSERT_GT(reference.queries.at(0).counts.targets, scaled(1000));
  ASSERT_GT(reference.queries.at(0).counts.passed_forward, 0);

  for (int workers = 1; workers <= 4; ++workers) {
    for (std::size_t block : {std::size_t{1}, std::size_t{5000}, std::size_t{1} << 24}) {
      app::HybridOptions h = base;
      h.block_residues = block;
      test::expect_identical(
          reference, search(db, workers, h),
          "cpu workers=" + std::to_string(workers) + " block=" + std::to_string(block));
    }
  }
  struct Case {
    const char* name;
    int gpus, fault_every;
    scheduler::SplitPolicy policy;
    app::HybridOptions::Gpu mode;
  };
  const Case cases[] = {
      {"test gpu dynamic", 1, 0, scheduler::SplitPolicy::dynamic,
       app::HybridOptions::Gpu::auto_detect},
      {"two test gpus", 2, 0, scheduler::SplitPolicy::dynamic,
       app::HybridOptions::Gpu::auto_detect},
      {"test gpu static", 1, 0, scheduler::SplitPolicy::static_fraction,
       app::HybridOptions::Gpu::auto_detect},
      {"test gpu only", 1, 0, scheduler::SplitPolicy::dynamic, app::HybridOptions::Gpu::only},
      {"faults every 2", 1, 2, scheduler::SplitPolicy::dynamic,
       app::HybridOptions::Gpu::auto_detect},
      {"gpu only, faults every 2", 1, 2, scheduler::SplitPolicy::dynamic,
       app::HybridOptions::Gpu::only},
      {"faults every batch", 1, 1, scheduler::SplitPolicy::dynamic, app::HybridOptions::Gpu::only},
      {"static with faults", 2, 3, scheduler::SplitPolicy::static_fraction,
       app::HybridOptions::Gpu::auto_detect},
      {"adaptive", 1, 0, scheduler::SplitPolicy::adaptive, app::HybridOptions::Gpu::auto_detect},
      {"adaptive gpu only", 1, 0, scheduler::SplitPolicy::adaptive, app::HybridOptions::Gpu::only},
      {"adaptive, two gpus, faults", 2, 2, scheduler::SplitPolicy::adaptive,
       app::HybridOptions::Gpu::auto_detect},
  };
  for (const Case& c : cases) {
    for (int workers : {1, 3}) {
      app::HybridOptions h = base;
      h.gpu = c.mode;
      h.test_gpus = c.gpus;
      h.fault_every = c.fault_every;
      h.policy = c.policy;
      h.static_cpu_fraction = 0.3;
      h.block_residues = static_cast<std::size_t>(scaled(20000));
      h.gpu_batch_blocks = 3;
      const app::SearchRun run = search(db, workers, h);
      const std::string what = std::string(c.name) + " workers=" + std::to_string(workers);
      test::expect_identical(reference, run, what);
      const auto& s = run.queries.at(0).schedule;
      EXPECT_TRUE(run.test_double_gpus) << what;
      EXPECT_EQ(s.residues, reference.queries[0].counts.residues) << what;
      // How much the GPUs get under the dynamic policies depends on their speed against
      // the CPU's; with --gpu-only or the static split it is decided up front.
      const bool gpu_decided = c.mode == app::HybridOptions::Gpu::only ||
                               c.policy == scheduler::SplitPolicy::static_fraction;
      std::map<int, int> batches;  // per feeder
      bool fault_row = false;
      for (const auto& r : s.trace) {
        if (r.device == scheduler::Device::gpu) ++batches[r.worker];
        fault_row = fault_row || (r.failed && r.stage == "fault");
      }
      if (c.fault_every == 1) {
        EXPECT_EQ(s.gpu_residues, 0) << what;
      } else if (gpu_decided) {
        EXPECT_GT(s.gpu_residues, 0) << what;
      }
      bool fault_due = false;  // a feeder reached its fault_every-th batch
      for (const auto& [feeder, n] : batches)
        fault_due = fault_due || (c.fault_every > 0 && n >= c.fault_every);
      if (c.mode == app::HybridOptions::Gpu::only && c.fault_every > 0) {
        EXPECT_TRUE(fault_due) << what;
      }
      EXPECT_EQ(s.gpu_faults > 0, fault_due) << what;
      EXPECT_EQ(fault_row, fault_due) << what;
      // Post rows count only the targets a device left at Forward or (the test double's
      // blocks of odd index) at the Viterbi filter: with every block on the GPU and no
      // fault, at least the targets that reached Forward, at most those that passed the
      // bias filter.
      const auto& q = run.queries[0];
      std::int64_t post_sequences = 0, post_residues = 0, post_cells = 0;
      for (const auto& r : s.trace) {
        if (r.stage != "post") continue;
        EXPECT_EQ(r.cells, r.residues * q.M) << what;
        post_sequences += r.sequences;
        post_residues += r.residues;
        post_cells += r.cells;
      }
      EXPECT_EQ(post_cells, s.post_cells) << what;
      if (c.mode == app::HybridOptions::Gpu::only && c.fault_every == 0) {
        std::int64_t at_forward = 0, at_forward_residues = 0;
        std::int64_t past_bias = 0, past_bias_residues = 0;
        for (const auto& t : q.targets) {
          if (t.scores.stage < Stage::viterbi) continue;
          ++past_bias;
          past_bias_residues += t.length;
          if (t.scores.stage < Stage::forward) continue;
          ++at_forward;
          at_forward_residues += t.length;
        }
        EXPECT_EQ(at_forward, q.counts.passed_viterbi) << what;
        EXPECT_EQ(past_bias, q.counts.passed_bias) << what;
        EXPECT_LE(at_forward, post_sequences) << what;
        EXPECT_LE(post_sequences, past_bias) << what;
        EXPECT_LE(at_forward_residues, post_residues) << what;
        EXPECT_LE(post_residues, past_bias_residues) << what;
        EXPECT_LT(post_residues, q.counts.residues) << what;
      }
      for (const auto& r : s.trace) {
        if (r.device == scheduler::Device::gpu) {
          EXPECT_LE(r.blocks, static_cast<std::int64_t>(h.gpu_batch_blocks)) << what;
        }
      }
      EXPECT_GE(s.idle_tail_seconds, 0) << what;
      EXPECT_GE(s.worker_idle_tail_seconds, s.idle_tail_seconds - 1e-9) << what;
    }
  }
}

TEST(SchedulerInvariant, TinyBlocksManyWorkersStress) {
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, scaled(300));
  app::HybridOptions base;
  base.gpu = app::HybridOptions::Gpu::off;
  const app::SearchRun reference = search(db, 1, base);
  for (int round = 0; round < 3; ++round) {
    app::HybridOptions h = base;
    h.gpu = app::HybridOptions::Gpu::auto_detect;
    h.test_gpus = 2;
    h.fault_every = 5;
    h.block_residues = 1;
    h.queue_depth = 1;
    h.gpu_batch_blocks = 4;
    test::expect_identical(reference, search(db, 8, h), "stress round " + std::to_string(round));
  }
}

TEST(SchedulerEdges, EmptyDatabaseOneSequenceMoreWorkersThanBlocks) {
  test::TempDir dir;
  const std::string empty = dir.file("empty.fa");
  test::write_file(empty, "");
  app::HybridOptions h;
  h.test_gpus = 1;
  for (int workers : {1, 4}) {
    const app::SearchRun run = search(empty, workers, h);
    EXPECT_EQ(run.queries.at(0).counts.targets, 0);
    EXPECT_TRUE(run.queries[0].targets.empty());
  }
  const std::string one = test::database_prefix(dir, 1);
  h.gpu = app::HybridOptions::Gpu::off;
  const app::SearchRun single = search(one, 1, h);
  EXPECT_EQ(single.queries.at(0).counts.targets, 1);
  test::expect_identical(single, search(one, 6, h), "one sequence, 6 workers");
  h.gpu = app::HybridOptions::Gpu::auto_detect;
  test::expect_identical(single, search(one, 6, h), "one sequence, 6 workers, test gpu");
  const std::string few = test::database_prefix(dir, 3);
  h.gpu = app::HybridOptions::Gpu::off;
  const app::SearchRun three = search(few, 1, h);
  h.block_residues = 1;
  EXPECT_EQ(search(few, 8, h).queries[0].schedule.blocks, 3);
  test::expect_identical(three, search(few, 8, h), "3 blocks, 8 workers");
}

TEST(SchedulerEdges, NoGpuAvailableIsUsageError) {
  if (device::gpus_shown_by_driver() > 0 || !device::list_gpus().gpus.empty())
    GTEST_SKIP() << "a GPU is available here";
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 2);
  app::HybridOptions h;
  h.gpu = app::HybridOptions::Gpu::only;
  EXPECT_THROW(search(db, 1, h), UsageError);
}

TEST(SchedulerParts, QueueBoundsDepthAndServesPostAndRequeuedFirst) {
  scheduler::BlockQueue queue(2);
  auto block = [](std::int64_t i) {
    auto b = std::make_shared<Block>();
    b->index = i;
    return b;
  };
  EXPECT_TRUE(queue.push(block(0)));
  EXPECT_TRUE(queue.push(block(1)));
  std::atomic<bool> third_pushed{false};
  std::thread producer([&] {
    queue.push(block(2));
    third_pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(third_pushed.load());  // depth 2: the reader waits
  auto gpu = queue.pop_batch_for_gpu(1, 1 << 20);
  ASSERT_EQ(gpu.size(), 1u);
  producer.join();
  EXPECT_TRUE(third_pushed.load());
  queue.requeue({gpu[0]});
  queue.post(block(9), std::make_unique<PostState>());
  queue.end_gpu_batch();
  queue.close();
  scheduler::CpuTask t;
  ASSERT_EQ(queue.take_for_cpu(0, t), scheduler::BlockQueue::Take::task);
  EXPECT_EQ(t.kind, scheduler::CpuTask::Kind::post);
  ASSERT_EQ(queue.take_for_cpu(0, t), scheduler::BlockQueue::Take::task);
  EXPECT_EQ(t.block->index, 0);  // requeued, cpu_only
  ASSERT_EQ(queue.take_for_cpu(0, t), scheduler::BlockQueue::Take::task);
  EXPECT_EQ(t.block->index, 1);
  ASSERT_EQ(queue.take_for_cpu(0, t), scheduler::BlockQueue::Take::task);
  EXPECT_EQ(t.block->index, 2);
  EXPECT_EQ(queue.take_for_cpu(0, t), scheduler::BlockQueue::Take::finished);
  EXPECT_TRUE(queue.pop_batch_for_gpu(4, 100).empty());
}

// A CPU worker that finds nothing is parked, and handed back once the queue changes in a
// way that may give it work: a block it may take, a post, the end of a GPU batch, close.
TEST(SchedulerParts, QueueParksIdleWorkersAndResumesThem) {
  scheduler::BlockQueue queue(8);
  std::vector<int> resumed;
  queue.set_resume([&](int w) { resumed.push_back(w); });
  scheduler::CpuTask t;
  EXPECT_EQ(queue.take_for_cpu(3, t), scheduler::BlockQueue::Take::parked);
  EXPECT_EQ(queue.take_for_cpu(5, t), scheduler::BlockQueue::Take::parked);
  ASSERT_TRUE(queue.push(std::make_shared<Block>(), Affinity::gpu_only));
  EXPECT_TRUE(resumed.empty());  // nothing a CPU may take
  ASSERT_TRUE(queue.push(std::make_shared<Block>()));
  EXPECT_EQ(resumed, (std::vector<int>{3, 5}));
  ASSERT_EQ(queue.take_for_cpu(3, t), scheduler::BlockQueue::Take::task);
  ASSERT_EQ(queue.pop_batch_for_gpu(1, 1 << 20).size(), 1u);
  queue.close();
  EXPECT_EQ(queue.take_for_cpu(5, t), scheduler::BlockQueue::Take::parked);  // a batch is out
  resumed.clear();
  queue.post(std::make_shared<Block>(), std::make_unique<PostState>());
  EXPECT_EQ(resumed, (std::vector<int>{5}));
  ASSERT_EQ(queue.take_for_cpu(5, t), scheduler::BlockQueue::Take::task);
  EXPECT_EQ(t.kind, scheduler::CpuTask::Kind::post);
  EXPECT_EQ(queue.take_for_cpu(5, t), scheduler::BlockQueue::Take::parked);
  resumed.clear();
  queue.end_gpu_batch();
  EXPECT_EQ(resumed, (std::vector<int>{5}));
  EXPECT_EQ(queue.take_for_cpu(5, t), scheduler::BlockQueue::Take::finished);
}

// The pool: every task reaches one worker once; a worker runs one task at a time; an
// exception of a task goes to the pool's fail function.
TEST(SchedulerParts, PoolRunsEveryTaskOnceOneTaskPerWorkerAtATime) {
  constexpr int kWorkers = 4;
  scheduler::BlockQueue queue(1000);
  constexpr int kBlocks = 300;
  for (int i = 0; i < kBlocks; ++i) {
    auto b = std::make_shared<Block>();
    b->index = i;
    ASSERT_TRUE(queue.push(b));
  }
  auto posted = std::make_shared<Block>();
  posted->index = -1;
  queue.post(posted, std::make_unique<PostState>());
  queue.close();
  std::vector<std::atomic<int>> runs(kBlocks);
  std::vector<std::atomic<bool>> busy(kWorkers);
  std::atomic<bool> overlap{false};
  std::atomic<int> posts{0};
  scheduler::CpuPool pool(kWorkers, 0, 0);
  pool.start(
      queue,
      [&](int w, scheduler::CpuTask& task) {
        ASSERT_GE(w, 0);
        ASSERT_LT(w, kWorkers);
        if (busy[static_cast<std::size_t>(w)].exchange(true)) overlap = true;
        if (task.kind == scheduler::CpuTask::Kind::post) {
          ++posts;
        } else {
          ++runs[static_cast<std::size_t>(task.block->index)];
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        busy[static_cast<std::size_t>(w)] = false;
      },
      [](std::exception_ptr) { ADD_FAILURE() << "no task fails"; });
  pool.wait();
  EXPECT_FALSE(overlap.load());
  EXPECT_EQ(posts.load(), 1);
  for (int i = 0; i < kBlocks; ++i) ASSERT_EQ(runs[static_cast<std::size_t>(i)], 1) << i;

  scheduler::BlockQueue failing(8);
  ASSERT_TRUE(failing.push(std::make_shared<Block>()));
  ASSERT_TRUE(failing.push(std::make_shared<Block>()));
  std::atomic<int> failures{0};
  scheduler::CpuPool second(2, 0, 0);
  second.start(
      failing, [](int, scheduler::CpuTask&) { throw std::runtime_error("task failed"); },
      [&](std::exception_ptr e) {
        ++failures;
        failing.cancel();
        EXPECT_THROW(std::rethrow_exception(e), std::runtime_error);
      });
  second.wait();  // cancelled: every worker ends, though the queue was never closed
  EXPECT_GE(failures.load(), 1);
}

// The CPU seconds counted so far under `kind` (thread_cpu_seconds; 0 before any).
double counted_cpu_seconds(const std::string& kind) {
  for (const auto& [name, seconds] : thread_cpu_seconds())
    if (name == kind) return seconds;
  return 0;
}

// A GPU feeder's host loop is shared with CPU workers that have nothing else to do; every
// index runs once; an exception in a body reaches the feeder. What the workers ran of it
// counts under "CPU workers (host loops)" (DUET_TIMES).
TEST(SchedulerParts, HostLoopsAreSharedWithIdleWorkers) {
  const double counted_before = counted_cpu_seconds("CPU workers (host loops)");
  scheduler::BlockQueue queue(4);
  ASSERT_TRUE(queue.push(std::make_shared<Block>()));
  ASSERT_EQ(queue.pop_batch_for_gpu(1, 1 << 20).size(), 1u);  // a batch out: workers park
  scheduler::CpuPool pool(3, 1, 0);
  pool.start(
      queue, [](int, scheduler::CpuTask&) { ADD_FAILURE() << "no CPU task"; },
      [](std::exception_ptr) {});
  std::mutex mutex;
  std::map<std::thread::id, int> ran;  // indices run per thread
  const std::thread::id feeder = std::this_thread::get_id();
  std::atomic<bool> helped{false};
  constexpr std::size_t n = 5000;
  std::vector<std::size_t> out(n, 0);
  pool.run_host_loop(n, 8, [&](std::size_t i) {
    const std::thread::id me = std::this_thread::get_id();
    // Whoever runs index 0 waits until another thread has run an index: the loop is
    // shared whatever the timing (on a busy machine one thread could otherwise run it all).
    if (i == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      for (bool other = false; !other && std::chrono::steady_clock::now() < until;) {
        {
          std::lock_guard lock(mutex);
          other = std::any_of(ran.begin(), ran.end(), [&](const auto& e) { return e.first != me; });
        }
        if (!other) std::this_thread::yield();
      }
    }
    if (me != feeder) helped = true;
    out[i] += 3 * i + 1;
    std::lock_guard lock(mutex);
    ++ran[me];
  });
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 3 * i + 1) << "index " << i;
  EXPECT_TRUE(helped.load());
  EXPECT_GE(ran.size(), 2u);
  EXPECT_GT(counted_cpu_seconds("CPU workers (host loops)"), counted_before);
  EXPECT_THROW(pool.run_host_loop(100, 4,
                                  [](std::size_t i) {
                                    if (i == 37) throw std::runtime_error("body failed");
                                  }),
               std::runtime_error);
  queue.end_gpu_batch();
  queue.close();
  pool.wait();  // closed and drained: the workers end
  std::vector<int> after(300, 0);
  pool.run_host_loop(after.size(), 16, [&](std::size_t i) { after[i] = static_cast<int>(i); });
  for (std::size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i], static_cast<int>(i));
}

// The adaptive policy's batch size: about half of what the device does in the time the
// whole machine needs for what is left; a quarter of the maximum before any measure.
TEST(SchedulerParts, AdaptiveBatchShrinksAsWorkRunsOut) {
  using scheduler::adaptive_batch_residues;
  const std::int64_t max = 1000000;
  EXPECT_EQ(adaptive_batch_residues(0, 0, 5e9, max), max / 4);        // nothing measured yet
  EXPECT_EQ(adaptive_batch_residues(1e6, 1e6, 5e9, max), max);        // plenty left: the maximum
  EXPECT_EQ(adaptive_batch_residues(1e6, 1e6, 600000, max), 300000);  // alone: half of what is left
  EXPECT_EQ(adaptive_batch_residues(1e6, 4e6, 800000, max), 100000);  // a quarter of the machine
  EXPECT_EQ(adaptive_batch_residues(1e6, 2e6, 0, max), 1);  // at least one residue (a block)
  std::int64_t left = 900000, batches = 0;                  // a GPU alone: batches halve to the end
  std::int64_t previous = max;
  while (left > 0) {
    const std::int64_t batch =
        std::min(left, adaptive_batch_residues(1e6, 1e6, static_cast<double>(left), max));
    EXPECT_LE(batch, previous);
    previous = batch;
    left -= batch;
    ASSERT_LT(++batches, 40);
  }
}

// Blocks made in memory (the pair-HMM's source): every block reaches the workload once, on
// any number of workers; such a store has one pass.
TEST(SchedulerParts, BlockSourceFeedsOnePass) {
  class CountingSource final : public BlockSource {
   public:
    explicit CountingSource(int blocks) : blocks_(blocks) {}
    BlockPtr next() override {
      if (made_ == blocks_) return nullptr;
      auto b = std::make_shared<Block>();
      b->index = made_;
      b->first_sequence = first_;
      const int sequences = 1 + made_ % 3;
      for (int i = 0; i < sequences; ++i) {
        b->residues.resize(b->residues.size() + static_cast<std::size_t>(1 + i));
        b->end_sequence();
      }
      first_ += sequences;
      ++made_;
      return b;
    }
    double fraction_done() const override { return static_cast<double>(made_) / blocks_; }

   private:
    int blocks_, made_ = 0;
    std::int64_t first_ = 0;
  };
  class Recorder final : public scheduler::Workload {
   public:
    std::int64_t cells_per_residue() const override { return 1; }
    std::int64_t run_block(const Block& block, int) override {
      std::lock_guard lock(mutex);
      runs[block.index] += 1;
      firsts[block.index] = block.first_sequence;
      return static_cast<std::int64_t>(block.sequences());
    }
    std::int64_t run_post(const Block& block, PostState&, int) override {
      return static_cast<std::int64_t>(block.sequences());
    }
    std::mutex mutex;
    std::map<std::int64_t, int> runs;
    std::map<std::int64_t, std::int64_t> firsts;
  };
  for (int workers : {1, 4}) {
    CountingSource source(50);
    Recorder recorder;
    scheduler::SchedulerOptions options;
    options.cpu_workers = workers;
    const scheduler::RunSummary summary = scheduler::run_blocks(source, recorder, {}, options);
    EXPECT_EQ(summary.blocks, 50);
    ASSERT_EQ(recorder.runs.size(), 50u);
    std::int64_t first = 0;
    for (std::int64_t b = 0; b < 50; ++b) {
      EXPECT_EQ(recorder.runs[b], 1) << "block " << b;
      EXPECT_EQ(recorder.firsts[b], first) << "block " << b;
      first += 1 + b % 3;
    }
    EXPECT_EQ(summary.sequences, first);
  }
}

TEST(SchedulerParts, ResultSinkDeliversInOrder) {
  std::vector<std::int64_t> seen;
  scheduler::ResultSink<int> sink([&](std::int64_t i, int&& v) {
    EXPECT_EQ(v, static_cast<int>(i) * 10);
    seen.push_back(i);
  });
  for (int i : {3, 1, 0, 2, 5, 4}) sink.put(i, i * 10);
  EXPECT_EQ(seen, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(sink.held_back(), 0u);
  EXPECT_THROW(sink.put(2, 20), std::logic_error);
}

// With GPU feeders the CPU workers' threads raise their own nice value by worker_nice (so
// that feeders and the reader get a core at once); without feeders, or with 0, they keep
// it; the caller's priority is unchanged. The workers are oneTBB's threads, which outlive
// a pass and stay lowered, so each case runs in a fresh process: this test binary again,
// with only WorkerNiceInOneProcess and the case in DUET_TEST_NICE_CASE.
TEST(SchedulerParts, WorkerNiceOnlyWithFeeders) {
  const int base = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  if (base > 19 - 5) GTEST_SKIP() << "this process already runs at nice " << base;
  for (const char* nice_case : {"0 0", "0 5", "1 0", "1 5"}) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::setenv("DUET_TEST_NICE_CASE", nice_case, 1);
      const char* argv[] = {"scheduler_tests",
                            "--gtest_filter=SchedulerParts.WorkerNiceInOneProcess",
                            "--gtest_brief=1", nullptr};
      ::execv("/proc/self/exe", const_cast<char* const*>(argv));
      ::_exit(127);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "case (GPU, increment) " << nice_case << ": status " << status;
  }
}

// `count` blocks of one sequence of 10 residues each (block i: sequence i).
class TinyBlocks final : public BlockSource {
 public:
  explicit TinyBlocks(int count) : count_(count) {}
  BlockPtr next() override {
    if (made_ == count_) return nullptr;
    auto b = std::make_shared<Block>();
    b->index = made_;
    b->first_sequence = made_;
    b->residues.assign(10, 1);
    b->add_header("s", "");
    b->end_sequence();
    ++made_;
    return b;
  }
  double fraction_done() const override { return made_ / double(count_); }

 private:
  int count_, made_ = 0;
};

// delivered() counts a block once the consumer's call for it has returned: rank 0 of a
// job waits on it before it reads what the consumer built (search.cpp).
TEST(SchedulerParts, ResultSinkCountsABlockOnceItsConsumerReturned) {
  std::promise<void> entered, release;
  std::shared_future<void> go = release.get_future().share();
  scheduler::ResultSink<int> sink([&](std::int64_t, int&&) {
    entered.set_value();
    go.wait();
  });
  sink.skip(0);
  std::thread putter([&] { sink.put(1, 10); });
  entered.get_future().wait();
  EXPECT_EQ(sink.delivered(), 1);  // the skipped block, not the one being consumed
  release.set_value();
  putter.join();
  EXPECT_EQ(sink.delivered(), 2);
}

TEST(SchedulerParts, ResultSinkPassesSkippedBlocks) {
  std::vector<std::int64_t> seen;
  scheduler::ResultSink<int> sink([&](std::int64_t i, int&& v) {
    EXPECT_EQ(v, static_cast<int>(i) * 10);
    seen.push_back(i);
  });
  sink.put(3, 30);
  sink.skip(1);
  sink.put(0, 0);  // 0, then 1 skipped; 2 is still due
  EXPECT_EQ(seen, (std::vector<std::int64_t>{0}));
  sink.skip(2);  // 3 is handed over by the skip
  sink.skip(4);
  sink.put(5, 50);
  EXPECT_EQ(seen, (std::vector<std::int64_t>{0, 3, 5}));
  EXPECT_EQ(sink.delivered(), 6);
  EXPECT_EQ(sink.held_back(), 0u);
  EXPECT_THROW(sink.skip(4), std::logic_error);
  EXPECT_THROW(sink.put(4, 40), std::logic_error);
}

TEST(SchedulerParts, ChunksShrinkTowardTheEnd) {
  EXPECT_EQ(scheduler::chunk_blocks(0, 4, 1), 1);      // nothing known: one block
  EXPECT_EQ(scheduler::chunk_blocks(800, 4, 1), 100);  // remaining / (2 x ranks)
  EXPECT_EQ(scheduler::chunk_blocks(5, 4, 2), 2);      // never below the minimum
  scheduler::ChunkCoordinator coordinator(2);
  std::int64_t next = 0, last_size = 1 << 30;
  int count = 0;
  for (; next < 1000; ++count) {
    const scheduler::Chunk c = coordinator.next_chunk(0, 1000);
    EXPECT_EQ(c.first, next) << "chunks follow one another";
    EXPECT_LE(c.size(), last_size) << "chunk " << count << " grows";
    EXPECT_GE(c.size(), 1);
    last_size = c.size();
    next = c.last;
  }
  EXPECT_EQ(last_size, 1) << "the last chunks are single blocks";
  EXPECT_LT(count, 40) << "about 4 x ln(1000) chunks and the last blocks one by one";
  EXPECT_EQ(coordinator.next_chunk(1, 0).first, 0) << "each pass has its own hand-out";
}

// Two ranks' summaries of one pass as one: rows tagged with their rank, workers numbered
// across the job (every CPU worker, then every GPU feeder), counts summed, the longest
// rank's seconds, rates from the sums.
TEST(SchedulerParts, MergedSummariesNumberWorkersAcrossRanks) {
  const auto row = [](int worker, scheduler::Device device, double start, double end,
                      std::int64_t residues) {
    scheduler::TraceRow r;
    r.worker = worker;
    r.device = device;
    r.stage = "all";
    r.start = start;
    r.end = end;
    r.residues = residues;
    r.cells = residues * 10;
    return r;
  };
  scheduler::RunSummary a, b;
  a.cpu_workers = 2;
  a.gpu_feeders = 1;
  a.seconds = 4;
  a.idle_tail_seconds = 1;  // a device of rank 0 idle from 3 s
  a.trace = {row(0, scheduler::Device::cpu, 0, 1, 100), row(1, scheduler::Device::cpu, 0.5, 2, 50),
             row(2, scheduler::Device::gpu, 0.2, 3, 400)};
  a.cpu_residues = 150;
  a.gpu_residues = 400;
  a.residues = 550;
  a.cpu_cells = 1500;
  a.cpu_stage_seconds = 2.5;
  b.cpu_workers = 1;
  b.gpu_feeders = 0;
  b.seconds = 5;
  b.idle_tail_seconds = 0.5;
  b.trace = {row(0, scheduler::Device::cpu, 0.1, 4.5, 300)};
  b.cpu_residues = 300;
  b.residues = 300;
  b.cpu_cells = 3000;
  b.cpu_stage_seconds = 4.4;
  const scheduler::RunSummary m = scheduler::merge_run_summaries({a, b});
  EXPECT_EQ(m.cpu_workers, 3);
  EXPECT_EQ(m.gpu_feeders, 1);
  EXPECT_EQ(m.residues, 850);
  EXPECT_EQ(m.cpu_residues, 450);
  EXPECT_EQ(m.gpu_residues, 400);
  EXPECT_DOUBLE_EQ(m.seconds, 5);
  EXPECT_DOUBLE_EQ(m.idle_tail_seconds, 5 - 3) << "from the first device idle for good";
  EXPECT_DOUBLE_EQ(m.cpu_cells_per_second, 4500 / (6.9 / 3));
  ASSERT_EQ(m.trace.size(), 4u);
  std::map<std::pair<int, int>, int> numbers;  // (rank, worker in its rank) -> job's worker
  for (const scheduler::TraceRow& r : m.trace) {
    numbers[{r.rank, r.device == scheduler::Device::gpu ? 9 : static_cast<int>(r.residues)}] =
        r.worker;
  }
  EXPECT_EQ((numbers[{0, 100}]), 0);
  EXPECT_EQ((numbers[{0, 50}]), 1);
  EXPECT_EQ((numbers[{1, 300}]), 2) << "rank 1's CPU worker after rank 0's";
  EXPECT_EQ((numbers[{0, 9}]), 3) << "the GPU feeder after every CPU worker";
  EXPECT_TRUE(std::is_sorted(m.trace.begin(), m.trace.end(),
                             [](const auto& x, const auto& y) { return x.start < y.start; }));
}

// Ranks as threads: each reads the whole pass of its own source and takes its chunks from
// one coordinator; every block is taken by exactly one rank and skipped by all the others.
TEST(SchedulerParts, DistributedSourceTakesEveryBlockOnce) {
  for (const int ranks : {1, 2, 5}) {
    for (const int blocks : {0, 1, 7, 300}) {
      scheduler::ChunkCoordinator coordinator(ranks);
      std::vector<std::vector<std::int64_t>> taken(ranks), skipped(ranks);
      std::vector<std::int64_t> chunks(ranks);
      std::vector<std::thread> threads;
      for (int r = 0; r < ranks; ++r) {
        threads.emplace_back([&, r] {
          TinyBlocks all(blocks);
          scheduler::DistributedSource mine(all, coordinator, 3, blocks,
                                            [&](const Block& b) { skipped[r].push_back(b.index); });
          while (BlockPtr b = mine.next()) {
            EXPECT_EQ(b->first_sequence, b->index) << "blocks keep their database numbers";
            taken[r].push_back(b->index);
          }
          EXPECT_EQ(mine.next(), nullptr);
          EXPECT_EQ(mine.blocks_taken(), static_cast<std::int64_t>(taken[r].size()));
          chunks[r] = mine.chunks_taken();
        });
      }
      for (auto& t : threads) t.join();
      std::vector<int> owners(blocks, 0);
      for (int r = 0; r < ranks; ++r) {
        EXPECT_TRUE(std::is_sorted(taken[r].begin(), taken[r].end()));
        EXPECT_EQ(taken[r].size() + skipped[r].size(), static_cast<std::size_t>(blocks))
            << "rank " << r << " saw every block";
        for (const std::int64_t b : taken[r]) ++owners[b];
      }
      for (int b = 0; b < blocks; ++b)
        EXPECT_EQ(owners[b], 1) << ranks << " ranks, " << blocks << " blocks: block " << b;
      if (blocks == 300) {
        const std::int64_t all_chunks = std::accumulate(chunks.begin(), chunks.end(), 0LL);
        EXPECT_LT(all_chunks, 150) << "chunks should hold several blocks";
      }
    }
  }
}

TEST(SchedulerParts, WorkerNiceInOneProcess) {
  const char* nice_case = std::getenv("DUET_TEST_NICE_CASE");
  if (nice_case == nullptr) GTEST_SKIP() << "run by WorkerNiceOnlyWithFeeders";
  int with_gpu = 0, increment = 0;
  ASSERT_EQ(std::sscanf(nice_case, "%d %d", &with_gpu, &increment), 2);
  class NiceRecorder final : public scheduler::Workload {
   public:
    std::int64_t cells_per_residue() const override { return 1; }
    std::int64_t run_block(const Block&, int) override {
      const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
      std::lock_guard lock(mutex);
      seen.push_back(nice);
      return 1;
    }
    std::int64_t run_post(const Block&, PostState&, int) override { return 1; }
    std::mutex mutex;
    std::vector<int> seen;
  };
  class IdleGpu final : public scheduler::GpuBackend {  // takes nothing: it fails every batch
   public:
    std::string name() const override { return "idle"; }
    std::string stages() const override { return "all"; }
    std::vector<scheduler::GpuBlockOutcome> run(std::span<const BlockPtr>, int) override {
      throw std::runtime_error("idle GPU: no device");
    }
  };
  const int base = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  TinyBlocks source(40);
  NiceRecorder recorder;
  IdleGpu gpu;
  std::vector<scheduler::GpuBackend*> gpus;
  if (with_gpu) gpus.push_back(&gpu);
  scheduler::SchedulerOptions options;
  options.cpu_workers = 2;
  options.worker_nice = increment;
  options.warnings = false;
  scheduler::run_blocks(source, recorder, gpus, options);
  ASSERT_FALSE(recorder.seen.empty());
  const int expected = with_gpu ? base + increment : base;
  for (int nice : recorder.seen)
    EXPECT_EQ(nice, expected) << (with_gpu ? "with" : "without") << " a GPU, +" << increment;
  EXPECT_EQ(::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())), base);
}

// A device that holds two batches at once (submit/finish): every block runs once, on the
// GPU or (after a fault) on the CPU; never more than two batches in flight; finish()
// completes them in the order submitted; a failed submit or finish drops every batch in
// flight back to the CPU; the device's trace rows do not overlap.
TEST(SchedulerParts, PipelinedDeviceRunsEveryBlockOnce) {
  constexpr int kBlocks = 300;
  struct Runs {
    std::mutex mutex;
    std::vector<int> times = std::vector<int>(kBlocks, 0);
    void ran(const Block& b) {
      std::lock_guard lock(mutex);
      times[static_cast<std::size_t>(b.index)] += 1;
    }
  };
  class Cpu final : public scheduler::Workload {
   public:
    explicit Cpu(Runs& runs) : runs_(runs) {}
    std::int64_t cells_per_residue() const override { return 1; }
    std::int64_t run_block(const Block& b, int) override {
      runs_.ran(b);
      return 1;
    }
    std::int64_t run_post(const Block&, PostState&, int) override { return 1; }

   private:
    Runs& runs_;
  };
  // Fails the submit of every `submit_fault`-th batch and the finish of every
  // `finish_fault`-th (0: never).
  class PipelinedGpu final : public scheduler::GpuBackend {
   public:
    PipelinedGpu(Runs& runs, int submit_fault, int finish_fault)
        : runs_(runs), submit_fault_(submit_fault), finish_fault_(finish_fault) {}
    std::string name() const override { return "pipelined GPU"; }
    std::string stages() const override { return "all"; }
    int batches_in_flight() const override { return 2; }
    std::vector<scheduler::GpuBlockOutcome> run(std::span<const BlockPtr>, int) override {
      throw std::logic_error("run() on a pipelined device");
    }
    void submit(std::span<const BlockPtr> blocks, int) override {
      ++submits;
      if (submit_fault_ > 0 && submits % submit_fault_ == 0)
        throw std::runtime_error("submit failed");
      flight_.emplace_back(blocks.begin(), blocks.end());
      most_in_flight = std::max(most_in_flight, flight_.size());
    }
    std::vector<scheduler::GpuBlockOutcome> finish(int) override {
      EXPECT_FALSE(flight_.empty());
      ++finishes;
      if (finish_fault_ > 0 && finishes % finish_fault_ == 0)
        throw std::runtime_error("finish failed");
      std::vector<BlockPtr> oldest = std::move(flight_.front());
      flight_.pop_front();
      for (const BlockPtr& b : oldest) runs_.ran(*b);
      std::vector<scheduler::GpuBlockOutcome> outcomes(oldest.size());
      for (auto& o : outcomes) o.survivors = 1;
      return outcomes;
    }
    void abandon() noexcept override { flight_.clear(); }
    int submits = 0, finishes = 0;
    std::size_t most_in_flight = 0;

   private:
    Runs& runs_;
    int submit_fault_, finish_fault_;
    std::deque<std::vector<BlockPtr>> flight_;
  };
  for (const auto& [submit_fault, finish_fault, gpu_only] : std::vector<std::tuple<int, int, bool>>{
           {0, 0, true}, {0, 0, false}, {5, 0, false}, {0, 4, false}, {3, 7, true}}) {
    SCOPED_TRACE(std::to_string(submit_fault) + " " + std::to_string(finish_fault) +
                 (gpu_only ? " GPU-only" : " hybrid"));
    Runs runs;
    TinyBlocks source(kBlocks);
    Cpu cpu(runs);
    PipelinedGpu gpu(runs, submit_fault, finish_fault);
    std::vector<scheduler::GpuBackend*> gpus{&gpu};
    scheduler::SchedulerOptions options;
    options.cpu_workers = 1;
    options.gpu_batch_blocks = 4;
    options.gpu_only = gpu_only;
    options.warnings = false;
    const scheduler::RunSummary s = scheduler::run_blocks(source, cpu, gpus, options);
    for (int b = 0; b < kBlocks; ++b) EXPECT_EQ(runs.times[static_cast<std::size_t>(b)], 1) << b;
    EXPECT_LE(gpu.most_in_flight, std::size_t{2});
    if (gpu_only && submit_fault == 0 && finish_fault == 0) {
      EXPECT_EQ(gpu.most_in_flight, std::size_t{2});
    }
    // A fault happens when the device reaches the failing call. In the hybrid, the CPU
    // worker may take every block before it does (seen once in CI); GPU-only, it must.
    const bool reached = (submit_fault > 0 && gpu.submits >= submit_fault) ||
                         (finish_fault > 0 && gpu.finishes >= finish_fault);
    EXPECT_EQ(s.gpu_faults > 0, reached);
    if (gpu_only && (submit_fault > 0 || finish_fault > 0)) {
      EXPECT_TRUE(reached);
    }
    double last_end = 0;
    for (const scheduler::TraceRow& row : s.trace) {
      if (row.device != scheduler::Device::gpu || row.failed) continue;
      EXPECT_GE(row.start, last_end);
      last_end = row.end;
    }
  }
}

// A feeder's helper threads: every index of every loop runs once, loops one after another
// on the same team, with and without helpers; a body's exception reaches the caller once
// the loop has ended, and the team runs the next loop.
TEST(SchedulerParts, HelperTeamRunsEveryIndexOnce) {
  for (const int helpers : {0, 3}) {
    scheduler::HelperTeam team(helpers);
    for (int loop = 0; loop < 200; ++loop) {
      const std::size_t n = static_cast<std::size_t>(loop * 7 % 97);
      std::vector<std::atomic<int>> seen(n);
      team.run(n, 1 + static_cast<std::size_t>(loop % 5), [&](std::size_t i) { seen[i] += 1; });
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << helpers << " " << loop;
    }
    EXPECT_THROW(team.run(100, 3,
                          [](std::size_t i) {
                            if (i == 50) throw std::runtime_error("body failed");
                          }),
                 std::runtime_error);
    std::atomic<int> after{0};
    team.run(10, 1, [&](std::size_t) { ++after; });
    EXPECT_EQ(after.load(), 10);
  }
}

// A device whose set-up runs elsewhere (device::start_gpu_warmup): its feeder joins once
// it is ready, gives it up when the CPU finished every block first, goes on without it
// when it cannot be used (a hybrid run) and fails a GPU-only run then; every block runs
// once.
TEST(SchedulerParts, FeederJoinsWhenItsDeviceIsReady) {
  constexpr int kBlocks = 200;
  struct Runs {
    std::mutex mutex;
    std::vector<int> times = std::vector<int>(kBlocks, 0);
    std::atomic<int> cpu{0}, gpu{0};
    void ran(const Block& b, std::atomic<int>& side) {
      std::lock_guard lock(mutex);
      times[static_cast<std::size_t>(b.index)] += 1;
      side += 1;
    }
  };
  class SlowCpu final : public scheduler::Workload {
   public:
    explicit SlowCpu(Runs& runs) : runs_(runs) {}
    std::int64_t cells_per_residue() const override { return 1; }
    std::int64_t run_block(const Block& b, int) override {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      runs_.ran(b, runs_.cpu);
      return 1;
    }
    std::int64_t run_post(const Block&, PostState&, int) override { return 1; }

   private:
    Runs& runs_;
  };
  // Ready once the CPU ran `ready_after` blocks (never: -1), or unavailable.
  class LateGpu final : public scheduler::GpuBackend {
   public:
    LateGpu(Runs& runs, int ready_after, bool unavailable, int batch_us)
        : runs_(runs), ready_after_(ready_after), unavailable_(unavailable), batch_us_(batch_us) {}
    std::string name() const override { return "late GPU"; }
    std::string stages() const override { return "all"; }
    Readiness readiness(std::string& problem) override {
      if (unavailable_) {
        problem = "no context";
        return Readiness::unavailable;
      }
      return ready_after_ >= 0 && runs_.cpu.load() >= ready_after_ ? Readiness::ready
                                                                   : Readiness::pending;
    }
    void start(const scheduler::HostLoopRunner&) override { ++starts; }
    std::vector<scheduler::GpuBlockOutcome> run(std::span<const BlockPtr> blocks, int) override {
      EXPECT_EQ(starts, 1) << "run before start";
      std::this_thread::sleep_for(std::chrono::microseconds(batch_us_));
      std::vector<scheduler::GpuBlockOutcome> outcomes(blocks.size());
      for (const BlockPtr& b : blocks) runs_.ran(*b, runs_.gpu);
      for (auto& o : outcomes) o.survivors = 1;
      return outcomes;
    }
    int starts = 0;

   private:
    Runs& runs_;
    int ready_after_;
    bool unavailable_;
    int batch_us_;
  };
  struct Case {
    const char* name;
    int ready_after;
    bool unavailable, gpu_only;
    bool gpu_runs, fails;
    int gpu_batch_us = 0;  // a batch of 4 blocks; a CPU block takes 500 us
  };
  // Each case also with the CPU leaving fresh blocks to the GPU (cpu_leaves_blocks_to_gpus):
  // a GPU that never starts or cannot be used still leaves every block to the CPU.
  for (const bool leave : {false, true})
    for (const Case c : {Case{"ready after 20 CPU blocks", 20, false, false, true, false},
                         Case{"never ready", -1, false, false, false, false},
                         Case{"unavailable, hybrid", 0, true, false, false, false},
                         Case{"unavailable, GPU-only", 0, true, true, false, true},
                         Case{"GPU-only, ready at once", 0, false, true, true, false},
                         Case{"hybrid, ready at once", 0, false, false, true, false, 2000}}) {
      SCOPED_TRACE(std::string(c.name) + (leave ? ", CPU only when faster" : ""));
      Runs runs;
      TinyBlocks source(kBlocks);
      SlowCpu cpu(runs);
      LateGpu gpu(runs, c.ready_after, c.unavailable, c.gpu_batch_us);
      std::vector<scheduler::GpuBackend*> gpus{&gpu};
      scheduler::SchedulerOptions options;
      options.cpu_workers = 1;
      options.gpu_batch_blocks = 4;
      options.gpu_only = c.gpu_only;
      options.warnings = false;
      options.cpu_leaves_blocks_to_gpus = leave;
      if (c.fails) {
        try {
          scheduler::run_blocks(source, cpu, gpus, options);
          ADD_FAILURE() << "a GPU-only run without its GPU did not fail";
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("late GPU cannot be used (no context)"),
                    std::string::npos)
              << e.what();
        }
        continue;
      }
      const scheduler::RunSummary s = scheduler::run_blocks(source, cpu, gpus, options);
      for (int b = 0; b < kBlocks; ++b) EXPECT_EQ(runs.times[static_cast<std::size_t>(b)], 1) << b;
      EXPECT_EQ(gpu.starts, c.gpu_runs ? 1 : 0);
      EXPECT_EQ(runs.gpu.load() > 0, c.gpu_runs) << runs.gpu.load() << " blocks on the GPU";
      if (c.ready_after > 0 && c.gpu_runs) {
        EXPECT_GE(runs.cpu.load(), c.ready_after);
      }
      if (c.gpu_only) {
        EXPECT_EQ(runs.cpu.load(), 0);
      }
      if (leave && c.gpu_batch_us > 0) {
        // A GPU as fast as the CPU: without the rule the CPU takes blocks too;
        // with it, none (the device is ready when the pass starts).
        EXPECT_EQ(runs.cpu.load(), 0);
      }
      EXPECT_EQ(s.blocks, kBlocks);
    }
}

// A CPU worker that the queue's rule (set_cpu_should_take) keeps off a fresh block parks;
// a GPU takes the block; resume_cpu_workers wakes the parked worker, which asks again.
TEST(SchedulerParts, QueueLeavesBlocksToTheGpuByItsRule) {
  scheduler::BlockQueue queue(8);
  std::vector<int> resumed;
  queue.set_resume([&](int w) { resumed.push_back(w); });
  bool cpu_takes = false;
  int asked = 0;  // times the rule was asked
  queue.set_cpu_should_take([&] {
    ++asked;
    return cpu_takes;
  });
  for (std::int64_t i = 0; i < 3; ++i) {
    auto b = std::make_shared<Block>();
    b->index = i;
    ASSERT_TRUE(queue.push(b));
  }
  scheduler::CpuTask t;
  EXPECT_EQ(queue.take_for_cpu(2, t), scheduler::BlockQueue::Take::parked);
  EXPECT_EQ(asked, 1);
  const std::vector<BlockPtr> batch = queue.pop_batch_for_gpu(1, 1 << 20);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0]->index, 0);
  // A requeued block (a failed batch) and a post task are the CPU's whatever the rule says.
  queue.requeue({batch[0]});
  EXPECT_EQ(resumed, (std::vector<int>{2}));
  ASSERT_EQ(queue.take_for_cpu(2, t), scheduler::BlockQueue::Take::task);
  EXPECT_EQ(t.block->index, 0);
  queue.post(std::make_shared<Block>(), std::make_unique<PostState>());
  ASSERT_EQ(queue.take_for_cpu(2, t), scheduler::BlockQueue::Take::task);
  EXPECT_EQ(t.kind, scheduler::CpuTask::Kind::post);
  queue.end_gpu_batch();
  EXPECT_EQ(queue.take_for_cpu(2, t), scheduler::BlockQueue::Take::parked);
  resumed.clear();
  cpu_takes = true;  // e.g. the GPU stopped taking blocks
  queue.resume_cpu_workers();
  EXPECT_EQ(resumed, (std::vector<int>{2}));
  ASSERT_EQ(queue.take_for_cpu(2, t), scheduler::BlockQueue::Take::task);
  EXPECT_EQ(t.block->index, 1);
  EXPECT_EQ(asked, 3);  // not for the requeued block nor the post task
}

// Many threads putting at once: the consumer sees every block once, in order, one call at
// a time (never two at once), whoever hands it over.
TEST(SchedulerParts, ResultSinkInOrderFromManyThreads) {
  const std::uint64_t seed = test::test_seed();  // printed
  constexpr int kBlocks = 4000, kThreads = 8;
  std::vector<std::int64_t> seen;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  scheduler::ResultSink<int> sink([&](std::int64_t i, int&& v) {
    if (inside.fetch_add(1) != 0) overlapped = true;
    EXPECT_EQ(v, static_cast<int>(i) + 7);
    seen.push_back(i);
    if (i % 97 == 0) std::this_thread::yield();
    inside.fetch_sub(1);
  });
  std::vector<int> order(kBlocks);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int k = next.fetch_add(1); k < kBlocks; k = next.fetch_add(1))
        sink.put(order[static_cast<std::size_t>(k)], order[static_cast<std::size_t>(k)] + 7);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(overlapped.load());
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kBlocks));
  for (int i = 0; i < kBlocks; ++i) ASSERT_EQ(seen[static_cast<std::size_t>(i)], i);
  EXPECT_EQ(sink.held_back(), 0u);
  EXPECT_EQ(sink.delivered(), kBlocks);
}

TEST(SchedulerCli, SigintStopsCleanlyWithExit130AndNoOutput) {
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 20000);
  const std::string out = dir.file("out.h5");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl(DUET_BINARY, DUET_BINARY, "hmmsearch", "--max", "--cpu", "1", "--block-residues", "1000",
          "--h5", out.c_str(), "/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm", db.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_EQ(kill(pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().extension(), ".fa") << "left behind: " << entry.path();
  }
}

// Several query models: parsed blocks kept in memory for the later queries (all of the
// database, part of it, or none) give results identical to re-reading the file.
TEST(SchedulerReuse, ResultsIdenticalWithAndWithoutReusedBlocks) {
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, scaled(700));
  const std::string hmm = dir.file("three.hmm");
  test::run_command(
      "cat /usr/share/doc/hmmer/examples/tutorial/globins4.hmm "
      "/usr/share/doc/hmmer/examples/tutorial/fn3.hmm "
      "/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm > " +
      hmm);
  const std::vector<HmmModel> models = read_hmm_file(hmm);
  ASSERT_EQ(models.size(), 3u);
  const io::Config config = relaxed_config(2);
  auto run = [&](std::uint64_t reuse, int test_gpus, const std::string& db_path) {
    app::HybridOptions h;
    h.gpu = test_gpus > 0 ? app::HybridOptions::Gpu::auto_detect : app::HybridOptions::Gpu::off;
    h.test_gpus = test_gpus;
    h.block_residues = static_cast<std::size_t>(scaled(10000));
    h.reuse_memory = reuse;
    h.models_per_pass = 1;  // a pass per model, so that later passes reuse blocks
    return app::run_hmmsearch(models, db_path, config, h);
  };
  const app::SearchRun reread = run(0, 0, db);
  ASSERT_EQ(reread.queries.size(), 3u);
  const std::int64_t blocks = reread.queries[0].schedule.blocks;
  ASSERT_GT(blocks, 5);
  for (const auto& q : reread.queries) EXPECT_EQ(q.schedule.reused_blocks, 0);

  const app::SearchRun all = run(std::uint64_t{1} << 30, 0, db);
  test::expect_identical(reread, all, "everything kept");
  EXPECT_EQ(all.queries[0].schedule.reused_blocks, 0);
  EXPECT_EQ(all.queries[1].schedule.reused_blocks, blocks);
  EXPECT_EQ(all.queries[2].schedule.reused_blocks, blocks);

  for (const std::string& path : {db, dir.file("db.fa.gz")}) {
    if (path.ends_with(".gz")) test::run_command("gzip -c " + db + " > " + path);
    for (int gpus : {0, 1}) {
      // Memory for about a third of the blocks (a block holds about one byte per residue).
      const app::SearchRun part =
          run(static_cast<std::uint64_t>(reread.queries[0].counts.residues / 3), gpus, path);
      const std::string what = "part kept, " + path + ", test gpus " + std::to_string(gpus);
      test::expect_identical(reread, part, what);
      const std::int64_t kept = part.queries[1].schedule.reused_blocks;
      EXPECT_GT(kept, 0) << what;
      EXPECT_LT(kept, blocks) << what;
      EXPECT_EQ(part.queries[2].schedule.reused_blocks, kept) << what;
      for (const auto& q : part.queries)
        EXPECT_EQ(q.schedule.residues, reread.queries[0].counts.residues) << what;
    }
  }
}

// The default mode leaves the GPUs out for a database below gpu_min_database (the CPU
// alone is faster there), and says so; 0 or naming the GPUs keeps them in. The TOML and
// the search share the default.
TEST(SchedulerDefaultMode, SmallDatabaseRunsOnTheCpu) {
  EXPECT_EQ(app::HybridOptions{}.gpu_min_database, io::SchedulerConfig{}.gpu_min_database);
  EXPECT_EQ(app::hybrid_options(io::Config{}).gpu_min_database,
            io::SchedulerConfig{}.gpu_min_database);
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, scaled(200));
  const std::vector<HmmModel> models =
      read_hmm_file("/usr/share/doc/hmmer/examples/tutorial/globins4.hmm");
  app::HybridOptions h;
  h.warnings = false;
  const app::SearchRun small = app::run_hmmsearch(models, db, relaxed_config(2), h);
  EXPECT_TRUE(small.gpus_skipped_small_database);
  EXPECT_EQ(small.queries[0].schedule.gpu_residues, 0);
  h.gpu_min_database = 0;
  const app::SearchRun always = app::run_hmmsearch(models, db, relaxed_config(2), h);
  EXPECT_FALSE(always.gpus_skipped_small_database);
  test::expect_identical(small, always, "gpu_min_database 0");
  // A search of at least gpu_min_cells (nodes x text bytes) qualifies on a small database.
  h.gpu_min_database = io::SchedulerConfig{}.gpu_min_database;
  const auto text = static_cast<std::int64_t>(std::filesystem::file_size(db));
  std::int64_t nodes = 0;
  for (const HmmModel& m : models) nodes += m.M;
  h.gpu_min_cells = nodes * text + 1;
  EXPECT_TRUE(app::run_hmmsearch(models, db, relaxed_config(2), h).gpus_skipped_small_database);
  h.gpu_min_cells = nodes * text;
  EXPECT_FALSE(app::run_hmmsearch(models, db, relaxed_config(2), h).gpus_skipped_small_database);
  h.gpu_min_cells = -1;
  h.gpu_min_database = 1;
  h.gpu = app::HybridOptions::Gpu::off;
  EXPECT_FALSE(app::run_hmmsearch(models, db, relaxed_config(2), h).gpus_skipped_small_database);
}

// A pass runs a group of models, a CPU worker running each block against all of them and
// a GPU feeder each batch against all of them: results are identical to one CPU-only pass
// per model, whatever the group size, the worker count, the block size and the (test
// double) GPUs, faults and post stage included; the pass's trace rows are with its first
// model.
TEST(SchedulerModelGroups, ResultsIdenticalToOnePassPerModel) {
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, scaled(700));
  const std::string hmm = dir.file("five.hmm");
  test::run_command(
      "cat /usr/share/doc/hmmer/examples/tutorial/globins4.hmm "
      "/usr/share/doc/hmmer/examples/tutorial/fn3.hmm "
      "/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm "
      "/usr/share/doc/hmmer/examples/tutorial/fn3.hmm "
      "/usr/share/doc/hmmer/examples/tutorial/globins4.hmm > " +
      hmm);
  const std::vector<HmmModel> models = read_hmm_file(hmm);
  ASSERT_EQ(models.size(), 5u);
  // test_gpus: 0 none, 1 or 2 test doubles beside the CPU, -1 one test double alone
  // (--gpu-only) with every second batch failing (redone by the CPU).
  auto run = [&](std::size_t per_pass, int workers, std::size_t block_residues, int test_gpus) {
    app::HybridOptions h;
    h.gpu = test_gpus == 0  ? app::HybridOptions::Gpu::off
            : test_gpus < 0 ? app::HybridOptions::Gpu::only
                            : app::HybridOptions::Gpu::auto_detect;
    h.test_gpus = std::abs(test_gpus);
    if (test_gpus < 0) h.fault_every = 2;
    h.gpu_batch_blocks = 3;
    h.block_residues = block_residues;
    h.models_per_pass = per_pass;
    h.warnings = false;
    return app::run_hmmsearch(models, db, relaxed_config(workers), h);
  };
  const app::SearchRun single = run(1, 2, static_cast<std::size_t>(scaled(10000)), 0);
  for (const auto& q : single.queries) EXPECT_EQ(q.pass_models, 1u);
  for (const auto& [per_pass, workers, block, test_gpus] :
       std::vector<std::tuple<std::size_t, int, std::size_t, int>>{
           {2, 2, static_cast<std::size_t>(scaled(10000)), 0},
           {0, 3, static_cast<std::size_t>(scaled(3000)), 0},
           {5, 1, std::size_t{1} << 20, 0},
           {2, 2, static_cast<std::size_t>(scaled(3000)), 1},
           {0, 1, static_cast<std::size_t>(scaled(3000)), 2},
           {0, 2, static_cast<std::size_t>(scaled(3000)), -1}}) {
    const std::string what = "models per pass " + std::to_string(per_pass) + ", workers " +
                             std::to_string(workers) + ", block " + std::to_string(block) +
                             ", test gpus " + std::to_string(test_gpus);
    const app::SearchRun grouped = run(per_pass, workers, block, test_gpus);
    test::expect_identical(single, grouped, what);
    const std::size_t expected = per_pass == 2 ? 2 : 5;
    EXPECT_EQ(grouped.queries[0].pass_models, expected) << what;
    EXPECT_EQ(grouped.queries[1].pass_first, 0u) << what;
    EXPECT_EQ(grouped.queries[4].pass_first, per_pass == 2 ? 4u : 0u) << what;
    EXPECT_FALSE(grouped.queries[0].schedule.trace.empty()) << what;
    EXPECT_TRUE(grouped.queries[1].schedule.trace.empty()) << what;
    for (const auto& q : grouped.queries)
      EXPECT_EQ(q.counts.residues, single.queries[0].counts.residues) << what;
  }
}

// The model split (the default mode with GPUs, more models than one CPU pass holds): the
// first pass over FASTA reads the database on the CPU alone, then the CPU's passes and the GPUs'
// (their blocks from the store's side pass, the CPU serving only their post stage) run at
// the same time, each pass on one line: the CPU's or one of the GPU lines. With --gpu-only
// and several GPU lines, the GPU lines alone, every pass on the GPUs. Results are identical
// to one CPU-only pass per model, with GPU batches failing or not, over FASTA and a packed
// database, and with the split off.
TEST(SchedulerModelGroups, ModelSplitResultsIdenticalAndEachPassOnOneLine) {
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, scaled(700));
  const std::string packed = dir.file("db.duetdb");
  ASSERT_EQ(
      test::run_command(std::string(DUET_BINARY) + " makedb --quiet " + db + " " + packed).status,
      0);
  const std::string hmm = dir.file("eight.hmm");
  std::string cat = "cat";
  for (int k = 0; k < 4; ++k) {
    cat +=
        " /usr/share/doc/hmmer/examples/tutorial/globins4.hmm"
        " /usr/share/doc/hmmer/examples/tutorial/fn3.hmm";
  }
  test::run_command(cat + " > " + hmm);
  const std::vector<HmmModel> models = read_hmm_file(hmm);
  ASSERT_EQ(models.size(), 8u);
  auto run = [&](const std::string& path, bool split, int fault_every, int gpu_lines = 1,
                 bool gpu_only = false) {
    app::HybridOptions h;
    h.gpu = gpu_only ? app::HybridOptions::Gpu::only : app::HybridOptions::Gpu::auto_detect;
    h.gpu_lines = gpu_lines;
    h.test_gpus = 1;
    h.fault_every = fault_every;
    h.gpu_batch_blocks = 3;
    h.block_residues = static_cast<std::size_t>(scaled(3000));
    h.models_per_pass = 2;
    h.model_split = split;
    h.warnings = false;
    return app::run_hmmsearch(models, path, relaxed_config(2), h);
  };
  app::HybridOptions cpu;
  cpu.gpu = app::HybridOptions::Gpu::off;
  cpu.models_per_pass = 1;
  const app::SearchRun single = app::run_hmmsearch(models, db, relaxed_config(2), cpu);
  // Where a pass ran: "cpu" (CPU blocks only), "gpus" (GPU batches, the CPU's post stage
  // and redone faults), or "both" (fresh blocks on both).
  const auto where = [](const app::QueryResult& q) {
    bool cpu_blocks = false, gpu_batches = false;
    for (const scheduler::TraceRow& row : q.schedule.trace) {
      if (row.device == scheduler::Device::gpu) gpu_batches = true;
      if (row.device == scheduler::Device::cpu && row.stage == "all" && !row.failed)
        cpu_blocks = true;
    }
    return gpu_batches ? (cpu_blocks ? "both" : "gpus") : "cpu";
  };
  // The database, failing batches, GPU lines, and whether --gpu-only (GPU lines alone).
  struct Case {
    std::string path;
    int fault_every, gpu_lines;
    bool gpu_only;
  };
  for (const Case& c : std::vector<Case>{{db, 0, 1, false},
                                         {db, 2, 1, false},
                                         {packed, 0, 1, false},
                                         {db, 0, 2, false},
                                         {packed, 2, 3, false},
                                         {db, 0, 2, true},
                                         {packed, 0, 3, true}}) {
    const auto& [path, fault_every, gpu_lines, gpu_only] = c;
    const std::string what = path + ", fault every " + std::to_string(fault_every) + ", " +
                             std::to_string(gpu_lines) + " GPU line(s)" +
                             (gpu_only ? ", --gpu-only" : "");
    const app::SearchRun split = run(path, true, fault_every, gpu_lines, gpu_only);
    test::expect_identical(single, split, what);
    ASSERT_EQ(split.queries.size(), 8u);
    if (gpu_only) {  // every pass on the GPUs, the first over FASTA too
      for (std::size_t q = 0; q < 8; q += 2) EXPECT_STREQ(where(split.queries[q]), "gpus") << what;
    } else if (path == db) {  // FASTA: the first pass reads, on the CPU alone
      EXPECT_STREQ(where(split.queries[0]), "cpu") << what;
    }
    for (std::size_t q = 0; q < 8; q += 2) {
      EXPECT_EQ(split.queries[q].pass_first, q) << what;
      // (A failed GPU batch's blocks are redone by the CPU in the GPU line's pass.)
      if (fault_every == 0) {
        EXPECT_STRNE(where(split.queries[q]), "both") << what << ", pass of model " << q;
      }
    }
  }
  test::expect_identical(single, run(db, false, 0), "no model split");
}

// 2,000 short models (20 to 60 nodes) in one run, grouped by the default rule: every
// query's results equal its model's searched alone, CPU-only and with test-double GPUs
// (one of them failing every third batch). DUET_TEST_QUICK: 250 models.
TEST(SchedulerModelGroups, TwoThousandShortModelsInOneRun) {
  const std::uint64_t seed = test::test_seed();  // printed
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 300);
  const int count = std::getenv("DUET_TEST_QUICK") ? 250 : 2000;
  std::vector<HmmModel> drawn;
  const std::vector<HmmModel> models = test::short_models(count, 16, seed, drawn);
  io::Config config;
  config.run.cpu = 2;
  app::HybridOptions cpu;
  cpu.gpu = app::HybridOptions::Gpu::off;
  std::vector<app::SearchRun> alone;
  for (const HmmModel& m : drawn) alone.push_back(app::run_hmmsearch({m}, db, config, cpu));
  for (const int test_gpus : {0, 2}) {
    app::HybridOptions h = cpu;
    if (test_gpus > 0) {
      h.gpu = app::HybridOptions::Gpu::auto_detect;
      h.test_gpus = test_gpus;
      h.fault_every = 3;
      h.block_residues = 8000;
      h.warnings = false;
    }
    const std::string what =
        std::to_string(count) + " models, test gpus " + std::to_string(test_gpus);
    const app::SearchRun run = app::run_hmmsearch(models, db, config, h);
    ASSERT_EQ(run.queries.size(), static_cast<std::size_t>(count)) << what;
    EXPECT_GT(run.queries[0].pass_models, 1u) << what;  // grouped, not a pass per model
    test::expect_each_as_alone(run, alone, what);
  }
}

// The per-target columns written while the search runs (app/hmmsearch/result_stream.hpp), and each
// query's evalue and reported as it ends: from many workers, a test-double GPU with faults
// and tiny blocks, for three queries (two of the same name), they equal the records the
// search returns; a write failure ends the search with an error.
TEST(SchedulerStream, ColumnsWrittenDuringTheSearchEqualTheRecords) {
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, scaled(600));
  const std::string hmm = dir.file("three.hmm");
  test::run_command(
      "cat /usr/share/doc/hmmer/examples/tutorial/globins4.hmm "
      "/usr/share/doc/hmmer/examples/tutorial/fn3.hmm "
      "/usr/share/doc/hmmer/examples/tutorial/globins4.hmm > " +
      hmm);
  const std::vector<HmmModel> models = read_hmm_file(hmm);
  std::vector<std::string> names;
  for (const HmmModel& m : models) names.push_back(m.name);
  const std::vector<std::string> group_names = app::query_group_names(names);
  std::vector<std::string> groups;
  for (const std::string& g : group_names) groups.push_back("/results/hmmsearch/" + g);
  ASSERT_EQ(groups.back(), "/results/hmmsearch/globins4#2");
  app::HybridOptions h;
  h.test_gpus = 1;
  h.fault_every = 3;
  h.block_residues = 2000;
  h.warnings = false;
  const std::string out = dir.file("out.h5");
  app::SearchRun run;
  {
    io::Hdf5Writer file(out);
    {
      app::ResultStream stream(file, group_names);
      run = app::run_hmmsearch(models, db, relaxed_config(4), h, &stream);
    }
    file.commit();
  }
  ASSERT_EQ(run.queries.size(), 3u);
  const io::Hdf5Reader reader(out);
  for (std::size_t q = 0; q < 3; ++q) {
    const std::vector<app::TargetRecord>& t = run.queries[q].targets;
    ASSERT_GT(t.size(), 10u) << groups[q];
    const std::string& g = groups[q];
    // The query's trace, written as it ended (write_query_trace): a pass's rows with its
    // first model, the others pointing there.
    const app::QueryResult& result = run.queries[q];
    const std::string trace = "/trace/" + group_names[q];
    if (result.pass_first == q) {
      EXPECT_EQ(reader.read_int32(trace + "/worker").size(), result.schedule.trace.size());
      EXPECT_EQ(reader.attribute_int(trace, "models_in_pass"),
                static_cast<std::int64_t>(result.pass_models));
    } else {
      EXPECT_EQ(reader.attribute_string(trace, "trace_in"),
                "/trace/" + group_names[result.pass_first]);
    }
    // The columns, then, as the query ended (write_query_summary), evalue, score_bits,
    // bias_bits, reported, included, and the domains group where there are domains.
    bool domains = false;
    for (const auto& record : t) domains = domains || !record.domains.domains.empty();
    EXPECT_EQ(reader.list(g).size(),
              app::ResultStream::column_names().size() + 5 + (domains ? 1 : 0))
        << g;
    const std::vector<double> evalue = reader.read_doubles(g + "/evalue");
    const std::vector<std::uint8_t> reported = reader.read_uint8(g + "/reported");
    const std::vector<std::uint8_t> included = reader.read_uint8(g + "/included");
    const std::vector<float> score = reader.read_floats(g + "/score_bits");
    ASSERT_EQ(evalue.size(), t.size()) << g;
    ASSERT_EQ(score.size(), t.size()) << g;
    ASSERT_EQ(included.size(), t.size()) << g;
    ASSERT_EQ(reported.size(), t.size()) << g;
    for (std::size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(std::memcmp(&evalue[i], &t[i].evalue, sizeof(double)), 0);
      EXPECT_EQ(reported[i], t[i].reported ? 1 : 0);
      EXPECT_EQ(included[i], t[i].included ? 1 : 0);
      if (t[i].is_hit()) {
        EXPECT_EQ(score[i], t[i].domains.score_bits);
      } else {
        EXPECT_TRUE(std::isnan(score[i]));
      }
    }
    const std::vector<std::int64_t> index = reader.read_int64(g + "/index");
    const std::vector<std::string> name = reader.read_strings(g + "/name");
    const std::vector<std::string> description = reader.read_strings(g + "/description");
    const std::vector<std::int32_t> length = reader.read_int32(g + "/length");
    const std::vector<float> msv = reader.read_floats(g + "/msv_bits");
    const std::vector<float> viterbi = reader.read_floats(g + "/viterbi_bits");
    const std::vector<float> forward = reader.read_floats(g + "/forward_bits");
    const std::vector<double> pvalue = reader.read_doubles(g + "/pvalue");
    const std::vector<std::uint8_t> stage = reader.read_uint8(g + "/stage");
    ASSERT_EQ(index.size(), t.size()) << g;
    for (std::size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(index[i], t[i].index);
      EXPECT_EQ(name[i], t[i].name);
      EXPECT_EQ(description[i], t[i].description);
      EXPECT_EQ(length[i], t[i].length);
      EXPECT_EQ(std::memcmp(&msv[i], &t[i].scores.msv_bits, sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(&viterbi[i], &t[i].scores.viterbi_bits, sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(&forward[i], &t[i].scores.forward_bits, sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(&pvalue[i], &t[i].scores.pvalue, sizeof(double)), 0);
      EXPECT_EQ(stage[i], static_cast<std::uint8_t>(t[i].scores.stage));
    }
  }

  // The first query's columns cannot be created (a dataset is in the way): the search
  // fails with the file and the object, and the uncommitted file is removed.
  const std::string blocked = dir.file("blocked.h5");
  {
    io::Hdf5Writer file(blocked);
    file.write(groups[0] + "/name", std::vector<float>{1.0f});
    app::ResultStream stream(file, group_names);
    try {
      (void)app::run_hmmsearch(models, db, relaxed_config(2), h, &stream);
      ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(groups[0] + "/name"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(std::filesystem::exists(blocked));
}

// The [scheduler] table of a configuration file, overridden by the command line, and
// recorded in /run config_toml; fault warnings go away with --quiet.
TEST(SchedulerCli, ConfigTableCommandLineOverridesAndQuietFaults) {
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 300);
  const std::string cfg = dir.file("s.toml");
  test::write_file(
      cfg,
      "[scheduler]\npolicy = \"static\"\nstatic_cpu_fraction = 0.25\nblock_residues = 5000\n"
      "reuse_memory = \"64M\"\nqueue_depth = 3\ngpu_min_database = \"2G\"\n");
  const std::string out = dir.file("o.h5");
  const std::string base = std::string("DUET_DEBUG_TEST_GPU=1 DUET_DEBUG_GPU_FAULT_EVERY=2 ") +
                           DUET_BINARY + " hmmsearch --gpu-only --cpu 2 --config " + cfg +
                           " --h5 " + out;
  const auto r = test::run_command(
      base + " --policy adaptive --reuse-memory 1G --gpu-min-database 3M " + kModel + " " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("failed on blocks"), std::string::npos) << r.output;
  io::Hdf5Reader h5(out);
  const std::string toml = h5.attribute_string("/run", "config_toml");
  EXPECT_NE(toml.find("policy = \"adaptive\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("static_cpu_fraction = 0.25"), std::string::npos) << toml;
  EXPECT_NE(toml.find("block_residues = 5000"), std::string::npos) << toml;
  EXPECT_NE(toml.find("queue_depth = 3"), std::string::npos) << toml;
  EXPECT_NE(toml.find("reuse_memory = \"1G\""), std::string::npos) << toml;
  EXPECT_NE(toml.find("gpu_min_database = \"3M\""), std::string::npos) << toml;
  EXPECT_GT(h5.attribute_int("/run", "gpu_faults"), 0);
  EXPECT_GT(h5.attribute_int("/run", "blocks"), 10);
  EXPECT_GE(h5.attribute_double("/run", "idle_tail_seconds"), 0.0);

  const auto quiet = test::run_command(base + " --quiet " + kModel + " " + db);
  ASSERT_EQ(quiet.status, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("failed on blocks"), std::string::npos) << quiet.output;

  const auto bad =
      test::run_command(std::string(DUET_BINARY) + " hmmsearch --reuse-memory lots --h5 " + out +
                        " " + kModel + " " + db);
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("--reuse-memory"), std::string::npos) << bad.output;
  const auto bad_size =
      test::run_command(std::string(DUET_BINARY) + " hmmsearch --gpu-min-database 1X --h5 " + out +
                        " " + kModel + " " + db);
  EXPECT_EQ(bad_size.status, 2) << bad_size.output;
  EXPECT_NE(bad_size.output.find("--gpu-min-database: '1X' is not a size"), std::string::npos)
      << bad_size.output;
}

// Ctrl-C at any moment, even while the command starts: no temporary file is left.
TEST(SchedulerCli, EarlySigintLeavesNoTemporaryFile) {
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 3000);
  for (int delay_ms : {5, 20, 50, 100, 200}) {
    const std::string out = dir.file("early.h5");
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int devnull = ::open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      dup2(devnull, 2);
      execl(DUET_BINARY, DUET_BINARY, "hmmsearch", "--max", "--cpu", "1", "--h5", out.c_str(),
            "/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm", db.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ASSERT_EQ(kill(pid, SIGINT), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    // Killed by the signal before the handler exists, stopped by it (exit 130), or (on a
    // fast machine) finished first with a complete output file.
    if (WIFEXITED(status)) {
      EXPECT_TRUE(WEXITSTATUS(status) == 130 || WEXITSTATUS(status) == 0) << "delay " << delay_ms;
    } else {
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << "delay " << delay_ms;
    }
    const bool finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      if (finished && entry.path() == out) continue;
      EXPECT_EQ(entry.path().extension(), ".fa")
          << "left behind after " << delay_ms << " ms: " << entry.path();
    }
    std::filesystem::remove(out);
  }
}

}  // namespace
}  // namespace duet
