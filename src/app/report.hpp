// What a search leaves behind: HMMER-style text on standard output, the --tblout table,
// and the HDF5 result file (/results/hmmsearch/<query>/..., /run).
#pragma once

#include <ostream>
#include <string>

#include "app/search.hpp"
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
// Writes /results and /run into `file` (not committed).
void write_hdf5(io::Hdf5Writer& file, const SearchRun& run, const io::Config& config,
                const RunInfo& info);

// The HDF5 group name of a query: its name with '/' replaced, made unique.
std::string query_group_name(const SearchRun& run, std::size_t query);

}  // namespace duet::app
