// The `duet` command: subcommands `hmmsearch`, `makedb`, `info` and the others registered
// below. Every user-facing error ends here as one line on stderr and a non-zero exit
// status.
#include <H5public.h>
#include <oneapi/tbb/version.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "app/bench_command.hpp"
#include "app/makedb_command.hpp"
#include "app/pairhmm/pairhmm_command.hpp"
#include "app/hmmsearch/report.hpp"
#include "app/hmmsearch/result_stream.hpp"
#include "app/kit/run_context.hpp"
#include "app/hmmsearch/search.hpp"
#include "app/synth_command.hpp"
#include "app/tune_command.hpp"
#include "core/error.hpp"
#include "core/hmm.hpp"
#include "core/input_file.hpp"
#include "device/gpu_info.hpp"
#include "host_simd/simd_kernels.hpp"
#include "io/config.hpp"
#include "io/hdf5_file.hpp"
#include "io/kernel_table.hpp"
#include "io/output_file.hpp"
#include "scheduler/thread_cpu.hpp"

namespace {

using namespace duet;

// Thrown when a signal (SIGINT, SIGTERM, SIGHUP) stopped the run: exit status 128 + the
// signal, no output file changed.
struct Interrupted {};

// Writes a text output into its temporary file; OutputSet::commit_all makes it visible.
void write_text_output(io::OutputFile& output, const std::function<void(std::ostream&)>& fill) {
  std::ofstream out(output.create_temporary(), std::ios::trunc);
  if (!out) throw InputError(output.path(), 0, "cannot create output file");
  fill(out);
  out.flush();
  if (!out) throw InputError(output.path(), 0, "cannot write (is the disk full?)");
}

// A number given on the command line, checked as the configuration file's
// (app::check_option_number).
void check_number(const CLI::Option* option, std::string_view key, double value) {
  if (option->count() != 0) app::check_option_number(option->get_name(), key, value);
}

struct HmmsearchOptions {
  std::string hmm_path, database_path, config_path;
  double E = 0, T = 0, Z = 0, F1 = 0, F2 = 0, F3 = 0;
  int cpu = 0;
  std::string out, tblout, isa;
  bool max = false, nobias = false, nonull2 = false, quiet = false;
  bool no_gpu = false, gpu_only = false;
  std::vector<int> gpus;
  std::string gpu_strategy = "warp";
  std::string gpu_kernel_table;
  bool gpu_jit = false;
  int gpu_feeders = 0;
  std::string policy = "dynamic";
  double static_cpu_fraction = 0.5;
  std::int64_t block_residues = 1 << 20, queue_depth = 0, gpu_batch_blocks = 128;
  std::int64_t gpu_batch_residues = 128 << 20;
  std::string reuse_memory;
  std::string gpu_min_database;
  std::string gpu_resident;
  int reader_threads = 0;
  int worker_nice = 0;
};

void add_hmmsearch(CLI::App& app, HmmsearchOptions& o, std::function<int()>& action, int argc,
                   char** argv) {
  auto* cmd = app.add_subcommand("hmmsearch", "Search profile HMM(s) against a sequence database");
  cmd->add_option("hmmfile", o.hmm_path, "HMMER3 profile file (plain or .gz)")->required();
  cmd->add_option("seqdb", o.database_path,
                  "FASTA database (plain or .gz), or a packed database (duet makedb)")
      ->required();
  auto* config_opt = cmd->add_option("--config", o.config_path, "TOML configuration file");
  auto* E = cmd->add_option("-E", o.E, "report targets with E-value <= E (default 10)");
  auto* T = cmd->add_option("-T", o.T, "report targets with bit score >= T");
  auto* Z = cmd->add_option("-Z", o.Z, "number of targets for E-values (default: actual)");
  auto* F1 = cmd->add_option("--F1", o.F1, "MSV filter P-value threshold (default 0.02)");
  auto* F2 = cmd->add_option("--F2", o.F2, "Viterbi filter P-value threshold (default 1e-3)");
  auto* F3 = cmd->add_option("--F3", o.F3, "Forward filter P-value threshold (default 1e-5)");
  auto* max = cmd->add_flag("--max", o.max, "turn off all filters, bias filter included");
  auto* nobias = cmd->add_flag("--nobias", o.nobias, "turn off the composition bias filter");
  auto* nonull2 =
      cmd->add_flag("--nonull2", o.nonull2, "no null2 correction (always the case for now)");
  auto* cpu = cmd->add_option("--cpu", o.cpu, "worker threads (default: one per core)");
  auto* out = cmd->add_option("-o,--out", o.out, "HDF5 result file (default duet.h5)");
  auto* tblout = cmd->add_option("--tblout", o.tblout, "per-target table in HMMER's format");
  auto* quiet = cmd->add_flag("--quiet", o.quiet, "no output on standard output, no progress line");
  auto* isa_opt =
      cmd->add_option("--isa", o.isa,
                      "CPU kernels: auto (fastest the CPU has), scalar, sse4.1, avx2, avx512")
          ->check(CLI::IsMember({"auto", "scalar", "sse4.1", "avx2", "avx512"}));
  auto* no_gpu = cmd->add_flag("--no-gpu", o.no_gpu, "run on the CPU only");
  auto* gpu_only =
      cmd->add_flag(
             "--gpu-only", o.gpu_only,
             "fresh blocks to GPUs only (the CPU runs CPU-only stages and redoes failed batches)")
          ->excludes("--no-gpu");
  cmd->add_option("--gpus", o.gpus, "GPUs to use, e.g. 0,1 (default: every GPU found)")
      ->delimiter(',')
      ->excludes("--no-gpu");
  auto* gpu_strategy =
      cmd->add_option("--gpu-strategy", o.gpu_strategy,
                      "GPU Viterbi kernel: warp (a warp per target), thread (one thread per "
                      "target, Walters et al.) or strip (a warp per target, nodes in registers; "
                      "warp past M = 1024); "
                      "default: the kernel table's choice; given, it wins over the table")
          ->check(CLI::IsMember({"warp", "thread", "strip"}));
  cmd->add_option("--gpu-kernel-table", o.gpu_kernel_table,
                  "GPU kernel-choice table by model length (made by `duet tune`; default: "
                  "[gpu] kernel_table, else the installed configs/gpu-kernels.toml, else "
                  "the built-in rule)");
  auto* gpu_resident =
      cmd->add_option("--gpu-resident", o.gpu_resident,
                      "several models: GPU memory per GPU for database blocks kept on it for the "
                      "next models, e.g. 512M, 8G; auto = half the free GPU memory; 0 = upload "
                      "every block for every model (default: [gpu] resident, else auto)");
  cmd->add_flag("--gpu-jit", o.gpu_jit,
                "GPU kernels specialised on the model length at run time (NVRTC; compiled "
                "kernels cached in $DUET_JIT_CACHE, else $XDG_CACHE_HOME/duet/jit, else "
                "~/.cache/duet/jit) where one exists, now the exact MSV re-run; same "
                "results (default: [gpu] jit, else off)");
  auto* gpu_feeders =
      cmd->add_option("--gpu-feeders", o.gpu_feeders,
                      "feeder threads per GPU, each with its own batches in flight, so that one's "
                      "host work overlaps another's kernels (default: [gpu] feeders, else 2)");
  // Scheduler settings ([scheduler] in the configuration; these override it).
  auto* policy =
      cmd->add_option(
             "--policy", o.policy,
             "CPU/GPU split: dynamic (self-scheduling), static, or adaptive (GPU batches sized "
             "from measured throughput)")
          ->check(CLI::IsMember({"dynamic", "static", "adaptive"}));
  auto* static_cpu_fraction = cmd->add_option("--static-cpu-fraction", o.static_cpu_fraction,
                                              "static policy: share of residues for the CPU");
  auto* block_residues =
      cmd->add_option("--block-residues", o.block_residues, "residues per block (default 1048576)");
  auto* queue_depth = cmd->add_option("--queue-depth", o.queue_depth,
                                      "blocks waiting in the queue (memory budget; 0 = 2 per "
                                      "worker and 2 GPU batches per GPU)");
  auto* gpu_batch_blocks = cmd->add_option("--gpu-batch-blocks", o.gpu_batch_blocks,
                                           "blocks per GPU batch (default 128)");
  auto* gpu_batch_residues = cmd->add_option("--gpu-batch-residues", o.gpu_batch_residues,
                                             "residue budget of a GPU batch (default 134217728)");
  auto* reuse_memory =
      cmd->add_option("--reuse-memory", o.reuse_memory,
                      "memory for parsed blocks kept across query models, e.g. 512M, 4G; 0 = "
                      "re-read the database for each model (default 2G)");
  auto* gpu_min_database =
      cmd->add_option("--gpu-min-database", o.gpu_min_database,
                      "the default mode uses the GPUs for a database of at least this much text, "
                      "e.g. 512M (gzip counts 3 x its size); 0 = always (default 1G)");
  auto* reader_threads =
      cmd->add_option("--reader-threads", o.reader_threads,
                      "threads parsing the database (default: one per core, at most 4)");
  auto* worker_nice = cmd->add_option(
      "--worker-nice", o.worker_nice,
      "with GPUs, raise the CPU workers' nice value by N (0 to 19), so that GPU "
      "feeders and the reader get a core at once; 0 = unchanged (default: [scheduler] "
      "worker_nice, else 19)");
  action = [=, &o]() -> int {
    // A signal from here on stops the run cleanly; no output file exists yet.
    app::install_signal_handlers();
    // Every number given is checked as the configuration file's is.
    check_number(E, "E", o.E);
    check_number(T, "T", o.T);
    check_number(Z, "Z", o.Z);
    check_number(F1, "F1", o.F1);
    check_number(F2, "F2", o.F2);
    check_number(F3, "F3", o.F3);
    check_number(cpu, "cpu", o.cpu);
    check_number(static_cpu_fraction, "static_cpu_fraction", o.static_cpu_fraction);
    check_number(block_residues, "block_residues", static_cast<double>(o.block_residues));
    check_number(queue_depth, "queue_depth", static_cast<double>(o.queue_depth));
    check_number(gpu_batch_blocks, "gpu_batch_blocks", static_cast<double>(o.gpu_batch_blocks));
    check_number(gpu_batch_residues, "gpu_batch_residues",
                 static_cast<double>(o.gpu_batch_residues));
    check_number(reader_threads, "reader_threads", o.reader_threads);
    check_number(worker_nice, "worker_nice", o.worker_nice);
    check_number(gpu_feeders, "gpu_feeders", o.gpu_feeders);
    io::Config config = o.config_path.empty() ? io::Config{} : io::load_config(o.config_path);
    (void)config_opt;
    auto& s = config.search;
    if (E->count()) s.E = o.E;
    if (T->count()) s.T = o.T;
    if (Z->count()) s.Z = o.Z;
    if (F1->count()) s.F1 = o.F1;
    if (F2->count()) s.F2 = o.F2;
    if (F3->count()) s.F3 = o.F3;
    if (max->count()) s.max = true;
    if (nobias->count()) s.nobias = true;
    if (nonull2->count()) s.nonull2 = true;
    if (cpu->count()) config.run.cpu = o.cpu;
    if (out->count()) config.run.out = o.out;
    if (tblout->count()) config.run.tblout = o.tblout;
    if (quiet->count()) config.run.quiet = true;
    if (isa_opt->count()) config.run.isa = o.isa;
    auto& sched = config.scheduler;
    if (policy->count()) sched.policy = o.policy;
    if (static_cpu_fraction->count()) sched.static_cpu_fraction = o.static_cpu_fraction;
    if (block_residues->count()) sched.block_residues = o.block_residues;
    if (queue_depth->count()) sched.queue_depth = o.queue_depth;
    if (gpu_batch_blocks->count()) sched.gpu_batch_blocks = o.gpu_batch_blocks;
    if (gpu_batch_residues->count()) sched.gpu_batch_residues = o.gpu_batch_residues;
    if (reader_threads->count()) sched.reader_threads = o.reader_threads;
    if (worker_nice->count()) sched.worker_nice = o.worker_nice;
    if (no_gpu->count()) {
      sched.no_gpu = true;
      sched.gpu_only = false;
    }
    if (gpu_only->count()) {
      sched.gpu_only = true;
      sched.no_gpu = false;
    }
    // A size option given (e.g. 512M, 4G) replaces the configuration's.
    const auto size_option = [](const CLI::Option* option, const std::string& text,
                                std::uint64_t& to) {
      if (!option->count()) return;
      const auto bytes = io::parse_memory_size(text);
      if (!bytes)
        throw UsageError(option->get_name() + ": '" + text + "' is not a size such as 512M or 4G");
      to = *bytes;
    };
    size_option(reuse_memory, o.reuse_memory, sched.reuse_memory);
    size_option(gpu_min_database, o.gpu_min_database, sched.gpu_min_database);
    if (gpu_resident->count()) {
      const auto budget = io::parse_gpu_resident(o.gpu_resident);
      if (!budget)
        throw UsageError("--gpu-resident: '" + o.gpu_resident +
                         "' is not auto or a size such as 512M or 8G");
      config.gpu.resident = *budget;
    }
    const simd::Isa isa = simd::isa_from_name(config.run.isa);  // clear error if the CPU lacks it

    app::RunInfo info;
    info.command_line = app::join_command_line(argc, argv);
    info.hmm_path = o.hmm_path;
    info.database_path = o.database_path;
    info.isa = std::string(simd::isa_name(isa));
    info.started = app::now_iso8601();

    // Everything that can be checked before the search is checked first: the outputs
    // can be created and are neither inputs nor each other, the model file parses, the
    // database opens (once: a FIFO or pipe cannot be opened twice).
    io::OutputSet outputs(
        {o.hmm_path, o.database_path, o.config_path, o.gpu_kernel_table, config.gpu.kernel_table});
    io::OutputFile& h5_output = outputs.add(config.run.out, "-o");
    io::OutputFile* tbl_output =
        config.run.tblout.empty() ? nullptr : &outputs.add(config.run.tblout, "--tblout");
    app::phase_time("checked options");
    const std::vector<HmmModel> models = read_hmm_file(o.hmm_path);
    app::phase_time("read models");
    const InputFile database(o.database_path, &app::g_interrupted);
    if (app::g_interrupted.load()) throw Interrupted{};
    io::Hdf5Writer h5(h5_output);
    app::phase_time("opened inputs");

    app::HybridOptions hybrid = app::hybrid_options(config);
    hybrid.gpu_devices = o.gpus;
    if (gpu_strategy->count()) hybrid.gpu_strategy = o.gpu_strategy;
    if (o.gpu_jit) hybrid.gpu_jit = true;
    if (o.gpu_feeders > 0) hybrid.gpu_feeders = o.gpu_feeders;
    hybrid.gpu_kernel_table = io::resolve_kernel_table_path(
        o.gpu_kernel_table, config.gpu.kernel_table, app::default_kernel_table_paths());
    // A table the user named is checked even when no GPU will read it: a wrong path or a
    // bad row fails here, with its file and line, rather than going unnoticed.
    if (!o.gpu_kernel_table.empty() || !config.gpu.kernel_table.empty()) {
      (void)io::load_kernel_table(hybrid.gpu_kernel_table);
    }
    hybrid.test_gpus = app::debug_setting("DUET_DEBUG_TEST_GPU");
    hybrid.fault_every = app::debug_setting("DUET_DEBUG_GPU_FAULT_EVERY");
    // Models per pass (HybridOptions::models_per_pass), for benchmarks of the grouping: 1
    // is one pass per model.
    hybrid.models_per_pass =
        static_cast<std::size_t>(app::debug_setting("DUET_DEBUG_MODELS_PER_PASS"));
    if (hybrid.test_gpus > 0 && hybrid.gpu != app::HybridOptions::Gpu::off) {
      std::cerr
          << "duet: warning: DUET_DEBUG_TEST_GPU: the GPU is a TEST DOUBLE running CPU kernels; "
             "the output file records it\n";
    }
    hybrid.progress = !config.run.quiet && ::isatty(STDERR_FILENO);
    hybrid.warnings = !config.run.quiet;
    hybrid.stop = &app::g_interrupted;
    if (app::g_interrupted.load()) throw Interrupted{};
    // The per-target columns are written during the search, by a thread of their own.
    std::vector<std::string> names, groups;
    for (const HmmModel& m : models) names.push_back(m.name);
    for (std::size_t q = 0; q < models.size(); ++q)
      groups.push_back("/results/hmmsearch/" + app::query_group_name(names, q));
    app::phase_time("search starts");
    app::SearchRun run;
    {
      app::ResultStream stream(h5, groups);
      run = app::run_hmmsearch(models, database, config, hybrid, &stream);
    }
    app::phase_time("search returned");
    if (run.stopped || app::g_interrupted.load()) throw Interrupted{};
    app::write_hdf5(h5, run, config, info);
    h5.close();
    app::phase_time("wrote HDF5");
    if (tbl_output != nullptr) {
      write_text_output(*tbl_output, [&](std::ostream& os) { app::write_tblout(os, run, info); });
    }
    app::phase_time("wrote tables");
    // Every output at once, and only now that all of them are written.
    if (app::g_interrupted.load()) throw Interrupted{};
    outputs.commit_all();
    app::phase_time("committed output");
    if (!config.run.quiet) {
      app::write_text_report(std::cout, run, config, info);
      std::cout << "# results written to " << config.run.out << "\n";
    }
    return 0;
  };
}

bool cpu_has(const char* feature) {
  __builtin_cpu_init();
  if (std::string(feature) == "sse4.1") return __builtin_cpu_supports("sse4.1");
  if (std::string(feature) == "avx2") return __builtin_cpu_supports("avx2");
  if (std::string(feature) == "avx512bw") return __builtin_cpu_supports("avx512bw");
  return false;
}

int run_info() {
  const std::string model = app::cpu_model();
  std::cout << "duet " << DUET_VERSION << "\n";
  std::cout << "CPU:        " << model << "\n";
  std::cout << "cores:      " << std::thread::hardware_concurrency() << "\n";
  std::cout << "ISAs:       sse4.1 " << (cpu_has("sse4.1") ? "yes" : "no") << ", avx2 "
            << (cpu_has("avx2") ? "yes" : "no") << ", avx512bw "
            << (cpu_has("avx512bw") ? "yes" : "no") << "\n";
  std::cout << "kernels:    scalar references";
  for (const simd::Isa isa : simd::kIsaPreference) {
    if (isa != simd::Isa::scalar && simd::cpu_supports(isa))
      std::cout << ", " << simd::isa_name(isa);
  }
  std::cout << "; chosen: " << simd::isa_name(simd::best_isa()) << " (--isa to force one)\n";
  const device::GpuInventory inv = device::list_gpus();
  std::cout << "CUDA:       "
            << (inv.cuda_compiled ? "compiled in" : "not compiled in (CPU-only build)");
  if (!inv.driver.empty()) std::cout << ", driver " << inv.driver;
  std::cout << "\n";
  for (const auto& g : inv.gpus) {
    std::printf("GPU %d:      %s, %d SMs, %.1f GiB, compute capability %d.%d\n", g.index,
                g.name.c_str(), g.multiprocessors, g.memory_gib, g.compute_major, g.compute_minor);
  }
  if (inv.gpus.empty()) std::cout << "GPUs:       none usable (" << inv.problem << ")\n";
  std::cout << "libraries:  oneTBB " << TBB_VERSION_MAJOR << "." << TBB_VERSION_MINOR << ", HDF5 "
            << H5_VERS_MAJOR << "." << H5_VERS_MINOR << "." << H5_VERS_RELEASE << ", toml++ "
            << TOML_LIB_MAJOR << "." << TOML_LIB_MINOR << "." << TOML_LIB_PATCH << ", CLI11 "
            << CLI11_VERSION << "\n";
  return 0;
}

// The message and exit status of a run stopped by a signal (app::stop_exit_status).
int report_stop() {
  std::cerr << "duet: " << app::stop_reason() << "; no output written\n";
  return app::stop_exit_status();
}

}  // namespace

