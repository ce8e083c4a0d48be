// Each query re-aligned to its best edge as soon as its choice is final: queries gather into
// batches, and each batch is aligned on oneTBB's threads beside the scheduler's (a GPU-only
// run's idle cores take them at once; in a hybrid run they wait for a free core).
#pragma once

#include <oneapi/tbb/task_group.h>

#include <cstddef>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/papara/papara_alignment.hpp"
#include "core/papara/papara_input.hpp"
#include "core/papara/papara_kernel.hpp"
#include "host_simd/papara/papara_simd.hpp"

namespace duet::app {

class Tracebacks {
 public:
  // Queries gathered before a batch starts.
  static constexpr std::size_t kBatch = 64;

  // `isa`: the CPU variant whose traceback runs (simd::papara::papara_variant; "auto": the
  // best this CPU has): W queries at once, one per int32 lane.
  Tracebacks(std::span<const papara::Query> queries, const papara::ProfileView& profiles,
             const papara::Scoring& scoring, const std::string& isa);
  ~Tracebacks();  // waits for the batches under way
  Tracebacks(const Tracebacks&) = delete;
  Tracebacks& operator=(const Tracebacks&) = delete;

  // Query `query`'s choice is final: align it to `edge`. Any thread.
  void add(std::size_t query, int edge);
  // Aligns what is left, waits for every batch, and returns the traces (query order).
  std::vector<papara::Trace> finish();

 private:
  void align(const std::vector<std::pair<std::size_t, int>>& batch);

  simd::papara::TracebackManyFunction function_;
  std::span<const papara::Query> queries_;
  papara::ProfileView profiles_;
  papara::Scoring scoring_;
  std::vector<papara::Trace> traces_;
  std::mutex mutex_;
  std::vector<std::pair<std::size_t, int>> pending_;  // (query, edge)
  tbb::task_group group_;
};

}  // namespace duet::app
