// `duet pairhmm [--format gkl|batch] INPUT -o out.h5`: reads the pairs, runs them through
// the scheduler, writes /results/pairhmm, /trace/pairhmm and /run.
#include "app/pairhmm/pairhmm_command.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>

#include "app/kit/cluster.hpp"
#include "app/kit/run_context.hpp"
#include "app/kit/run_flags.hpp"
#include "app/kit/run_options.hpp"
#include "app/kit/run_record.hpp"
#include "app/kit/trace_output.hpp"
#include "app/pairhmm/pairhmm_kernels.hpp"
#include "app/pairhmm/pairhmm_workload.hpp"
#include "core/error.hpp"
#include "core/pairhmm/pairhmm_input.hpp"
#include "core/pairhmm/pairhmm_model.hpp"
#include "device/gpu_info.hpp"
#include "host_simd/pairhmm/pairhmm_simd.hpp"
#include "io/hdf5_file.hpp"
#include "io/kernel_table.hpp"
#include "io/output_file.hpp"

namespace duet::app {

namespace {

// Inputs of at least this many bytes start the GPUs while they are read (64 MiB of the batch
// format: about 30 G cells, over the default mode's threshold on 16 cores).
constexpr std::uintmax_t kEarlyGpuStartBytes = std::uintmax_t{64} << 20;

// pairhmm's own flags; the shared ones are RunFlags'.
struct Options {
  std::string input, format = "auto", isa;
  int min_base_quality = pairhmm::ModelOptions{}.min_base_quality;
  PairhmmRunOptions run;  // pairhmm's own defaults (block_cells, gpu_parts, gpu_kernel)
  std::unique_ptr<RunFlags> flags;
};

void write_trace(io::Hdf5Writer& file, const scheduler::RunSummary& s) {
  const std::string g = "/trace/pairhmm";
  write_trace_rows(file, g, s.trace, "pairs", false);
  file.set_attribute(g, "time_unit", std::string("seconds from the start of the run"));
  file.set_attribute(g, "wall_seconds", s.seconds);
  file.set_attribute(g, "idle_tail_seconds", s.idle_tail_seconds);
}

void write_results(io::Hdf5Writer& file, const pairhmm::Input& input, const PairhmmRun& run,
                   int min_base_quality, const std::string& command_line,
                   const std::string& started) {
  const std::string g = "/results/pairhmm";
  file.write(g + "/log10_likelihood", run.log10_likelihood);
  file.write(g + "/computed_in_double", run.in_double);
  std::vector<std::int64_t> batch;
  std::vector<std::int32_t> read, haplotype;
  batch.reserve(static_cast<std::size_t>(run.pairs));
  for (std::size_t b = 0; b < input.batches.size(); ++b)
    for (std::size_t r = 0; r < input.batches[b].reads.size(); ++r)
      for (std::size_t h = 0; h < input.batches[b].haplotypes.size(); ++h) {
        batch.push_back(static_cast<std::int64_t>(b));
        read.push_back(static_cast<std::int32_t>(r));
        haplotype.push_back(static_cast<std::int32_t>(h));
      }
  file.write(g + "/batch", batch);
  file.write(g + "/read", read);
  file.write(g + "/haplotype", haplotype);
  bool any_expected = false;
  for (double e : input.expected) any_expected = any_expected || !std::isnan(e);
  if (any_expected) file.write(g + "/expected_log10_likelihood", input.expected);
  file.set_attribute(g, "input", input.path);
  file.set_attribute(g, "format", std::string(pairhmm::format_name(input.format)));
  file.set_attribute(g, "batches", static_cast<std::int64_t>(input.batches.size()));
  file.set_attribute(g, "pairs", run.pairs);
  file.set_attribute(g, "cells", run.cells);
  file.set_attribute(g, "pairs_computed_in_double", run.pairs_in_double);
  file.set_attribute(g, "min_base_quality", min_base_quality);
  file.set_attribute(
      g, "model",
      std::string("GATK/GKL pair-HMM Forward: float (initial constant 2^120 / haplotype "
                  "length), recomputed in double (2^1020) when the float sum < 1e-28"));

  write_run_header(file, {"duet pairhmm", command_line, started, run.cpu_kernel, run.seconds});
  file.set_attribute("/run", "input", input.path);
  file.set_attribute("/run", "cpu_kernel", run.cpu_kernel);
  file.set_attribute("/run", "gpu_kernel",
                     run.gpu_kernel.empty() ? std::string("none") : run.gpu_kernel);
  file.set_attribute("/run", "gpu_feeders_per_gpu",
                     static_cast<std::int64_t>(run.gpu_feeders_per_gpu));
  const scheduler::RunSummary& s = run.schedule;
  DeviceTotals totals(
      "DP cells in units of " + std::to_string(kCellsPerUnit) + " per pair (at least one)",
      run.test_double_gpus);
  totals.add(s);
  totals.write(file);
  // Exact cells (the work units round each pair to kCellsPerUnit) per scheduler second.
  file.set_attribute("/run", "cells_per_second",
                     s.seconds > 0 ? static_cast<double>(run.cells) / s.seconds : 0.0);
  write_trace(file, s);
}

}  // namespace

void add_pairhmm_command(CLI::App& app,
                         std::vector<std::pair<CLI::App*, std::function<int()>>>& commands,
                         int argc, char** argv) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "pairhmm", "GATK's pair-HMM Forward: log10 likelihood of every read/haplotype pair");
  cmd->add_option("input", o->input, "pairs: GKL seven-column or batch format (plain or .gz)")
      ->required();
  cmd->add_option("--format", o->format,
                  "input format: gkl, batch or auto (default: from the first line)")
      ->check(CLI::IsMember({"gkl", "batch", "auto"}));
  o->flags = std::make_unique<RunFlags>(*cmd, "cells", kPairhmmGpuBatchBlocks);
  auto* min_base_quality =
      cmd->add_option("--min-base-quality", o->min_base_quality,
                      "read base qualities below this are raised to it (default " +
                          std::to_string(o->min_base_quality) + ")");
  std::vector<std::string> isas = {"auto"};
  for (const auto& v : simd::pairhmm::kPairhmmVariants) isas.emplace_back(v.name);
  cmd->add_option("--isa", o->isa,
                  "CPU kernel: auto, scalar, avx2, avx512 (default: [run] isa, else auto)")
      ->check(CLI::IsMember(isas));
  cmd->add_option("--gpu-kernel", o->run.gpu_kernel,
                  "GPU kernel: auto, inter (a thread per pair), intra (4 to 32 lanes per pair; "
                  "the GPU's flush-to-zero arithmetic where it passes a probe), intra-ieee "
                  "(intra with checked IEEE arithmetic)")
      ->check(CLI::IsMember({"auto", "inter", "intra", "intra-ieee"}));
  cmd->add_option(
         "--block-cells", o->run.block_cells,
         "DP cells per block of pairs (default " + std::to_string(o->run.block_cells) + ")")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  cmd->add_option("--gpu-parts", o->run.gpu_parts,
                  "parts per GPU batch: the host packs one while the GPU runs the one before "
                  "(default " +
                      std::to_string(o->run.gpu_parts) + "; 1: no overlap)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--gpu-feeders", o->run.gpu_feeders,
                  "feeder threads per GPU, each packing and submitting its own batches, so that "
                  "one's host work overlaps another's kernels (default: [gpu] feeders, else the "
                  "kernel table's pairhmm_feeders_per_gpu, " +
                      std::to_string(io::GpuTuning{}.pairhmm_feeders_per_gpu) + " in its absence)")
      ->check(CLI::Range(1, 8));
  cmd->add_option("--gpu-min-cells", o->run.gpu_min_cells,
                  "the default mode runs on the CPU alone below this many DP cells (default: "
                  "2 G per CPU worker, the kernel table's pairhmm_gpu_min_cells_per_worker; "
                  "0: always start the GPUs)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 50));
  const std::string command_line = join_command_line(argc, argv);
  commands.emplace_back(cmd, [o, command_line, min_base_quality]() -> int {
    // A signal from here on stops the run cleanly; no output file exists yet.
    install_signal_handlers();
    const std::string started = now_iso8601();
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    check_number(min_base_quality, "min_base_quality", o->min_base_quality);
    const io::Config config = o->flags->config();
    if (!o->isa.empty()) {
      o->run.isa = o->isa;
    } else {
      o->run.isa = config.run.isa;
      bool known = o->run.isa == "auto";
      for (const auto& v : simd::pairhmm::kPairhmmVariants) known = known || o->run.isa == v.name;
      if (!known)
        throw UsageError("[run] isa = \"" + o->run.isa + "\": duet pairhmm has no such kernel");
    }
    // The output can be created and is not the input, the input parses: checked before any
    // work.
    // In an MPI job (kit/cluster.hpp), rank 0 alone writes the outputs, from every rank's
    // results.
    Cluster* const job = cluster();
    const bool writer = job == nullptr || job->rank() == 0;
    io::OutputSet outputs({o->input, o->flags->config_path(), config.gpu.kernel_table});
    std::optional<io::Hdf5Writer> h5;
    if (writer) h5.emplace(outputs.add(config.run.h5, "--h5"));
    io::OutputFile* text_output =
        config.run.text.empty() || !writer ? nullptr : &outputs.add(config.run.text, "-o");
    phase_time("checked options");
    PairhmmRunOptions r = o->run;
    static_cast<RunOptions&>(r) = run_options(config);
    r.cpu_workers = config.run.cpu;
    if (r.gpu_feeders == 0 && config.gpu.feeders) r.gpu_feeders = *config.gpu.feeders;
    add_process_settings(r, config.run.quiet);
    // A large input: the GPUs start on the warm-up thread while it is read, in case the run
    // uses them (run_pairhmm decides from its cells).
    std::error_code size_error;
    if (r.gpu != RunOptions::Gpu::off && r.test_gpus == 0 &&
        std::filesystem::file_size(o->input, size_error) >= kEarlyGpuStartBytes && !size_error &&
        device::gpus_shown_by_driver() != 0) {
      device::start_gpu_warmup();
    }
    const pairhmm::Input input = pairhmm::read_input(o->input, pairhmm::parse_format(o->format));
    phase_time("read input");
    const auto t1 = Clock::now();
    const pairhmm::Model model(pairhmm::ModelOptions{o->min_base_quality});
    // The tuning constants and the intra-task kernel's shape costs of the kernel-choice
    // table ([gpu] kernel_table, else the installed or source tree's
    // configs/gpu-kernels.toml), where GPUs may run.
    if (r.gpu != RunOptions::Gpu::off) {
      const std::string table =
          io::resolve_kernel_table_path("", config.gpu.kernel_table, default_kernel_table_paths());
      if (!table.empty()) {
        io::KernelTable loaded = io::load_kernel_table(table);
        check_pairhmm_shapes(loaded.pairhmm_shapes, table);
        r.tuning = loaded.tuning;
        r.shapes = std::move(loaded.pairhmm_shapes);
      }
    }
    // Every rank's checks passed: the run starts on all of them.
    agree_on_checks(nullptr);
    phase_time("search starts");
    PairhmmRun run = run_pairhmm(input, model, r);
    phase_time("search returned");
    if (run.stopped || g_interrupted.load()) throw Interrupted{};
    if (job != nullptr) {
      const std::vector<std::string> ranks =
          job->gather(writer ? std::string() : pack_pairhmm_rank(run));
      if (!writer) return 0;
      run = merge_pairhmm_ranks(std::move(run), ranks);
      phase_time("merged the ranks' results");
    }
    const auto t2 = Clock::now();
    write_results(*h5, input, run, o->min_base_quality, command_line, started);
    h5->close();
    phase_time("wrote HDF5");
    // The summary, to -o's file (written before every output is made visible) or, after,
    // to standard output.
    const auto summary = [&](std::ostream& out) {
      char line[512];
      std::snprintf(line, sizeof line,
                    "# pairhmm: %lld pairs in %zu batches, %.3g cells, %lld computed in double\n",
                    static_cast<long long>(run.pairs), input.batches.size(),
                    static_cast<double>(run.cells), static_cast<long long>(run.pairs_in_double));
      out << line;
      std::snprintf(line, sizeof line, "# kernels: CPU %s x %d workers, GPU %s\n",
                    run.cpu_kernel.c_str(), run.schedule.cpu_workers,
                    run.gpu_kernel.empty() ? "none" : run.gpu_kernel.c_str());
      out << line;
      std::snprintf(line, sizeof line, "# %.3f s, %.3f GCUPS overall\n", run.schedule.seconds,
                    run.schedule.seconds > 0
                        ? static_cast<double>(run.cells) / run.schedule.seconds / 1e9
                        : 0.0);
      out << line;
    };
    if (text_output != nullptr) io::write_text_file(*text_output, summary);
    if (g_interrupted.load()) throw Interrupted{};
    outputs.commit_all();
    phase_time("committed output");
    // DUET_TIMES=1 (timings_wanted): where the command's wall time went, on stderr (throughput
    // studies: the scheduler's time is what the GCUPS figure counts).
    if (timings_wanted()) {
      const auto seconds = [](Clock::duration d) {
        return std::chrono::duration<double>(d).count();
      };
      std::fprintf(stderr,
                   "pairhmm times: read input %.3f s, run %.3f s (grouping pairs %.3f s, "
                   "scheduler %.3f s, of it making blocks %.3f s on the reader thread), write "
                   "results %.3f s, total %.3f s\n",
                   seconds(t1 - t0), run.seconds, run.grouping_seconds, run.schedule.seconds,
                   run.block_seconds, seconds(Clock::now() - t2), seconds(Clock::now() - t0));
    }
    if (!config.run.quiet) {
      if (text_output == nullptr) summary(std::cout);
      std::cout << "# results written to " << config.run.h5 << "\n";
    }
    return 0;
  });
}

}  // namespace duet::app
