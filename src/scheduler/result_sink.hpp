// ResultSink: merges per-block results, delivered in any order by any thread, into
// database order. put(block_index, result) stores the result; every result whose
// predecessors have all arrived is handed to the consumer, in block order, one call at a
// time, by one of the threads calling put() (the others return once their result is
// stored). Results held back wait for an earlier block.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "core/thread_cpu.hpp"

namespace duet::scheduler {

template <class Result>
class ResultSink {
 public:
  using Consumer = std::function<void(std::int64_t block_index, Result&&)>;
  explicit ResultSink(Consumer consumer) : consumer_(std::move(consumer)) {}

  // Stores the result; then, unless another thread is handing results to the consumer (it
  // will hand this one over too), hands every result that is next in order to the consumer,
  // outside the lock, so that other callers only wait to store theirs.
  void put(std::int64_t block_index, Result result) {
    using Clock = std::chrono::steady_clock;
    const auto asked = Clock::now();
    std::unique_lock lock(mutex_);
    const auto locked = Clock::now();
    double consuming = 0;
    struct Note {  // the wall times of this call, noted as it returns
      Clock::time_point asked, locked;
      const double& consuming;
      ~Note() {
        note_result_sink_seconds(std::chrono::duration<double>(locked - asked).count(), consuming);
      }
    } note{asked, locked, consuming};
    if (block_index < next_ || waiting_.count(block_index)) {
      throw std::logic_error("ResultSink: block " + std::to_string(block_index) +
                             " delivered twice");
    }
    waiting_.emplace(block_index, std::move(result));
    if (draining_) return;
    draining_ = true;
    struct EndDraining {  // also when the consumer throws
      bool& draining;
      ~EndDraining() { draining = false; }
    } end{draining_};
    for (auto it = waiting_.find(next_); it != waiting_.end(); it = waiting_.find(next_)) {
      Result next = std::move(it->second);
      waiting_.erase(it);
      const std::int64_t index = next_++;
      lock.unlock();
      const auto started = Clock::now();
      consumer_(index, std::move(next));
      consuming += std::chrono::duration<double>(Clock::now() - started).count();
      lock.lock();
    }
  }

  // Blocks handed to the consumer so far, and results still held back.
  std::int64_t delivered() const {
    std::lock_guard lock(mutex_);
    return next_;
  }
  std::size_t held_back() const {
    std::lock_guard lock(mutex_);
    return waiting_.size();
  }

 private:
  Consumer consumer_;
  mutable std::mutex mutex_;
  std::map<std::int64_t, Result> waiting_;
  std::int64_t next_ = 0;
  bool draining_ = false;  // a put() is handing results to the consumer
};

}  // namespace duet::scheduler
