#include "app/hmmsearch/result_stream.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "app/hmmsearch/report.hpp"
#include "core/thread_cpu.hpp"

namespace duet::app {

namespace {

// Rows gathered before they are appended: few HDF5 calls per column, little memory.
constexpr std::size_t kRowsPerAppend = 4096;

// One query's columns and the rows not yet written to them. A query with fewer rows than
// kRowsPerAppend is written at its end as small contiguous datasets (a chunked, compressed
// dataset costs a whole chunk, which dominates the writing of small results); a larger
// one goes to appendable datasets as its rows come.
class QueryColumns {
 public:
  QueryColumns(io::Hdf5Writer& file, const std::string& group) : file_(file), group_(group) {}

  // Takes the job's own copy of the records: their strings move into the columns.
  void add(std::vector<TargetRecord>&& records) {
    for (TargetRecord& t : records) {
      index_rows_.push_back(t.index);
      names_.push_back(std::move(t.name));
      descriptions_.push_back(std::move(t.description));
      lengths_.push_back(t.length);
      msv_rows_.push_back(t.scores.msv_bits);
      viterbi_rows_.push_back(t.scores.viterbi_bits);
      forward_rows_.push_back(t.scores.forward_bits);
      pvalues_.push_back(t.scores.pvalue);
      stages_.push_back(static_cast<std::uint8_t>(t.scores.stage));
    }
    if (index_rows_.size() >= kRowsPerAppend) append();
  }

  // Writes what is gathered: the query is complete.
  void finish() {
    if (columns_.empty()) {
      file_.write(group_ + "/index", index_rows_);
      file_.write(group_ + "/name", names_);
      file_.write(group_ + "/description", descriptions_);
      file_.write(group_ + "/length", lengths_);
      file_.write(group_ + "/msv_bits", msv_rows_);
      file_.write(group_ + "/viterbi_bits", viterbi_rows_);
      file_.write(group_ + "/forward_bits", forward_rows_);
      file_.write(group_ + "/pvalue", pvalues_);
      file_.write(group_ + "/stage", stages_);
      return;
    }
    append();
    columns_.clear();  // closes the datasets
  }

 private:
  // Appends what is gathered, creating the appendable datasets the first time.
  void append() {
    if (columns_.empty()) {
      for (const std::string& name : ResultStream::column_names())
        columns_.push_back(file_.appendable(group_ + "/" + name));
    }
    columns_[0].append(index_rows_);
    columns_[1].append(names_);
    columns_[2].append(descriptions_);
    columns_[3].append(lengths_);
    columns_[4].append(msv_rows_);
    columns_[5].append(viterbi_rows_);
    columns_[6].append(forward_rows_);
    columns_[7].append(pvalues_);
    columns_[8].append(stages_);
    index_rows_.clear();
    names_.clear();
    descriptions_.clear();
    lengths_.clear();
    msv_rows_.clear();
    viterbi_rows_.clear();
    forward_rows_.clear();
    pvalues_.clear();
    stages_.clear();
  }

  io::Hdf5Writer& file_;
  std::string group_;
  std::vector<io::Hdf5Writer::Appendable> columns_;  // in column_names() order, once appended
  std::vector<std::int64_t> index_rows_;
  std::vector<std::string> names_, descriptions_;
  std::vector<std::int32_t> lengths_;
  std::vector<float> msv_rows_, viterbi_rows_, forward_rows_;
  std::vector<double> pvalues_;
  std::vector<std::uint8_t> stages_;
};

}  // namespace

const std::vector<std::string>& ResultStream::column_names() {
  static const std::vector<std::string> names{"index",        "name",     "description",
                                              "length",       "msv_bits", "viterbi_bits",
                                              "forward_bits", "pvalue",   "stage"};
  return names;
}

ResultStream::ResultStream(io::Hdf5Writer& file, const std::vector<std::string>& group_names,
                           Traces traces)
    : file_(file), traces_(traces) {
  for (const std::string& name : group_names) {
    groups_.push_back("/results/hmmsearch/" + name);
    trace_groups_.push_back("/trace/" + name);
  }
  thread_ = std::thread([this] {
    ThreadCpuAccount account("column writer");
    run();
  });
}

ResultStream::~ResultStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  work_.notify_all();
  thread_.join();
}

void ResultStream::begin_query(std::size_t query) {
  {
    std::lock_guard lock(mutex_);
    if (error_) std::rethrow_exception(error_);
    jobs_.push_back(Job{Job::Kind::begin, query, {}, nullptr});
  }
  work_.notify_one();
}

void ResultStream::targets(std::size_t query, const std::vector<TargetRecord>& block) {
  if (block.empty()) return;
  {
    std::lock_guard lock(mutex_);
    if (error_) return;  // end_query reports it
    jobs_.push_back(Job{Job::Kind::targets, query, block, nullptr});
  }
  work_.notify_one();
}

void ResultStream::end_query(std::size_t query, const QueryResult& result) {
  auto finished = std::make_unique<QueryEnd>(
      query_end(result, traces_ == Traces::with_queries && result.pass_first == query));
  bool last = false;
  {
    std::lock_guard lock(mutex_);
    if (error_) std::rethrow_exception(error_);
    jobs_.push_back(Job{Job::Kind::end, query, {}, std::move(finished)});
    last = ++ended_ == groups_.size();
  }
  work_.notify_one();
  // The writer goes on with this query while the next pass runs; the last to end waits.
  if (last) wait_idle();
}

void ResultStream::write_trace(std::size_t query, const QuerySummary& summary) {
  write_query_trace(file_, trace_groups_.at(query), trace_groups_.at(summary.pass_first), summary,
                    summary.pass_first == query);
}

void ResultStream::write_traces(const std::vector<QueryResult>& queries) {
  wait_idle();
  for (std::size_t q = 0; q < queries.size(); ++q) write_trace(q, queries[q]);
}

void ResultStream::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return (jobs_.empty() && !busy_) || error_; });
  if (error_) std::rethrow_exception(error_);
}

void ResultStream::run() {
  // The queries begun and not yet ended: the models of one pass are open together.
  std::map<std::size_t, std::unique_ptr<QueryColumns>> open;
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      busy_ = false;
      idle_.notify_all();
      work_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      if (error_) continue;  // after a failure nothing more is written
      busy_ = true;
    }
    try {
      switch (job.kind) {
        case Job::Kind::begin:
          open[job.query] = std::make_unique<QueryColumns>(file_, groups_.at(job.query));
          break;
        case Job::Kind::targets:
          if (auto it = open.find(job.query); it != open.end())
            it->second->add(std::move(job.records));
          break;
        case Job::Kind::end:
          if (auto it = open.find(job.query); it != open.end()) {
            it->second->finish();
            open.erase(it);
          }
          write_query_summary(file_, groups_.at(job.query), *job.result);
          if (traces_ == Traces::with_queries) write_trace(job.query, job.result->summary);
          break;
      }
    } catch (...) {
      open.clear();
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      jobs_.clear();
    }
  }
}

}  // namespace duet::app
