// The streamed blocks, pack_rank_run and merge_rank_runs: see distributed.hpp.
#include "app/hmmsearch/distributed.hpp"

#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "app/kit/wire.hpp"

namespace duet::app {

namespace {

void write_domain(WireWriter& out, const Domain& d) {
  for (const int v : {d.env_from, d.env_to, d.ali_from, d.ali_to, d.hmm_from, d.hmm_to})
    out.value(v);
  for (const float v : {d.envelope_nats, d.null2_nats, d.expected_correct, d.bits, d.bias_bits})
    out.value(v);
  out.value(d.log_pvalue);
  const AlignmentDisplay& a = d.alignment;
  for (const std::string* s :
       {&a.model, &a.match, &a.target, &a.posterior, &a.structure, &a.reference})
    out.text(*s);
}

Domain read_domain(WireReader& in) {
  Domain d;
  for (int* v : {&d.env_from, &d.env_to, &d.ali_from, &d.ali_to, &d.hmm_from, &d.hmm_to})
    *v = in.value<int>();
  for (float* v : {&d.envelope_nats, &d.null2_nats, &d.expected_correct, &d.bits, &d.bias_bits})
    *v = in.value<float>();
  d.log_pvalue = in.value<double>();
  AlignmentDisplay& a = d.alignment;
  for (std::string* s : {&a.model, &a.match, &a.target, &a.posterior, &a.structure, &a.reference})
    *s = in.text();
  return d;
}

void write_target(WireWriter& out, const TargetRecord& t) {
  out.value(t.index);
  out.text(t.name);
  out.text(t.accession);
  out.text(t.description);
  out.value(t.length);
  out.value(t.cutoffs.has_value());
  out.value(t.cutoffs.value_or(std::array<float, 2>{0, 0}));
  out.value(t.scores);
  const TargetDomains& d = t.domains;
  out.value(static_cast<std::uint64_t>(d.domains.size()));
  for (const Domain& domain : d.domains) write_domain(out, domain);
  out.value(d.expected);
  for (const int v : {d.regions, d.clustered, d.overlaps, d.envelopes, d.best_domain}) out.value(v);
  out.value(d.score_bits);
  out.value(d.bias_bits);
  out.value(d.log_pvalue);
}

TargetRecord read_target(WireReader& in) {
  TargetRecord t;
  t.index = in.value<std::int64_t>();
  t.name = in.text();
  t.accession = in.text();
  t.description = in.text();
  t.length = in.value<std::int32_t>();
  const bool has_cutoffs = in.value<bool>();
  const auto cutoffs = in.value<std::array<float, 2>>();
  if (has_cutoffs) t.cutoffs = cutoffs;
  t.scores = in.value<TargetScores>();
  TargetDomains& d = t.domains;
  d.domains.resize(static_cast<std::size_t>(in.value<std::uint64_t>()));
  for (Domain& domain : d.domains) domain = read_domain(in);
  d.expected = in.value<float>();
  for (int* v : {&d.regions, &d.clustered, &d.overlaps, &d.envelopes, &d.best_domain})
    *v = in.value<int>();
  d.score_bits = in.value<float>();
  d.bias_bits = in.value<float>();
  d.log_pvalue = in.value<double>();
  return t;
}

// A rank's share of one query.
struct RankQuery {
  PipelineCounts counts;
  double seconds = 0;
  std::string gpu_kernels, gpu_jit;
  std::int64_t gpu_resident = 0, gpu_uploaded = 0, gpu_kept = 0;
  scheduler::RunSummary schedule;
  std::vector<TargetRecord> targets;
};

struct RankRun {
  bool stopped = false, test_double_gpus = false, gpus_skipped_small_database = false;
  std::string gpu_kernel_table;
  double seconds = 0;
  std::vector<RankQuery> queries;
};

RankRun unpack(const std::string& bytes) {
  WireReader in(bytes);
  RankRun run;
  run.stopped = in.value<bool>();
  run.test_double_gpus = in.value<bool>();
  run.gpus_skipped_small_database = in.value<bool>();
  run.gpu_kernel_table = in.text();
  run.seconds = in.value<double>();
  run.queries.resize(static_cast<std::size_t>(in.value<std::uint64_t>()));
  for (RankQuery& q : run.queries) {
    q.counts = in.value<PipelineCounts>();
    q.seconds = in.value<double>();
    q.gpu_kernels = in.text();
    q.gpu_jit = in.text();
    q.gpu_resident = in.value<std::int64_t>();
    q.gpu_uploaded = in.value<std::int64_t>();
    q.gpu_kept = in.value<std::int64_t>();
    q.schedule = read_run_summary(in);
    q.targets.resize(static_cast<std::size_t>(in.value<std::uint64_t>()));
    for (TargetRecord& t : q.targets) t = read_target(in);
  }
  if (!in.done()) throw std::runtime_error("a rank's results have bytes left over");
  return run;
}

// Rank 0's own share, taken from its run (not packed and unpacked).
RankRun own_share(SearchRun& own) {
  RankRun run;
  run.stopped = own.stopped;
  run.test_double_gpus = own.test_double_gpus;
  run.gpus_skipped_small_database = own.gpus_skipped_small_database;
  run.gpu_kernel_table = own.gpu_kernel_table;
  run.seconds = own.seconds;
  for (QueryResult& q : own.queries) {
    run.queries.push_back({q.counts, q.seconds, q.gpu_kernels, q.gpu_jit, q.gpu_resident_residues,
                           q.gpu_uploaded_residues, q.gpu_kept_residues, std::move(q.schedule),
                           std::move(q.targets)});
  }
  return run;
}

}  // namespace

std::string pack_streamed_block(int pass, std::size_t query, std::int64_t block,
                                const PipelineCounts& counts,
                                const std::vector<TargetRecord>& targets) {
  WireWriter out;
  out.value(pass);
  out.value(static_cast<std::uint64_t>(query));
  out.value(block);
  out.value(counts);
  out.value(static_cast<std::uint64_t>(targets.size()));
  for (const TargetRecord& t : targets) write_target(out, t);
  return out.take();
}

void RemoteBlocks::receive(std::string&& bytes) {
  WireReader in(bytes);
  StreamedBlock b;
  b.pass = in.value<int>();
  b.query = static_cast<std::size_t>(in.value<std::uint64_t>());
  b.block = in.value<std::int64_t>();
  b.counts = in.value<PipelineCounts>();
  b.targets.resize(static_cast<std::size_t>(in.value<std::uint64_t>()));
  for (TargetRecord& t : b.targets) t = read_target(in);
  if (!in.done()) throw std::runtime_error("a streamed block has bytes left over");
  std::lock_guard lock(mutex_);
  if (b.pass == open_) {
    put_(std::move(b));
  } else if (b.pass > closed_) {
    early_[b.pass].push_back(std::move(b));
  }
}

void RemoteBlocks::open_pass(int pass, Put put) {
  std::lock_guard lock(mutex_);
  open_ = pass;
  put_ = std::move(put);
  const auto early = early_.find(pass);
  if (early == early_.end()) return;
  for (StreamedBlock& b : early->second) put_(std::move(b));
  early_.erase(early);
}

void RemoteBlocks::close_pass() {
  std::lock_guard lock(mutex_);
  closed_ = std::max(closed_, open_);
  open_ = -1;
  put_ = nullptr;
}

std::string pack_rank_run(const SearchRun& run) {
  WireWriter out;
  out.value(run.stopped);
  out.value(run.test_double_gpus);
  out.value(run.gpus_skipped_small_database);
  out.text(run.gpu_kernel_table);
  out.value(run.seconds);
  out.value(static_cast<std::uint64_t>(run.queries.size()));
  for (const QueryResult& q : run.queries) {
    out.value(q.counts);
    out.value(q.seconds);
    out.text(q.gpu_kernels);
    out.text(q.gpu_jit);
    out.value(q.gpu_resident_residues);
    out.value(q.gpu_uploaded_residues);
    out.value(q.gpu_kept_residues);
    write_run_summary(out, q.schedule);
    out.value(static_cast<std::uint64_t>(q.targets.size()));
    for (const TargetRecord& t : q.targets) write_target(out, t);
  }
  return out.take();
}

SearchRun merge_rank_runs(SearchRun own, const std::vector<std::string>& ranks,
                          const io::SearchConfig& config) {
  // Unpacked, and merged query by query, on every core (rank 0 waits for nothing else).
  std::vector<RankRun> runs(std::max<std::size_t>(1, ranks.size()));
  runs[0] = own_share(own);
  tbb::parallel_for(std::size_t{1}, ranks.size(),
                    [&](std::size_t r) { runs[r] = unpack(ranks[r]); });
  SearchRun job = std::move(own);
  for (const RankRun& r : runs) {
    if (r.queries.size() != job.queries.size())
      throw std::runtime_error("the ranks searched different numbers of models");
    job.stopped = job.stopped || r.stopped;
    job.test_double_gpus = job.test_double_gpus || r.test_double_gpus;
    if (job.gpu_kernel_table.empty()) job.gpu_kernel_table = r.gpu_kernel_table;
    job.seconds = std::max(job.seconds, r.seconds);
  }
  tbb::parallel_for(std::size_t{0}, job.queries.size(), [&](std::size_t q) {
    QueryResult& query = job.queries[q];
    query.counts = {};
    query.targets.clear();
    query.seconds = 0;
    query.gpu_resident_residues = query.gpu_uploaded_residues = query.gpu_kept_residues = 0;
    std::vector<scheduler::RunSummary> schedules;
    for (RankRun& r : runs) {
      RankQuery& part = r.queries[q];
      query.counts += part.counts;
      query.seconds = std::max(query.seconds, part.seconds);
      if (query.gpu_kernels.empty()) query.gpu_kernels = part.gpu_kernels;
      if (query.gpu_jit.empty()) query.gpu_jit = part.gpu_jit;
      query.gpu_resident_residues += part.gpu_resident;
      query.gpu_uploaded_residues += part.gpu_uploaded;
      query.gpu_kept_residues += part.gpu_kept;
      schedules.push_back(std::move(part.schedule));
      for (TargetRecord& t : part.targets) query.targets.push_back(std::move(t));
    }
    query.schedule = scheduler::merge_run_summaries(std::move(schedules));
    std::sort(query.targets.begin(), query.targets.end(),
              [](const TargetRecord& a, const TargetRecord& b) { return a.index < b.index; });
    finish_query(query, config);
  });
  return job;
}

}  // namespace duet::app
