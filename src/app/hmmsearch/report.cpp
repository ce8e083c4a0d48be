// Text, table and HDF5 outputs of hmmsearch; see report.hpp.
#include "app/hmmsearch/report.hpp"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <thread>
#include <unordered_map>

#include "app/kit/run_context.hpp"
#include "app/kit/run_record.hpp"
#include "app/kit/trace_output.hpp"

namespace duet::app {

namespace {

std::string null2_note(const io::SearchConfig& search) {
  return search.nonull2 ? "off (--nonull2)" : "on (HMMER's null2 correction, per domain)";
}

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

namespace {

// Digits of a positive integer.
int digits(int n) {
  int d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

// `text` cut to `width` characters (0: whole).
std::string cut(const std::string& text, int width) {
  return width > 0 && static_cast<int>(text.size()) > width
             ? text.substr(0, static_cast<std::size_t>(width))
             : text;
}

// A domain's alignment in blocks of the line width (p7_alidisplay_Print).
void write_alignment(std::ostream& out, const Domain& d, const std::string& model_name,
                     const std::string& target_name, int textw) {
  const AlignmentDisplay& a = d.alignment;
  const int n = static_cast<int>(a.model.size());
  const int namew = static_cast<int>(std::max(model_name.size(), target_name.size()));
  const int coordw = std::max(std::max(digits(d.hmm_from), digits(d.hmm_to)),
                              std::max(digits(d.ali_from), digits(d.ali_to)));
  int width = textw > 0 ? textw - namew - 2 * coordw - 5 : n;
  if (width < n && width < 40) width = 40;
  int k1 = d.hmm_from, i1 = d.ali_from;
  for (int pos = 0; pos < n; pos += width) {
    if (pos > 0) out << "\n";
    const int len = std::min(width, n - pos);
    int nk = 0, ni = 0;
    for (int z = pos; z < pos + len; ++z) {
      if (a.model[static_cast<std::size_t>(z)] != '.') ++nk;
      if (a.target[static_cast<std::size_t>(z)] != '-') ++ni;
    }
    const auto part = [&](const std::string& line) {
      return line.substr(static_cast<std::size_t>(pos), static_cast<std::size_t>(len));
    };
    if (!a.structure.empty())
      out << printf_string("  %*s %s CS\n", namew + coordw + 1, "", part(a.structure).c_str());
    if (!a.reference.empty())
      out << printf_string("  %*s %s RF\n", namew + coordw + 1, "", part(a.reference).c_str());
    out << printf_string("  %*s %*d %s %-*d\n", namew, model_name.c_str(), coordw, k1,
                         part(a.model).c_str(), coordw, k1 + nk - 1);
    out << printf_string("  %*s %s\n", namew + coordw + 1, " ", part(a.match).c_str());
    if (ni > 0) {
      out << printf_string("  %*s %*d %s %-*d\n", namew, target_name.c_str(), coordw, i1,
                           part(a.target).c_str(), coordw, i1 + ni - 1);
    } else {
      out << printf_string("  %*s %*s %s %*s\n", namew, target_name.c_str(), coordw, "-",
                           part(a.target).c_str(), coordw, "-");
    }
    out << printf_string("  %*s %s PP\n", namew + coordw + 1, "", part(a.posterior).c_str());
    k1 += nk;
    i1 += ni;
  }
}

// What the text output calls a target or a model: its accession under --acc where it has
// one (models with an ACC line; FASTA sequences have none), else its name, as HMMER's --acc.
const std::string& shown_name(const std::string& name, const std::string& accession,
                              const io::RunConfig& run) {
  return run.acc && !accession.empty() ? accession : name;
}
const std::string& shown_name(const TargetRecord& t, const io::RunConfig& run) {
  return shown_name(t.name, t.accession, run);
}

// The reported domains of one target (HMMER's "Domain annotation" block): their table,
// then their alignments unless --noali.
void write_domain_table(std::ostream& out, const TargetRecord& t, const QueryResult& q,
                        const io::RunConfig& run, bool scan) {
  const std::string& name = shown_name(t, run);
  const int descw = run.textw > 0 ? std::max(32, run.textw - static_cast<int>(name.size()) - 5) : 0;
  out << ">> " << name << "  " << cut(t.description, descw) << "\n";
  int reported = 0;
  for (const Domain& d : t.domains.domains) reported += d.reported ? 1 : 0;
  if (reported == 0) {
    out << "   [No individual domains that satisfy reporting thresholds (although complete "
           "target did)]\n\n";
    return;
  }
  out << printf_string(" %3s   %6s %5s %9s %9s %7s %7s %2s %7s %7s %2s %7s %7s %2s %4s\n", "#",
                       "score", "bias", "c-Evalue", "i-Evalue", "hmmfrom", "hmm to", "  ",
                       "alifrom", "ali to", "  ", "envfrom", "env to", "  ", "acc");
  out << printf_string(" %3s   %6s %5s %9s %9s %7s %7s %2s %7s %7s %2s %7s %7s %2s %4s\n", "---",
                       "------", "-----", "---------", "---------", "-------", "-------", "  ",
                       "-------", "-------", "  ", "-------", "-------", "  ", "----");
  // hmmsearch's queries are models and its targets sequences; hmmscan's the other way.
  const int model_length = scan ? t.length : q.M;
  const int sequence_length = scan ? q.M : t.length;
  int n = 0;
  for (const Domain& d : t.domains.domains) {
    if (!d.reported) continue;
    const double p = std::exp(d.log_pvalue);
    out << printf_string(
        " %3d %c %6.1f %5.1f %9.2g %9.2g %7d %7d %c%c %7d %7d %c%c %7d %7d %c%c %4.2f\n", ++n,
        d.included ? '!' : '?', static_cast<double>(d.bits), static_cast<double>(d.bias_bits),
        p * q.domZ, p * q.Z, d.hmm_from, d.hmm_to, d.hmm_from == 1 ? '[' : '.',
        d.hmm_to == model_length ? ']' : '.', d.ali_from, d.ali_to, d.ali_from == 1 ? '[' : '.',
        d.ali_to == sequence_length ? ']' : '.', d.env_from, d.env_to, d.env_from == 1 ? '[' : '.',
        d.env_to == sequence_length ? ']' : '.', d.accuracy());
  }
  if (run.noali) {
    out << "\n";
    return;
  }
  out << "\n  Alignments for each domain:\n";
  n = 0;
  for (const Domain& d : t.domains.domains) {
    if (!d.reported) continue;
    out << printf_string("  == domain %d  score: %.1f bits;  conditional E-value: %.2g\n", ++n,
                         static_cast<double>(d.bits), std::exp(d.log_pvalue) * q.domZ);
    // The model's and the sequence's names, or under --acc their accessions where they
    // have one (p7_alidisplay_Print; FASTA sequences have none).
    const std::string& model_shown =
        scan ? shown_name(t, run) : shown_name(q.name, q.accession, run);
    write_alignment(out, d, model_shown, scan ? q.name : shown_name(t, run), run.textw);
    out << "\n";
  }
}

}  // namespace

void write_text_report(std::ostream& out, const SearchRun& run, const io::Config& config,
                       const RunInfo& info) {
  const bool scan = info.scan;
  if (scan) {
    out << "# duet hmmscan :: search sequence(s) against a profile database with HMMER 3.3.2's "
           "pipeline\n";
    out << "# query sequence file:             " << info.database_path << "\n";
    out << "# target HMM database:             " << info.hmm_path << "\n";
  } else {
    out << "# duet hmmsearch :: profile HMM search with HMMER 3.3.2's pipeline\n";
    out << "# query HMM file:                  " << info.hmm_path << "\n";
    out << "# target sequence database:        " << info.database_path << "\n";
  }
  if (!config.run.tblout.empty())
    out << "# per-seq hits tabular output:     " << config.run.tblout << "\n";
  if (!config.run.domtblout.empty())
    out << "# per-dom hits tabular output:     " << config.run.domtblout << "\n";
  if (config.run.acc) out << "# prefer accessions over names:    yes\n";
  out << "# null2 bias corrections:          " << null2_note(config.search) << "\n";
  out << "# CPU SIMD instruction set:        " << info.isa << "\n";
  out << "# - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -\n\n";
  for (const QueryResult& q : run.queries) {
    out << "Query:       " << q.name << "  [" << (scan ? "L=" : "M=") << q.M << "]\n";
    if (!q.accession.empty()) out << "Accession:   " << q.accession << "\n";
    if (!q.description.empty()) out << "Description: " << q.description << "\n";
    // The names' column is as wide as the longest shown name of the reported targets.
    // (HMMER's is the longest of its hit list, which also holds the hits that passed a
    // per-thread, partial-database E-value test during the search: not reproducible.)
    std::size_t namew = 8;
    for (std::size_t i : q.reported)
      namew = std::max(namew, shown_name(q.targets[i], config.run).size());
    const int nw = static_cast<int>(namew);
    const int descw = config.run.textw > 0 ? std::max(32, config.run.textw - nw - 61) : 0;
    out << (scan ? "Scores for complete sequence (score includes all domains):\n"
                 : "Scores for complete sequences (score includes all domains):\n");
    out << printf_string("  %22s  %22s  %8s\n", " --- full sequence ---", " --- best 1 domain ---",
                         "-#dom-");
    out << printf_string("  %9s %6s %5s  %9s %6s %5s  %5s %2s  %-*s %s\n", "E-value", " score",
                         " bias", "E-value", " score", " bias", "  exp", "N", nw,
                         scan ? "Model" : "Sequence", "Description");
    out << printf_string("  %9s %6s %5s  %9s %6s %5s  %5s %2s  %-*s %s\n", "-------", "------",
                         "-----", "-------", "------", "-----", " ----", "--", nw, "--------",
                         "-----------");
    bool said_threshold = false;
    for (std::size_t i : q.reported) {
      const TargetRecord& t = q.targets[i];
      if (!t.included && !said_threshold) {
        out << "  ------ inclusion threshold ------\n";
        said_threshold = true;
      }
      const TargetDomains& d = t.domains;
      const Domain& best = d.domains[static_cast<std::size_t>(d.best_domain)];
      int reported = 0;
      for (const Domain& x : d.domains) reported += x.reported ? 1 : 0;
      out << printf_string("  %9.2g %6.1f %5.1f  %9.2g %6.1f %5.1f  %5.1f %2d  %-*s  %s\n",
                           t.evalue, static_cast<double>(d.score_bits),
                           static_cast<double>(d.bias_bits), std::exp(best.log_pvalue) * q.Z,
                           static_cast<double>(best.bits), static_cast<double>(best.bias_bits),
                           static_cast<double>(d.expected), reported, nw,
                           shown_name(t, config.run).c_str(), cut(t.description, descw).c_str());
    }
    if (q.reported.empty()) out << "\n   [No hits detected that satisfy reporting thresholds]\n";
    out << "\n\nDomain annotation for each " << (scan ? "model" : "sequence")
        << (config.run.noali ? "" : " (and alignments)") << ":\n";
    for (std::size_t i : q.reported) write_domain_table(out, q.targets[i], q, config.run, scan);
    if (q.reported.empty()) out << "\n   [No targets detected that satisfy reporting thresholds]\n";
    const double n = static_cast<double>(std::max<std::int64_t>(q.counts.targets, 1));
    const auto s = cascade_settings(config.search);
    const auto& c = q.counts;
    out << "\n\nInternal pipeline statistics summary:\n";
    out << "-------------------------------------\n";
    if (scan) {
      out << printf_string("Query sequence(s):           %15lld  (%d residues searched)\n", 1LL,
                           q.M);
      out << printf_string("Target model(s):             %15lld  (%lld nodes)\n",
                           static_cast<long long>(c.targets), static_cast<long long>(c.residues));
    } else {
      out << printf_string("Query model(s):              %15lld  (%d nodes)\n", 1LL, q.M);
      out << printf_string("Target sequences:            %15lld  (%lld residues searched)\n",
                           static_cast<long long>(c.targets), static_cast<long long>(c.residues));
    }
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
    out << printf_string(
        "Domain search space  (domZ): %15.0f  %s\n", q.domZ,
        q.domZ_from_option ? "[as set by --domZ]" : "[number of targets reported over threshold]");
    const double mcps = q.seconds > 0 ? static_cast<double>(c.residues) * q.M / q.seconds / 1e6 : 0;
    out << printf_string("# Elapsed: %.2f s  # Mc/sec: %.2f\n//\n", q.seconds, mcps);
  }
  out << "[ok]\n";
}

namespace {

// The widths of the tables' name columns over every query (HMMER's minimums).
struct TableWidths {
  int target = 20, query = 20, query_accession = 10, target_accession = 10;
  explicit TableWidths(const SearchRun& run) {
    for (const auto& q : run.queries) {
      query = std::max(query, static_cast<int>(q.name.size()));
      query_accession = std::max(query_accession, static_cast<int>(q.accession.size()));
      for (std::size_t i : q.reported) {
        target = std::max(target, static_cast<int>(q.targets[i].name.size()));
        target_accession =
            std::max(target_accession, static_cast<int>(q.targets[i].accession.size()));
      }
    }
  }
};

void write_table_footer(std::ostream& out, const RunInfo& info) {
  out << "#\n# Program:         duet " << (info.scan ? "hmmscan" : "hmmsearch") << "\n";
  out << "# Query file:      " << (info.scan ? info.database_path : info.hmm_path) << "\n";
  out << "# Target file:     " << (info.scan ? info.hmm_path : info.database_path) << "\n";
  out << "# Option settings: " << info.command_line << "\n";
  out << "# [ok]\n";
}

}  // namespace

void write_tblout(std::ostream& out, const SearchRun& run, const RunInfo& info) {
  const TableWidths w(run);
  const int tw = w.target, qw = w.query, qaw = w.query_accession, taw = w.target_accession;
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
      const TargetDomains& d = t.domains;
      const Domain& best = d.domains[static_cast<std::size_t>(d.best_domain)];
      int reported = 0, included = 0;
      for (const Domain& x : d.domains) {
        reported += x.reported ? 1 : 0;
        included += x.included ? 1 : 0;
      }
      out << printf_string(
          "%-*s %-*s %-*s %-*s %9.2g %6.1f %5.1f %9.2g %6.1f %5.1f %5.1f %3d %3d %3d %3d %3d %3d "
          "%3d %s\n",
          tw, t.name.c_str(), taw, t.accession.empty() ? "-" : t.accession.c_str(), qw,
          q.name.c_str(), qaw, q.accession.empty() ? "-" : q.accession.c_str(), t.evalue,
          static_cast<double>(d.score_bits), static_cast<double>(d.bias_bits),
          std::exp(best.log_pvalue) * q.Z, static_cast<double>(best.bits),
          static_cast<double>(best.bias_bits), static_cast<double>(d.expected), d.regions,
          d.clustered, d.overlaps, d.envelopes, static_cast<int>(d.domains.size()), reported,
          included, t.description.empty() ? "-" : t.description.c_str());
    }
  }
  write_table_footer(out, info);
}

void write_domtblout(std::ostream& out, const SearchRun& run, const RunInfo& info) {
  const TableWidths w(run);
  const int tw = w.target, qw = w.query, qaw = w.query_accession, taw = w.target_accession;
  out << printf_string("#%*s %22s %40s %11s %11s %11s\n", tw + qw - 1 + 15 + taw + qaw, "",
                       "--- full sequence ---", "-------------- this domain -------------",
                       "hmm coord", "ali coord", "env coord");
  out << printf_string(
      "#%-*s %-*s %5s %-*s %-*s %5s %9s %6s %5s %3s %3s %9s %9s %6s %5s %5s %5s %5s %5s %5s %5s "
      "%4s %s\n",
      tw - 1, " target name", taw, "accession", "tlen", qw, "query name", qaw, "accession", "qlen",
      "E-value", "score", "bias", "#", "of", "c-Evalue", "i-Evalue", "score", "bias", "from", "to",
      "from", "to", "from", "to", "acc", "description of target");
  out << printf_string(
      "#%*s %*s %5s %*s %*s %5s %9s %6s %5s %3s %3s %9s %9s %6s %5s %5s %5s %5s %5s %5s %5s %4s "
      "%s\n",
      tw - 1, "-------------------", taw, "----------", "-----", qw, "--------------------", qaw,
      "----------", "-----", "---------", "------", "-----", "---", "---", "---------", "---------",
      "------", "-----", "-----", "-----", "-----", "-----", "-----", "-----", "----",
      "---------------------");
  for (const auto& q : run.queries) {
    for (std::size_t i : q.reported) {
      const TargetRecord& t = q.targets[i];
      const TargetDomains& d = t.domains;
      int of = 0;
      for (const Domain& x : d.domains) of += x.reported ? 1 : 0;
      int n = 0;
      for (const Domain& x : d.domains) {
        if (!x.reported) continue;
        const double p = std::exp(x.log_pvalue);
        out << printf_string(
            "%-*s %-*s %5d %-*s %-*s %5d %9.2g %6.1f %5.1f %3d %3d %9.2g %9.2g %6.1f %5.1f %5d %5d "
            "%5d %5d %5d %5d %4.2f %s\n",
            tw, t.name.c_str(), taw, t.accession.empty() ? "-" : t.accession.c_str(), t.length, qw,
            q.name.c_str(), qaw, q.accession.empty() ? "-" : q.accession.c_str(), q.M, t.evalue,
            static_cast<double>(d.score_bits), static_cast<double>(d.bias_bits), ++n, of,
            p * q.domZ, p * q.Z, static_cast<double>(x.bits), static_cast<double>(x.bias_bits),
            x.hmm_from, x.hmm_to, x.ali_from, x.ali_to, x.env_from, x.env_to, x.accuracy(),
            t.description.empty() ? "-" : t.description.c_str());
      }
    }
  }
  write_table_footer(out, info);
}

namespace {

// One query's alignment of its included domains (p7_tophits_Alignment, p7_tracealign_Seqs
// with every consensus column).
struct QueryAlignment {
  std::vector<std::string> names, descriptions, rows, posteriors;
  std::string pp_cons, rf;
};

// A posterior probability back from its display character, as HMMER's alignment file
// averages them (p7_alidisplay_DecodePostProb).
float decoded_posterior(char c) {
  if (c == '0') return 0.01f;
  if (c == '*') return 1.0f;
  if (c == '.') return 0.0f;
  return static_cast<float>(c - '0') / 10.0f;
}

QueryAlignment align_included_domains(const QueryResult& q) {
  const int M = q.M;
  struct Piece {
    const TargetRecord* target;
    const Domain* domain;
  };
  std::vector<Piece> pieces;
  for (std::size_t i : q.reported) {
    const TargetRecord& t = q.targets[i];
    if (!t.included) continue;
    for (const Domain& d : t.domains.domains)
      if (d.included) pieces.push_back({&t, &d});
  }
  QueryAlignment a;
  if (pieces.empty()) return a;
  // The most residues inserted after each node, then each node's column.
  std::vector<int> inserts(static_cast<std::size_t>(M) + 1, 0);
  for (const Piece& p : pieces) {
    const AlignmentDisplay& d = p.domain->alignment;
    std::vector<int> here(inserts.size(), 0);
    int k = p.domain->hmm_from - 1;
    for (char c : d.model) {
      if (c == '.')
        ++here[static_cast<std::size_t>(k)];
      else
        ++k;
    }
    for (std::size_t j = 0; j < inserts.size(); ++j) inserts[j] = std::max(inserts[j], here[j]);
  }
  std::vector<int> column(static_cast<std::size_t>(M) + 2, 0);  // 1-based column of node k
  int length = inserts[0];
  for (int k = 1; k <= M; ++k) {
    column[static_cast<std::size_t>(k)] = length + 1;
    length += 1 + inserts[static_cast<std::size_t>(k)];
  }
  column[static_cast<std::size_t>(M) + 1] = length + 1;
  std::vector<double> pp_sum(static_cast<std::size_t>(length), 0.0);
  std::vector<int> pp_count(static_cast<std::size_t>(length), 0);
  for (const Piece& p : pieces) {
    const Domain& dom = *p.domain;
    const AlignmentDisplay& d = dom.alignment;
    std::string row(static_cast<std::size_t>(length), '.');
    std::string pp(static_cast<std::size_t>(length), '.');
    for (int k = 1; k <= M; ++k) row[static_cast<std::size_t>(column[k] - 1)] = '-';
    int k = dom.hmm_from - 1, at = column[static_cast<std::size_t>(k) + 1] - 1;
    for (std::size_t z = 0; z < d.model.size(); ++z) {
      if (d.model[z] == '.') {  // an insertion after node k
        row[static_cast<std::size_t>(at)] = d.target[z];
        pp[static_cast<std::size_t>(at)] = d.posterior[z];
        ++at;
        continue;
      }
      ++k;
      const auto col = static_cast<std::size_t>(column[static_cast<std::size_t>(k)] - 1);
      row[col] = d.target[z];
      if (d.target[z] != '-') {
        pp[col] = d.posterior[z];
        pp_sum[col] += decoded_posterior(d.posterior[z]);
        ++pp_count[col];
      }
      at = column[static_cast<std::size_t>(k)];
    }
    // Insertions split: half of each left justified, the rest right justified.
    for (int n = 0; n < M; ++n) {
      if (inserts[static_cast<std::size_t>(n)] <= 1) continue;
      const int first = column[static_cast<std::size_t>(n)];  // 0-based start of the gap
      const int end = column[static_cast<std::size_t>(n) + 1] - 1;
      int residues = 0;
      for (int x = first; x < end; ++x) residues += std::isalpha(row[x]) ? 1 : 0;
      const int left = n == 0 ? 0 : residues / 2;
      int from = end - 1, to = end - 1;
      while (from >= first + left) {
        if (!std::isalpha(row[static_cast<std::size_t>(from)])) {
          --from;
        } else {
          row[static_cast<std::size_t>(to)] = row[static_cast<std::size_t>(from)];
          pp[static_cast<std::size_t>(to)] = pp[static_cast<std::size_t>(from)];
          --to;
          --from;
        }
      }
      for (; to >= first + left; --to) {
        row[static_cast<std::size_t>(to)] = '.';
        pp[static_cast<std::size_t>(to)] = '.';
      }
    }
    a.names.push_back(p.target->name + "/" + std::to_string(dom.ali_from) + "-" +
                      std::to_string(dom.ali_to));
    // HMMER's description of a piece: "[subseq from] " and the target's description, or
    // its name where it has none.
    a.descriptions.push_back("[subseq from] " + (p.target->description.empty()
                                                     ? p.target->name
                                                     : p.target->description));
    a.rows.push_back(std::move(row));
    a.posteriors.push_back(std::move(pp));
  }
  a.pp_cons.assign(static_cast<std::size_t>(length), '.');
  a.rf.assign(static_cast<std::size_t>(length), '.');
  for (int k = 1; k <= M; ++k) a.rf[static_cast<std::size_t>(column[k] - 1)] = 'x';
  for (std::size_t c = 0; c < static_cast<std::size_t>(length); ++c) {
    if (pp_count[c] == 0) continue;
    // The mean as a float, as HMMER hands it to its encoder.
    const double p =
        static_cast<double>(static_cast<float>(pp_sum[c] / static_cast<double>(pp_count[c]))) +
        0.05;
    a.pp_cons[c] = p >= 1.0 ? '*' : static_cast<char>('0' + static_cast<int>(p * 10.0));
  }
  return a;
}

}  // namespace

void write_alignment_file(std::ostream& out, const SearchRun& run, int textw) {
  // Easel's Stockholm blocks of 200 columns; HMMER writes one block (Pfam's layout) under
  // --notextw.
  for (const QueryResult& q : run.queries) {
    const QueryAlignment a = align_included_domains(q);
    if (a.rows.empty()) continue;
    std::size_t name_width = 0;
    for (const std::string& n : a.names) name_width = std::max(name_width, n.size());
    const int nw = static_cast<int>(name_width);
    const int margin = std::max(nw + 1, std::max(7 + 6, nw + 2 + 7));
    out << "# STOCKHOLM 1.0\n";
    out << "#=GF ID " << q.name << "\n";
    if (!q.accession.empty()) out << "#=GF AC " << q.accession << "\n";
    if (!q.description.empty()) out << "#=GF DE " << q.description << "\n";
    out << "#=GF AU duet hmmsearch\n\n";
    for (std::size_t i = 0; i < a.rows.size(); ++i)
      out << printf_string("#=GS %-*s DE ", nw, a.names[i].c_str()) << a.descriptions[i] << "\n";
    out << "\n";
    const std::size_t length = a.rf.size();
    const std::size_t columns = textw > 0 ? 200 : std::max<std::size_t>(length, 1);
    for (std::size_t at = 0; at < length; at += columns) {
      if (at > 0) out << "\n";
      const std::size_t n = std::min(columns, length - at);
      for (std::size_t i = 0; i < a.rows.size(); ++i) {
        out << printf_string("%-*s ", margin - 1, a.names[i].c_str()) << a.rows[i].substr(at, n)
            << "\n";
        out << printf_string("#=GR %-*s %-*s ", nw, a.names[i].c_str(), margin - nw - 7, "PP")
            << a.posteriors[i].substr(at, n) << "\n";
      }
      out << printf_string("#=GC %-*s ", margin - 6, "PP_cons") << a.pp_cons.substr(at, n) << "\n";
      out << printf_string("#=GC %-*s ", margin - 6, "RF") << a.rf.substr(at, n) << "\n";
    }
    out << "//\n";
  }
}

void write_hdf5(io::Hdf5Writer& file, const SearchRun& run, const io::Config& config,
                const RunInfo& info) {
  write_run_header(file, {info.scan ? "duet hmmscan" : "duet hmmsearch", info.command_line,
                          info.started, info.isa, run.seconds});
  file.set_attribute("/run", "config_toml", io::to_toml(config));
  file.set_attribute("/run", "hmm_file", info.hmm_path);
  file.set_attribute("/run", "database", info.database_path);
  file.set_attribute("/run", "null2", null2_note(config.search));
  write_trace(file, run);
  if (!info.scan) file.create_group("/results/hmmsearch");
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
  const float none = std::numeric_limits<float>::quiet_NaN();
  end.evalue.resize(n);
  end.score_bits.assign(n, none);
  end.bias_bits.assign(n, none);
  end.reported.resize(n);
  end.included.resize(n);
  QueryEnd::Domains& d = end.domains;
  for (std::size_t i = 0; i < n; ++i) {
    const TargetRecord& t = q.targets[i];
    end.evalue[i] = t.evalue;
    end.reported[i] = t.reported ? 1 : 0;
    end.included[i] = t.included ? 1 : 0;
    if (!t.is_hit()) continue;
    end.score_bits[i] = t.domains.score_bits;
    end.bias_bits[i] = t.domains.bias_bits;
    std::int32_t number = 0;
    for (const Domain& x : t.domains.domains) {
      const double p = std::exp(x.log_pvalue);
      d.target.push_back(t.index);
      d.target_row.push_back(static_cast<std::int64_t>(i));
      d.number.push_back(++number);
      d.hmm_from.push_back(x.hmm_from);
      d.hmm_to.push_back(x.hmm_to);
      d.ali_from.push_back(x.ali_from);
      d.ali_to.push_back(x.ali_to);
      d.env_from.push_back(x.env_from);
      d.env_to.push_back(x.env_to);
      d.score_bits.push_back(x.bits);
      d.bias_bits.push_back(x.bias_bits);
      d.accuracy.push_back(static_cast<float>(x.accuracy()));
      d.c_evalue.push_back(p * q.domZ);
      d.i_evalue.push_back(p * q.Z);
      d.reported.push_back(x.reported ? 1 : 0);
      d.included.push_back(x.included ? 1 : 0);
      d.model_line.push_back(x.alignment.model);
      d.match_line.push_back(x.alignment.match);
      d.target_line.push_back(x.alignment.target);
      d.posterior_line.push_back(x.alignment.posterior);
    }
  }
  end.reported_targets = static_cast<std::int64_t>(q.reported.size());
  return end;
}

void write_query_summary(io::Hdf5Writer& file, const std::string& g, const QueryEnd& end) {
  file.create_group(g);
  // The other columns were written during the pass (result_stream.hpp).
  file.write(g + "/evalue", end.evalue);
  file.write(g + "/score_bits", end.score_bits);
  file.write(g + "/bias_bits", end.bias_bits);
  file.write(g + "/reported", end.reported);
  file.write(g + "/included", end.included);
  // The domains table only where there are domains: a many-model run has many queries
  // without hits, and each dataset costs the writer (bench/RESULTS.md).
  const QueryEnd::Domains& d = end.domains;
  const std::string dg = g + "/domains";
  if (!d.target.empty()) {
    file.create_group(dg);
    file.write(dg + "/target", d.target);
    file.write(dg + "/target_row", d.target_row);
    file.write(dg + "/number", d.number);
    file.write(dg + "/score_bits", d.score_bits);
    file.write(dg + "/bias_bits", d.bias_bits);
    file.write(dg + "/c_evalue", d.c_evalue);
    file.write(dg + "/i_evalue", d.i_evalue);
    file.write(dg + "/hmm_from", d.hmm_from);
    file.write(dg + "/hmm_to", d.hmm_to);
    file.write(dg + "/ali_from", d.ali_from);
    file.write(dg + "/ali_to", d.ali_to);
    file.write(dg + "/env_from", d.env_from);
    file.write(dg + "/env_to", d.env_to);
    file.write(dg + "/accuracy", d.accuracy);
    file.write(dg + "/reported", d.reported);
    file.write(dg + "/included", d.included);
    file.write(dg + "/model_line", d.model_line);
    file.write(dg + "/match_line", d.match_line);
    file.write(dg + "/target_line", d.target_line);
    file.write(dg + "/posterior_line", d.posterior_line);
  }
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
  file.set_attribute(g, "domZ", q.domZ);
  file.set_attribute(g, "stage_codes",
                     std::string("1 rejected by MSV, 2 by bias filter, 3 by Viterbi filter, "
                                 "4 by Forward filter, 5 passed every filter"));
}

}  // namespace duet::app
