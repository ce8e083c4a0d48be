// Thread CPU accounts: see thread_cpu.hpp.
#include "core/thread_cpu.hpp"

#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>

namespace duet {

namespace {

std::mutex accounts_mutex;
// Never destroyed: read from an atexit handler, after static objects may be gone.
std::vector<std::pair<std::string, double>>& accounts() {
  static auto* list = new std::vector<std::pair<std::string, double>>;
  return *list;
}

void add(const std::string& kind, double s) {
  for (auto& [name, total] : accounts()) {
    if (name == kind) {
      total += s;
      return;
    }
  }
  accounts().emplace_back(kind, s);
}

// Seconds the calling thread waited, runnable, for a core (the second field of Linux's
// /proc/thread-self/schedstat); 0 where the file cannot be read.
double run_queue_wait() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (f == nullptr) return 0;
  unsigned long long on_cpu = 0, waiting = 0;
  const int read = std::fscanf(f, "%llu %llu", &on_cpu, &waiting);
  std::fclose(f);
  return read == 2 ? static_cast<double>(waiting) / 1e9 : 0;
}

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

constexpr const char* kWaitSuffix = " (waiting for a core)";

std::atomic<std::int64_t> sink_waiting_ns{0}, sink_consuming_ns{0}, queue_waiting_ns{0};

}  // namespace

double thread_cpu_now() {
  timespec now{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

ThreadCpuMark thread_cpu_mark() {
  return {thread_cpu_now(), run_queue_wait()};
}

void add_thread_cpu_seconds(const char* kind, double seconds) {
  std::lock_guard lock(accounts_mutex);
  add(kind, seconds);
}

void account_thread_cpu_since(const char* kind, const ThreadCpuMark& since) {
  const ThreadCpuMark now = thread_cpu_mark();
  std::lock_guard lock(accounts_mutex);
  add(kind, now.cpu - since.cpu);
  add(std::string(kind) + kWaitSuffix, now.waited - since.waited);
}

void account_thread_cpu(const char* kind) {
  account_thread_cpu_since(kind, {});
}

void note_result_sink_seconds(double waiting, double consuming) {
  sink_waiting_ns.fetch_add(static_cast<std::int64_t>(waiting * 1e9), std::memory_order_relaxed);
  sink_consuming_ns.fetch_add(static_cast<std::int64_t>(consuming * 1e9),
                              std::memory_order_relaxed);
}

void note_cpu_queue_wait_seconds(double waiting) {
  queue_waiting_ns.fetch_add(static_cast<std::int64_t>(waiting * 1e9), std::memory_order_relaxed);
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
  for (const auto& [name, s] : out) {
    if (name.find(kWaitSuffix) == std::string::npos) counted += s;
  }
  out.emplace_back("other", process - counted);
  out.emplace_back("process", process);
  out.emplace_back("result sink: lock waits (wall)",
                   static_cast<double>(sink_waiting_ns.load()) / 1e9);
  out.emplace_back("result sink: consumer (wall)",
                   static_cast<double>(sink_consuming_ns.load()) / 1e9);
  out.emplace_back("CPU workers waiting for work (wall)",
                   static_cast<double>(queue_waiting_ns.load()) / 1e9);
  return out;
}

}  // namespace duet
