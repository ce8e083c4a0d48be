// `duet hmmsearch MODELS DB` and `duet hmmscan MODELS SEQS`: HMMER's options and the
// search's scheduler settings on top of the shared run flags (kit/run_flags.hpp); reads
// the models, runs the search (hmmscan: then regroups it by sequence, scan.hpp) and writes
// the HDF5 file, the tables and the text report, all committed at once at the end.
#include "app/hmmsearch/hmmsearch_command.hpp"

#include <unistd.h>

#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "app/hmmsearch/distributed.hpp"
#include "app/hmmsearch/report.hpp"
#include "app/hmmsearch/result_stream.hpp"
#include "app/hmmsearch/scan.hpp"
#include "app/hmmsearch/search.hpp"
#include "app/kit/cluster.hpp"
#include "app/kit/run_context.hpp"
#include "app/kit/run_flags.hpp"
#include "core/error.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/input_file.hpp"
#include "host_simd/hmmsearch/simd_kernels.hpp"
#include "io/config.hpp"
#include "io/hdf5_file.hpp"
#include "io/kernel_table.hpp"
#include "io/output_file.hpp"

namespace duet::app {

namespace {

// hmmsearch's own flags (the values given; each applies only when given); the shared ones
// are RunFlags'.
struct HmmsearchOptions {
  std::string hmm_path, database_path;
  double E = 0, T = 0, Z = 0, F1 = 0, F2 = 0, F3 = 0;
  double domE = 0, domT = 0, domZ = 0, incE = 0, incT = 0, incdomE = 0, incdomT = 0;
  std::int64_t seed = 0;
  int textw = 0;
  bool noali = false, acc = false, notextw = false, cut_ga = false, cut_nc = false, cut_tc = false;
  std::string tblout, domtblout, alignment, isa;
  bool max = false, nobias = false, nonull2 = false;
  std::vector<int> gpus;
  std::string gpu_strategy;
  std::string gpu_kernel_table;
  bool gpu_jit = false;
  int gpu_feeders = 0;
  std::int64_t block_residues = 0, gpu_batch_residues = 0;
  std::string reuse_memory;
  std::string gpu_min_database;
  std::int64_t gpu_min_cells = -1;
  std::string gpu_resident;
  int reader_threads = 0;
  std::unique_ptr<RunFlags> flags;
};

// hmmsearch (models as queries) or hmmscan (`scan`: sequences as queries).
void add_profile_command(CLI::App& app,
                         std::vector<std::pair<CLI::App*, std::function<int()>>>& commands,
                         int argc, char** argv, bool scan) {
  auto options = std::make_shared<HmmsearchOptions>();
  HmmsearchOptions& o = *options;
  const io::Config d;  // the defaults the help text shows
  CLI::App* cmd = nullptr;
  if (scan) {
    cmd = app.add_subcommand("hmmscan", "Search sequences against a profile HMM database");
    cmd->add_option("hmmdb", o.hmm_path, "HMMER3 profile file (plain or .gz)")->required();
    cmd->add_option("seqfile", o.database_path, "query sequences, FASTA (plain or .gz)")
        ->required();
  } else {
    cmd = app.add_subcommand("hmmsearch", "Search profile HMM(s) against a sequence database");
    cmd->add_option("hmmfile", o.hmm_path, "HMMER3 profile file (plain or .gz)")->required();
    cmd->add_option("seqdb", o.database_path,
                    "FASTA database (plain or .gz), or a packed database (duet makedb)")
        ->required();
  }
  auto* E = cmd->add_option(
      "-E", o.E, "report targets with E-value <= E (default " + help_number(d.search.E) + ")");
  auto* T = cmd->add_option("-T", o.T, "report targets with bit score >= T");
  auto* Z = cmd->add_option("-Z", o.Z, "number of targets for E-values (default: actual)");
  auto* domE = cmd->add_option("--domE", o.domE,
                               "report domains with conditional E-value <= domE (default " +
                                   help_number(d.search.domE) + ")");
  auto* domT = cmd->add_option("--domT", o.domT, "report domains with bit score >= domT");
  auto* domZ = cmd->add_option("--domZ", o.domZ,
                               "number of targets for conditional E-values (default: the "
                               "targets reported)");
  auto* incE = cmd->add_option("--incE", o.incE,
                               "targets significant (included) at E-value <= incE (default " +
                                   help_number(d.search.incE) + ")");
  auto* incT = cmd->add_option("--incT", o.incT, "targets significant at bit score >= incT");
  auto* incdomE =
      cmd->add_option("--incdomE", o.incdomE,
                      "domains significant at conditional E-value <= incdomE (default " +
                          help_number(d.search.incdomE) + ")");
  auto* incdomT =
      cmd->add_option("--incdomT", o.incdomT, "domains significant at bit score >= incdomT");
  auto* seed = cmd->add_option("--seed", o.seed,
                               "seed of domain definition's sampled traces, from 1 (default " +
                                   std::to_string(d.search.seed) + ")");
  auto* cut_ga = cmd->add_flag("--cut_ga", o.cut_ga,
                               "each model's GA (gathering) bit score cutoffs as every threshold");
  auto* cut_nc = cmd->add_flag("--cut_nc", o.cut_nc, "each model's NC (noise) cutoffs instead");
  auto* cut_tc = cmd->add_flag("--cut_tc", o.cut_tc, "each model's TC (trusted) cutoffs instead");
  for (CLI::Option* cut : {cut_ga, cut_nc, cut_tc}) {
    for (CLI::Option* other : {E, T, domE, domT, incE, incT, incdomE, incdomT})
      cut->excludes(other);
  }
  cut_ga->excludes(cut_nc)->excludes(cut_tc);
  cut_nc->excludes(cut_tc);
  auto* noali = cmd->add_flag("--noali", o.noali, "text output without the domains' alignments");
  auto* acc = cmd->add_flag(
      "--acc", o.acc, "text output: targets' accessions instead of names, where they have one");
  auto* textw = cmd->add_option(
      "--textw", o.textw, "text output line width (default " + std::to_string(d.run.textw) + ")");
  auto* notextw =
      cmd->add_flag("--notextw", o.notextw, "text output lines of any width")->excludes(textw);
  auto* F1 = cmd->add_option(
      "--F1", o.F1, "MSV filter P-value threshold (default " + help_number(d.search.F1) + ")");
  auto* F2 = cmd->add_option(
      "--F2", o.F2, "Viterbi filter P-value threshold (default " + help_number(d.search.F2) + ")");
  auto* F3 = cmd->add_option(
      "--F3", o.F3, "Forward filter P-value threshold (default " + help_number(d.search.F3) + ")");
  auto* max = cmd->add_flag("--max", o.max, "turn off all filters, bias filter included");
  auto* nobias = cmd->add_flag("--nobias", o.nobias, "turn off the composition bias filter");
  auto* nonull2 = cmd->add_flag("--nonull2", o.nonull2, "turn off the null2 score correction");
  auto* tblout = cmd->add_option("--tblout", o.tblout, "per-target table in HMMER's format");
  auto* domtblout =
      cmd->add_option("--domtblout", o.domtblout, "per-domain table in HMMER's format");
  if (!scan)
    cmd->add_option("-A", o.alignment,
                    "the significant domains aligned to the model, in Stockholm format");
  auto* isa_opt =
      cmd->add_option("--isa", o.isa,
                      "CPU kernels: auto (fastest the CPU has), scalar, sse4.1, avx2, avx512")
          ->check(CLI::IsMember({"auto", "scalar", "sse4.1", "avx2", "avx512"}));
  o.flags = std::make_unique<RunFlags>(*cmd, "residues", kHmmsearchGpuBatchBlocks);
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
                      "host work overlaps another's kernels (default: [gpu] feeders, else " +
                          std::to_string(kHmmsearchGpuFeeders) + ")");
  // hmmsearch's settings of [scheduler]; these override it.
  auto* block_residues = cmd->add_option(
      "--block-residues", o.block_residues,
      "residues per block (default " + std::to_string(d.scheduler.block_residues) + ")");
  auto* gpu_batch_residues =
      cmd->add_option("--gpu-batch-residues", o.gpu_batch_residues,
                      "residue budget of a GPU batch (default " +
                          std::to_string(d.scheduler.gpu_batch_residues) + ")");
  auto* reuse_memory =
      cmd->add_option("--reuse-memory", o.reuse_memory,
                      "memory for parsed blocks kept across query models, e.g. 512M, 4G; 0 = "
                      "re-read the database for each model (default " +
                          io::format_memory_size(d.scheduler.reuse_memory) + ")");
  auto* gpu_min_database =
      cmd->add_option("--gpu-min-database", o.gpu_min_database,
                      "the default mode uses the GPUs for a database of at least this much text, "
                      "e.g. 512M (gzip counts 3 x its size); 0 = always (default " +
                          io::format_memory_size(d.scheduler.gpu_min_database) + ")");
  cmd->add_option("--gpu-min-cells", o.gpu_min_cells,
                  "... or for a search of at least this many DP cells, the models' nodes times "
                  "the database's text bytes (default: 50 G per CPU worker; 0: always)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 62));
  auto* reader_threads =
      cmd->add_option("--reader-threads", o.reader_threads,
                      "threads parsing the database (default: one per core, at most 4)");
  // The action keeps `options` alive; `o` refers to it.
  commands.emplace_back(cmd, [=, &o, keep = options]() -> int {
    // A signal from here on stops the run cleanly; no output file exists yet.
    install_signal_handlers();
    // Every number given is checked as the configuration file's is.
    check_number(E, "E", o.E);
    check_number(T, "T", o.T);
    check_number(Z, "Z", o.Z);
    check_number(domE, "domE", o.domE);
    check_number(domT, "domT", o.domT);
    check_number(domZ, "domZ", o.domZ);
    check_number(incE, "incE", o.incE);
    check_number(incT, "incT", o.incT);
    check_number(incdomE, "incdomE", o.incdomE);
    check_number(incdomT, "incdomT", o.incdomT);
    check_number(seed, "seed", static_cast<double>(o.seed));
    check_number(textw, "textw", o.textw);
    check_number(F1, "F1", o.F1);
    check_number(F2, "F2", o.F2);
    check_number(F3, "F3", o.F3);
    check_number(block_residues, "block_residues", static_cast<double>(o.block_residues));
    check_number(gpu_batch_residues, "gpu_batch_residues",
                 static_cast<double>(o.gpu_batch_residues));
    check_number(reader_threads, "reader_threads", o.reader_threads);
    check_number(gpu_feeders, "gpu_feeders", o.gpu_feeders);
    io::Config config = o.flags->config();
    auto& s = config.search;
    if (E->count()) s.E = o.E;
    if (T->count()) s.T = o.T;
    if (Z->count()) s.Z = o.Z;
    if (domE->count()) s.domE = o.domE;
    if (domT->count()) s.domT = o.domT;
    if (domZ->count()) s.domZ = o.domZ;
    if (incE->count()) s.incE = o.incE;
    if (incT->count()) s.incT = o.incT;
    if (incdomE->count()) s.incdomE = o.incdomE;
    if (incdomT->count()) s.incdomT = o.incdomT;
    if (seed->count()) s.seed = o.seed;
    if (cut_ga->count()) s.cut = "ga";
    if (cut_nc->count()) s.cut = "nc";
    if (cut_tc->count()) s.cut = "tc";
    if (noali->count()) config.run.noali = true;
    if (acc->count()) config.run.acc = true;
    if (textw->count()) config.run.textw = o.textw;
    if (notextw->count()) config.run.textw = 0;
    if (F1->count()) s.F1 = o.F1;
    if (F2->count()) s.F2 = o.F2;
    if (F3->count()) s.F3 = o.F3;
    if (max->count()) s.max = true;
    if (nobias->count()) s.nobias = true;
    if (nonull2->count()) s.nonull2 = true;
    if (tblout->count()) config.run.tblout = o.tblout;
    if (domtblout->count()) config.run.domtblout = o.domtblout;
    if (isa_opt->count()) config.run.isa = o.isa;
    auto& sched = config.scheduler;
    if (block_residues->count()) sched.block_residues = o.block_residues;
    if (gpu_batch_residues->count()) sched.gpu_batch_residues = o.gpu_batch_residues;
    if (reader_threads->count()) sched.reader_threads = o.reader_threads;
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

    RunInfo info;
    info.scan = scan;
    info.command_line = join_command_line(argc, argv);
    info.hmm_path = o.hmm_path;
    info.database_path = o.database_path;
    info.isa = std::string(simd::isa_name(isa));
    info.started = now_iso8601();

    // Everything that can be checked before the search is checked first: the outputs
    // can be created and are neither inputs nor each other, the model file parses, the
    // database opens (once: a FIFO or pipe cannot be opened twice).
    // In an MPI job (kit/cluster.hpp), rank 0 alone writes the outputs, from every rank's
    // results.
    Cluster* const job = cluster();
    const bool writer = job == nullptr || job->rank() == 0;
    io::OutputSet outputs({o.hmm_path, o.database_path, o.flags->config_path(), o.gpu_kernel_table,
                           config.gpu.kernel_table});
    const auto output = [&](const std::string& path, const char* option) {
      return writer && !path.empty() ? &outputs.add(path, option) : nullptr;
    };
    io::OutputFile* h5_output = output(config.run.h5, "--h5");
    io::OutputFile* text_output = output(config.run.text, "-o");
    io::OutputFile* tbl_output = output(config.run.tblout, "--tblout");
    io::OutputFile* domtbl_output = output(config.run.domtblout, "--domtblout");
    io::OutputFile* alignment_output = output(o.alignment, "-A");
    phase_time("checked options");
    const std::vector<HmmModel> models = read_hmm_file(o.hmm_path);
    for (const HmmModel& m : models) (void)model_cutoffs(m, s.cut, o.hmm_path);
    phase_time("read models");
    const InputFile database(o.database_path, &g_interrupted);
    if (g_interrupted.load()) throw Interrupted{};
    std::optional<io::Hdf5Writer> h5;
    if (writer) h5.emplace(*h5_output);
    phase_time("opened inputs");

    HybridOptions hybrid = hybrid_options(config);
    hybrid.gpu_devices = o.gpus;
    if (gpu_strategy->count()) hybrid.gpu_strategy = o.gpu_strategy;
    if (o.gpu_jit) hybrid.gpu_jit = true;
    if (o.gpu_feeders > 0) hybrid.gpu_feeders = o.gpu_feeders;
    hybrid.gpu_min_cells = o.gpu_min_cells;
    hybrid.gpu_kernel_table = io::resolve_kernel_table_path(
        o.gpu_kernel_table, config.gpu.kernel_table, default_kernel_table_paths());
    // A table the user named is checked even when no GPU will read it: a wrong path or a
    // bad row fails here, with its file and line, rather than going unnoticed.
    if (!o.gpu_kernel_table.empty() || !config.gpu.kernel_table.empty()) {
      (void)io::load_kernel_table(hybrid.gpu_kernel_table);
    }
    add_process_settings(hybrid, config.run.quiet);
    // Models per pass (HybridOptions::models_per_pass), for benchmarks of the grouping: 1
    // is one pass per model.
    hybrid.models_per_pass =
        static_cast<std::size_t>(debug_setting("DUET_DEBUG_MODELS_PER_PASS", 100000));
    hybrid.nodes_per_pass = debug_setting("DUET_DEBUG_NODES_PER_PASS", 100000000);
    // DUET_DEBUG_NO_MODEL_SPLIT=1: no model split (HybridOptions::model_split), and
    // DUET_DEBUG_GPU_LINES=N: N lines of GPU passes at once (HybridOptions::gpu_lines), for
    // benchmarks.
    if (debug_setting("DUET_DEBUG_NO_MODEL_SPLIT", 1) == 1) hybrid.model_split = false;
    if (const int lines = debug_setting("DUET_DEBUG_GPU_LINES", 4); lines > 0)
      hybrid.gpu_lines = lines;
    if (g_interrupted.load()) throw Interrupted{};
    // The per-target columns are written during the search, by a thread of their own.
    std::vector<std::string> names;
    for (const HmmModel& m : models) names.push_back(m.name);
    const std::vector<std::string> groups = query_group_names(names);
    // Every rank's checks passed: the search starts on all of them.
    agree_on_checks(nullptr);
    phase_time("search starts");
    // In a job, the other ranks' targets come to rank 0 during the search (distributed.hpp)
    // and its stream writes them as they come; the /trace groups wait for every rank's
    // summaries (the gather below).
    std::optional<ResultStream> stream;
    if (!scan && writer) {
      stream.emplace(
          *h5, groups,
          job != nullptr ? ResultStream::Traces::later : ResultStream::Traces::with_queries);
    }
    SearchRun run = run_hmmsearch(models, database, config, hybrid, stream ? &*stream : nullptr);
    phase_time("search returned");
    if (run.stopped || g_interrupted.load()) throw Interrupted{};
    if (job != nullptr) {
      // Rank 0 makes the job's run of every rank's, and writes it as one process would.
      const std::vector<std::string> ranks =
          job->gather(writer ? std::string() : pack_rank_run(run));
      if (!writer) return 0;
      run = merge_rank_runs(std::move(run), ranks, config.search);
      phase_time("merged the ranks' results");
      if (stream) stream->write_traces(run.queries);
    }
    stream.reset();  // its thread is done: the file is this thread's again
    // The text outputs (no HDF5 call in them) are written by a thread of their own while
    // this one writes the HDF5 file.
    const auto write_text_outputs = [&](const SearchRun& r) {
      if (tbl_output != nullptr) {
        io::write_text_file(*tbl_output, [&](std::ostream& os) { write_tblout(os, r, info); });
      }
      if (domtbl_output != nullptr) {
        io::write_text_file(*domtbl_output,
                            [&](std::ostream& os) { write_domtblout(os, r, info); });
      }
      if (alignment_output != nullptr) {
        io::write_text_file(*alignment_output, [&](std::ostream& os) {
          write_alignment_file(os, r, config.run.textw);
        });
      }
      if (text_output != nullptr) {
        io::write_text_file(*text_output,
                            [&](std::ostream& os) { write_text_report(os, r, config, info); });
      }
    };
    SearchRun scanned;  // hmmscan's view: the queries are the sequences
    std::exception_ptr text_error;
    std::jthread text_writer;  // declared after what it reads: joined before they go
    const auto start_text = [&](const SearchRun& r) {
      text_writer = std::jthread([&write_text_outputs, &text_error, &r] {
        try {
          write_text_outputs(r);
        } catch (...) {
          text_error = std::current_exception();
        }
      });
    };
    if (!scan) start_text(run);
    write_hdf5(*h5, run, config, info);
    if (scan) {
      // One more read of the sequences' names.
      const std::vector<QuerySequence> sequences =
          read_query_sequences(o.database_path, *models.front().alphabet);
      scanned = scan_results(run, models, sequences, config.search);
      start_text(scanned);
      write_scan_results(*h5, scanned);
    }
    h5->close();
    phase_time("wrote HDF5");
    if (text_writer.joinable()) text_writer.join();
    if (text_error) std::rethrow_exception(text_error);
    const SearchRun& report = scan ? scanned : run;
    phase_time("wrote tables");
    // Every output at once, and only now that all of them are written.
    if (g_interrupted.load()) throw Interrupted{};
    outputs.commit_all();
    phase_time("committed output");
    if (!config.run.quiet) {
      if (text_output == nullptr) write_text_report(std::cout, report, config, info);
      std::cout << "# results written to " << config.run.h5 << "\n";
    }
    return 0;
  });
}

}  // namespace

void add_hmmsearch_command(CLI::App& app,
                           std::vector<std::pair<CLI::App*, std::function<int()>>>& commands,
                           int argc, char** argv) {
  add_profile_command(app, commands, argc, argv, false);
}

void add_hmmscan_command(CLI::App& app,
                         std::vector<std::pair<CLI::App*, std::function<int()>>>& commands,
                         int argc, char** argv) {
  add_profile_command(app, commands, argc, argv, true);
}

}  // namespace duet::app
