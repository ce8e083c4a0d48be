// The hmmsearch workload as the app runs it: queries against a streamed database, run by
// the hybrid scheduler (src/scheduler), results kept in database order, then thresholded
// into reported hits.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/kit/run_options.hpp"
#include "core/hmmsearch/cascade.hpp"
#include "core/hmmsearch/domain_definition.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/input_file.hpp"
#include "io/config.hpp"
#include "scheduler/scheduler.hpp"

namespace duet::app {

// A target that passed the MSV filter (the ones /results keeps), in database order.
struct TargetRecord {
  std::int64_t index = 0;  // 0-based position in the database
  std::string name;
  std::string accession;  // hmmscan's targets (models); empty for sequences
  std::string description;
  std::int32_t length = 0;
  // hmmscan under --cut_ga/nc/tc: the target model's own cutoffs (sequence, domain).
  std::optional<std::array<float, 2>> cutoffs;
  TargetScores scores;
  // Domain definition and the reported score, for a target that passed every filter
  // (a hit where domains.is_hit()).
  TargetDomains domains;
  // A hit's E-value (HMMER's full-sequence E-value); else the P-value of the last stage
  // run x Z.
  double evalue = 0;
  bool reported = false, included = false;
  bool is_hit() const { return scores.stage == Stage::passed && domains.is_hit(); }
};

// What a device (GPU feeder) left of a target's cascade to the CPU's post stage.
enum class Remains : std::uint8_t {
  nothing,
  forward,  // the Forward stage (needs_forward)
  viterbi,  // the Viterbi filter (decided up to it: decide_through_bias), then Forward
  domains,  // passed every filter on the device: domain definition only
};

// A target of a block that passed the MSV filter on a device: its index in the block, its
// scores, and what the device left of its cascade.
struct ScoredTarget {
  std::uint32_t index = 0;
  Remains remains = Remains::nothing;
  TargetScores scores;
};

// One block's scores for one model, as a device computed them: the targets that passed the
// MSV filter, in block order. The others stopped there and are only counted, so the host's
// work grows with the survivors, not with the database.
struct DeviceBlockScores {
  std::vector<ScoredTarget> past_msv;
};

struct PipelineCounts {
  std::int64_t targets = 0, residues = 0;
  std::int64_t passed_msv = 0, passed_bias = 0, passed_viterbi = 0, passed_forward = 0;
  PipelineCounts& operator+=(const PipelineCounts& o) {
    targets += o.targets;
    residues += o.residues;
    passed_msv += o.passed_msv;
    passed_bias += o.passed_bias;
    passed_viterbi += o.passed_viterbi;
    passed_forward += o.passed_forward;
    return *this;
  }
};

// What a query's result says besides its targets' records.
struct QuerySummary {
  std::string name, accession, description;
  int M = 0;
  PipelineCounts counts;
  double Z = 0;
  bool Z_from_option = false;
  double domZ = 0;  // the domains' search space: the reported targets unless --domZ
  bool domZ_from_option = false;
  // The model's Pfam cutoffs (sequence, domain) that --cut_ga/nc/tc chose; they replace
  // the other thresholds.
  std::optional<std::array<float, 2>> cutoffs;
  double seconds = 0;
  std::string
      gpu_kernels;  // the real GPUs' kernels ("msv_group_threads=16 viterbi=warp"); "" = none
  // What --gpu-jit gave this query's real GPUs: "" = not asked; "msv_exact (compiled
  // 0.210 s)" and the like; or "static kernels: <why>" where NVRTC could not serve.
  std::string gpu_jit;
  // The real GPUs' residues of this query: read from the resident store (kept there by an
  // earlier query), and uploaded (of which kept for later queries). Zero without GPUs.
  std::int64_t gpu_resident_residues = 0, gpu_uploaded_residues = 0, gpu_kept_residues = 0;
  // Trace and device shares of the pass that ran this query. A pass runs a group of
  // models: the query that ran first in it (run.queries[pass_first]) has the trace rows;
  // the pass's figures are the same for every model of it (pass_models).
  scheduler::RunSummary schedule;
  std::size_t pass_first = 0, pass_models = 1;
};

struct QueryResult : QuerySummary {
  std::vector<TargetRecord> targets;  // database order
  std::vector<std::size_t> reported;  // indices into `targets`, best first
};

struct SearchRun {
  std::vector<QueryResult> queries;
  double seconds = 0;
  bool stopped = false;          // interrupted (SIGINT): results are incomplete
  std::string gpu_kernel_table;  // the table the real GPUs' kernels came from; "" = none used
  // The default mode left the GPUs out: the database is below gpu_min_database.
  bool gpus_skipped_small_database = false;
  bool test_double_gpus = false;  // the GPUs were test doubles (DUET_DEBUG_TEST_GPU)
};

// Blocks per GPU batch unless [scheduler] gpu_batch_blocks says (blocks of up to
// block_residues residues).
inline constexpr std::size_t kHmmsearchGpuBatchBlocks = defaults::kGpuBatchBlocks;
// Feeder threads per GPU unless --gpu-feeders or [gpu] feeders says.
inline constexpr int kHmmsearchGpuFeeders = 2;

// How the scheduler runs the search: the settings every workload shares (RunOptions:
// devices, split policy, queue, debug settings) and hmmsearch's own. Defaults of settings
// that [scheduler] or [gpu] holds come from io::Config.
struct HybridOptions : RunOptions {
  std::size_t block_residues = static_cast<std::size_t>(io::SchedulerConfig{}.block_residues);
  std::int64_t gpu_batch_residues = io::SchedulerConfig{}.gpu_batch_residues;
  // Parser threads of the database reader (0: one per core, at most 4).
  int reader_threads = io::SchedulerConfig{}.reader_threads;
  // Memory for parsed blocks kept across the queries of a multi-model search (bytes);
  // past it, each query re-reads the rest of the database.
  std::uint64_t reuse_memory = io::SchedulerConfig{}.reuse_memory;
  // Gpu::auto_detect uses the real GPUs only for a database whose text is estimated
  // (InputFile::estimated_text_bytes) at this many bytes or more; 0: always. Below it, the
  // GPUs' start-up and small batches cost more than they give (bench/RESULTS.md).
  std::uint64_t gpu_min_database = io::SchedulerConfig{}.gpu_min_database;
  // ... or for a search of at least this many DP cells (the models' nodes times the
  // database's estimated text bytes, which bound its residues): many models make a small
  // database a large search. -1: kGpuMinCellsPerWorker per CPU worker of a CPU-only run;
  // 0: always.
  std::int64_t gpu_min_cells = -1;
  // Real GPUs (CUDA builds): the devices of --gpus (empty: every GPU found), the
  // kernel-choice table (io/kernel_table.hpp; "" = the engine's built-in rule by model
  // length) and the Viterbi strategy of --gpu-strategy ("warp" or "thread"; "" = the
  // table's), which wins over the table's.
  std::vector<int> gpu_devices;
  std::string gpu_kernel_table;
  std::string gpu_strategy;
  // Run-time specialised GPU kernels (--gpu-jit, [gpu] jit; device::GpuKernelChoice::jit).
  bool gpu_jit = io::GpuConfig{}.jit;
  // Feeder threads per real GPU (--gpu-feeders, [gpu] feeders), each with its own engine
  // (streams, buffers) and batches: one feeder's host work overlaps another's kernels.
  int gpu_feeders = kHmmsearchGpuFeeders;
  // Device memory per GPU for database blocks kept on the GPU across the queries of a
  // multi-model search (--gpu-resident, [gpu] resident; device::GpuResidentStore): bytes,
  // 0 = off, none = half the GPU's free memory.
  std::optional<std::uint64_t> gpu_resident = io::GpuConfig{}.resident;
  // A pass runs a group of models (a CPU worker runs each block, a GPU feeder each batch,
  // against all of them): at most this many (0: the default, 64 on the CPU alone and 128
  // with GPUs) and nodes_per_pass nodes in all (0: the default, 32,768 and 65,536). Results
  // do not depend on them; 1 is one pass per model.
  std::size_t models_per_pass = 0;
  std::int64_t nodes_per_pass = 0;
  // The model split of many models between the CPU's passes and the GPUs' in the default
  // mode (run_hmmsearch); off, every pass splits its blocks between them. On the H100
  // machine, 1,000 models against 20 M residues ran in 0.87 to 0.95 times the time with it
  // and two GPU lines, in three calls (bench/RESULTS.md, 2026-12-07).
  bool model_split = true;
  // Lines of GPU passes at once in a model split, each with its own engines: with 2, one
  // pass's batches run on a GPU while the CPU runs the post stage of the pass before. More
  // than 1 also splits a --gpu-only run of many models into GPU lines alone (0.90 to 0.93
  // times one line's time in the same calls).
  int gpu_lines = 2;
};

// The scheduler settings of `config` ([scheduler] table) as HybridOptions; the caller
// adds what is not configuration (debug settings, progress, the stop flag).
HybridOptions hybrid_options(const io::Config& config);

// HMMER's settings derived from the options (--max, --nobias, F1..F3).
CascadeSettings cascade_settings(const io::SearchConfig& config);
// Domain definition's settings (--nonull2, --seed).
DomainSettings domain_settings(const io::SearchConfig& config);
// The model's Pfam cutoffs that `cut` ("ga", "nc", "tc") names; none for "". A model
// without them is an InputError on `path` at the model's line.
std::optional<std::array<float, 2>> model_cutoffs(const HmmModel& model, const std::string& cut,
                                                  const std::string& path);

// Receives each query's target records in database order while its pass runs, so that
// they can be written while the workers compute (app/hmmsearch/result_stream.hpp). begin_query and
// end_query come from the thread that runs the query's pass; a pass of several models
// begins each of them, then ends them in order. Two passes may run at once (the model
// split: the CPU's passes beside the GPUs'), so the calls of two passes may interleave,
// from two threads. targets() comes from any thread, a block's records per call, one call
// at a time for a query (calls for different queries may come at once). end_query is not
// called for a query whose pass was stopped.
class TargetStream {
 public:
  virtual ~TargetStream() = default;
  virtual void begin_query(std::size_t query) = 0;
  virtual void targets(std::size_t query, const std::vector<TargetRecord>& block) = 0;
  // `result`: the query finished (finish_query has set E-values and the reported hits).
  virtual void end_query(std::size_t query, const QueryResult& result) = 0;
};

// Searches every model of `models` against the database at `database_path` with
// config.run.cpu CPU workers (0 = one per core, less the GPU feeders) and the devices of
// `hybrid`. A build without CUDA has no GPU: asking for one (Gpu::only without the test
// double) is a UsageError. `stream`, when given, sees every query's records as they are
// merged.
SearchRun run_hmmsearch(const std::vector<HmmModel>& models, const std::string& database_path,
                        const io::Config& config, const HybridOptions& hybrid = {},
                        TargetStream* stream = nullptr);
// The same on a database opened once by the caller (a FIFO or pipe is read only once:
// io::BlockStore says when that is enough).
SearchRun run_hmmsearch(const std::vector<HmmModel>& models, const InputFile& database,
                        const io::Config& config, const HybridOptions& hybrid = {},
                        TargetStream* stream = nullptr);

// Sets E-values and the reported and included flags of targets and domains once Z (and
// domZ) are known, with HMMER's thresholds (or the query's Pfam cutoffs); orders reported
// hits best first, as HMMER does.
void finish_query(QueryResult& query, const io::SearchConfig& config);

}  // namespace duet::app
