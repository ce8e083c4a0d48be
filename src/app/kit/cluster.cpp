// The job of ranks over MPI (Open MPI from Debian, or any MPI-3 library); see cluster.hpp.
//
// Messages: chunk requests (pass, estimated blocks) from any rank to rank 0 and the
// chunks back, on a communicator of their own that rank 0's service thread answers; the
// results streamed to rank 0 during the search (send_to_root: a sender thread per rank),
// which the same service thread takes between requests, on a second; the final gather of
// results, and the few collectives, on a third. MPI is initialised with
// MPI_THREAD_MULTIPLE: the scheduler's reader thread asks for chunks while the main thread
// waits.
#include "app/kit/cluster.hpp"

#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>

#include "app/kit/run_context.hpp"
#include "core/error.hpp"

#ifdef DUET_HAVE_MPI
// The C API only (Open MPI's and MPICH's deprecated C++ bindings are not linked).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace duet::app {

namespace {

Cluster* g_cluster = nullptr;
bool g_running = false;
bool g_own_failure = false;  // this rank's check failed, rank 0's did not
bool g_agreed = false;       // agree_on_checks was called

#ifdef DUET_HAVE_MPI

// Whether a launcher (mpirun, mpiexec, srun) started this process.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw std::runtime_error(std::string("MPI: ") + what + ": " + std::string(text, length));
  }
}

