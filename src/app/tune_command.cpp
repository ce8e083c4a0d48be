// `duet tune`: see tune_command.hpp. For each model length: a synthetic model (drawn from
// real models as `duet synth-model` draws them), every MSV thread-group size and the
// Viterbi strategies (warp, thread, and strip up to its length limit) timed kernel-only
// (device/hmmsearch/hmm_gpu_timing.hpp, the same code as bench/hmm_gpu_bench) on a database
// replicated to a residue budget that shrinks with the length; the fastest per length kept,
// adjacent lengths with the same choice merged.
#include "app/tune_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "app/kit/run_context.hpp"
#include "app/pairhmm/pairhmm_kernels.hpp"
#include "core/error.hpp"
#include "core/fasta_reader.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/synthetic.hpp"
#include "io/kernel_table.hpp"
#ifdef DUET_HAVE_CUDA
#include "device/gpu_info.hpp"
#include "device/hmmsearch/hmm_gpu_timing.hpp"
#endif

namespace duet::app {

namespace {

struct TuneOptions {
  std::string out;
  std::vector<int> lengths = {16,  32,  48,  64,   96,   128,  192, 256,
                              384, 512, 768, 1024, 1536, 2048, 3000};
  std::vector<std::string> sources = {"/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm",
                                      "/usr/share/doc/hmmer/examples/tutorial/fn3.hmm",
                                      "/usr/share/doc/hmmer/examples/tutorial/globins4.hmm"};
  std::string database = "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz";
  double msv_cells = 1e11;     // per MSV candidate
  double viterbi_cells = 5e9;  // per Viterbi candidate
  int device = 0;
  std::uint64_t seed = 1;
};

#ifdef DUET_HAVE_CUDA
// At least `residues` worth of targets, cycling through `db`.
std::vector<device::GpuTarget> replicate(const std::vector<Sequence>& db, double residues) {
  std::vector<device::GpuTarget> targets;
  double total = 0;
  while (total < residues) {
    for (const Sequence& s : db) {
      targets.push_back({s.residues.data(), static_cast<int>(s.residues.size())});
      total += static_cast<double>(s.residues.size());
      if (total >= residues) break;
    }
  }
  return targets;
}

int run_tune(const TuneOptions& o, const std::string& command_line) {
  const device::GpuInventory inventory = device::list_gpus();
  if (inventory.gpus.empty()) {
    throw UsageError("duet tune needs a GPU: none usable (" + inventory.problem + ")");
  }
  const bool found = std::any_of(inventory.gpus.begin(), inventory.gpus.end(),
                                 [&](const device::GpuInfo& g) { return g.index == o.device; });
  if (!found) throw UsageError("--gpu: GPU " + std::to_string(o.device) + " is not available");
  for (int M : o.lengths)
    if (M < 1 || M > 100000) throw UsageError("model length must be 1 to 100000");
  const auto folder = std::filesystem::path(o.out).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder)) {
    throw InputError(o.out, 0, "cannot create output file: folder does not exist");
  }
  std::vector<HmmModel> sources;
  for (const auto& p : o.sources)
    for (auto& m : read_hmm_file(p)) sources.push_back(std::move(m));
  if (sources.empty()) throw UsageError("--from: no source models");
  const Alphabet& abc = *sources.front().alphabet;
  std::vector<Sequence> db;
  {
    FastaReader reader(o.database, abc);
    Sequence s;
    while (reader.next(s))
      if (!s.residues.empty()) db.push_back(s);
  }
  if (db.empty()) throw InputError(o.database, 0, "no sequences");

