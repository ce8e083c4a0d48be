// The hmmsearch workload as the app runs it: queries against a streamed database,
// results kept in database order, then thresholded into reported hits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cascade.hpp"
#include "core/hmm.hpp"
#include "io/config.hpp"

namespace duet::app {

// A target that passed the MSV filter (the ones /results keeps), in database order.
struct TargetRecord {
  std::int64_t index = 0;  // 0-based position in the database
  std::string name;
  std::string description;
  std::int32_t length = 0;
  TargetScores scores;
  double evalue = 0;       // P-value x Z (Forward P-value when it reached Forward)
  bool reported = false;
};

struct PipelineCounts {
  std::int64_t targets = 0, residues = 0;
  std::int64_t passed_msv = 0, passed_bias = 0, passed_viterbi = 0, passed_forward = 0;
};

struct QueryResult {
  std::string name, accession, description;
  int M = 0;
  PipelineCounts counts;
  double Z = 0;
  bool Z_from_option = false;
  std::vector<TargetRecord> targets;  // database order
  std::vector<std::size_t> reported;  // indices into `targets`, best first
  double seconds = 0;
};

struct SearchRun {
  std::vector<QueryResult> queries;
  double seconds = 0;
};

// HMMER's settings derived from the options (--max, --nobias, F1..F3).
CascadeSettings cascade_settings(const io::SearchConfig& config);

// Searches every model of `models` against the database at `database_path` with
// `threads` worker threads (0 = all cores).
SearchRun run_hmmsearch(const std::vector<HmmModel>& models, const std::string& database_path,
                        const io::Config& config);

// Sets E-values and the reported flag once Z is known; orders reported hits best first.
void finish_query(QueryResult& query, const io::SearchConfig& config);

}  // namespace duet::app
