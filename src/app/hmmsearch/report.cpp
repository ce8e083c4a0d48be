// Text, table and HDF5 outputs of hmmsearch; see report.hpp.
#include "app/hmmsearch/report.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>
#include <unordered_map>

#include "app/kit/run_context.hpp"
#include "app/kit/run_record.hpp"
#include "app/kit/trace_output.hpp"

namespace duet::app {

namespace {

constexpr const char* kNull2Note =
    "off: duet has no null2 correction or domain definition yet; scores are as hmmsearch --nonull2 "
    "computes them from Forward";

std::string printf_string(const char* format, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, format, args...);
  return buffer;
}

// /run: totals, device shares, throughput (per device kind and per GPU) and idle tails
// over all queries, and what the GPUs ran. Each query's /trace group is
// write_query_trace's, written by the result stream as the query ends.
void write_trace(io::Hdf5Writer& file, const SearchRun& run) {
  file.create_group("/trace");
  DeviceTotals totals("residues", run.test_double_gpus);
  std::int64_t gpu_resident_residues = 0, gpu_uploaded_residues = 0;
  const std::vector<std::string> groups = query_group_names(run);
  for (std::size_t qi = 0; qi < run.queries.size(); ++qi) {
    const QueryResult& q = run.queries[qi];
    if (q.pass_first != qi) continue;  // a pass's figures are with its first model
    totals.add(q.schedule);
    gpu_resident_residues += q.gpu_resident_residues;
    gpu_uploaded_residues += q.gpu_uploaded_residues;
  }
  totals.write(file);
  // The real GPUs' kernel choice: the table it came from and, per query, the kernels.
  std::string kernels;
  for (std::size_t qi = 0; qi < run.queries.size(); ++qi) {
    if (run.queries[qi].gpu_kernels.empty()) continue;
    kernels += (kernels.empty() ? "" : "; ") + groups[qi] + ": " + run.queries[qi].gpu_kernels;
  }
  file.set_attribute("/run", "gpus_skipped_small_database",
                     static_cast<std::int64_t>(run.gpus_skipped_small_database ? 1 : 0));
  file.set_attribute("/run", "gpu_kernel_table",
                     run.gpu_kernel_table.empty() ? std::string("none") : run.gpu_kernel_table);
  file.set_attribute("/run", "gpu_kernels", kernels.empty() ? std::string("none") : kernels);
  // Run-time specialisation (--gpu-jit): "off", or per query what the GPUs ran.
  std::string jit;
  for (std::size_t qi = 0; qi < run.queries.size(); ++qi) {
    if (run.queries[qi].gpu_jit.empty()) continue;
    jit += (jit.empty() ? "" : "; ") + groups[qi] + ": " + run.queries[qi].gpu_jit;
  }
  file.set_attribute("/run", "gpu_jit", jit.empty() ? std::string("off") : jit);
  // Residues the real GPUs read from the blocks kept on them across queries
  // (--gpu-resident), and uploaded; per query in /trace/<query>.
  file.set_attribute("/run", "gpu_resident_residues", gpu_resident_residues);
  file.set_attribute("/run", "gpu_uploaded_residues", gpu_uploaded_residues);
}

}  // namespace

std::vector<std::string> query_group_names(const std::vector<std::string>& names) {
  auto clean = [](std::string s) {
    for (char& c : s)
      if (c == '/') c = '_';
    if (s.empty() || s == "." || s == "..") s = "_" + s;
    return s;
  };
  std::vector<std::string> groups;
  groups.reserve(names.size());
  std::unordered_map<std::string, int> seen;  // cleaned name -> queries with it so far
  for (const std::string& name : names) {
    std::string base = clean(name);
    const int same_before = seen[base]++;
    groups.push_back(same_before == 0 ? std::move(base)
                                      : base + "#" + std::to_string(same_before + 1));
  }
  return groups;
}

std::vector<std::string> query_group_names(const SearchRun& run) {
  std::vector<std::string> names;
  names.reserve(run.queries.size());
  for (const QueryResult& q : run.queries) names.push_back(q.name);
  return query_group_names(names);
}

