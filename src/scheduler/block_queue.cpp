// BlockQueue: see block_queue.hpp. One mutex and one condition variable guard all three
// queues, so that a waiter wakes for whichever of them gets work.
#include "scheduler/block_queue.hpp"

#include <algorithm>
#include <chrono>

#include "scheduler/thread_cpu.hpp"

namespace duet::scheduler {

namespace {
std::atomic<std::int64_t> feeder_ns{0}, inside_ns{0}, task_ns{0};
std::int64_t to_ns(double s) {
  return static_cast<std::int64_t>(s * 1e9);
}
}  // namespace

HostLoopSeconds host_loop_seconds() {
  const auto seconds = [](const std::atomic<std::int64_t>& ns) {
    return static_cast<double>(ns.load(std::memory_order_relaxed)) / 1e9;
  };
  return {seconds(feeder_ns), seconds(inside_ns), seconds(task_ns)};
}

void add_host_loop_seconds_as_task(double s) {
  task_ns.fetch_add(to_ns(s), std::memory_order_relaxed);
}

bool BlockQueue::push(BlockPtr block) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return cancelled_ || fresh_.size() < depth_; });
  if (cancelled_) return false;
  fresh_.push_back(std::move(block));
  changed_.notify_all();
  return true;
}

void BlockQueue::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  changed_.notify_all();
}

void BlockQueue::cancel() {
  std::lock_guard lock(mutex_);
  cancelled_ = closed_ = true;
  fresh_.clear();
  requeued_.clear();
  post_.clear();
  changed_.notify_all();
}

bool BlockQueue::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

void BlockQueue::requeue(std::vector<BlockPtr> blocks) {
  std::lock_guard lock(mutex_);
  if (cancelled_) return;
  for (auto& b : blocks) {
    b->affinity = Affinity::cpu_only;
    requeued_.push_back(std::move(b));
  }
  changed_.notify_all();
}

void BlockQueue::post(BlockPtr block, PostStatePtr state) {
  std::lock_guard lock(mutex_);
  if (cancelled_) return;
  post_.emplace_back(std::move(block), std::move(state));
  changed_.notify_all();
}

double HostLoop::work() {
  using Clock = std::chrono::steady_clock;
  Clock::duration spent{};
  for (;;) {
    const std::size_t begin = next_.fetch_add(chunk_);
    if (begin >= n_) return std::chrono::duration<double>(spent).count();
    const auto started = Clock::now();
    const std::size_t end = std::min(n_, begin + chunk_);
    std::exception_ptr error;
    try {
      for (std::size_t i = begin; i < end; ++i) body_(i);
    } catch (...) {
      error = std::current_exception();
    }
    spent += Clock::now() - started;
    std::lock_guard lock(mutex_);
    if (error && !error_) error_ = error;
    done_ += end - begin;
    if (done_ == n_) all_done_.notify_all();
  }
}

void HostLoop::wait() {
  std::unique_lock lock(mutex_);
  all_done_.wait(lock, [&] { return done_ == n_; });
  if (error_) std::rethrow_exception(error_);
}

void BlockQueue::run_host_loop(std::size_t n, std::size_t chunk,
                               const std::function<void(std::size_t)>& body) {
  if (n == 0) return;
  auto loop = std::make_shared<HostLoop>(n, chunk, body);
  if (n > chunk) {  // worth sharing
    std::lock_guard lock(mutex_);
    loops_.push_back(loop);
    loops_open_ = static_cast<int>(loops_.size());
    changed_.notify_all();
  }
  feeder_ns.fetch_add(to_ns(loop->work()), std::memory_order_relaxed);
  {
    std::lock_guard lock(mutex_);
    std::erase(loops_, loop);
    loops_open_ = static_cast<int>(loops_.size());
  }
  loop->wait();
}

std::shared_ptr<HostLoop> BlockQueue::open_loop_locked() {
  std::erase_if(loops_, [](const std::shared_ptr<HostLoop>& l) { return l->exhausted(); });
  loops_open_ = static_cast<int>(loops_.size());
  return loops_.empty() ? nullptr : loops_.front();
}

bool BlockQueue::help_host_loop() {
  if (loops_open_.load(std::memory_order_relaxed) == 0) return false;
  std::shared_ptr<HostLoop> loop;
  {
    std::lock_guard lock(mutex_);
    loop = open_loop_locked();
  }
  if (!loop) return false;
  inside_ns.fetch_add(to_ns(loop->work()), std::memory_order_relaxed);
  return true;
}

std::optional<CpuTask> BlockQueue::pop_for_cpu() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (cancelled_) return std::nullopt;
    if (auto loop = open_loop_locked())
      return CpuTask{CpuTask::Kind::host_loop, nullptr, loop, nullptr};
    if (!post_.empty()) {
      CpuTask t{CpuTask::Kind::post, std::move(post_.front().first), nullptr,
                std::move(post_.front().second)};
      post_.pop_front();
      return t;
    }
    if (!requeued_.empty()) {
      CpuTask t{CpuTask::Kind::block, std::move(requeued_.front()), nullptr, nullptr};
      requeued_.pop_front();
      return t;
    }
    const auto it = std::find_if(fresh_.begin(), fresh_.end(),
                                 [&](const BlockPtr& b) { return cpu_may_take(*b); });
    if (it != fresh_.end()) {
      CpuTask t{CpuTask::Kind::block, std::move(*it), nullptr, nullptr};
      fresh_.erase(it);
      changed_.notify_all();  // room for the reader
      return t;
    }
    if (!more_may_come() && fresh_.empty()) return std::nullopt;
    const auto waiting = std::chrono::steady_clock::now();
    changed_.wait(lock);
    note_cpu_queue_wait_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting).count());
  }
}

std::vector<BlockPtr> BlockQueue::pop_batch_for_gpu(std::size_t max_blocks,
                                                    std::int64_t max_residues) {
  std::unique_lock lock(mutex_);
  std::vector<BlockPtr> batch;
  for (;;) {
    if (cancelled_) return batch;
    std::int64_t residues = 0;
    for (auto it = fresh_.begin();
         it != fresh_.end() && batch.size() < std::max<std::size_t>(1, max_blocks);) {
      const std::int64_t r = (*it)->work();
      if (!gpu_may_take(**it)) {
        ++it;
        continue;
      }
      if (!batch.empty() && residues + r > max_residues) break;
      residues += r;
      batch.push_back(std::move(*it));
      it = fresh_.erase(it);
    }
    if (!batch.empty()) {
      ++gpu_batches_out_;
      changed_.notify_all();
      return batch;
    }
    // Only the reader can bring blocks a GPU may take (requeued ones are cpu_only).
    if (closed_) return batch;
    changed_.wait(lock);
  }
}

void BlockQueue::end_gpu_batch() {
  std::lock_guard lock(mutex_);
  --gpu_batches_out_;
  changed_.notify_all();
}

}  // namespace duet::scheduler
