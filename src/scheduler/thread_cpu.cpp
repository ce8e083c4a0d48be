// Thread CPU accounts: see thread_cpu.hpp.
#include "scheduler/thread_cpu.hpp"

#include <sys/resource.h>
#include <time.h>

#include <cstring>
#include <mutex>

namespace duet::scheduler {

namespace {

std::mutex accounts_mutex;
// Never destroyed: read from an atexit handler, after static objects may be gone.
std::vector<std::pair<std::string, double>>& accounts() {
  static auto* list = new std::vector<std::pair<std::string, double>>;
  return *list;
}

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

}  // namespace

void account_thread_cpu(const char* kind) {
  timespec now{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return;
  const double s = static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
  std::lock_guard lock(accounts_mutex);
  for (auto& [name, total] : accounts()) {
    if (name == kind) {
      total += s;
      return;
    }
  }
  accounts().emplace_back(kind, s);
}

std::vector<std::pair<std::string, double>> thread_cpu_seconds() {
  std::vector<std::pair<std::string, double>> out;
  {
    std::lock_guard lock(accounts_mutex);
    out = accounts();
  }
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const double process = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  double counted = 0;
  for (const auto& [name, s] : out) counted += s;
  out.emplace_back("other", process - counted);
  out.emplace_back("process", process);
  return out;
}

}  // namespace duet::scheduler