// Waits for `request` with short sleeps (MPI's own wait spins on a core); a signal ends
// the wait with Interrupted (the job is going down).
void wait_for(MPI_Request& request, const std::atomic<bool>* stop = &g_interrupted) {
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    if (stop != nullptr && stop->load()) throw Interrupted{};
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// wait_for for every request of `requests`.
void wait_all(std::span<MPI_Request> requests) {
  for (MPI_Request& r : requests) wait_for(r);
}

constexpr int kRequestTag = 1, kChunkTag = 2, kSizeTag = 3, kBytesTag = 4, kGoTag = 5,
              kStreamTag = 6;
constexpr std::int64_t kMaxMessage = std::int64_t{1} << 30;

class MpiCluster final : public Cluster, public scheduler::ChunkClient {
 public:
  MpiCluster() {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &chunk_comm_), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &data_comm_), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &stream_comm_), "MPI_Comm_dup");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    MPI_Comm local;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
          "MPI_Comm_split_type");
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    std::vector<char> all(static_cast<std::size_t>(size_) * MPI_MAX_PROCESSOR_NAME);
    check(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                        MPI_CHAR, data_comm_),
          "MPI_Allgather");
    for (int r = 0; r < size_; ++r) hosts_.emplace_back(all.data() + r * MPI_MAX_PROCESSOR_NAME);
    coordinator_ = std::make_unique<scheduler::ChunkCoordinator>(size_);
    kill_rank_ = debug_setting("DUET_DEBUG_KILL_RANK");
    if (rank_ == 0 && size_ > 1) service_ = std::thread([this] { serve(); });
  }
  ~MpiCluster() override {
    stop_service_ = true;
    if (service_.joinable()) service_.join();
    stop_sender();
    // DUET_TIMES: what the job's messages cost this rank (bench/RESULTS.md's model of
    // cluster scaling).
    if (timings_wanted()) {
      std::fprintf(stderr,
                   "duet: rank %d: %lld chunk requests, %.6f s asking; gather %lld bytes in "
                   "%.6f s; streamed %lld bytes in %lld messages\n",
                   rank_, static_cast<long long>(requests_), request_seconds_,
                   static_cast<long long>(gathered_bytes_), gather_seconds_,
                   static_cast<long long>(streamed_bytes_), static_cast<long long>(streamed_));
    }
    MPI_Comm_free(&chunk_comm_);
    MPI_Comm_free(&data_comm_);
    MPI_Comm_free(&stream_comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  const std::vector<std::string>& hosts() const override { return hosts_; }
  scheduler::ChunkClient& chunks() override { return *this; }

  scheduler::Chunk next_chunk(int pass, std::int64_t estimated_blocks) override {
    // Debug setting for the tests of a rank that dies: the rank dies asking for its first chunk.
    if (kill_rank_ == rank_ + 1) ::raise(SIGKILL);
    const auto asked = Clock::now();
    scheduler::Chunk chunk;
    if (rank_ == 0) {
      chunk = coordinator_->next_chunk(pass, estimated_blocks);
    } else {
      std::int64_t request[2] = {pass, estimated_blocks}, reply[2] = {0, 0};
      MPI_Request received;
      check(MPI_Irecv(reply, 2, MPI_INT64_T, 0, kChunkTag, chunk_comm_, &received), "MPI_Irecv");
      check(MPI_Send(request, 2, MPI_INT64_T, 0, kRequestTag, chunk_comm_), "MPI_Send");
      wait_for(received);
      chunk = {reply[0], reply[1]};
    }
    ++requests_;
    request_seconds_ += seconds_since(asked);
    return chunk;
  }

  std::int64_t agree(std::int64_t value) override {
    check(MPI_Bcast(&value, 1, MPI_INT64_T, 0, data_comm_), "MPI_Bcast");
    return value;
  }

  std::vector<int> all_values(int value) override {
    std::vector<int> all(static_cast<std::size_t>(size_));
    check(MPI_Allgather(&value, 1, MPI_INT, all.data(), 1, MPI_INT, data_comm_), "MPI_Allgather");
    return all;
  }

  std::vector<std::string> gather(std::string bytes) override {
    if (rank_ != 0) flush_sender();
    const auto started = Clock::now();
    struct Note {  // the gather's time and bytes, for the DUET_TIMES line
      MpiCluster& c;
      Clock::time_point started;
      ~Note() { c.gather_seconds_ += seconds_since(started); }
    } note{*this, started};
    gathered_bytes_ += static_cast<std::int64_t>(bytes.size());
    // Sizes first, waited for with sleeps (ranks end their work at different times); then
    // rank 0 asks every rank for its bytes at once and the transfers run at full speed
    // (MPI's own waits: a polled transfer moves a fragment per poll).
    if (rank_ != 0) {
      std::int64_t size = static_cast<std::int64_t>(bytes.size());
      int go = 0;
      MPI_Request request[2];
      check(MPI_Irecv(&go, 1, MPI_INT, 0, kGoTag, data_comm_, &request[1]), "MPI_Irecv");
      check(MPI_Isend(&size, 1, MPI_INT64_T, 0, kSizeTag, data_comm_, &request[0]), "MPI_Isend");
      wait_all(request);
      for (std::int64_t at = 0; at < size; at += kMaxMessage) {
        check(MPI_Send(bytes.data() + at, static_cast<int>(std::min(kMaxMessage, size - at)),
                       MPI_BYTE, 0, kBytesTag, data_comm_),
              "MPI_Send");
      }
      return {};
    }
    std::vector<std::string> all(static_cast<std::size_t>(size_));
    all[0] = std::move(bytes);
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(size_), 0);
    std::vector<MPI_Request> requests;
    for (int r = 1; r < size_; ++r) {
      requests.emplace_back();
      check(MPI_Irecv(&sizes[static_cast<std::size_t>(r)], 1, MPI_INT64_T, r, kSizeTag, data_comm_,
                      &requests.back()),
            "MPI_Irecv");
    }
    wait_all(requests);
    requests.clear();
    for (int r = 1; r < size_; ++r) {
      std::string& to = all[static_cast<std::size_t>(r)];
      const std::int64_t size = sizes[static_cast<std::size_t>(r)];
      to.resize(static_cast<std::size_t>(size));
      for (std::int64_t at = 0; at < size; at += kMaxMessage) {
        requests.emplace_back();
        check(MPI_Irecv(to.data() + at, static_cast<int>(std::min(kMaxMessage, size - at)),
                        MPI_BYTE, r, kBytesTag, data_comm_, &requests.back()),
              "MPI_Irecv");
      }
      gathered_bytes_ += size;
    }
    for (int r = 1; r < size_; ++r) {
      int go = 1;
      check(MPI_Send(&go, 1, MPI_INT, r, kGoTag, data_comm_), "MPI_Send");
    }
    check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall");
    return all;
  }

  void send_to_root(std::string bytes) override {
    if (rank_ == 0) throw std::logic_error("send_to_root on rank 0");
    std::lock_guard lock(outbox_mutex_);
    if (!sender_.joinable()) sender_ = std::thread([this] { send_queued(); });
    outbox_.push_back(std::move(bytes));
    outbox_changed_.notify_all();
  }

  void receive_at_root(std::function<void(std::string&&)> receiver) override {
    std::lock_guard lock(receiver_mutex_);
    receiver_ = std::move(receiver);
  }

  [[noreturn]] void abort(int status) override {
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, status);
    std::_Exit(status);
  }

 private:
  // Rank 0's service: answers chunk requests until the job ends.
  void serve() {
    try {
      for (;;) {
        std::int64_t request[2] = {0, 0};
        MPI_Request received;
        check(
            MPI_Irecv(request, 2, MPI_INT64_T, MPI_ANY_SOURCE, kRequestTag, chunk_comm_, &received),
            "MPI_Irecv");
        MPI_Status status;
        int done = 0;
        auto pause = std::chrono::microseconds(20);
        while (!done) {
          check(MPI_Test(&received, &done, &status), "MPI_Test");
          if (done) break;
          if (receive_streamed()) {
            pause = std::chrono::microseconds(20);
            continue;
          }
          if (stop_service_.load()) {
            MPI_Cancel(&received);
            MPI_Wait(&received, MPI_STATUS_IGNORE);
            return;
          }
          std::this_thread::sleep_for(pause);
          pause = std::min(pause * 2, std::chrono::microseconds(500));
        }
        const scheduler::Chunk chunk =
            coordinator_->next_chunk(static_cast<int>(request[0]), request[1]);
        std::int64_t reply[2] = {chunk.first, chunk.last};
        check(MPI_Send(reply, 2, MPI_INT64_T, status.MPI_SOURCE, kChunkTag, chunk_comm_),
              "MPI_Send");
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%serror: the chunk service failed: %s\n", message_prefix().c_str(),
                   e.what());
      abort(1);
    }
  }

  // Rank 0: one message of send_to_root's, if one has come, to the receiver. A message is
  // a batch: items of (size, bytes).
  bool receive_streamed() {
    int waiting = 0;
    MPI_Message message;
    MPI_Status status;
    check(MPI_Improbe(MPI_ANY_SOURCE, kStreamTag, stream_comm_, &waiting, &message, &status),
          "MPI_Improbe");
    if (!waiting) return false;
    int count = 0;
    check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    std::string batch(static_cast<std::size_t>(count), '\0');
    check(MPI_Mrecv(batch.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
    std::lock_guard lock(receiver_mutex_);
    // None set: the search has ended, stopped (a rank's last batch may still come); dropped.
    if (!receiver_) return true;
    for (std::size_t at = 0; at < batch.size();) {
      std::uint64_t size = 0;
      if (batch.size() - at < sizeof size)
        throw std::runtime_error("a streamed batch is cut short");
      std::memcpy(&size, batch.data() + at, sizeof size);
      at += sizeof size;
      if (batch.size() - at < size) throw std::runtime_error("a streamed batch is cut short");
      receiver_(batch.substr(at, size));
      at += size;
    }
    return true;
  }

  // A rank other than 0: sends what send_to_root queued, everything queued at once as one
  // message, in order, until stopped; waits with short sleeps (wait_for).
  void send_queued() {
    try {
      for (;;) {
        std::deque<std::string> items;
        {
          std::unique_lock lock(outbox_mutex_);
          outbox_changed_.wait(lock, [&] { return !outbox_.empty() || stop_sender_; });
          if (outbox_.empty()) return;
          items.swap(outbox_);
          sending_ = true;
        }
        std::string batch;
        for (const std::string& item : items) {
          const std::uint64_t size = item.size();
          batch.append(reinterpret_cast<const char*>(&size), sizeof size);
          batch.append(item);
        }
        if (batch.size() > static_cast<std::size_t>(kMaxMessage))
          throw std::runtime_error("a streamed batch over 1 GiB");
        MPI_Request request;
        check(MPI_Isend(batch.data(), static_cast<int>(batch.size()), MPI_BYTE, 0, kStreamTag,
                        stream_comm_, &request),
              "MPI_Isend");
        wait_for(request, nullptr);
        std::lock_guard lock(outbox_mutex_);
        streamed_bytes_ += static_cast<std::int64_t>(batch.size());
        ++streamed_;
        sending_ = false;
        outbox_changed_.notify_all();
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%serror: sending results to rank 0 failed: %s\n",
                   message_prefix().c_str(), e.what());
      abort(1);
    }
  }

  // Waits until everything queued has been sent.
  void flush_sender() {
    std::unique_lock lock(outbox_mutex_);
    while (!outbox_.empty() || sending_) {
      if (g_interrupted.load()) throw Interrupted{};
      outbox_changed_.wait_for(lock, std::chrono::milliseconds(1));
    }
  }

  void stop_sender() {
    {
      std::lock_guard lock(outbox_mutex_);
      stop_sender_ = true;
      outbox_changed_.notify_all();
    }
    if (sender_.joinable()) sender_.join();
  }

  MPI_Comm chunk_comm_, data_comm_, stream_comm_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::vector<std::string> hosts_;
  std::unique_ptr<scheduler::ChunkCoordinator> coordinator_;
  std::atomic<bool> stop_service_{false};
  int kill_rank_ = 0;  // DUET_DEBUG_KILL_RANK: rank + 1 that dies; 0 none
  // For the DUET_TIMES line: chunk requests and their wall time, and the gather's.
  std::int64_t requests_ = 0, gathered_bytes_ = 0;
  double request_seconds_ = 0, gather_seconds_ = 0;
  std::thread service_;
  // send_to_root's queue and thread (ranks other than 0).
  std::mutex outbox_mutex_;
  std::condition_variable outbox_changed_;
  std::deque<std::string> outbox_;
  bool sending_ = false, stop_sender_ = false;
  std::int64_t streamed_bytes_ = 0, streamed_ = 0;
  std::thread sender_;
  // receive_at_root's receiver (rank 0).
  std::mutex receiver_mutex_;
  std::function<void(std::string&&)> receiver_;
};

std::unique_ptr<MpiCluster> g_mpi;
bool g_mpi_initialised = false;

#endif  // DUET_HAVE_MPI

}  // namespace

