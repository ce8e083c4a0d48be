// BlockQueue: see block_queue.hpp. One mutex guards all three queues; the reader and GPU
// feeders wait on one condition variable, parked CPU workers are resumed through the pool.
#include "scheduler/block_queue.hpp"

#include <algorithm>
#include <chrono>

#include "core/thread_cpu.hpp"

namespace duet::scheduler {

bool BlockQueue::push(BlockPtr block, Affinity affinity) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return cancelled_ || fresh_.size() < depth_; });
  if (cancelled_) return false;
  fresh_.push_back({std::move(block), affinity});
  const bool for_cpu = cpu_may_take(fresh_.back());
  changed_.notify_all();
  if (for_cpu) resume_parked_locked();
  return true;
}

void BlockQueue::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  changed_.notify_all();
  resume_parked_locked();
}

void BlockQueue::cancel() {
  std::lock_guard lock(mutex_);
  cancelled_ = closed_ = true;
  fresh_.clear();
  requeued_.clear();
  post_.clear();
  changed_.notify_all();
  resume_parked_locked();
}

bool BlockQueue::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

void BlockQueue::requeue(std::vector<BlockPtr> blocks) {
  std::lock_guard lock(mutex_);
  if (cancelled_) return;
  for (auto& b : blocks) requeued_.push_back(std::move(b));
  changed_.notify_all();
  resume_parked_locked();
}

void BlockQueue::post(BlockPtr block, PostStatePtr state) {
  std::lock_guard lock(mutex_);
  if (cancelled_) return;
  post_.emplace_back(std::move(block), std::move(state));
  changed_.notify_all();
  resume_parked_locked();
}

void BlockQueue::set_resume(std::function<void(int)> resume) {
  std::lock_guard lock(mutex_);
  resume_ = std::move(resume);
}

void BlockQueue::set_cpu_should_take(std::function<bool()> should_take) {
  std::lock_guard lock(mutex_);
  cpu_should_take_ = std::move(should_take);
}

void BlockQueue::resume_cpu_workers() {
  std::lock_guard lock(mutex_);
  resume_parked_locked();
}

void BlockQueue::resume_parked_locked() {
  if (parked_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  double waited = 0;
  for (const auto& [worker, since] : parked_) {
    waited += std::chrono::duration<double>(now - since).count();
    resume_(worker);
  }
  parked_.clear();
  note_cpu_queue_wait_seconds(waited);
}

BlockQueue::Take BlockQueue::take_for_cpu(int worker, CpuTask& task) {
  std::lock_guard lock(mutex_);
  if (cancelled_) return Take::finished;
  if (!post_.empty()) {
    task = {CpuTask::Kind::post, std::move(post_.front().first), std::move(post_.front().second)};
    post_.pop_front();
    return Take::task;
  }
  if (!requeued_.empty()) {
    task = {CpuTask::Kind::block, std::move(requeued_.front()), nullptr};
    requeued_.pop_front();
    return Take::task;
  }
  const auto it = std::find_if(fresh_.begin(), fresh_.end(), cpu_may_take);
  if (it != fresh_.end() && (!cpu_should_take_ || cpu_should_take_())) {
    task = {CpuTask::Kind::block, std::move(it->block), nullptr};
    fresh_.erase(it);
    changed_.notify_all();  // room for the reader
    return Take::task;
  }
  if (!more_may_come() && fresh_.empty()) return Take::finished;
  parked_.emplace_back(worker, std::chrono::steady_clock::now());
  return Take::parked;
}

std::vector<BlockPtr> BlockQueue::pop_batch_for_gpu(std::size_t max_blocks,
                                                    std::int64_t max_residues, bool wait) {
  std::unique_lock lock(mutex_);
  std::vector<BlockPtr> batch;
  for (;;) {
    if (cancelled_) return batch;
    std::int64_t residues = 0;
    for (auto it = fresh_.begin();
         it != fresh_.end() && batch.size() < std::max<std::size_t>(1, max_blocks);) {
      const std::int64_t r = it->block->work();
      if (!gpu_may_take(*it)) {
        ++it;
        continue;
      }
      if (!batch.empty() && residues + r > max_residues) break;
      residues += r;
      batch.push_back(std::move(it->block));
      it = fresh_.erase(it);
    }
    if (!batch.empty()) {
      ++gpu_batches_out_;
      changed_.notify_all();
      return batch;
    }
    // Only the reader can bring blocks a GPU may take (requeued ones are cpu_only).
    if (closed_ || !wait) return batch;
    changed_.wait(lock);
  }
}

bool BlockQueue::gpu_work_may_come() const {
  std::lock_guard lock(mutex_);
  if (cancelled_) return false;
  return !closed_ || std::any_of(fresh_.begin(), fresh_.end(), gpu_may_take);
}

void BlockQueue::end_gpu_batch() {
  std::lock_guard lock(mutex_);
  --gpu_batches_out_;
  changed_.notify_all();
  resume_parked_locked();
}

}  // namespace duet::scheduler
