// `duet papara -t TREE -s REF.phy [-q QUERIES.fa]`: scores every query against every edge's
// ancestral profile through the scheduler, re-aligns each query to its best edge, and
// writes PaPaRa 2.5's alignment file (papara_alignment.NAME, byte for byte as PaPaRa writes
// it), /results/papara, /trace/papara and /run.
#include "app/papara/papara_command.hpp"

#include <charconv>
#include <cstdio>
#include <iostream>
#include <memory>

#include "app/kit/run_context.hpp"
#include "app/kit/run_flags.hpp"
#include "app/kit/run_options.hpp"
#include "app/kit/run_record.hpp"
#include "app/kit/trace_output.hpp"
#include "app/papara/papara_kernels.hpp"
#include "app/papara/papara_tracebacks.hpp"
#include "app/papara/papara_workload.hpp"
#include "core/error.hpp"
#include "core/papara/papara_alignment.hpp"
#include "core/papara/papara_input.hpp"
#include "core/papara/papara_reference.hpp"
#include "io/hdf5_file.hpp"
#include "io/output_file.hpp"

namespace duet::app {

namespace {

struct Options {
  std::string tree, alignment, queries, scoring = "-3:-1:2:-3", name = "default", output, isa;
  bool cgap = false, no_reference_gaps = false, fasta = false, protein = false;
  PaparaRunOptions run;
  std::unique_ptr<RunFlags> flags;
};

// -p o:e:ma:mc
papara::Scoring parse_scoring(const std::string& text) {
  papara::Scoring s;
  std::int16_t* fields[] = {&s.gap_open, &s.gap_extend, &s.match, &s.match_cgap};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int k = 0; k < 4; ++k) {
    int value = 0;
    const auto r = std::from_chars(p, end, value);
    if (r.ec != std::errc() || value < -1000 || value > 1000 ||
        (k < 3 && (r.ptr == end || *r.ptr != ':')) || (k == 3 && r.ptr != end))
      throw UsageError("-p " + text +
                       ": expected four integers o:e:ma:mc (gap open, gap extend, match, "
                       "match in a gap-flagged column), each between -1000 and 1000");
    *fields[k] = static_cast<std::int16_t>(value);
    p = r.ptr + 1;
  }
  if (s.match + s.match_cgap >= 0)
    throw UsageError("-p " + text +
                     ": match + match_cgap must be negative (PaPaRa 2.5 detects flagged "
                     "columns from it)");
  return s;
}

void write_results(io::Hdf5Writer& file, const papara::Reference& ref,
                   std::span<const papara::Query> queries, const PaparaRun& run,
                   const papara::AlignedRows& rows, const Options& o,
                   const std::string& alignment_path, const std::string& command_line,
                   const std::string& started) {
  const std::string g = "/results/papara";
  std::vector<std::string> names, aligned;
  std::vector<std::int32_t> edge, score, runner_up, length;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    names.push_back(queries[q].name);
    aligned.push_back(rows.rows[rows.references + q]);
    edge.push_back(run.choices[q].edge);
    score.push_back(run.choices[q].score);
    runner_up.push_back(run.choices[q].runner_up);
    length.push_back(static_cast<std::int32_t>(queries[q].states.size()));
  }
  file.write(g + "/query", names);
  file.write(g + "/query_length", length);
  file.write(g + "/edge", edge);
  file.write(g + "/score", score);
  file.write(g + "/runner_up_score", runner_up);
  file.write(g + "/aligned", aligned);
  std::vector<std::int32_t> node_a, node_b;
  std::vector<double> edge_length;
  for (const papara::Edge& e : ref.edges) {
    node_a.push_back(e.node);
    node_b.push_back(e.parent);
    edge_length.push_back(e.length);
  }
  file.write(g + "/edges/node", node_a);
  file.write(g + "/edges/parent", node_b);
  file.write(g + "/edges/length", edge_length);
  std::vector<std::string> node_names;
  for (const papara::Node& n : ref.nodes) node_names.push_back(n.name);
  file.write(g + "/nodes/name", node_names);
  file.set_attribute(
      g + "/edges", "description",
      std::string("edge k joins nodes node[k] and parent[k] (indices into nodes/name; "
                  "inner nodes have no name); PaPaRa 2.5's edge numbering"));
  file.set_attribute(g, "tree", ref.tree_path);
  file.set_attribute(g, "alignment", ref.alignment_path);
  file.set_attribute(g, "queries", o.queries);
  file.set_attribute(g, "alignment_file", alignment_path);
  file.set_attribute(g, "gap_mode", std::string(o.cgap ? "cgap" : "probabilistic"));
  file.set_attribute(g, "alphabet", std::string(o.protein ? "protein" : "dna"));
  file.set_attribute(g, "scoring", o.scoring);
  file.set_attribute(g, "reference_gaps", static_cast<std::int64_t>(o.no_reference_gaps ? 0 : 1));
  file.set_attribute(g, "references", static_cast<std::int64_t>(ref.names.size()));
  file.set_attribute(g, "input_columns", ref.input_columns);
  file.set_attribute(g, "columns", static_cast<std::int64_t>(ref.columns()));
  file.set_attribute(g, "edges", static_cast<std::int64_t>(ref.edges.size()));
  file.set_attribute(g, "gap_fraction", ref.gap_fraction);
  file.set_attribute(g, "cells", run.cells);

