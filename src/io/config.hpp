// The user configuration: search thresholds (HMMER's option names and defaults), run
// settings and the hybrid scheduler's settings, read from a TOML file with tables
// [hmmsearch], [run], [scheduler] and [gpu], and written back.
//
// Reading is strict: an unknown table or key, a value of the wrong type, a value out of
// range, a TOML syntax error or an unreadable file throws duet::InputError naming the file
// and the line of the offending key. Keys that are absent keep the defaults below.
//
//   [hmmsearch]            # every key optional
//   E = 10.0               # > 0
//   T = 25.0               # any number; when present it replaces E
//   Z = 45638612           # > 0; default: number of targets
//   F1 = 0.02              # each of F1, F2, F3 in (0, 1]
//   F2 = 1e-3
//   F3 = 1e-5
//   max = false
//   nobias = false
//   nonull2 = false
//
//   [run]
//   cpu = 0                # 0 to 1024 (kMaxCpuWorkers); 0 = one worker thread per core
//   out = "duet.h5"        # not empty
//   tblout = ""            # empty = no table output
//   isa = "auto"           # auto, scalar, sse4.1, avx2, avx512
//   quiet = false
//
//   [scheduler]
//   policy = "auto"             # auto (the workload's: adaptive for hmmsearch, dynamic for
//                               # pairhmm and papara), dynamic, static or adaptive
//   static_cpu_fraction = 0.5   # in [0, 1]: share of residues for the CPU (static)
//   block_residues = 1048576    # 1 to 2^32: residues per block
//   queue_depth = 0             # 0 to 2^20: blocks waiting (memory budget); 0 = 2 per worker
//                               #   and 2 GPU batches per GPU
//   gpu_batch_blocks = 0        # 0 to 2^20: blocks per GPU batch; 0 = the workload's
//                               #   (hmmsearch 128, pairhmm 256: their blocks differ)
//   gpu_batch_residues = 134217728  # 1 to 2^40: residue budget of a GPU batch
//   no_gpu = false              # CPU only
//   gpu_only = false            # fresh blocks to GPUs only; not with no_gpu
//   reuse_memory = "2G"         # parsed blocks kept across queries: bytes as an integer,
//                               # or a string with K, M, G or T (powers of 1024)
//   gpu_min_database = "1G"     # the default mode (neither no_gpu nor gpu_only) uses the
//                               # GPUs for a database of at least this much text (a size
//                               # as reuse_memory; gzip counts 3 x its size); 0 = always
//   reader_threads = 0          # 0 to 256: parser threads of the reader; 0 = per core, <= 4
//   worker_nice = 19            # 0 to 19: with GPUs, the CPU workers' nice increment, so
//                               # that GPU feeders and the reader get a core at once
//
//   [gpu]
//   kernel_table = ""           # kernel-choice table (io/kernel_table.hpp, `duet tune`);
//                               # empty = the installed configs/gpu-kernels.toml if any,
//                               # else the built-in rule; a relative path is taken from
//                               # the working directory
//   jit = false                 # run-time specialised GPU kernels (NVRTC) where one exists
//   feeders = 2                 # 1 to 8: feeder threads per GPU, each with its own engine
//                               # and batches, so one's host work overlaps another's kernels;
//                               # absent: hmmsearch 2, pairhmm the kernel table's
//                               # pairhmm_feeders_per_gpu
//   resident = "auto"           # per GPU, database blocks kept on it across the models of
//                               # a multi-model search: "auto" (half the free GPU memory),
//                               # bytes as an integer or a size string ("8G"); 0 = off
//   sms = 0                     # 0 to 4096: SMs per GPU that duet's kernels run on (a
//                               # green context, rounded up to the GPU's partition size),
//                               # to stand in for a smaller GPU; 0 = the whole GPU
//
// Numbers may be written as TOML integers or floats; a TOML integer is required for cpu
// and the counts of [scheduler].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/defaults.hpp"

namespace duet::io {

struct SearchConfig {       // HMMER option names and defaults
  double E = 10.0;          // report targets with E-value <= E
  std::optional<double> T;  // report targets with bit score >= T (replaces E)
  std::optional<double> Z;  // search space size; default: number of targets
  double F1 = 0.02;         // MSV filter P-value threshold
  double F2 = 1e-3;         // Viterbi filter P-value threshold
  double F3 = 1e-5;         // Forward filter P-value threshold
  bool max = false;         // turn off all filters
  bool nobias = false;      // turn off the composition bias filter
  bool nonull2 = false;     // turn off the null2 score correction
  // Domains: reported with conditional E-value <= domE (or bit score >= domT) among the
  // domZ reported targets (default: their number); targets and domains included
  // (significant) with E-value <= incE / incdomE (or score >= incT / incdomT).
  double domE = 10.0;
  std::optional<double> domT;
  std::optional<double> domZ;
  double incE = 0.01;
  std::optional<double> incT;
  double incdomE = 0.01;
  std::optional<double> incdomT;
  std::int64_t seed = 42;  // generator of domain definition's sampled traces (> 0)
  // Pfam's bit score cutoffs of each model: "ga", "nc" or "tc" ("" = none). They replace
  // every reporting and inclusion threshold (T = incT, domT = incdomT).
  std::string cut;

