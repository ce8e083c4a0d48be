// run_context.hpp: interrupt flag, debug settings, time, command line, machine.
#include "app/kit/run_context.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "io/config.hpp"

namespace duet::app {

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

namespace {
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int signal) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, signal);  // the first signal decides
  g_interrupted.store(true);
}
}  // namespace

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocked open or read returns EINTR
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal, &action, nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, nullptr);
  // A file-size limit (ulimit -f) makes the write fail (EFBIG), reported as any failed
  // write, rather than killing the process with its temporary files.
  ::sigaction(SIGXFSZ, &ignore, nullptr);
}

int stop_signal() {
  return g_stop_signal.load();
}

int stop_exit_status() {
  const int signal = stop_signal();
  return 128 + (signal != 0 ? signal : SIGINT);
}

const char* stop_reason() {
  switch (stop_signal()) {
    case SIGTERM:
      return "terminated";
    case SIGHUP:
      return "hung up";
    default:
      return "interrupted";
  }
}

void check_option_number(const std::string& option, std::string_view key, double value) {
  const std::string problem = io::number_problem(key, value);
  if (!problem.empty()) throw UsageError(option + " " + problem);
}

int debug_setting(const char* name, int max) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == 0) return 0;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  if (*end != 0 || n < 0 || n > max)
    throw UsageError(std::string(name) + " must be an integer in 0.." + std::to_string(max));
  return static_cast<int>(n);
}

std::vector<std::string> default_kernel_table_paths() {
  std::vector<std::string> paths;
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error)
    paths.push_back((exe.parent_path() / ".." / "share" / "duet" / "gpu-kernels.toml").string());
  paths.push_back(std::string(DUET_CONFIGS_DIR) + "/gpu-kernels.toml");
  return paths;
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

namespace {
// The debug setting DUET_DEBUG_SIGNAL_AT="<signal number>@<phase>": the signal is raised
// when the run reaches that phase_time() label (fault-injection tests of the output
// promise). {0, ""} when unset.
std::pair<int, std::string> debug_signal_at() {
  const char* value = std::getenv("DUET_DEBUG_SIGNAL_AT");
  if (value == nullptr || *value == 0) return {0, ""};
  const std::string text = value;
  const auto at = text.find('@');
  char* end = nullptr;
  const long signal = std::strtol(text.c_str(), &end, 10);
  if (at == std::string::npos || end != text.c_str() + at || signal <= 0 || signal > 64) {
    std::fprintf(stderr, "duet: warning: DUET_DEBUG_SIGNAL_AT ignored: not <signal>@<phase>\n");
    return {0, ""};
  }
  return {static_cast<int>(signal), text.substr(at + 1)};
}
}  // namespace

bool timings_wanted() {
  static const bool on = std::getenv("DUET_TIMES") != nullptr;
  return on;
}

void phase_time(const char* what) {
  static const std::pair<int, std::string> raise_at = debug_signal_at();
  if (raise_at.first != 0 && raise_at.second == what) std::raise(raise_at.first);
  if (!timings_wanted()) return;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::fprintf(stderr, "duet: time %ld.%06ld %s\n", static_cast<long>(now.tv_sec),
               static_cast<long>(now.tv_nsec / 1000), what);
}

}  // namespace duet::app
