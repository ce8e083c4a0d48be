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
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "scheduler/block.hpp"

namespace duet::scheduler {

struct CpuTask {
  enum class Kind { block, post } kind = Kind::block;
  BlockPtr block;
};

class BlockQueue {
 public:
  explicit BlockQueue(std::size_t depth) : depth_(depth == 0 ? 1 : depth) {}

  // False when the queue was cancelled (the block is dropped).
  bool push(BlockPtr block);
  void close();   // no more fresh blocks
  void cancel();  // drop everything, wake every waiter; every pop returns nothing

  void requeue(std::vector<BlockPtr> blocks);
  void post(BlockPtr block);

  std::optional<CpuTask> pop_for_cpu();
  // Empty vector: nothing more for GPUs. A non-empty batch must be ended with
  // end_gpu_batch() after its blocks were requeued or posted or finished.
  std::vector<BlockPtr> pop_batch_for_gpu(std::size_t max_blocks, std::int64_t max_residues);
  void end_gpu_batch();

  bool cancelled() const;

 private:
  bool cpu_may_take(const Block& b) const { return b.affinity != Affinity::gpu_only; }
  bool gpu_may_take(const Block& b) const { return b.affinity != Affinity::cpu_only; }
  bool more_may_come() const { return !closed_ || gpu_batches_out_ > 0; }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t depth_;
  std::deque<BlockPtr> fresh_, requeued_, post_;
  int gpu_batches_out_ = 0;
  bool closed_ = false, cancelled_ = false;
};

}  // namespace duet::scheduler
