// ResultSink: merges per-block results, delivered in any order by any thread, into
// database order. put(block_index, result) stores the result; every result whose
// predecessors have all arrived is handed to the consumer, in block order, one call at a
// time, by one of the threads calling put() (the others return once their result is
// stored). Results held back wait for an earlier block. skip(block_index) says that a
// block has no result here (another rank of a distributed run has it: distributed_source.hpp);
// the blocks after it do not wait for it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
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
    check_new(block_index);
    waiting_.emplace(block_index, std::move(result));
    drain(lock, consuming);
  }

  // No result will come for the block: the blocks after it do not wait for it.
  void skip(std::int64_t block_index) {
    std::unique_lock lock(mutex_);
    check_new(block_index);
    skipped_.insert(block_index);
    double consuming = 0;
    drain(lock, consuming);
  }

  // Blocks handed to the consumer, whose call has returned, or skipped, so far; and
  // results still held back.
  std::int64_t delivered() const {
    std::lock_guard lock(mutex_);
    return done_;
  }
  std::size_t held_back() const {
    std::lock_guard lock(mutex_);
    return waiting_.size();
  }

 private:
  Consumer consumer_;
  mutable std::mutex mutex_;
  // Unless another thread is handing results over (it will hand these over too), hands
  // every result that is next in order to the consumer, outside the lock, passing the
  // skipped blocks; adds the consumer's time to `consuming`.
  void drain(std::unique_lock<std::mutex>& lock, double& consuming) {
    if (draining_) return;
    draining_ = true;
    struct EndDraining {  // also when the consumer throws
      bool& draining;
      ~EndDraining() { draining = false; }
    } end{draining_};
    for (;;) {
      done_ = next_;  // the consumer's last call, if any, has returned
      if (skipped_.erase(next_)) {
        ++next_;
        continue;
      }
      auto it = waiting_.find(next_);
      if (it == waiting_.end()) break;
      Result next = std::move(it->second);
      waiting_.erase(it);
      const std::int64_t index = next_++;
      lock.unlock();
      const auto started = std::chrono::steady_clock::now();
      consumer_(index, std::move(next));
      consuming +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      lock.lock();
    }
  }

  void check_new(std::int64_t block_index) const {  // mutex_ held
    if (block_index < next_ || waiting_.count(block_index) || skipped_.count(block_index)) {
      throw std::logic_error("ResultSink: block " + std::to_string(block_index) +
                             " delivered twice");
    }
  }

  std::map<std::int64_t, Result> waiting_;
  std::set<std::int64_t> skipped_;
  std::int64_t next_ = 0;
  std::int64_t done_ = 0;  // delivered(): next_ but for a consumer call under way
  bool draining_ = false;  // a put() is handing results to the consumer
};

}  // namespace duet::scheduler
