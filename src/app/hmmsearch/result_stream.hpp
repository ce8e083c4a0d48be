// ResultStream: writes each query's per-target columns of /results/hmmsearch/<query>
// (index, name, description, length, msv_bits, viterbi_bits, forward_bits, pvalue,
// stage) into the result file while the search runs, on a writer thread of its own, so
// that the file is not written by one thread after the workers have finished; then, as
// each query ends, the columns that need the whole pass (evalue, reported: Z is the
// number of targets) and the attributes (write_query_summary, report.hpp), and the
// query's /trace/<query> group (write_query_trace).
//
// The writer thread is the only one that calls HDF5 between begin_query and end_query;
// the file's owner must not use it then. A write error stops the writing and is rethrown
// by end_query (or finish); the uncommitted file is then discarded by its owner.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app/hmmsearch/report.hpp"
#include "app/hmmsearch/search.hpp"
#include "io/hdf5_file.hpp"

namespace duet::app {

class ResultStream final : public TargetStream {
 public:
  // Where the queries' /trace groups come from: each query's end, or write_traces once
  // every query has ended (a job of ranks: the pass's summary of every rank is known only
  // after the search; distributed.hpp).
  enum class Traces { with_queries, later };
  // group_names[q]: query q's group under /results/hmmsearch and /trace
  // (query_group_names, report.hpp).
  ResultStream(io::Hdf5Writer& file, const std::vector<std::string>& group_names,
               Traces traces = Traces::with_queries);
  ~ResultStream() override;  // stops the writer thread; what it did not write is dropped
  ResultStream(const ResultStream&) = delete;
  ResultStream& operator=(const ResultStream&) = delete;

  void begin_query(std::size_t query) override;
  // Copies the records; returns without waiting for the write.
  void targets(std::size_t query, const std::vector<TargetRecord>& block) override;
  // Queues the closing of the query's columns and the writing of what needs the whole
  // pass (write_query_summary: evalue, reported, the attributes; write_query_trace unless
  // Traces::later); once every query (of group_names) has ended, waits until everything
  // is written. Rethrows a write error met so far (begin_query too).
  void end_query(std::size_t query, const QueryResult& result) override;
  // Traces::later, once every query has ended: every query's /trace group, on the calling
  // thread.
  void write_traces(const std::vector<QueryResult>& queries);

  // The columns it writes (the rest of a query's group is write_hdf5's).
  static const std::vector<std::string>& column_names();

 private:
  struct Job {
    enum class Kind { begin, targets, end } kind;
    std::size_t query = 0;
    std::vector<TargetRecord> records;
    // end: the finished query without its records (query_end, report.hpp)
    std::unique_ptr<QueryEnd> result;
  };
  void run();
  void wait_idle();
  void write_trace(std::size_t query, const QuerySummary& summary);

  io::Hdf5Writer& file_;
  Traces traces_;
  std::vector<std::string> groups_, trace_groups_;  // per query: /results/hmmsearch/..., /trace/...
  std::mutex mutex_;
  std::condition_variable work_, idle_;
  std::deque<Job> jobs_;
  bool busy_ = false, stopping_ = false;
  std::size_t ended_ = 0;  // end_query calls
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace duet::app
