// CpuPool: see cpu_pool.hpp.
//
// ThreadSanitizer: Debian's libtbb is not instrumented, so TSAN does not see a task handed
// from one thread to another through it. The pool says so itself (hand_over before a task
// or a loop goes to oneTBB, take_over where it starts and where its results are read),
// and tests/tsan.supp leaves out only races on oneTBB's own task objects: those whose
// innermost frame is oneTBB's code, or the call of a turn or a chunk (Turn, HostLoopChunk)
// reading the task object it lives in.
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
// Whether the calling thread runs a CPU worker's task (its CPU time counted as the task's).
thread_local bool in_worker_task = false;

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
    hand_over(this);
    observe(true);
  }
  // observe(false) waits for the callbacks under way.
  ~LowerWorkerPriority() override {
    observe(false);
    take_over(this);
  }
  void on_scheduler_entry(bool is_worker) override {
    take_over(this);
    if (is_worker) lower_thread_priority(increment_);
    hand_over(this);
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
  std::atomic<int> running{0};  // turns under way: the state outlives them

  State(int workers_in, int feeders, bool favoured)
      : workers(workers_in),
        parallelism(tbb::global_control::max_allowed_parallelism,
                    static_cast<std::size_t>(workers_in) + 1),
        arena(workers_in + feeders, static_cast<unsigned>(feeders),
              favoured ? tbb::task_arena::priority::high : tbb::task_arena::priority::normal),
        turn_tokens(static_cast<std::size_t>(workers_in)) {}
};

// A turn as oneTBB holds it: plain data, so that oneTBB copies it in its own code. Its
// call is the one frame tests/tsan.supp names: it reads the task object oneTBB made on
// the thread that queued it.
struct CpuPool::Turn {
  State* state;
  int worker;
  char* token;  // &state->turn_tokens[worker]
  [[gnu::noinline]] void operator()() const {
    take_over(token);
    State* s = state;
    const int w = worker;
    s->running.fetch_add(1, std::memory_order_relaxed);
    run(*s, w);
    s->running.fetch_sub(1, std::memory_order_release);  // the last touch of the state
  }
};

// One turn of worker `w`: one task from the queue, then the next turn at the back of the
// arena; parked: the queue queues the next turn; finished: the worker ends.
void CpuPool::run(State& state, int w) {
  CpuTask task;
  switch (state.queue->take_for_cpu(w, task)) {
    case BlockQueue::Take::parked:
      return;
    case BlockQueue::Take::finished: {
      std::lock_guard lock(state.mutex);
      ++state.finished;
      state.all_finished.notify_all();
      return;
    }
    case BlockQueue::Take::task:
      break;
  }
  {
    const ThreadCpuMark start = thread_cpu_mark();
    in_worker_task = true;
    try {
      state.run_task(w, task);
    } catch (...) {
      state.fail(std::current_exception());
    }
    in_worker_task = false;
    task = {};
    account_thread_cpu_since("CPU workers", start);
  }
  queue_turn(state, w);
}

void CpuPool::queue_turn(State& state, int w) {
  char* token = &state.turn_tokens[static_cast<std::size_t>(w)];
  hand_over(token);
  state.arena.enqueue(Turn{&state, w, token});
}

CpuPool::CpuPool(int workers, int feeders, int worker_nice, bool favoured)
    : state_(std::make_unique<State>(std::max(workers, 1), std::max(feeders, 0), favoured)) {
  state_->arena.initialize();
  if (feeders > 0 && worker_nice > 0)
    state_->priority = std::make_unique<LowerWorkerPriority>(state_->arena, worker_nice);
}

