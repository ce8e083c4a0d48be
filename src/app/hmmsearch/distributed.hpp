// hmmsearch over the ranks of an MPI job (kit/cluster.hpp): each rank searches the
// chunks of the database it is handed (HybridOptions::cluster), then sends rank 0 what it
// found; rank 0 merges the ranks' runs into the run one process would have made, and
// writes every output from it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "app/hmmsearch/search.hpp"

namespace duet::app {

// During the search, a rank other than 0 sends rank 0 each block's records of each query
// (Cluster::send_to_root) as its in-order result sink hands them over; rank 0 puts them
// into its own sinks (RemoteBlocks), so that its result stream writes every rank's targets
// while the search runs, as one process would, and the final gather carries no targets.
struct StreamedBlock {
  int pass = 0;
  std::size_t query = 0;  // index among the run's queries
  std::int64_t block = 0;
  PipelineCounts counts;
  std::vector<TargetRecord> targets;
};
std::string pack_streamed_block(int pass, std::size_t query, std::int64_t block,
                                const PipelineCounts& counts,
                                const std::vector<TargetRecord>& targets);

// Rank 0's side: blocks of the pass that is open go to its `put`; blocks of a later pass
// (a rank may run ahead) wait until that pass opens. Thread-safe: receive() runs on the
// thread that answers chunk requests.
class RemoteBlocks {
 public:
  using Put = std::function<void(StreamedBlock&&)>;
  void receive(std::string&& bytes);
  // Blocks of `pass` go to `put` from now on, those that came early first.
  void open_pass(int pass, Put put);
  // No pass is open; a block that comes for a pass already closed is dropped (only a
  // stopped pass closes before all its blocks are in).
  void close_pass();

 private:
  std::mutex mutex_;
  int open_ = -1, closed_ = -1;
  Put put_;
  std::map<int, std::vector<StreamedBlock>> early_;
};

// What a rank's run adds to the job's: per query, its pipeline counts, target records,
// scheduler summaries and GPU figures (the counts and targets of a rank other than 0 went
// to rank 0 during the search: none here).
std::string pack_rank_run(const SearchRun& run);

// Rank 0: the job's run from rank 0's own run and the other ranks' packed runs (index:
// rank; ranks[0], rank 0's, is not read). Per query: the targets of every rank in database order,
// the counts and GPU figures summed, each pass's summary merged (scheduler::merge_run_summaries:
// trace rows with their rank), and E-values and reported hits set again (finish_query)
// from the whole database's counts, as one process would have them.
SearchRun merge_rank_runs(SearchRun own, const std::vector<std::string>& ranks,
                          const io::SearchConfig& config);

}  // namespace duet::app