  write_run_header(file, {"duet papara", command_line, started, run.cpu_kernel, run.seconds});
  file.set_attribute("/run", "cpu_kernel", run.cpu_kernel);
  file.set_attribute("/run", "gpu_kernel",
                     run.gpu_kernel.empty() ? std::string("none") : run.gpu_kernel);
  file.set_attribute("/run", "block_cells", run.block_cells);
  const scheduler::RunSummary& s = run.schedule;
  DeviceTotals totals("DP cells (edges x columns x query residues) in units of 65536",
                      run.test_double_gpus);
  totals.add(s);
  totals.write(file);
  file.set_attribute("/run", "cells_per_second",
                     s.seconds > 0 ? static_cast<double>(run.cells) / s.seconds : 0.0);
  const std::string t = "/trace/papara";
  write_trace_rows(file, t, s.trace, "queries", false);
  file.set_attribute(t, "time_unit", std::string("seconds from the start of the run"));
  file.set_attribute(t, "wall_seconds", s.seconds);
  file.set_attribute(t, "idle_tail_seconds", s.idle_tail_seconds);
}

}  // namespace

void add_papara_command(CLI::App& app,
                        std::vector<std::pair<CLI::App*, std::function<int()>>>& commands, int argc,
                        char** argv) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "papara",
      "PaPaRa 2.5: align queries to a reference alignment along its tree (phylogeny-aware)");
  cmd->add_option("-t", o->tree, "reference tree (Newick)")->required();
  cmd->add_option("-s", o->alignment,
                  "reference alignment (PHYLIP); rows not in the tree are queries")
      ->required();
  cmd->add_option("-q", o->queries, "queries (FASTA)");
  cmd->add_flag("-c", o->cgap, "parsimony gap flags (CGAP) instead of the probabilistic gap model");
  cmd->add_flag("-a", o->protein,
                "protein: the reference and the queries are amino acids (PaPaRa 2.5's model)");
  cmd->add_flag("-r", o->no_reference_gaps,
                "no gaps in the references: bases a query inserts are dropped");
  cmd->add_option("-p", o->scoring,
                  "scoring o:e:ma:mc: gap open, gap extend, match, match in a gap-flagged "
                  "column (default -3:-1:2:-3; mismatch is 0)");
  cmd->add_flag("-g", o->fasta, "write the alignment as FASTA instead of PHYLIP");
  cmd->add_option("-n", o->name,
                  "run name: the alignment is written to papara_alignment.NAME (default "
                  "'default')");
  cmd->add_option("--alignment", o->output, "the alignment file (default papara_alignment.NAME)");
  o->flags = std::make_unique<RunFlags>(*cmd, "cells", kPaparaGpuBatchBlocks);
  cmd->add_option("--isa", o->isa,
                  "CPU kernel: auto, scalar, sse4.1, avx2, avx512 (default: [run] isa, else auto)")
      ->check(CLI::IsMember(papara_isa_names()));
  cmd->add_option("--block-cells", o->run.block_cells,
                  "DP cells per block of queries x edges (default " +
                      std::to_string(kPaparaBlockCells) + ", with -a " +
                      std::to_string(kPaparaProteinBlockCells) + ")")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 50));
  const std::string command_line = join_command_line(argc, argv);
  commands.emplace_back(cmd, [o, command_line]() -> int {
    install_signal_handlers();
    const std::string started = now_iso8601();
    const papara::Scoring scoring = parse_scoring(o->scoring);
    const io::Config config = o->flags->config();
    o->run.isa = !o->isa.empty() ? o->isa : config.run.isa;
    (void)select_papara_cpu_kernel(o->run.isa);  // a bad [run] isa fails before any work
    const std::string alignment_path =
        o->output.empty() ? "papara_alignment." + o->name : o->output;
    io::OutputSet outputs({o->tree, o->alignment, o->queries, o->flags->config_path()});
    io::Hdf5Writer h5(outputs.add(config.run.h5, "--h5"));
    io::OutputFile& alignment_output =
        outputs.add(alignment_path, o->output.empty() ? "-n" : "--alignment");
    io::OutputFile* text_output =
        config.run.text.empty() ? nullptr : &outputs.add(config.run.text, "-o");
    PaparaRunOptions r = o->run;
    static_cast<RunOptions&>(r) = run_options(config);
    r.cpu_workers = config.run.cpu;
    add_process_settings(r, config.run.quiet);

    // The inputs: FASTA queries first, then the alignment's rows that are not tips.
    const papara::Alphabet alphabet =
        o->protein ? papara::Alphabet::protein : papara::Alphabet::dna;
    std::vector<papara::Query> queries;
    if (!o->queries.empty()) queries = papara::read_queries(o->queries, alphabet);
    std::vector<papara::Query> extra;
    const papara::Reference reference = papara::make_reference(
        papara::read_newick(o->tree), papara::read_phylip(o->alignment), extra, alphabet);
    for (auto& q : extra) queries.push_back(std::move(q));
    phase_time("read inputs");
    const papara::Profiles profiles = papara::build_profiles(
        reference, o->cgap ? papara::GapMode::cgap : papara::GapMode::probabilistic);
    QueryResidues residues;
    for (const auto& q : queries) {
      residues.residues.insert(residues.residues.end(), q.states.begin(), q.states.end());
      residues.offsets.push_back(static_cast<std::int64_t>(residues.residues.size()));
    }
    phase_time("built profiles");

    // Each query is re-aligned to its best edge as soon as its choice is final.
    Tracebacks tracebacks(queries, profiles.view(), scoring, r.isa);
    const PaparaRun run =
        run_papara(profiles.view(), residues, scoring, r,
                   [&](std::size_t q, const papara::Choice& c) { tracebacks.add(q, c.edge); });
    phase_time("scored");
    const std::vector<papara::Trace> traces = tracebacks.finish();
    if (run.stopped || g_interrupted.load()) throw Interrupted{};
    phase_time("aligned");
    for (std::size_t q = 0; q < queries.size(); ++q) {
      if (traces[q].score != run.choices[q].score)
        throw InputError(
            queries[q].path, queries[q].line,
            "query '" + queries[q].name + "': its alignment scores " +
                std::to_string(traces[q].score) + " but the " + (o->protein ? "32" : "16") +
                "-bit scoring gave " + std::to_string(run.choices[q].score) +
                " (a query or reference too long for those bits?); PaPaRa 2.5 aborts here too");
    }
    const papara::AlignedRows rows =
        papara::aligned_rows(reference, queries, traces, o->no_reference_gaps);
    io::write_text_file(alignment_output,
                        [&](std::ostream& out) { papara::write_alignment(out, rows, o->fasta); });
    phase_time("wrote the alignment");
    write_results(h5, reference, queries, run, rows, *o, alignment_path, command_line, started);
    h5.close();
    const auto summary = [&](std::ostream& out) {
      char line[512];
      std::snprintf(line, sizeof line,
                    "# papara: %zu queries, %zu references, %zu edges, %d columns, %.3g cells\n",
                    queries.size(), reference.names.size(), reference.edges.size(),
                    reference.columns(), static_cast<double>(run.cells));
      out << line;
      std::snprintf(line, sizeof line, "# kernels: CPU %s x %d workers, GPU %s\n",
                    run.cpu_kernel.c_str(), run.schedule.cpu_workers,
                    run.gpu_kernel.empty() ? "none" : run.gpu_kernel.c_str());
      out << line;
      std::snprintf(line, sizeof line, "# %.3f s scoring, %.3f GCUPS\n", run.schedule.seconds,
                    run.schedule.seconds > 0
                        ? static_cast<double>(run.cells) / run.schedule.seconds / 1e9
                        : 0.0);
      out << line;
    };
    if (text_output != nullptr) io::write_text_file(*text_output, summary);
    if (g_interrupted.load()) throw Interrupted{};
    outputs.commit_all();
    phase_time("committed outputs");
    if (!config.run.quiet) {
      if (text_output == nullptr) summary(std::cout);
      std::cout << "# alignment written to " << alignment_path << ", results to " << config.run.h5
                << "\n";
    }
    return 0;
  });
}

}  // namespace duet::app