CpuPool::~CpuPool() {
  if (state_->queue == nullptr) return;
  wait();
  state_->queue->set_resume(nullptr);
  while (state_->running.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void CpuPool::start(BlockQueue& queue, RunTask run_task, Fail fail) {
  State& s = *state_;
  s.queue = &queue;
  s.run_task = std::move(run_task);
  s.fail = std::move(fail);
  // Called with the queue's lock held: a parked worker cannot be resumed twice.
  queue.set_resume([&s](int w) { queue_turn(s, w); });
  for (int w = 0; w < s.workers; ++w) queue_turn(s, w);
}

void CpuPool::wait() {
  std::unique_lock lock(state_->mutex);
  state_->all_finished.wait(lock, [&] { return state_->finished == state_->workers; });
}

namespace {

// One parallel loop (a feeder's host loop, or parallel_for_each), on its caller's stack.
struct HostLoop {
  const std::function<void(std::size_t)>* body;
  std::thread::id feeder;       // the caller
  bool timed;                   // counted in host_loop_seconds
  char started = 0, ended = 0;  // addresses for hand_over / take_over
  // CPU time of the chunks counted apart (run_chunk), added to the accounts once the loop
  // ends.
  std::atomic<std::int64_t> apart_ns{0};
};

// hand_over / take_over at the end of a scope, an exception's unwinding included.
struct HandOverAtEnd {
  void* token;
  ~HandOverAtEnd() { hand_over(token); }
};
struct TakeOverAtEnd {
  void* token;
  ~TakeOverAtEnd() { take_over(token); }
};

void run_chunk(HostLoop& loop, std::size_t begin, std::size_t end) {
  take_over(&loop.started);
  const HandOverAtEnd done{&loop.ended};
  // A chunk counts with its thread where that thread is counted already (the loop's caller,
  // a feeder; a CPU worker inside its task); on any other oneTBB worker, under a kind of
  // its own.
  const bool on_caller = std::this_thread::get_id() == loop.feeder;
  const bool counted_apart = !on_caller && !in_worker_task;
  const double cpu0 = counted_apart ? thread_cpu_now() : 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = begin; i != end; ++i) (*loop.body)(i);
  if (loop.timed) {
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    (on_caller ? feeder_ns : workers_ns).fetch_add(ns, std::memory_order_relaxed);
  }
  if (counted_apart) {
    loop.apart_ns.fetch_add(static_cast<std::int64_t>((thread_cpu_now() - cpu0) * 1e9),
                            std::memory_order_relaxed);
  }
}

// Adds a loop's chunks counted apart to the thread CPU accounts at the end of a scope
// (one locked addition per loop, not per chunk), an exception's unwinding included.
struct CountApartAtEnd {
  HostLoop& loop;
  ~CountApartAtEnd() {
    const std::int64_t ns = loop.apart_ns.load(std::memory_order_relaxed);
    if (ns > 0) {
      add_thread_cpu_seconds(loop.timed ? "CPU workers (host loops)" : "CPU workers (set-up loops)",
                             static_cast<double>(ns) / 1e9);
    }
  }
};

// A chunk as parallel_for holds it: plain data, copied by oneTBB's own code. Its call is
// the one frame tests/tsan.supp names, as CpuPool::Turn's.
struct HostLoopChunk {
  HostLoop* loop;
  [[gnu::noinline]] void operator()(const tbb::blocked_range<std::size_t>& range) const {
    run_chunk(*loop, range.begin(), range.end());
  }
};

// The loop's chunks on `arena`, the caller working on them too and, isolated, on nothing
// else.
void run_loop(tbb::task_arena& arena, HostLoop& loop, std::size_t n, std::size_t chunk) {
  hand_over(&loop.started);
  // Every chunk has ended, also when one threw (parallel_for waits for the others).
  const TakeOverAtEnd ended{&loop.ended};
  const CountApartAtEnd counted{loop};
  arena.execute([&] {
    tbb::this_task_arena::isolate([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, std::max<std::size_t>(chunk, 1)),
                        HostLoopChunk{&loop}, tbb::simple_partitioner());
    });
  });
}

}  // namespace

void CpuPool::run_host_loop(std::size_t n, std::size_t chunk,
                            const std::function<void(std::size_t)>& body) {
  if (n == 0) return;
  HostLoop loop{&body, std::this_thread::get_id(), true};
  run_loop(state_->arena, loop, n, chunk);
}

void parallel_for_each(int threads, std::size_t n, const std::function<void(std::size_t)>& body) {
  if (n == 0) return;
  HostLoop loop{&body, std::this_thread::get_id(), false};
  threads = std::max(threads, 1);
  // As a pass's pool (oneTBB's default is one thread per core, fewer than `threads` may
  // be), and with a pass's limit: the smallest limit of those alive holds, and a pass may
  // run meanwhile (a model split's other line).
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism,
                                  static_cast<std::size_t>(threads) + 1);
  tbb::task_arena arena(threads);
  run_loop(arena, loop, n, 1);
}

}  // namespace duet::scheduler