  std::string device_name;
  for (const auto& g : inventory.gpus)
    if (g.index == o.device) device_name = g.name;
  std::vector<io::KernelTimingPoint> points;
  std::printf("%6s %10s %10s %10s %10s %10s %10s %8s\n", "M", "MSV_g8_ms", "MSV_g16_ms",
              "MSV_g32_ms", "VIT_warp", "VIT_thread", "VIT_strip", "checked");
  for (std::size_t i = 0; i < o.lengths.size(); ++i) {
    const int M = o.lengths[i];
    const HmmModel hmm = synthetic_model(sources, M, o.seed + i, "tune" + std::to_string(M));
    const SearchProfile profile = build_search_profile(hmm, Background::for_alphabet(abc));
    const auto msv_targets = replicate(db, std::clamp(o.msv_cells / M, 2e7, 2e8));
    const auto vit_targets = replicate(db, std::clamp(o.viterbi_cells / M, 2e6, 3e7));
    io::KernelTimingPoint point;
    point.length = M;
    int checked = 0, wrong = 0;
    for (const int group : {8, 16, 32}) {
      const auto t = device::time_hmm_kernels(
          o.device, profile, {group, device::GpuStrategy::warp_groups}, msv_targets, {});
      point.msv_ms.emplace_back(group, t.msv_ms);
      checked += t.checked;
      wrong += t.wrong;
    }
    // The strip kernel exists up to kViterbiStripMaxLength nodes (the warp kernel beyond).
    for (const auto strategy :
         {device::GpuStrategy::warp_groups, device::GpuStrategy::thread_per_target,
          device::GpuStrategy::warp_strip}) {
      if (strategy == device::GpuStrategy::warp_strip && M > device::kViterbiStripMaxLength) {
        continue;
      }
      const auto t = device::time_hmm_kernels(o.device, profile, {0, strategy}, {}, vit_targets);
      (strategy == device::GpuStrategy::warp_groups         ? point.viterbi_warp_ms
       : strategy == device::GpuStrategy::thread_per_target ? point.viterbi_thread_ms
                                                            : point.viterbi_strip_ms) =
          t.viterbi_ms;
      checked += t.checked;
      wrong += t.wrong;
    }
    std::printf("%6d %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %5d/%d\n", M, point.msv_ms[0].second,
                point.msv_ms[1].second, point.msv_ms[2].second, point.viterbi_warp_ms,
                point.viterbi_thread_ms, point.viterbi_strip_ms, checked - wrong, checked);
    std::fflush(stdout);
    if (wrong != 0) {
      throw std::runtime_error("GPU scores differ from the references at model length " +
                               std::to_string(M) + " (no table written)");
    }
    points.push_back(std::move(point));
  }
  io::KernelTable table;
  table.device = device_name;
  table.measured = now_iso8601();
  table.command = command_line;
  table.rows = io::rows_from_timings(points);
  table.pairhmm_shapes = measured_pairhmm_shapes();
  const std::string tmp = o.out + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << io::to_toml(table);
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp);
      throw InputError(o.out, 0, "cannot write output file");
    }
  }
  std::filesystem::rename(tmp, o.out);
  std::cerr << "duet: wrote " << table.rows.size() << " row(s) to " << o.out << "\n";
  return 0;
}
#endif

}  // namespace

void add_tune_command(CLI::App& app,
                      std::vector<std::pair<CLI::App*, std::function<int()>>>& commands, int argc,
                      char** argv) {
  auto o = std::make_shared<TuneOptions>();
  auto* cmd = app.add_subcommand("tune",
                                 "Time the GPU kernels by model length and write the kernel-choice "
                                 "table (configs/gpu-kernels.toml)");
  cmd->add_option("-o,--out", o->out, "the table to write (TOML)")->required();
  cmd->add_option("-L,--length", o->lengths,
                  "model lengths to time (default 16 to 3000, 15 lengths)");
  cmd->add_option("--from", o->sources,
                  "HMMER3 files the synthetic models' nodes are drawn from (default: the "
                  "tutorial Pfam models)");
  cmd->add_option("--database", o->database,
                  "FASTA the targets come from, replicated as needed (default: the "
                  "MMseqs2 example DB)");
  cmd->add_option("--msv-cells", o->msv_cells,
                  "cells per MSV timing (default 1e11; residues clamped to 2e7..2e8)");
  cmd->add_option("--viterbi-cells", o->viterbi_cells,
                  "cells per Viterbi timing (default 5e9; residues clamped to 2e6..3e7)");
  cmd->add_option("--gpu", o->device, "GPU to time (default 0)");
  cmd->add_option("--seed", o->seed, "seed of the synthetic models (default 1)");
  const std::string command_line = join_command_line(argc, argv);
  commands.emplace_back(cmd, [o, command_line]() -> int {
#ifdef DUET_HAVE_CUDA
    return run_tune(*o, command_line);
#else
    (void)command_line;
    throw UsageError("duet tune needs a GPU: this build has no CUDA support");
#endif
  });
}

}  // namespace duet::app
