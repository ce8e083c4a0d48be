// write_run_summary and read_run_summary: see wire.hpp.
#include "app/kit/wire.hpp"

namespace duet::app {

namespace {

// RunSummary's plain fields, in one place for both directions.
template <class Summary, class Visit>
void summary_fields(Summary& s, Visit&& f) {
  f(s.seconds);
  f(s.blocks);
  f(s.sequences);
  f(s.residues);
  f(s.cpu_residues);
  f(s.gpu_residues);
  f(s.cpu_busy_seconds);
  f(s.gpu_busy_seconds);
  f(s.cpu_cells);
  f(s.gpu_cells);
  f(s.cpu_stage_seconds);
  f(s.gpu_stage_seconds);
  f(s.cpu_cells_per_second);
  f(s.gpu_cells_per_second);
  f(s.post_seconds);
  f(s.post_cells);
  f(s.idle_tail_seconds);
  f(s.worker_idle_tail_seconds);
  f(s.gpu_faults);
  f(s.reused_blocks);
  f(s.cpu_workers);
  f(s.gpu_feeders);
  f(s.stopped);
}

template <class Row, class Visit>
void row_fields(Row& r, Visit&& f) {
  f(r.rank);
  f(r.worker);
  f(r.device);
  f(r.start);
  f(r.end);
  f(r.block);
  f(r.blocks);
  f(r.sequences);
  f(r.residues);
  f(r.cells);
  f(r.survivors);
  f(r.failed);
}

}  // namespace

void write_run_summary(WireWriter& out, const scheduler::RunSummary& s) {
  summary_fields(s, [&](const auto& v) { out.value(v); });
  out.value(static_cast<std::uint64_t>(s.trace.size()));
  for (const scheduler::TraceRow& r : s.trace) {
    row_fields(r, [&](const auto& v) { out.value(v); });
    out.text(r.stage);
  }
}

scheduler::RunSummary read_run_summary(WireReader& in) {
  scheduler::RunSummary s;
  summary_fields(s, [&](auto& v) { v = in.value<std::remove_reference_t<decltype(v)>>(); });
  s.trace.resize(static_cast<std::size_t>(in.value<std::uint64_t>()));
  for (scheduler::TraceRow& r : s.trace) {
    row_fields(r, [&](auto& v) { v = in.value<std::remove_reference_t<decltype(v)>>(); });
    r.stage = in.text();
  }
  return s;
}

}  // namespace duet::app