void write_text_report(std::ostream& out, const SearchRun& run, const io::Config& config,
                       const RunInfo& info) {
  out << "# duet hmmsearch :: profile HMM search with HMMER 3.3.2's filter cascade\n";
  out << "# query HMM file:                  " << info.hmm_path << "\n";
  out << "# target sequence database:        " << info.database_path << "\n";
  if (!config.run.tblout.empty())
    out << "# per-seq hits tabular output:     " << config.run.tblout << "\n";
  out << "# null2 bias corrections:          " << kNull2Note << "\n";
  out << "# CPU SIMD instruction set:        " << info.isa << "\n";
  out << "# - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -\n\n";
  for (const QueryResult& q : run.queries) {
    out << "Query:       " << q.name << "  [M=" << q.M << "]\n";
    if (!q.accession.empty()) out << "Accession:   " << q.accession << "\n";
    if (!q.description.empty()) out << "Description: " << q.description << "\n";
    out << "Scores for complete sequences (Forward score, no null2 correction):\n";
    out << "    E-value  score  Sequence                       Description\n";
    out << "    ------- ------  --------                       -----------\n";
    for (std::size_t i : q.reported) {
      const TargetRecord& t = q.targets[i];
      out << printf_string("  %9.2g %6.1f  %-30s %s\n", t.evalue,
                           static_cast<double>(t.scores.forward_bits), t.name.c_str(),
                           t.description.c_str());
    }
    if (q.reported.empty()) out << "\n   [No hits detected that satisfy reporting thresholds]\n";
    const double n = static_cast<double>(std::max<std::int64_t>(q.counts.targets, 1));
    const auto s = cascade_settings(config.search);
    const auto& c = q.counts;
    out << "\nInternal pipeline statistics summary:\n";
    out << "-------------------------------------\n";
    out << printf_string("Query model(s):              %15lld  (%d nodes)\n", 1LL, q.M);
    out << printf_string("Target sequences:            %15lld  (%lld residues searched)\n",
                         static_cast<long long>(c.targets), static_cast<long long>(c.residues));
    const auto line = [&](const char* label, std::int64_t passed, double F) {
      out << printf_string("%-29s%15lld  (%.6g); expected %.1f (%.6g)\n", label,
                           static_cast<long long>(passed), static_cast<double>(passed) / n,
                           F * static_cast<double>(c.targets), F);
    };
    line("Passed MSV filter:", c.passed_msv, s.F1);
    line("Passed bias filter:", c.passed_bias, s.F1);
    line("Passed Vit filter:", c.passed_viterbi, s.F2);
    line("Passed Fwd filter:", c.passed_forward, s.F3);
    out << printf_string("Initial search space (Z):    %15.0f  %s\n", q.Z,
                         q.Z_from_option ? "[as set by -Z]" : "[actual number of targets]");
    out << printf_string("Reported targets:            %15zu\n", q.reported.size());
    const double mcps = q.seconds > 0 ? static_cast<double>(c.residues) * q.M / q.seconds / 1e6 : 0;
    out << printf_string("# Elapsed: %.2f s  # Mc/sec: %.2f\n//\n", q.seconds, mcps);
  }
  out << "[ok]\n";
}

void write_tblout(std::ostream& out, const SearchRun& run, const RunInfo& info) {
  std::size_t tnamew = 20, qnamew = 20, qaccw = 10;
  const std::size_t taccw = 10;
  for (const auto& q : run.queries) {
    qnamew = std::max(qnamew, q.name.size());
    qaccw = std::max(qaccw, q.accession.size());
    for (std::size_t i : q.reported) tnamew = std::max(tnamew, q.targets[i].name.size());
  }
  const int tw = static_cast<int>(tnamew), qw = static_cast<int>(qnamew);
  const int qaw = static_cast<int>(qaccw), taw = static_cast<int>(taccw);
  out << printf_string("#%*s %22s %22s %33s\n", tw + qw + taw + qaw + 2, "",
                       "--- full sequence ----", "--- best 1 domain ----",
                       "--- domain number estimation ----");
  out << printf_string(
      "#%-*s %-*s %-*s %-*s %9s %6s %5s %9s %6s %5s %5s %3s %3s %3s %3s %3s %3s %3s %s\n", tw - 1,
      " target name", taw, "accession", qw, "query name", qaw, "accession", "  E-value", " score",
      " bias", "  E-value", " score", " bias", "exp", "reg", "clu", " ov", "env", "dom", "rep",
      "inc", "description of target");
  out << printf_string(
      "#%*s %*s %*s %*s %9s %6s %5s %9s %6s %5s %5s %3s %3s %3s %3s %3s %3s %3s %s\n", tw - 1,
      "-------------------", taw, "----------", qw, "--------------------", qaw, "----------",
      "---------", "------", "-----", "---------", "------", "-----", "---", "---", "---", "---",
      "---", "---", "---", "---", "---------------------");
  for (const auto& q : run.queries) {
    for (std::size_t i : q.reported) {
      const TargetRecord& t = q.targets[i];
      // Domain columns are '-': duet has no domain definition yet.
      out << printf_string(
          "%-*s %-*s %-*s %-*s %9.2g %6.1f %5.1f %9s %6s %5s %5s %3s %3s %3s %3s %3s %3s %3s %s\n",
          tw, t.name.c_str(), taw, "-", qw, q.name.c_str(), qaw,
          q.accession.empty() ? "-" : q.accession.c_str(), t.evalue,
          static_cast<double>(t.scores.forward_bits), 0.0, "-", "-", "-", "-", "-", "-", "-", "-",
          "-", "-", "-", t.description.empty() ? "-" : t.description.c_str());
    }
  }
  out << "#\n# Program:         duet hmmsearch\n";
  out << "# Query file:      " << info.hmm_path << "\n";
  out << "# Target file:     " << info.database_path << "\n";
  out << "# Option settings: " << info.command_line << "\n";
  out << "# Domain columns:  - (domain definition not implemented; scores as hmmsearch "
         "--nonull2)\n";
  out << "# [ok]\n";
}

