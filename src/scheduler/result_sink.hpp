// ResultSink: merges per-block results, delivered in any order by any thread, into
// database order. put(block_index, result) stores the result; every result whose
// predecessors have all arrived is handed to the consumer at once, in block order, on
// the calling thread, one call at a time. Results held back wait for an earlier block.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "scheduler/thread_cpu.hpp"

namespace duet::scheduler {

template <class Result>
class ResultSink {
 public:
  using Consumer = std::function<void(std::int64_t block_index, Result&&)>;
  explicit ResultSink(Consumer consumer) : consumer_(std::move(consumer)) {}

  void put(std::int64_t block_index, Result result) {
    using Clock = std::chrono::steady_clock;
    const auto asked = Clock::now();
    std::lock_guard lock(mutex_);
    const auto locked = Clock::now();
    struct Note {  // the wall times of this call, noted as it returns
      Clock::time_point asked, locked;
      ~Note() {
        note_result_sink_seconds(std::chrono::duration<double>(locked - asked).count(),
                                 std::chrono::duration<double>(Clock::now() - locked).count());
      }
    } note{asked, locked};
    if (block_index < next_ || waiting_.count(block_index)) {
      throw std::logic_error("ResultSink: block " + std::to_string(block_index) +
                             " delivered twice");
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
