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
  std::string isa = "scalar";
  std::string started;  // ISO 8601
};

void write_text_report(std::ostream& out, const SearchRun& run, const io::Config& config,
                       const RunInfo& info);
void write_tblout(std::ostream& out, const SearchRun& run, const RunInfo& info);
// Writes /run and /trace into `file` (not committed); /results comes from a ResultStream
// (result_stream.hpp) during the search: the per-target columns as blocks complete, and
// each query's write_query_summary as it ends.
void write_hdf5(io::Hdf5Writer& file, const SearchRun& run, const io::Config& config,
                const RunInfo& info);
// What a query's /results group needs the whole pass for: evalue and reported, and the
// attributes (name, counts, Z...), into `group`.
void write_query_summary(io::Hdf5Writer& file, const std::string& group, const QueryResult& q);

// The HDF5 group name of a query: its name with '/' replaced, made unique (from the names
// of the queries up to it).
std::string query_group_name(const SearchRun& run, std::size_t query);
std::string query_group_name(const std::vector<std::string>& names, std::size_t query);

}  // namespace duet::app
