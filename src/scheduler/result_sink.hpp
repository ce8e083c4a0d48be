// ResultSink: merges per-block results, delivered in any order by any thread, into
// database order. put(block_index, result) stores the result; every result whose
// predecessors have all arrived is handed to the consumer at once, in block order, on
// the calling thread, one call at a time. Results held back wait for an earlier block.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace duet::scheduler {

template <class Result>
class ResultSink {
 public:
  using Consumer = std::function<void(std::int64_t block_index, Result&&)>;
  explicit ResultSink(Consumer consumer) : consumer_(std::move(consumer)) {}

  void put(std::int64_t block_index, Result result) {
    std::lock_guard lock(mutex_);
    if (block_index < next_ || waiting_.count(block_index)) {
      throw std::logic_error("ResultSink: block " + std::to_string(block_index) + " delivered twice");
    }
    waiting_.emplace(block_index, std::move(result));
    for (auto it = waiting_.find(next_); it != waiting_.end(); it = waiting_.find(next_)) {
      consumer_(next_, std::move(it->second));
      waiting_.erase(it);
      ++next_;
    }
  }

  // Blocks delivered to the consumer so far, and results still held back.
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
};

}  // namespace duet::scheduler
