// HelperTeam: see helper_team.hpp.
#include "scheduler/helper_team.hpp"

#include <algorithm>
#include <exception>
#include <system_error>
#include <utility>

namespace duet::scheduler {

HelperTeam::HelperTeam(int helpers) {
  for (int t = 0; t < helpers; ++t) {
    try {
      threads_.emplace_back([this] { help(); });
    } catch (const std::system_error&) {
      break;  // fewer helpers: run() still works with those it has
    }
  }
}

HelperTeam::~HelperTeam() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void HelperTeam::work() {
  std::unique_lock lock(mutex_);
  while (next_ < n_) {
    const std::size_t begin = next_;
    const std::size_t end = std::min(n_, begin + chunk_);
    next_ = end;
    ++busy_;
    lock.unlock();
    try {
      for (std::size_t i = begin; i < end; ++i) (*body_)(i);
    } catch (...) {
      lock.lock();
      if (!failure_) failure_ = std::current_exception();
      next_ = n_;  // no more chunks
      --busy_;
      continue;
    }
    lock.lock();
    --busy_;
  }
  if (busy_ == 0) done_.notify_all();
}

void HelperTeam::help() {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || (generation_ != seen && next_ < n_); });
      if (stopping_) return;
      seen = generation_;
    }
    work();
  }
}

void HelperTeam::run(std::size_t n, std::size_t chunk,
                     const std::function<void(std::size_t)>& body) {
  if (n == 0) return;
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    n_ = n;
    chunk_ = std::max<std::size_t>(1, chunk);
    next_ = 0;
    failure_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  work();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return next_ >= n_ && busy_ == 0; });
  body_ = nullptr;
  n_ = 0;
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

}  // namespace duet::scheduler
