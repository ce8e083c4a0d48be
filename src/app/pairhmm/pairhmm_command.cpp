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
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>
#include <tuple>

#include "app/pairhmm/pairhmm_workload.hpp"
#include "app/kit/run_context.hpp"
#include "app/kit/trace_output.hpp"
#include "core/error.hpp"
#include "core/pairhmm_input.hpp"
#include "core/pairhmm_model.hpp"
#include "host_simd/pairhmm_simd.hpp"
#include "io/hdf5_file.hpp"
#include "io/output_file.hpp"

namespace duet::app {

namespace {

struct Options {
  std::string input, out = "duet.h5", format = "auto", isa = "auto", gpu_kernel = "auto";
  std::string policy = "dynamic";
  int cpu = 0, min_base_quality = 6;
  double static_cpu_fraction = 0.5;
  std::int64_t block_cells = 1 << 22;
  std::size_t queue_depth = 0, gpu_batch_blocks = 256;
  int gpu_parts = 2;
  int worker_nice = 19;
  bool quiet = false, no_gpu = false, gpu_only = false;
};

void write_trace(io::Hdf5Writer& file, const scheduler::RunSummary& s) {
  const std::string g = "/trace/pairhmm";
  write_trace_rows(file, g, s.trace, "pairs", false);
  file.set_attribute(
      g, "cells_note",
      std::string("DP cells counted in units of 256 per pair (the cost of a block of pairs): "
                  "within 256 cells per pair of the exact count"));
  file.set_attribute(g, "time_unit", std::string("seconds from the start of the run"));
  file.set_attribute(g, "wall_seconds", s.seconds);
  file.set_attribute(g, "idle_tail_seconds", s.idle_tail_seconds);
}

void write_results(io::Hdf5Writer& file, const pairhmm::Input& input, const PairhmmRun& run,
                   const Options& o, const std::string& command_line, const std::string& started) {
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
  file.set_attribute(g, "min_base_quality", o.min_base_quality);
  file.set_attribute(
      g, "model",
      std::string("GATK/GKL pair-HMM Forward: float (initial constant 2^120 / haplotype "
                  "length), recomputed in double (2^1020) when the float sum < 1e-28"));

  file.create_group("/run");
  file.set_attribute("/run", "program", std::string("duet pairhmm"));
  file.set_attribute("/run", "version", std::string(DUET_VERSION));
  file.set_attribute("/run", "command_line", command_line);
  file.set_attribute("/run", "input", input.path);
  file.set_attribute("/run", "isa", run.cpu_kernel);
  file.set_attribute("/run", "cpu_kernel", run.cpu_kernel);
  file.set_attribute("/run", "gpu_kernel",
                     run.gpu_kernel.empty() ? std::string("none") : run.gpu_kernel);
  file.set_attribute("/run", "machine_host", host_name());
  file.set_attribute("/run", "machine_cpu", cpu_model());
  file.set_attribute("/run", "machine_cores",
                     static_cast<std::int64_t>(std::thread::hardware_concurrency()));
  file.set_attribute("/run", "started", started);
  file.set_attribute("/run", "wall_seconds", run.seconds);
  const scheduler::RunSummary& s = run.schedule;
  file.set_attribute("/run", "cpu_workers", s.cpu_workers);
  file.set_attribute("/run", "gpu_feeders", s.gpu_feeders);
  file.set_attribute(
      "/run", "gpu_backend",
      std::string(s.gpu_feeders == 0 ? "none"
                  : s.test_double ? "TEST DOUBLE (CPU kernels on the feeder thread; debug setting)"
                                  : "cuda"));
  file.set_attribute("/run", "test_double_output", std::int64_t{s.test_double ? 1 : 0});
  file.set_attribute("/run", "scheduler_seconds", s.seconds);
  file.set_attribute("/run", "cells_per_second",
                     s.seconds > 0 ? static_cast<double>(run.cells) / s.seconds : 0.0);
  const double units = static_cast<double>(std::max<std::int64_t>(1, s.residues));
  file.set_attribute("/run", "cpu_cell_share", static_cast<double>(s.cpu_residues) / units);
  file.set_attribute("/run", "gpu_cell_share", static_cast<double>(s.gpu_residues) / units);
  file.set_attribute("/run", "cpu_cells_per_second", s.cpu_cells_per_second);
  file.set_attribute("/run", "gpu_cells_per_second", s.gpu_cells_per_second);
  file.set_attribute("/run", "idle_tail_seconds", s.idle_tail_seconds);
  file.set_attribute("/run", "gpu_faults", s.gpu_faults);
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
  cmd->add_option("-o,--out", o->out, "HDF5 result file (default duet.h5)");
  auto* cpu = cmd->add_option("--cpu", o->cpu,
                              "CPU worker threads (default: one per core, less 4 per GPU left "
                              "to its feeder; 2 with --gpu-only, where they only help the GPU "
                              "feeders)");
  auto* min_base_quality =
      cmd->add_option("--min-base-quality", o->min_base_quality,
                      "read base qualities below this are raised to it (default 6)");
  std::vector<std::string> isas = {"auto"};
  for (const auto& v : simd::pairhmm::kPairhmmVariants) isas.emplace_back(v.name);
  cmd->add_option("--isa", o->isa,
                  "CPU kernel: auto, scalar, avx2, avx512 (studies: avx2-skewed, avx512-skewed, "
                  "avx2-diagonal, avx512-diagonal)")
      ->check(CLI::IsMember(isas));
  cmd->add_option("--gpu-kernel", o->gpu_kernel,
                  "GPU kernel: auto, inter (a thread per pair), intra (4 to 32 lanes per pair; "
                  "the GPU's flush-to-zero arithmetic where it passes a probe), intra-ieee "
                  "(intra with checked IEEE arithmetic)")
      ->check(CLI::IsMember({"auto", "inter", "intra", "intra-ieee"}));
  cmd->add_flag("--no-gpu", o->no_gpu, "run on the CPU only");
  cmd->add_flag("--gpu-only", o->gpu_only, "pairs to GPUs only (the CPU redoes failed batches)")
      ->excludes("--no-gpu");
  cmd->add_option("--policy", o->policy, "CPU/GPU split: dynamic (self-scheduling) or static")
      ->check(CLI::IsMember({"dynamic", "static"}));
  auto* static_cpu_fraction = cmd->add_option("--static-cpu-fraction", o->static_cpu_fraction,
                                              "static policy: share of cells for the CPU");
  cmd->add_option("--block-cells", o->block_cells, "DP cells per block of pairs (default 4194304)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  cmd->add_option("--queue-depth", o->queue_depth,
                  "blocks waiting in the queue (0 = 2 per worker)");
  cmd->add_option("--gpu-batch-blocks", o->gpu_batch_blocks, "blocks per GPU batch (default 256)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  cmd->add_option("--gpu-parts", o->gpu_parts,
                  "parts per GPU batch: the host packs one while the GPU runs the one before "
                  "(default 2; 1: no overlap)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--worker-nice", o->worker_nice,
                  "with GPUs, raise the CPU workers' nice value by N (0 to 19), so that GPU "
                  "feeders get a core at once; 0 = unchanged (default 19)")
      ->check(CLI::Range(0, 19));
  cmd->add_flag("--quiet", o->quiet, "nothing on standard output, no progress line");
  const std::string command_line = [&] {
    std::string s;
    for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
    return s;
  }();
  commands.emplace_back(
      cmd, [o, command_line, cpu, min_base_quality, static_cpu_fraction]() -> int {
        // A signal from here on stops the run cleanly; no output file exists yet.
        install_signal_handlers();
        const std::string started = now_iso8601();
        using Clock = std::chrono::steady_clock;
        const auto t0 = Clock::now();
        // Numbers are checked with the rules of the configuration's keys.
        for (const auto& [option, key, value] :
             {std::tuple{cpu, "cpu", static_cast<double>(o->cpu)},
              std::tuple{min_base_quality, "min_base_quality",
                         static_cast<double>(o->min_base_quality)},
              std::tuple{static_cpu_fraction, "static_cpu_fraction", o->static_cpu_fraction}}) {
          if (option->count() != 0) check_option_number(option->get_name(), key, value);
        }
        // The output can be created and is not the input, the input parses: checked before any
        // work.
        io::OutputSet outputs({o->input});
        io::Hdf5Writer h5(outputs.add(o->out, "-o"));
        phase_time("checked options");
        const pairhmm::Input input =
            pairhmm::read_input(o->input, pairhmm::parse_format(o->format));
        phase_time("read input");
        const auto t1 = Clock::now();
        const pairhmm::Model model(pairhmm::ModelOptions{o->min_base_quality});

        PairhmmRunOptions r;
        r.gpu = o->no_gpu     ? PairhmmRunOptions::Gpu::off
                : o->gpu_only ? PairhmmRunOptions::Gpu::only
                              : PairhmmRunOptions::Gpu::auto_detect;
        r.cpu_workers = o->cpu;
        r.isa = o->isa;
        r.gpu_kernel = o->gpu_kernel;
        r.policy = o->policy == "static" ? scheduler::SplitPolicy::static_fraction
                                         : scheduler::SplitPolicy::dynamic;
        r.static_cpu_fraction = o->static_cpu_fraction;
        r.block_cells = o->block_cells;
        r.queue_depth = o->queue_depth;
        r.gpu_batch_blocks = o->gpu_batch_blocks;
        r.gpu_parts = o->gpu_parts;
        r.worker_nice = o->worker_nice;
        r.test_gpus = debug_setting("DUET_DEBUG_TEST_GPU");
        r.fault_every = debug_setting("DUET_DEBUG_GPU_FAULT_EVERY");
        if (r.test_gpus > 0 && r.gpu != PairhmmRunOptions::Gpu::off) {
          std::cerr << "duet: warning: DUET_DEBUG_TEST_GPU: the GPU is a TEST DOUBLE running CPU "
                       "kernels; "
                       "the output file records it\n";
        }
        r.progress = !o->quiet && ::isatty(STDERR_FILENO);
        r.stop = &g_interrupted;
        phase_time("search starts");
        const PairhmmRun run = run_pairhmm(input, model, r);
        phase_time("search returned");
        if (run.stopped || g_interrupted.load()) {
          std::cerr << "duet: " << stop_reason() << "; no output written\n";
          return stop_exit_status();
        }
        const auto t2 = Clock::now();
        write_results(h5, input, run, *o, command_line, started);
        h5.close();
        phase_time("wrote HDF5");
        if (g_interrupted.load()) {
          std::cerr << "duet: " << stop_reason() << "; no output written\n";
          return stop_exit_status();
        }
        outputs.commit_all();
        phase_time("committed output");
        // DUET_PAIRHMM_TIMES=1: where the command's wall time went, on stderr (throughput
        // studies: the scheduler's time is what the GCUPS figure counts).
        if (std::getenv("DUET_PAIRHMM_TIMES") != nullptr) {
          const auto seconds = [](Clock::duration d) {
            return std::chrono::duration<double>(d).count();
          };
          std::fprintf(
              stderr,
              "pairhmm times: read input %.3f s, run %.3f s (scheduler %.3f s, of it making "
              "blocks %.3f s on the reader thread), write results %.3f s, total %.3f s\n",
              seconds(t1 - t0), run.seconds, run.schedule.seconds, run.block_seconds,
              seconds(Clock::now() - t2), seconds(Clock::now() - t0));
        }
        if (!o->quiet) {
          std::printf("# pairhmm: %lld pairs in %zu batches, %.3g cells, %lld computed in double\n",
                      static_cast<long long>(run.pairs), input.batches.size(),
                      static_cast<double>(run.cells), static_cast<long long>(run.pairs_in_double));
          std::printf("# kernels: CPU %s x %d workers, GPU %s\n", run.cpu_kernel.c_str(),
                      run.schedule.cpu_workers,
                      run.gpu_kernel.empty() ? "none" : run.gpu_kernel.c_str());
          std::printf("# %.3f s, %.3f GCUPS overall\n", run.schedule.seconds,
                      run.schedule.seconds > 0
                          ? static_cast<double>(run.cells) / run.schedule.seconds / 1e9
                          : 0.0);
          std::printf("# results written to %s\n", o->out.c_str());
        }
        return 0;
      });
}

}  // namespace duet::app
