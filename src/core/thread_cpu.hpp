// CPU seconds by kind of thread, for throughput studies (DUET_TIMES): each thread that the
// scheduler, the reader or the result writer starts adds its own CPU time
// (CLOCK_THREAD_CPUTIME_ID) under its kind when it ends. What no such thread used (the main
// thread, CUDA's own threads) is the process total (getrusage) less their sum.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace duet {

// Adds the calling thread's CPU seconds so far under `kind`, and the seconds it waited,
// runnable, for a core under "`kind` (waiting for a core)" (call it once, as the thread
// ends; a static string).
void account_thread_cpu(const char* kind);

// The calling thread's CPU seconds, and seconds waited for a core, so far.
struct ThreadCpuMark {
  double cpu = 0, waited = 0;
};
ThreadCpuMark thread_cpu_mark();
// Adds what the calling thread used since `since` under `kind`, as account_thread_cpu: a
// span of work on a thread that lives longer than the pass (a oneTBB worker).
void account_thread_cpu_since(const char* kind, const ThreadCpuMark& since);

// Kinds in the order first seen, with their seconds; then "other" (the process's user and
// system seconds less the CPU seconds of the kinds) and "process".
std::vector<std::pair<std::string, double>> thread_cpu_seconds();

// The calling thread's CPU seconds so far (CLOCK_THREAD_CPUTIME_ID alone: cheaper than
// thread_cpu_mark, for short spans).
double thread_cpu_now();
// Adds `seconds` of CPU time under `kind` (a static string): work on threads that no kind
// counts otherwise (the chunks of a host loop that oneTBB's workers ran).
void add_thread_cpu_seconds(const char* kind, double seconds);

// Wall seconds that ResultSink::put callers spent waiting for its lock and handing results
// to its consumer (summed over threads), reported with thread_cpu_seconds.
void note_result_sink_seconds(double waiting, double consuming);
// Wall seconds CPU workers spent parked with nothing to take (BlockQueue::take_for_cpu).
void note_cpu_queue_wait_seconds(double waiting);

// Ends the calling thread's account when it goes out of scope (also on an exception).
class ThreadCpuAccount {
 public:
  explicit ThreadCpuAccount(const char* kind) : kind_(kind) {}
  ~ThreadCpuAccount() { account_thread_cpu(kind_); }
  ThreadCpuAccount(const ThreadCpuAccount&) = delete;
  ThreadCpuAccount& operator=(const ThreadCpuAccount&) = delete;

 private:
  const char* kind_;
};

}  // namespace duet
