// What every duet command needs about the run it belongs to: the interrupt flag set by
// Ctrl-C, debug settings from the environment, the time, the command line, the machine.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

namespace duet::app {

// Set by SIGINT, SIGTERM or SIGHUP once install_signal_handlers() ran; schedulers poll it
// between blocks. The handlers are installed with sigaction and without SA_RESTART, so
// that a system call blocked on input (opening a FIFO with no writer yet, reading a stalled
// pipe) returns EINTR instead of waiting on. SIGPIPE and SIGXFSZ are ignored: writing to a
// closed pipe or past a file-size limit is an error like any other, not a silent death
// that leaves temporary files.
extern std::atomic<bool> g_interrupted;
void install_signal_handlers();
// The signal that set g_interrupted (0 when none), and the exit status it stands for:
// 128 + the signal (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
int stop_signal();
int stop_exit_status();
// "interrupted" for SIGINT, "terminated" for SIGTERM, "hung up" for SIGHUP.
const char* stop_reason();
// Thrown by a command when a signal stopped its run: main() says stop_reason() and exits
// with stop_exit_status(), and no output file has changed.
struct Interrupted {};

// Checks a number given on the command line as `option` with the rule of the TOML key
// `key` (io::number_problem), so that the command line is exactly as strict as the
// configuration file: UsageError("<option> must be ..., not nan") otherwise.
void check_option_number(const std::string& option, std::string_view key, double value);

// A debug setting from the environment: an integer in 0..max, 0 when unset; UsageError
// otherwise.
int debug_setting(const char* name, int max = 64);

// The one switch of the timing lines on stderr, for benchmarks (bench/RESULTS.md): the
// environment variable DUET_TIMES set. With it, each command prints its phases
// (phase_time), the CPU seconds by kind of thread at exit, and each GPU feeder where its
// time went when it ends.
bool timings_wanted();

// With DUET_TIMES set, prints the wall clock (seconds since the epoch) and `what` on
// stderr, so that a benchmark can tell the pass from what comes before and after it
// (start-up, GPU set-up, writing, tear-down; bench/RESULTS.md). Any thread. The labels are
// also the phases where the debug setting DUET_DEBUG_SIGNAL_AT="<signal>@<label>" raises
// a signal, for the tests of what a signal at each phase leaves behind.
void phase_time(const char* what);

// Where a kernel-choice table (with the GPU paths' tuning constants) is looked for when
// neither --gpu-kernel-table nor [gpu] kernel_table names one:
// <executable's folder>/../share/duet/gpu-kernels.toml, then the source tree's
// configs/gpu-kernels.toml.
std::vector<std::string> default_kernel_table_paths();

std::string now_iso8601();
std::string join_command_line(int argc, char** argv);
std::string cpu_model();  // "model name" of /proc/cpuinfo, or "unknown"
std::string host_name();

}  // namespace duet::app
