// hmmsearch over the ranks of an MPI job (kit/cluster.hpp): each rank searches the
// chunks of the database it is handed (HybridOptions::cluster), then sends rank 0 what it
// found; rank 0 merges the ranks' runs into the run one process would have made, and
// writes every output from it.
#pragma once

#include <string>
#include <vector>

#include "app/hmmsearch/search.hpp"

namespace duet::app {

// What a rank's run adds to the job's: per query, its pipeline counts, target records,
// scheduler summaries and GPU figures.
std::string pack_rank_run(const SearchRun& run);

// Rank 0: the job's run from rank 0's own run and the other ranks' packed runs (index:
// rank; ranks[0], rank 0's, is not read). Per query: the targets of every rank in database order,
// the counts and GPU figures summed, each pass's summary merged (scheduler::merge_run_summaries:
// trace rows with their rank), and E-values and reported hits set again (finish_query)
// from the whole database's counts, as one process would have them.
SearchRun merge_rank_runs(SearchRun own, const std::vector<std::string>& ranks,
                          const io::SearchConfig& config);

}  // namespace duet::app
