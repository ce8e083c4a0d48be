// CpuPool: see cpu_pool.hpp.
//
// ThreadSanitizer: Debian's libtbb is not instrumented, so TSAN does not see a task handed
// from one thread to another through it. The pool says so itself (hand_over before a task
// or a loop goes to oneTBB, take_over where it starts and where its results are read),
// and tests/tsan.supp leaves out only races whose innermost frame is oneTBB's own code.
#include "scheduler/cpu_pool.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_scheduler_observer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/thread_cpu.hpp"

#if defined(__SANITIZE_THREAD__)
#define DUET_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DUET_UNDER_TSAN 1
#endif
#endif
#ifdef DUET_UNDER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace duet::scheduler {

namespace {

#ifdef DUET_UNDER_TSAN
void hand_over(void* token) {
  __tsan_release(token);
}
void take_over(void* token) {
  __tsan_acquire(token);
}
#else
void hand_over(void*) {}
void take_over(void*) {}
#endif

std::atomic<std::int64_t> feeder_ns{0}, workers_ns{0};

// Raises the calling thread's nice value to `increment` above what it was before its
// first call (a thread may always lower its own priority, never raise it back). A oneTBB
// worker thread outlives the pass, so it is lowered once.
void lower_thread_priority(int increment) {
  thread_local int lowered = 0;
  if (increment <= lowered) return;
  const id_t thread = static_cast<id_t>(::gettid());
  errno = 0;
  const int current = ::getpriority(PRIO_PROCESS, thread);
  if (errno != 0) return;
  ::setpriority(PRIO_PROCESS, thread, std::min(19, current + increment - lowered));
  lowered = increment;
}

class LowerWorkerPriority final : public tbb::task_scheduler_observer {
 public:
  LowerWorkerPriority(tbb::task_arena& arena, int increment)
      : tbb::task_scheduler_observer(arena), increment_(increment) {
    observe(true);
  }
  ~LowerWorkerPriority() override { observe(false); }
  void on_scheduler_entry(bool is_worker) override {
    if (is_worker) lower_thread_priority(increment_);
  }

 private:
  int increment_;
};

}  // namespace

HostLoopSeconds host_loop_seconds() {
  const auto seconds = [](const std::atomic<std::int64_t>& ns) {
    return static_cast<double>(ns.load(std::memory_order_relaxed)) / 1e9;
  };
  return {seconds(feeder_ns), seconds(workers_ns)};
}

struct CpuPool::State {
  int workers;
  // oneTBB's worker threads: one per CPU worker (its default is one per core less one).
  tbb::global_control parallelism;
  // The workers' slots, and one kept for each feeder's host loops.
  tbb::task_arena arena;
  std::unique_ptr<LowerWorkerPriority> priority;
  BlockQueue* queue = nullptr;
  RunTask run_task;
  Fail fail;
  std::vector<char> turn_tokens;  // addresses for hand_over / take_over, one per worker
  std::mutex mutex;
  std::condition_variable all_finished;
  int finished = 0;

  State(int workers_in, int feeders)
      : workers(workers_in),
        parallelism(tbb::global_control::max_allowed_parallelism,
                    static_cast<std::size_t>(workers_in) + 1),
        arena(workers_in + feeders, feeders),
        turn_tokens(static_cast<std::size_t>(workers_in)) {}
};

// One turn of worker `w`: one task from the queue, then the next turn at the back of the
// arena; parked: the queue queues the next turn; finished: the worker ends.
void CpuPool::turn(const std::shared_ptr<State>& state, int w) {
  take_over(&state->turn_tokens[static_cast<std::size_t>(w)]);
  CpuTask task;
  switch (state->queue->take_for_cpu(w, task)) {
    case BlockQueue::Take::parked:
      return;
    case BlockQueue::Take::finished: {
      std::lock_guard lock(state->mutex);
      ++state->finished;
      state->all_finished.notify_all();
      return;
    }
    case BlockQueue::Take::task:
      break;
  }
  {
    const ThreadCpuMark start = thread_cpu_mark();
    try {
      state->run_task(w, task);
    } catch (...) {
      state->fail(std::current_exception());
    }
    task = {};
    account_thread_cpu_since("CPU workers", start);
  }
  queue_turn(state, w);
}

void CpuPool::queue_turn(const std::shared_ptr<State>& state, int w) {
  hand_over(&state->turn_tokens[static_cast<std::size_t>(w)]);
  state->arena.enqueue([state, w] { turn(state, w); });
}

CpuPool::CpuPool(int workers, int feeders, int worker_nice)
    : state_(std::make_shared<State>(std::max(workers, 1), std::max(feeders, 0))) {
  state_->arena.initialize();
  if (feeders > 0 && worker_nice > 0)
    state_->priority = std::make_unique<LowerWorkerPriority>(state_->arena, worker_nice);
}

CpuPool::~CpuPool() = default;

void CpuPool::start(BlockQueue& queue, RunTask run_task, Fail fail) {
  State& s = *state_;
  s.queue = &queue;
  s.run_task = std::move(run_task);
  s.fail = std::move(fail);
  std::weak_ptr<State> weak = state_;
  // Called with the queue's lock held: a parked worker cannot be resumed twice.
  queue.set_resume([weak](int w) {
    if (auto state = weak.lock()) queue_turn(state, w);
  });
  for (int w = 0; w < s.workers; ++w) queue_turn(state_, w);
}

void CpuPool::wait() {
  std::unique_lock lock(state_->mutex);
  state_->all_finished.wait(lock, [&] { return state_->finished == state_->workers; });
}

void CpuPool::run_host_loop(std::size_t n, std::size_t chunk,
                            const std::function<void(std::size_t)>& body) {
  if (n == 0) return;
  const std::thread::id feeder = std::this_thread::get_id();
  char started = 0, ended = 0;  // addresses for hand_over / take_over
  hand_over(&started);
  state_->arena.execute([&] {
    tbb::this_task_arena::isolate([&] {
      tbb::parallel_for(
          tbb::blocked_range<std::size_t>(0, n, std::max<std::size_t>(chunk, 1)),
          [&](const tbb::blocked_range<std::size_t>& range) {
            take_over(&started);
            const auto t0 = std::chrono::steady_clock::now();
            for (std::size_t i = range.begin(); i != range.end(); ++i) body(i);
            const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - t0)
                                .count();
            (std::this_thread::get_id() == feeder ? feeder_ns : workers_ns)
                .fetch_add(ns, std::memory_order_relaxed);
            hand_over(&ended);
          },
          tbb::simple_partitioner());
    });
  });
  take_over(&ended);
}

}  // namespace duet::scheduler