void write_hdf5(io::Hdf5Writer& file, const SearchRun& run, const io::Config& config,
                const RunInfo& info) {
  write_run_header(file,
                   {"duet hmmsearch", info.command_line, info.started, info.isa, run.seconds});
  file.set_attribute("/run", "config_toml", io::to_toml(config));
  file.set_attribute("/run", "hmm_file", info.hmm_path);
  file.set_attribute("/run", "database", info.database_path);
  file.set_attribute("/run", "null2", std::string(kNull2Note));
  write_trace(file, run);
  file.create_group("/results/hmmsearch");
}

void write_query_trace(io::Hdf5Writer& file, const std::string& g, const std::string& first_g,
                       const QuerySummary& q, bool first) {
  const scheduler::RunSummary& s = q.schedule;
  if (!first) {
    // A later model of a pass: the pass's rows and figures are with its first model.
    file.create_group(g);
    file.set_attribute(g, "trace_in", first_g);
    file.set_attribute(g, "models_in_pass", q.pass_models);
    file.set_attribute(g, "wall_seconds", s.seconds);
    return;
  }
  write_trace_rows(file, g, s.trace, "sequences", true);
  file.set_attribute(g, "models_in_pass", q.pass_models);
  file.set_attribute(
      g, "stage_names",
      std::string("all: every stage; post: CPU-only stages after a device (sequences, residues "
                  "and cells count only the targets the device left to the CPU); fault: failed "
                  "device batch (redone by the CPU); others: the stages a device ran"));
  file.set_attribute(g, "time_unit", std::string("seconds from the start of this query's run"));
  file.set_attribute(g, "wall_seconds", s.seconds);
  file.set_attribute(g, "idle_tail_seconds", s.idle_tail_seconds);
  file.set_attribute(g, "worker_idle_tail_seconds", s.worker_idle_tail_seconds);
  file.set_attribute(g, "blocks", s.blocks);
  file.set_attribute(g, "reused_blocks", s.reused_blocks);
  file.set_attribute(g, "gpu_resident_residues", q.gpu_resident_residues);
  file.set_attribute(g, "gpu_uploaded_residues", q.gpu_uploaded_residues);
  file.set_attribute(g, "gpu_kept_residues", q.gpu_kept_residues);
}

QueryEnd query_end(const QueryResult& q, bool with_trace) {
  QueryEnd end;
  end.summary = q;  // the summary's part of q, without the records
  if (!with_trace) end.summary.schedule.trace.clear();
  const std::size_t n = q.targets.size();
  end.evalue.resize(n);
  end.reported.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    end.evalue[i] = q.targets[i].evalue;
    end.reported[i] = q.targets[i].reported ? 1 : 0;
  }
  end.reported_targets = static_cast<std::int64_t>(q.reported.size());
  return end;
}

void write_query_summary(io::Hdf5Writer& file, const std::string& g, const QueryEnd& end) {
  file.create_group(g);
  // The other columns were written during the pass (result_stream.hpp).
  file.write(g + "/evalue", end.evalue);
  file.write(g + "/reported", end.reported);
  const QuerySummary& q = end.summary;
  file.set_attribute(g, "query_name", q.name);
  file.set_attribute(g, "accession", q.accession);
  file.set_attribute(g, "description", q.description);
  file.set_attribute(g, "M", static_cast<std::int64_t>(q.M));
  file.set_attribute(g, "targets", q.counts.targets);
  file.set_attribute(g, "residues", q.counts.residues);
  file.set_attribute(g, "passed_msv", q.counts.passed_msv);
  file.set_attribute(g, "passed_bias", q.counts.passed_bias);
  file.set_attribute(g, "passed_viterbi", q.counts.passed_viterbi);
  file.set_attribute(g, "passed_forward", q.counts.passed_forward);
  file.set_attribute(g, "reported_targets", end.reported_targets);
  file.set_attribute(g, "Z", q.Z);
  file.set_attribute(g, "stage_codes",
                     std::string("1 rejected by MSV, 2 by bias filter, 3 by Viterbi filter, "
                                 "4 by Forward filter, 5 passed every filter"));
}

}  // namespace duet::app
