// run_context.hpp: interrupt flag, debug settings, time, command line, machine.
#include "app/run_context.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "core/error.hpp"

namespace duet::app {

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

namespace {
extern "C" void on_sigint(int) {
  g_interrupted.store(true);
}
}  // namespace

void install_interrupt_handler() {
  std::signal(SIGINT, on_sigint);
}

int debug_setting(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == 0) return 0;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  if (*end != 0 || n < 0 || n > 64)
    throw UsageError(std::string(name) + " must be an integer in 0..64");
  return static_cast<int>(n);
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  char buffer[64];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S%z", std::localtime(&t));
  return buffer;
}

std::string join_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += argv[i];
  }
  return s;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  }
  return "unknown";
}

std::string host_name() {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

void phase_time(const char* what) {
  static const bool on = std::getenv("DUET_TIMES") != nullptr;
  if (!on) return;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::fprintf(stderr, "duet: time %ld.%06ld %s\n", static_cast<long>(now.tv_sec),
               static_cast<long>(now.tv_nsec / 1000), what);
}

}  // namespace duet::app