int main(int argc, char** argv) {
  // HDF5 must not register its exit handler: after a write fails (a full disk) it would
  // close the failed file again at exit and crash. duet closes or discards every file it
  // opens itself.
  H5dont_atexit();
  app::phase_time("main");
  std::atexit([] {
    app::phase_time("exit");
    if (std::getenv("DUET_TIMES") != nullptr) {
      // CPU seconds by kind of thread (scheduler/thread_cpu.hpp), for throughput studies.
      std::string line = "duet: cpu seconds:";
      for (const auto& [kind, seconds] : scheduler::thread_cpu_seconds()) {
        char figure[32];
        std::snprintf(figure, sizeof figure, " %.3f", seconds);
        line += " " + kind + figure + ";";
      }
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  });
  CLI::App app{"duet: profile HMM search and other sequence DP on every CPU core and GPU at once"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("duet ") + DUET_VERSION);
  HmmsearchOptions hmmsearch_options;
  std::function<int()> hmmsearch_action;
  add_hmmsearch(app, hmmsearch_options, hmmsearch_action, argc, argv);
  auto* info = app.add_subcommand("info", "Show the CPU, GPUs, instruction sets and build options");
  // Further subcommands register here: each is run when it is the one parsed.
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  commands.emplace_back(info, run_info);
  app::add_makedb_command(app, commands);
  app::add_synth_commands(app, commands);
  app::add_pairhmm_command(app, commands, argc, argv);
  app::add_bench_command(app, commands);
  app::add_tune_command(app, commands, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (auto& [command, action] : commands)
      if (command->parsed()) return action();
    return hmmsearch_action();
  } catch (const Interrupted&) {
    return report_stop();
  } catch (const InputError& e) {
    // A signal makes blocked reads and opens fail; the signal is the reason, not them.
    if (app::g_interrupted.load()) return report_stop();
    std::cerr << "duet: error: " << e.what() << "\n";
    return 1;
  } catch (const UsageError& e) {
    if (app::g_interrupted.load()) return report_stop();
    std::cerr << "duet: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    if (app::g_interrupted.load()) return report_stop();
    std::cerr << "duet: error: " << e.what() << "\n";
    return 1;
  }
}