Cluster* cluster() {
  return g_cluster;
}

bool cluster_support() {
#ifdef DUET_HAVE_MPI
  return true;
#else
  return false;
#endif
}

ClusterSession::ClusterSession([[maybe_unused]] int* argc, [[maybe_unused]] char*** argv) {
#ifdef DUET_HAVE_MPI
  if (!launched_by_mpi()) return;
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "duet: error: MPI could not start\n");
    std::exit(1);
  }
  g_mpi_initialised = true;
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr,
                 "duet: error: the MPI library does not support threads (MPI_THREAD_MULTIPLE), "
                 "which duet's ranks need\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // Errors come back as codes (check() turns them into exceptions), not as aborts.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  g_mpi = std::make_unique<MpiCluster>();
  g_cluster = g_mpi.get();
#endif
}

void ClusterSession::end() {
#ifdef DUET_HAVE_MPI
  if (!g_mpi_initialised) return;
  g_mpi_initialised = false;
  g_cluster = nullptr;
  g_mpi.reset();
  MPI_Finalize();
#endif
}

int error_status(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const Interrupted&) {
    return stop_exit_status();
  } catch (const UsageError&) {
    return 2;
  } catch (const PeerFailed& p) {
    return p.status;
  } catch (...) {
    return 1;
  }
}

