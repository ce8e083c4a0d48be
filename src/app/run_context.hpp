// What every duet command needs about the run it belongs to: the interrupt flag set by
// Ctrl-C, debug settings from the environment, the time, the command line, the machine.
#pragma once

#include <atomic>
#include <string>

namespace duet::app {

// Set by SIGINT once install_interrupt_handler() ran; schedulers poll it between blocks.
extern std::atomic<bool> g_interrupted;
void install_interrupt_handler();

// A debug setting from the environment: an integer in 0..64, 0 when unset; UsageError
// otherwise.
int debug_setting(const char* name);

// With DUET_TIMES set, prints the wall clock (seconds since the epoch) and `what` on
// stderr, so that a benchmark can tell the pass from what comes before and after it
// (start-up, GPU set-up, writing, tear-down; bench/RESULTS.md). Any thread.
void phase_time(const char* what);

std::string now_iso8601();
std::string join_command_line(int argc, char** argv);
std::string cpu_model();  // "model name" of /proc/cpuinfo, or "unknown"
std::string host_name();

}  // namespace duet::app
