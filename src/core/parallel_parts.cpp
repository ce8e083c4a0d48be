// for_each_part: see parallel_parts.hpp.
#include "core/parallel_parts.hpp"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <system_error>
#include <thread>
#include <vector>

namespace duet {

void for_each_part(std::size_t n, const std::function<void(std::size_t)>& body) {
  const std::size_t threads =
      std::min<std::size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < threads; ++t) {
    workers.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) body(i);
    });
  }
  for (std::size_t i = next++; i < n; i = next++) body(i);  // this thread too
  for (std::thread& w : workers) w.join();
}

unsigned part_threads(const std::string& path, std::uintmax_t min_bytes) {
  std::error_code error;
  const bool regular = std::filesystem::is_regular_file(path, error);
  const std::uintmax_t size = regular && !error ? std::filesystem::file_size(path, error) : 0;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  return !regular || error || size < min_bytes || threads == 1 ? 0 : threads;
}

}  // namespace duet
