// BlockQueue: the bounded queue of blocks that CPU workers and GPU feeders drain at the
// same time, together with the post-queue (blocks whose CPU-only stages remain after a
// device ran the early ones).
//
// - push() (the reader) blocks while `depth` fresh blocks wait: the memory budget.
// - requeue() returns blocks a device failed on; they go ahead of fresh blocks, marked
//   cpu_only, and do not count against the depth.
// - pop_for_cpu() serves the post-queue first, then requeued blocks, then fresh ones that
//   a CPU may take; pop_batch_for_gpu() takes up to K blocks by count and residue budget.
// - A popper waits while nothing it may take is queued and more may come: the reader has
//   not closed the queue, or a GPU batch is still out (it may requeue or post). Both return
//   nothing once the queue is closed and drained, or cancelled.
// - run_host_loop() (a GPU feeder's host work, e.g. the cascade's decisions for every
//   target of a batch) shares a loop with the CPU workers: pop_for_cpu() hands it out
//   before anything else, so an idle or freed worker helps; the caller works on it too.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "scheduler/block.hpp"

namespace duet::scheduler {

// One run_host_loop call: indices [0, n) handed out in chunks to whoever calls work().
class HostLoop {
 public:
  HostLoop(std::size_t n, std::size_t chunk, const std::function<void(std::size_t)>& body)
      : n_(n), chunk_(chunk == 0 ? 1 : chunk), body_(body) {}
  // Runs chunks until none is left to hand out; the first exception of a body is kept.
  // Returns the seconds this call spent in chunks (a measurement, see HostLoopSeconds).
  double work();
  bool exhausted() const { return next_.load() >= n_; }
  // Waits until every index was run (by anyone); rethrows the first exception.
  void wait();

 private:
  std::size_t n_, chunk_;
  const std::function<void(std::size_t)>& body_;
  std::atomic<std::size_t> next_{0};
  std::mutex mutex_;
  std::condition_variable all_done_;
  std::size_t done_ = 0;
  std::exception_ptr error_;
};

// Seconds spent running host-loop chunks since the process started, by who ran them: the
// feeder that opened the loop, a worker between two targets of its block or post task
// (help_host_loop), or a worker that took the loop as a task of its own. For measurements
// (DUET_TIMES); relaxed atomics, read after the pass.
struct HostLoopSeconds {
  double feeder = 0, inside_tasks = 0, as_tasks = 0;
};
HostLoopSeconds host_loop_seconds();
void add_host_loop_seconds_as_task(double s);

struct CpuTask {
  enum class Kind { block, post, host_loop } kind = Kind::block;
  BlockPtr block;
  std::shared_ptr<HostLoop> loop;  // host_loop: run loop->work()
  PostStatePtr post;               // post: what the device left of the block
};

class BlockQueue {
 public:
  explicit BlockQueue(std::size_t depth) : depth_(depth == 0 ? 1 : depth) {}

  // False when the queue was cancelled (the block is dropped).
  bool push(BlockPtr block);
  void close();   // no more fresh blocks
  void cancel();  // drop everything, wake every waiter; every pop returns nothing

  void requeue(std::vector<BlockPtr> blocks);
  void post(BlockPtr block, PostStatePtr state);

  std::optional<CpuTask> pop_for_cpu();
  // Empty vector: nothing more for GPUs. A non-empty batch must be ended with
  // end_gpu_batch() after its blocks were requeued or posted or finished.
  std::vector<BlockPtr> pop_batch_for_gpu(std::size_t max_blocks, std::int64_t max_residues);
  void end_gpu_batch();

  // Calls body(i) for every i in [0, n), in chunks of `chunk` indices, on this thread and
  // on CPU workers that ask for work meanwhile; returns when all calls have returned and
  // rethrows the first exception a call threw. Safe after close() or cancel() (the caller
  // then does all of it).
  void run_host_loop(std::size_t n, std::size_t chunk,
                     const std::function<void(std::size_t)>& body);
  // Runs chunks of a host loop that has some left (a CPU worker between two targets of a
  // block); false, after one atomic load, when none has.
  bool help_host_loop();

  bool cancelled() const;

 private:
  bool cpu_may_take(const Block& b) const { return b.affinity != Affinity::gpu_only; }
  bool gpu_may_take(const Block& b) const { return b.affinity != Affinity::cpu_only; }
  bool more_may_come() const { return !closed_ || gpu_batches_out_ > 0; }
  // The first host loop with chunks left (exhausted ones dropped); mutex_ held.
  std::shared_ptr<HostLoop> open_loop_locked();

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t depth_;
  std::deque<BlockPtr> fresh_, requeued_;
  std::deque<std::pair<BlockPtr, PostStatePtr>> post_;
  std::vector<std::shared_ptr<HostLoop>> loops_;  // host loops with chunks left to hand out
  std::atomic<int> loops_open_{0};                // loops_.size(), readable without the lock
  int gpu_batches_out_ = 0;
  bool closed_ = false, cancelled_ = false;
};

}  // namespace duet::scheduler
