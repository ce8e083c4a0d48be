// CpuPool: the CPU side of a pass on oneTBB.
//
// - The CPU workers are `workers` tokens in a task arena of that many worker threads
//   (--cpu). A token's turn is one oneTBB task: it takes one task from the BlockQueue
//   (a post task, a requeued block or a fresh one), runs it, and queues its next turn at
//   the back of the arena. A token that finds nothing is parked by the queue, which queues
//   its next turn once something changes: no thread waits for work.
// - A GPU feeder's host loop (run_host_loop) is a parallel loop in the same arena: the
//   feeder works on it and every worker thread that is between two turns, or has no turn
//   to run, steals chunks of it. The feeder's thread enters the arena in a slot kept for
//   feeders and, isolated, runs only chunks of its own loop.
// - With GPU feeders, each worker thread raises its nice value (a scheduler observer), so
//   that a feeder or parser thread that wakes gets a core at once.
//
// Worker w's state (its trace, the workload's per-worker scratch) is touched by one turn
// at a time, though turns may run on different threads.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>

#include "scheduler/block_queue.hpp"

namespace duet::scheduler {

class CpuPool {
 public:
  using RunTask = std::function<void(int worker, CpuTask& task)>;
  using Fail = std::function<void(std::exception_ptr)>;

  // `feeders`: threads that will call run_host_loop; `worker_nice` and `favoured`:
  // SchedulerOptions'.
  CpuPool(int workers, int feeders, int worker_nice, bool favoured = false);
  ~CpuPool();  // after start(): waits for the workers (wait()) and their last turns
  CpuPool(const CpuPool&) = delete;
  CpuPool& operator=(const CpuPool&) = delete;

  // Starts every worker on `queue`: run_task(w, task) for each task a worker takes, until
  // the queue is closed and drained, or cancelled. An exception of run_task goes to `fail`
  // (which should cancel the queue). Once only.
  void start(BlockQueue& queue, RunTask run_task, Fail fail);
  // Waits until every worker has finished.
  void wait();

  // Calls body(i) for every i in [0, n), in chunks of `chunk` indices, on this thread and
  // on idle worker threads; returns when all calls have returned and rethrows the first
  // exception a call threw. From a GPU feeder's thread (at most `feeders` at once).
  void run_host_loop(std::size_t n, std::size_t chunk,
                     const std::function<void(std::size_t)>& body);

 private:
  struct State;
  struct Turn;
  static void run(State& state, int worker);
  static void queue_turn(State& state, int worker);
  std::unique_ptr<State> state_;
};

// Calls body(i) for every i in [0, n) on the calling thread and up to `threads` - 1 more of
// oneTBB's (work outside a pass, such as one profile per model); returns when all calls
// have returned and rethrows the first exception a call threw.
void parallel_for_each(int threads, std::size_t n, const std::function<void(std::size_t)>& body);

// Seconds spent running host-loop chunks since the process started, by who ran them: the
// feeder that opened the loop, or a CPU worker thread. For measurements (DUET_TIMES);
// relaxed atomics, read after the pass.
struct HostLoopSeconds {
  double feeder = 0, workers = 0;
};
HostLoopSeconds host_loop_seconds();

}  // namespace duet::scheduler