void agree_on_checks(std::exception_ptr error) {
  Cluster* c = cluster();
  if (c == nullptr) {
    if (error) std::rethrow_exception(error);
    return;
  }
  const int mine = error ? error_status(error) : 0;
  g_agreed = true;
  const std::vector<int> all = c->all_values(mine);
  if (error) {
    if (c->rank() != 0 && all[0] != 0) throw PeerFailed{mine};
    g_own_failure = true;
    std::rethrow_exception(error);
  }
  for (const int status : all) {
    if (status != 0) throw PeerFailed{status};
  }
  g_running = true;
}

bool checks_agreed() {
  return g_agreed;
}

bool cluster_running() {
  return g_running && cluster() != nullptr;
}

bool says_errors() {
  const Cluster* c = cluster();
  return c == nullptr || c->rank() == 0 || g_running || g_own_failure;
}

std::string message_prefix() {
  const Cluster* c = cluster();
  if (c == nullptr || c->size() == 1) return "duet: ";
  return "duet: rank " + std::to_string(c->rank()) + " (" +
         c->hosts()[static_cast<std::size_t>(c->rank())] + "): ";
}

int usable_cores() {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const Cluster* c = cluster();
  if (c == nullptr) return cores;
  const int share = std::max(1, cores / std::max(1, c->local_size()));
  cpu_set_t set;
  CPU_ZERO(&set);
  int bound = cores;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) bound = std::max(1, CPU_COUNT(&set));
  static bool said = false;
  if (bound < share && c->rank() == 0 && !said) {
    said = true;
    std::fprintf(stderr,
                 "duet: warning: rank 0 may use %d of the %d cores its share of the host would "
                 "give it (mpirun binds ranks to cores by default): give mpirun --bind-to none, "
                 "or --map-by slot:PE=%d\n",
                 bound, share, share);
  }
  return std::min(bound, share);
}

std::vector<int> rank_gpus(const std::vector<int>& found) {
  const Cluster* c = cluster();
  if (c == nullptr || c->local_size() <= 1 || found.empty()) return found;
  std::vector<int> mine;
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(c->local_size())) == c->local_rank())
      mine.push_back(found[i]);
  }
  if (mine.empty()) mine.push_back(found[static_cast<std::size_t>(c->local_rank()) % found.size()]);
  return mine;
}

void refuse_several_ranks(const std::string& command) {
  const Cluster* c = cluster();
  if (c != nullptr && c->size() > 1) {
    throw UsageError(command + " runs in one process: start it without mpirun, or with -np 1");
  }
}

}  // namespace duet::app
