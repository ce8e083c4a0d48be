// What a search leaves behind: HMMER-style text on standard output, the --tblout table,
// and the HDF5 result file (/results/hmmsearch/<query>/..., /run).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "app/hmmsearch/search.hpp"
#include "io/config.hpp"
#include "io/hdf5_file.hpp"

namespace duet::app {

struct RunInfo {
  std::string command_line;
  std::string hmm_path, database_path;
  // hmmscan's layout: the queries are sequences, the targets models (scan.hpp).
  bool scan = false;
  std::string isa = "scalar";
  std::string started;  // ISO 8601
};

void write_text_report(std::ostream& out, const SearchRun& run, const io::Config& config,
                       const RunInfo& info);
// HMMER's --tblout and --domtblout tables (the reported targets, and their reported
// domains).
void write_tblout(std::ostream& out, const SearchRun& run, const RunInfo& info);
void write_domtblout(std::ostream& out, const SearchRun& run, const RunInfo& info);
// hmmsearch -A: per query with significant domains, the included domains of its included
// targets aligned to the model, in Stockholm, laid out as HMMER lays them out (every
// consensus column; insertions split between left and right justified; PP, PP_cons and
// RF lines; names target/from-to), in blocks of 200 columns, or one block where `textw`
// is 0 (--notextw).
void write_alignment_file(std::ostream& out, const SearchRun& run, int textw);
// Writes /run and the run's totals into `file` (not committed); /results and each query's
// /trace group come from a ResultStream (result_stream.hpp) during the search: the
// per-target columns as blocks complete, and each query's write_query_summary and
// write_query_trace as it ends.
void write_hdf5(io::Hdf5Writer& file, const SearchRun& run, const io::Config& config,
                const RunInfo& info);
// What a query's /results group needs the whole pass for: the columns set once Z and the
// reported targets are known, the domains table, and the attributes (name, counts, Z...).
struct QueryEnd {
  QuerySummary summary;
  // Per target, database order.
  std::vector<double> evalue;
  std::vector<float> score_bits, bias_bits;  // NaN unless a hit
  std::vector<std::uint8_t> reported, included;
  std::int64_t reported_targets = 0;
  // Every domain of every hit, in target order then domain order.
  struct Domains {
    std::vector<std::int64_t> target, target_row;
    std::vector<std::int32_t> number, hmm_from, hmm_to, ali_from, ali_to, env_from, env_to;
    std::vector<float> score_bits, bias_bits, accuracy;
    std::vector<double> c_evalue, i_evalue;
    std::vector<std::uint8_t> reported, included;
    std::vector<std::string> model_line, match_line, target_line, posterior_line;
  } domains;
};
// The query's end without its targets' records (a writer thread keeps it; copying the
// records' strings would hold up the search); the trace rows too unless `with_trace`.
QueryEnd query_end(const QueryResult& q, bool with_trace);
void write_query_summary(io::Hdf5Writer& file, const std::string& group, const QueryEnd& q);
// A query's /trace group `group`. The first model of a pass (`first`) holds the pass's
// rows, one per batch as parallel 1-D arrays, and figures; a later one names that group
// (`first_group`) and its own wall time.
void write_query_trace(io::Hdf5Writer& file, const std::string& group,
                       const std::string& first_group, const QuerySummary& q, bool first);

// The HDF5 group names of the queries, in order: each name with '/' replaced, and "#k"
// added to the k-th query (k >= 2) of the same name.
std::vector<std::string> query_group_names(const std::vector<std::string>& names);
std::vector<std::string> query_group_names(const SearchRun& run);

}  // namespace duet::app
