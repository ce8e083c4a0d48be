// Throughput-study sweep files (TOML) for `duet bench`, and the summary table (CSV).
//
//   name = "model-length"        # optional, used in file names
//   repeats = 1                  # runs of each combination
//   [workload]
//   models = ["a.hmm"]           # HMM files (each model is searched on its own), or
//   synthetic_lengths = [50, 200, 800]   # synthetic models (duet synth-model), with
//   synthetic_seed = 1
//   database = "db.fasta.gz"     # or a synthetic database:
//   synthetic_residues = 1e7     #   residues, composition and lengths of `like`
//   synthetic_homologs = 0.0     #   fraction with a domain of the first model
//   like = "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz"
//   options = ["--nobias"]       # passed to every run
//   [sweep]                      # every combination of these lists is one run
//   devices = ["cpu", "gpu", "hybrid"]   # cpu: --no-gpu, gpu: --gpu-only, hybrid: both
//   cpu = [1, 2]                 # --cpu
//   isa = ["avx2"]               # --isa
//   policy = ["dynamic", "static"]       # --policy
//   static_cpu_fraction = [0.25, 0.5]    # --static-cpu-fraction (static runs only)
//   block_residues = [1048576]   # --block-residues
//   gpu_batch_blocks = [16]      # --gpu-batch-blocks
//   gpu_batch_residues = [...]   # --gpu-batch-residues
//   gpu_strategy = ["warp"]      # --gpu-strategy
//   gpu_sms = [8, 16, 0]         # --gpu-sms (the GPU's size: SMs its kernels run on)
//
// Reading is strict, as for the run configuration: unknown keys, wrong types, empty
// lists and out-of-range values are errors naming the file and line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace duet::io {

struct SweepAxis {
  std::string key;                  // sweep key, e.g. "cpu"
  std::vector<std::string> values;  // as command-line text
};

struct SweepSpec {
  std::string name = "sweep";
  int repeats = 1;
  std::vector<std::string> models;
  std::vector<int> synthetic_lengths;
  std::uint64_t synthetic_seed = 1;
  std::string database;
  double synthetic_residues = 0;
  double synthetic_homologs = 0;
  std::string like = "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz";
  std::vector<std::string> options;
  std::vector<SweepAxis> axes;  // in the order of the file
};

// One run of a sweep: a value for every axis (keyed by sweep key).
using SweepPoint = std::map<std::string, std::string>;

SweepSpec load_sweep(const std::string& path);
SweepSpec parse_sweep(std::string_view text, const std::string& source_name);

// Every combination of the axes, in order (the last axis varies fastest). Combinations
// that make no sense are dropped: static_cpu_fraction with a policy other than static,
// or GPU settings with devices = cpu.
std::vector<SweepPoint> expand_sweep(const SweepSpec& spec);

// The duet hmmsearch options for one point.
std::vector<std::string> point_arguments(const SweepPoint& point);

// A CSV table: header then rows; fields with commas, quotes or newlines are quoted.
void write_csv(std::ostream& out, const std::vector<std::string>& header,
               const std::vector<std::vector<std::string>>& rows);
std::vector<std::vector<std::string>> read_csv(const std::string& text);

}  // namespace duet::io
