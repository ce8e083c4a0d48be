// BlockQueue: the bounded queue of blocks that CPU workers and GPU feeders drain at the
// same time, together with the post-queue (blocks whose CPU-only stages remain after a
// device ran the early ones).
//
// - push() (the reader) blocks while `depth` fresh blocks wait: the memory budget. Each
//   fresh block carries its affinity in the queue, not in the block, which passes run at
//   the same time may share.
// - requeue() returns blocks a device failed on; they go ahead of fresh blocks, for the
//   CPU only, and do not count against the depth.
// - take_for_cpu() serves the post-queue first, then requeued blocks, then fresh ones that
//   a CPU may take; pop_batch_for_gpu() takes up to K blocks by count and residue budget.
// - More may come while the reader has not closed the queue, or a GPU batch is still out
//   (it may requeue or post). A GPU feeder waits then; both sides get nothing once the
//   queue is closed and drained, or cancelled.
// - The CPU side does not wait in the queue: take_for_cpu() parks a worker that finds
//   nothing (the CPU pool's token, cpu_pool.hpp) and hands it back to the pool as soon as
//   something changes, so that the worker's thread is free meanwhile.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/block.hpp"

namespace duet::scheduler {

struct CpuTask {
  enum class Kind { block, post } kind = Kind::block;
  BlockPtr block;
  PostStatePtr post;  // post: what the device left of the block
};

class BlockQueue {
 public:
  explicit BlockQueue(std::size_t depth) : depth_(depth == 0 ? 1 : depth) {}

  // False when the queue was cancelled (the block is dropped).
  bool push(BlockPtr block, Affinity affinity = Affinity::any);
  void close();   // no more fresh blocks
  void cancel();  // drop everything, wake every waiter; every pop returns nothing

  void requeue(std::vector<BlockPtr> blocks);
  void post(BlockPtr block, PostStatePtr state);

  // What take_for_cpu found.
  enum class Take { task, parked, finished };
  // Moves the CPU's next task into `task` without waiting. With nothing to take while more
  // may come, parks `worker` and returns parked: the queue passes it to the resume
  // function (set_resume) once something changes. finished: closed and drained, or
  // cancelled (the worker is not parked).
  Take take_for_cpu(int worker, CpuTask& task);
  // Called, with the queue's lock held, for each parked worker when the queue changes; it
  // must not call back into the queue on this thread.
  void set_resume(std::function<void(int worker)> resume);
  // Called, with the queue's lock held, when a CPU worker finds a fresh block it may take:
  // false leaves the block to the GPUs and parks the worker
  // (SchedulerOptions::cpu_leaves_blocks_to_gpus). It must not call back into the queue.
  // None: a CPU takes every block it may.
  void set_cpu_should_take(std::function<bool()> should_take);
  // Resumes the parked CPU workers, so that they ask again (the answer of
  // set_cpu_should_take's function changed: a GPU stopped taking blocks).
  void resume_cpu_workers();
  // Empty vector: nothing more for GPUs. A non-empty batch must be ended with
  // end_gpu_batch() after its blocks were requeued or posted or finished.
  // wait = false: returns at once, empty when no block a GPU may take is waiting.
  std::vector<BlockPtr> pop_batch_for_gpu(std::size_t max_blocks, std::int64_t max_residues,
                                          bool wait = true);
  void end_gpu_batch();
  // Whether a GPU may still get a batch: not cancelled, and the reader not done or a fresh
  // block a GPU may take waiting.
  bool gpu_work_may_come() const;

  bool cancelled() const;

 private:
  struct Fresh {
    BlockPtr block;
    Affinity affinity;
  };
  static bool cpu_may_take(const Fresh& f) { return f.affinity != Affinity::gpu_only; }
  static bool gpu_may_take(const Fresh& f) { return f.affinity != Affinity::cpu_only; }
  bool more_may_come() const { return !closed_ || gpu_batches_out_ > 0; }
  // Hands every parked worker to resume_; mutex_ held.
  void resume_parked_locked();

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t depth_;
  std::deque<Fresh> fresh_;
  std::deque<BlockPtr> requeued_;
  std::deque<std::pair<BlockPtr, PostStatePtr>> post_;
  std::function<void(int)> resume_;
  std::function<bool()> cpu_should_take_;
  std::vector<std::pair<int, std::chrono::steady_clock::time_point>> parked_;  // since when
  int gpu_batches_out_ = 0;
  bool closed_ = false, cancelled_ = false;
};

}  // namespace duet::scheduler