  friend bool operator==(const SearchConfig&, const SearchConfig&) = default;
};

struct RunConfig {
  int cpu = 0;                 // worker threads, 0 = one per core
  std::string h5 = "duet.h5";  // HDF5 result file
  std::string text;            // standard (text) output file, HMMER's -o; empty = stdout
  std::string tblout;          // empty = none
  std::string domtblout;       // empty = none
  bool noali = false;          // text output without the domains' alignments
  bool acc = false;            // text output: targets' accessions, where they have one
  int textw = 120;             // text output line width (0: unlimited)
  std::string isa = "auto";    // auto, scalar, sse4.1, avx2, avx512
  bool quiet = false;

  friend bool operator==(const RunConfig&, const RunConfig&) = default;
};

struct SchedulerConfig {
  std::string policy = "auto";  // auto (the workload's), dynamic, static, adaptive
  double static_cpu_fraction = defaults::kStaticCpuFraction;  // [0, 1]
  std::int64_t block_residues = defaults::kBlockResidues;     // [1, 2^32]
  std::int64_t queue_depth =
      defaults::kQueueDepth;          // [0, 2^20]; 0 = 2 per worker, 2 batches per GPU
  std::int64_t gpu_batch_blocks = 0;  // [0, 2^20]; 0 = the workload's default
  std::int64_t gpu_batch_residues = defaults::kGpuBatchResidues;  // [1, 2^40]
  bool no_gpu = false;
  bool gpu_only = false;
  std::uint64_t reuse_memory = std::uint64_t{2} << 30;      // bytes
  int reader_threads = defaults::kReaderThreads;            // [0, 256]
  int worker_nice = defaults::kWorkerNice;                  // [0, 19]
  std::uint64_t gpu_min_database = std::uint64_t{1} << 30;  // bytes of text

  friend bool operator==(const SchedulerConfig&, const SchedulerConfig&) = default;
};

struct GpuConfig {
  std::string kernel_table;  // empty = default (see above)
  bool jit = false;
  // [1, 8]; none: the command's own default (hmmsearch kHmmsearchGpuFeeders, pairhmm the
  // kernel table's pairhmm_feeders_per_gpu).
  std::optional<int> feeders;
  std::optional<std::uint64_t> resident;  // bytes; none = "auto" (see above)
  int sms = 0;  // [0, 4096]; SMs per GPU for duet's kernels (device::set_gpu_sm_limit); 0 = all

  friend bool operator==(const GpuConfig&, const GpuConfig&) = default;
};

struct Config {
  SearchConfig search;
  RunConfig run;
  SchedulerConfig scheduler;
  GpuConfig gpu;

  friend bool operator==(const Config&, const Config&) = default;
};

// The most CPU worker threads a run may ask for ([run] cpu, --cpu): more is refused before
// any work starts, rather than failing when the threads are made.
inline constexpr int kMaxCpuWorkers = 1024;

// The allowed values of a numeric setting, named by its TOML key ("E", "F1", "cpu",
// "static_cpu_fraction", "block_residues"...). The TOML reader and the command line check
// their numbers with this one function, so that both are exactly as strict. Returns ""
// when `value` is allowed, else the problem ("must be > 0, not nan"; NaN and infinities
// are never allowed). An unknown key is a std::logic_error.
std::string number_problem(std::string_view key, double value);

// Reads and checks the TOML file at `path`.
Config load_config(const std::string& path);

// Checks and reads `toml_text`; `source_name` is the file name used in error messages.
Config parse_config(std::string_view toml_text, const std::string& source_name);

// A memory size: a non-negative integer of bytes, optionally followed by K, M, G or T
// (powers of 1024, either case, optionally with "B" or "iB": "512M", "2GiB", "100000").
// nullopt when the text is not one, or above 2^63.
std::optional<std::uint64_t> parse_memory_size(std::string_view text);
// The shortest such text for `bytes` ("2G", "1536M", "100001").
std::string format_memory_size(std::uint64_t bytes);
// The GPU resident-store budget ([gpu] resident, --gpu-resident): "auto" (an empty inner
// value) or a memory size; nullopt when the text is neither.
std::optional<std::optional<std::uint64_t>> parse_gpu_resident(std::string_view text);

// The configuration as TOML text that parse_config reads back to an equal Config
// (every double is written with the shortest digits that read back exactly).
std::string to_toml(const Config& config);

}  // namespace duet::io
