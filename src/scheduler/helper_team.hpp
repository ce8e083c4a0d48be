// HelperTeam: threads a GPU feeder keeps for its own host loops (packing, staging), so that
// its device is fed even while every CPU worker is busy with blocks (the hybrid mode). The
// CPU pool's run_host_loop only gets workers that are idle or between tasks; in a hybrid run
// they seldom are, and the feeder packed alone (bench/RESULTS.md).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace duet::scheduler {

class HelperTeam {
 public:
  // `helpers` threads besides the caller of run(); 0: run() works alone.
  explicit HelperTeam(int helpers);
  ~HelperTeam();
  HelperTeam(const HelperTeam&) = delete;
  HelperTeam& operator=(const HelperTeam&) = delete;

  // Runs body(i) for i in [0, n), in chunks of `chunk`, on the calling thread and the
  // helpers; returns when all are done. One caller at a time. The first exception of a body
  // is rethrown here once every chunk has ended.
  void run(std::size_t n, std::size_t chunk, const std::function<void(std::size_t)>& body);

 private:
  void help();
  void work();  // takes chunks of the current loop until none is left

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  // The current loop; generation_ changes with each.
  const std::function<void(std::size_t)>* body_ = nullptr;
  std::size_t n_ = 0, chunk_ = 1, next_ = 0, busy_ = 0;
  std::uint64_t generation_ = 0;
  std::exception_ptr failure_;
  bool stopping_ = false;
};

}  // namespace duet::scheduler
