// run_hmmsearch: a plain parallel loop over batches of the streamed database (the
// hybrid scheduler replaces this loop).
#include "app/search.hpp"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/fasta_reader.hpp"

namespace duet::app {

CascadeSettings cascade_settings(const io::SearchConfig& config) {
  CascadeSettings s;
  s.F1 = std::min(1.0, config.F1);
  s.F2 = std::min(1.0, config.F2);
  s.F3 = std::min(1.0, config.F3);
  s.bias_filter = !config.nobias;
  if (config.max) {
    s.F1 = s.F2 = s.F3 = 1.0;
    s.bias_filter = false;
  }
  return s;
}

void finish_query(QueryResult& query, const io::SearchConfig& config) {
  query.Z_from_option = config.Z.has_value();
  query.Z = config.Z ? *config.Z : static_cast<double>(query.counts.targets);
  query.reported.clear();
  for (std::size_t i = 0; i < query.targets.size(); ++i) {
    TargetRecord& t = query.targets[i];
    t.evalue = t.scores.pvalue * query.Z;
    t.reported = false;
    if (t.scores.stage != Stage::passed) continue;
    t.reported = config.T ? t.scores.forward_bits >= *config.T : t.evalue <= config.E;
    if (t.reported) query.reported.push_back(i);
  }
  std::stable_sort(query.reported.begin(), query.reported.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = query.targets[a].scores;
    const auto& y = query.targets[b].scores;
    if (x.forward_bits != y.forward_bits) return x.forward_bits > y.forward_bits;
    return a < b;
  });
}

namespace {

constexpr std::size_t kBatchSequences = 4096;
constexpr std::size_t kBatchResidues = 4 << 20;

}  // namespace

SearchRun run_hmmsearch(const std::vector<HmmModel>& models, const std::string& database_path,
                        const io::Config& config) {
  using Clock = std::chrono::steady_clock;
  const auto run_start = Clock::now();
  const int threads = config.run.cpu > 0 ? config.run.cpu
                                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
  const CascadeSettings settings = cascade_settings(config.search);
  SearchRun run;
  for (const HmmModel& hmm : models) {
    const auto query_start = Clock::now();
    const Background bg = Background::for_alphabet(*hmm.alphabet);
    const SearchProfile profile = build_search_profile(hmm, bg);
    QueryResult query;
    query.name = hmm.name;
    query.accession = hmm.accession;
    query.description = hmm.description;
    query.M = hmm.M;

    FastaReader reader(database_path, *hmm.alphabet);
    std::vector<Sequence> batch;
    std::vector<TargetScores> scores;
    bool more = true;
    while (more) {
      batch.clear();
      std::size_t residues = 0;
      Sequence seq;
      while (batch.size() < kBatchSequences && residues < kBatchResidues) {
        if (!reader.next(seq)) {
          more = false;
          break;
        }
        residues += seq.residues.size();
        batch.push_back(std::move(seq));
      }
      scores.assign(batch.size(), TargetScores{});
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, batch.size(), 16),
                        [&](const tbb::blocked_range<std::size_t>& r) {
                          ReferenceKernels kernels(profile);
                          for (std::size_t i = r.begin(); i != r.end(); ++i) {
                            const auto& s = batch[i];
                            scores[i] = run_cascade(profile, settings, kernels, s.residues.data(),
                                                    static_cast<int>(s.residues.size()));
                          }
                        });
      for (std::size_t i = 0; i < batch.size(); ++i) {
        PipelineCounts& c = query.counts;
        const Stage st = scores[i].stage;
        ++c.targets;
        c.residues += static_cast<std::int64_t>(batch[i].residues.size());
        if (st > Stage::msv) ++c.passed_msv;
        if (st > Stage::bias) ++c.passed_bias;
        if (st > Stage::viterbi) ++c.passed_viterbi;
        if (st > Stage::forward) ++c.passed_forward;
        if (st > Stage::msv) {
          TargetRecord rec;
          rec.index = c.targets - 1;
          rec.name = std::move(batch[i].name);
          rec.description = std::move(batch[i].description);
          rec.length = static_cast<std::int32_t>(batch[i].residues.size());
          rec.scores = scores[i];
          query.targets.push_back(std::move(rec));
        }
      }
    }
    finish_query(query, config.search);
    query.seconds = std::chrono::duration<double>(Clock::now() - query_start).count();
    run.queries.push_back(std::move(query));
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  return run;
}

}  // namespace duet::app
