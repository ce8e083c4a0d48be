// Tracebacks in batches (see papara_tracebacks.hpp).
#include "app/papara/papara_tracebacks.hpp"

namespace duet::app {

Tracebacks::Tracebacks(std::span<const papara::Query> queries, const papara::ProfileView& profiles,
                       const papara::Scoring& scoring, const std::string& isa)
    : function_(simd::papara::papara_variant(isa).traceback),
      queries_(queries),
      profiles_(profiles),
      scoring_(scoring),
      traces_(queries.size()) {}

Tracebacks::~Tracebacks() {
  try {
    group_.wait();
  } catch (...) {  // a run that failed already reports its own error
  }
}

void Tracebacks::add(std::size_t query, int edge) {
  std::lock_guard lock(mutex_);
  pending_.emplace_back(query, edge);
  if (pending_.size() < kBatch) return;
  group_.run([this, batch = std::move(pending_)] { align(batch); });
  pending_.clear();
}

std::vector<papara::Trace> Tracebacks::finish() {
  {
    std::lock_guard lock(mutex_);
    if (!pending_.empty()) group_.run([this, batch = std::move(pending_)] { align(batch); });
    pending_.clear();
  }
  group_.wait();
  return std::move(traces_);
}

void Tracebacks::align(const std::vector<std::pair<std::size_t, int>>& batch) {
  std::vector<std::span<const std::uint8_t>> queries;
  std::vector<int> edges;
  std::vector<papara::Trace> traces(batch.size());
  for (const auto& [q, edge] : batch) {
    queries.emplace_back(queries_[q].states);
    edges.push_back(edge);
  }
  function_(profiles_, scoring_, queries, edges, traces);
  for (std::size_t k = 0; k < batch.size(); ++k) traces_[batch[k].first] = std::move(traces[k]);
}

}  // namespace duet::app
