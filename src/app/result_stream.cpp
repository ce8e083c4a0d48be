#include "app/result_stream.hpp"

#include <cstdint>
#include <memory>
#include <utility>

#include "scheduler/thread_cpu.hpp"

namespace duet::app {

namespace {

// Rows gathered before they are appended: few HDF5 calls per column, little memory.
constexpr std::size_t kRowsPerAppend = 4096;

// One query's open columns and the rows not yet appended to them.
class QueryColumns {
 public:
  QueryColumns(io::Hdf5Writer& file, const std::string& group)
      : index_(file.appendable(group + "/index")),
        name_(file.appendable(group + "/name")),
        description_(file.appendable(group + "/description")),
        length_(file.appendable(group + "/length")),
        msv_(file.appendable(group + "/msv_bits")),
        viterbi_(file.appendable(group + "/viterbi_bits")),
        forward_(file.appendable(group + "/forward_bits")),
        pvalue_(file.appendable(group + "/pvalue")),
        stage_(file.appendable(group + "/stage")) {}

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
    if (index_rows_.size() >= kRowsPerAppend) flush();
  }

  // Appends what is gathered (also when nothing is: the first call creates the columns).
  void flush() {
    index_.append(index_rows_);
    name_.append(names_);
    description_.append(descriptions_);
    length_.append(lengths_);
    msv_.append(msv_rows_);
    viterbi_.append(viterbi_rows_);
    forward_.append(forward_rows_);
    pvalue_.append(pvalues_);
    stage_.append(stages_);
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

 private:
  io::Hdf5Writer::Appendable index_, name_, description_, length_, msv_, viterbi_, forward_,
      pvalue_, stage_;
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

ResultStream::ResultStream(io::Hdf5Writer& file, std::vector<std::string> group_paths)
    : file_(file), groups_(std::move(group_paths)), thread_([this] {
        scheduler::ThreadCpuAccount account("column writer");
        run();
      }) {}

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
    jobs_.push_back(Job{Job::Kind::begin, query, {}});
  }
  work_.notify_one();
}

void ResultStream::targets(std::size_t query, const std::vector<TargetRecord>& block) {
  if (block.empty()) return;
  {
    std::lock_guard lock(mutex_);
    if (error_) return;  // end_query reports it
    jobs_.push_back(Job{Job::Kind::targets, query, block});
  }
  work_.notify_one();
}

void ResultStream::end_query(std::size_t query) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(Job{Job::Kind::end, query, {}});
  }
  work_.notify_one();
  wait_idle();
}

void ResultStream::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return (jobs_.empty() && !busy_) || error_; });
  if (error_) std::rethrow_exception(error_);
}

void ResultStream::run() {
  std::unique_ptr<QueryColumns> open;
  std::size_t open_query = 0;
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
          open.reset();
          open = std::make_unique<QueryColumns>(file_, groups_.at(job.query));
          open_query = job.query;
          break;
        case Job::Kind::targets:
          if (open && open_query == job.query) open->add(std::move(job.records));
          break;
        case Job::Kind::end:
          if (open && open_query == job.query) {
            open->flush();
            open.reset();  // closes the datasets
          }
          break;
      }
    } catch (...) {
      open.reset();
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      jobs_.clear();
    }
  }
}

}  // namespace duet::app
