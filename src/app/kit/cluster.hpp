// The job this process belongs to when `mpirun` or `srun` started it (builds with MPI):
// its rank, the ranks on its host, the coordinator of the database's chunks, and the few
// collective steps a distributed run needs. Every rank runs the whole hybrid scheduler on
// the chunks it is handed (scheduler/distributed_source.hpp); rank 0 also hands them out
// (a thread of its own, answering requests) and writes every output once, from what
// the others send it at the end.
//
// A process not started by a launcher has no cluster (cluster() is null) and runs as
// before; one started as a single rank (`mpirun -np 1`) takes the distributed path.
//
// Waits poll with short sleeps rather than MPI's busy waits, so that a rank waiting for
// a chunk or for the others does not take a core from its workers; a Ctrl-C (the
// launcher relays it as SIGTERM) ends a wait with Interrupted.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/distributed_source.hpp"

namespace duet::app {

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank among the ranks of its host, and how many there are.
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  // Every rank's host name (index: rank).
  virtual const std::vector<std::string>& hosts() const = 0;
  // Where this rank gets its chunks of each pass.
  virtual scheduler::ChunkClient& chunks() = 0;
  // Rank 0's value, on every rank (collective).
  virtual std::int64_t agree(std::int64_t value) = 0;
  // Every rank's value (collective).
  virtual std::vector<int> all_values(int value) = 0;
  // Rank 0 gets every rank's bytes (its own first); the others an empty vector
  // (collective). Throws Interrupted if a signal comes meanwhile. Everything a rank sent
  // with send_to_root before has reached rank 0's receiver by then.
  virtual std::vector<std::string> gather(std::string bytes) = 0;
  // Results on their way to rank 0 during the search, so that rank 0 writes them as one
  // process would, while the others still search. On a rank other than 0: queues `bytes`
  // and returns (a thread of its own sends what is queued, several at once, in order).
  virtual void send_to_root(std::string bytes) = 0;
  // Rank 0: every message sent with send_to_root goes to `receiver` (on the thread that
  // answers chunk requests), in the order each rank sent them; an empty function stops
  // that (it returns once a call under way has ended), and a message that comes then is
  // dropped (a stopped job's last ones).
  virtual void receive_at_root(std::function<void(std::string&&)> receiver) = 0;
  // Ends every rank of the job with `status` (after this rank said why).
  [[noreturn]] virtual void abort(int status) = 0;
};

// The job of this process, or null (no launcher, or a build without MPI).
Cluster* cluster();

// Joins the launcher's job, if any, in main() before any other thread starts; leaves it
// when destroyed, once the command is done. `argc`/`argv` are MPI's to read.
class ClusterSession {
 public:
  ClusterSession(int* argc, char*** argv);
  ~ClusterSession() { end(); }
  void end();  // leaves the job now (once)
  ClusterSession(const ClusterSession&) = delete;
  ClusterSession& operator=(const ClusterSession&) = delete;
};

// Whether this build can run under mpirun (it was built with MPI).
bool cluster_support();

// Thrown on a rank that has nothing to say when the job stops: another rank's check
// failed and that rank says why (or rank 0, for a failure every rank shares). main()
// exits with `status` silently.
struct PeerFailed {
  int status = 1;
};

// The exit status main() gives an error (1 input, 2 usage, 128 + signal when stopped).
int error_status(std::exception_ptr error);

// The checkpoint of a command that runs on several ranks, after its checks (options,
// inputs, outputs; nothing started yet): every rank learns whether every rank's checks
// passed, so that they all stop together. Every rank comes here once: the command with
// no error, or main() with the error that ended the command before it. Rethrows this
// rank's `error`, except on a rank other than 0 whose error rank 0 also had (rank 0 says
// it): PeerFailed. With every rank fine but another rank failing: PeerFailed. Without a
// cluster: rethrows `error` if any.
void agree_on_checks(std::exception_ptr error);
bool checks_agreed();

// Once agree_on_checks passed: an error from here on ends the whole job (abort).
bool cluster_running();

// Whether this rank says an error that reaches main(): always alone or on rank 0; on the
// others, once the job runs or for a check that failed on it but not on rank 0 (before,
// every rank fails alike: parsing the same command line, and rank 0 says it).
bool says_errors();

// The prefix of this rank's messages on stderr: "duet: " alone, or with the rank and host
// of a job of several ranks ("duet: rank 2 (node7): ").
std::string message_prefix();

// Cores this process should use by default: every core; in a job, the host's cores
// divided by its ranks, within the cores the launcher bound the rank to (rank 0 warns,
// once, when the binding leaves it fewer than its share).
int usable_cores();

// The GPUs this rank uses by default among `found` (--gpus not given): every one, or with
// several ranks on a host, those whose position among `found` is the rank's local rank
// modulo the host's ranks (a rank left without one shares GPU local rank mod count).
std::vector<int> rank_gpus(const std::vector<int>& found);

// A command that cannot share its work among ranks refuses a job of several.
void refuse_several_ranks(const std::string& command);

}  // namespace duet::app
