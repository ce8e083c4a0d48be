// Per-core throughput of the CPU filter kernels (src/host_simd): Gcells/s (model nodes x
// target residues per second of this thread's CPU time) of every kernel and ISA of
// duet::simd::kVariants, against model length, single thread, on real sequences of the
// MMseqs2 example database. Models of each length are built from the nodes of HMMER's
// tutorial models (Pkinase, fn3, globins4) taken in turn, so that scores, SSV fallbacks
// and D->D passes behave as on real families. Every kernel's answers are checked against
// the scalar reference on a sample before it is timed; a mismatch fails the run.
//
// Rows: ssv (SSV alone), msv (the MSV stage as the cascade runs it: SSV, then MSV where
// SSV cannot answer), msv-full (the striped MSV alone), viterbi, forward (the SIMD
// parser's own score); "scalar" rows time the references. forward-canonical (one row,
// ISA column "core") times core's forward_canonical, the score duet reports; it is checked
// within tolerance of the reference and bit for bit against the SSE4.1 parser.
// forward-packed times the same canonical score from the ISA's packed kernel
// (SimdFilterKernels::forward_canonical_many, batches of 32 targets in database order, as
// a CPU worker scores a block's Forward candidates); checked bit for bit against
// forward_canonical.
//
// Usage: simd_bench [--db FASTA] [--models DIR] [--residues N] [--lengths 50,100,...] [--kernels
// LIST]
//                   [--isas LIST] [--min-seconds S] [--scalar-residues N]
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/alphabet.hpp"
#include "core/fasta_reader.hpp"
#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"
#include "host_simd/hmmsearch/simd_kernels.hpp"

namespace {

using duet::FilterScore;
using duet::HmmModel;
using duet::Residue;
using duet::SearchProfile;
using duet::simd::Isa;
using duet::simd::Kernel;
using duet::simd::SimdFilterKernels;

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// A model of M nodes made of the source models' nodes in turn (node 0 of the first).
HmmModel model_of_length(const std::vector<HmmModel>& sources, int M) {
  struct Node {
    const HmmModel* model;
    int k;
  };
  std::vector<Node> nodes;
  for (const HmmModel& m : sources)
    for (int k = 1; k <= m.M; ++k) nodes.push_back({&m, k});
  const HmmModel& first = sources.front();
  const int K = first.alphabet->K();
  HmmModel hmm = first;
  hmm.name = "synthetic" + std::to_string(M);
  hmm.M = M;
  hmm.max_length = 0;
  hmm.consensus.clear();
  hmm.t.assign(M + 1, first.t[0]);
  hmm.match.assign(M + 1, std::vector<float>(K, 0.0f));
  hmm.insert.assign(M + 1, first.insert[0]);
  for (int k = 1; k <= M; ++k) {
    const Node& n = nodes[static_cast<std::size_t>(k - 1) % nodes.size()];
    hmm.t[k] = n.model->t[n.k];
    hmm.match[k] = n.model->match[n.k];
    hmm.insert[k] = n.model->insert[n.k];
  }
  // The last node has no M->D, D->D; a source's last node used inside gets them back.
  auto& last = hmm.t[M];
  last[duet::kMM] = 1.0f - last[duet::kMI];
  last[duet::kMD] = 0.0f;
  last[duet::kDM] = 1.0f;
  last[duet::kDD] = 0.0f;
  for (int k = 1; k < M; ++k) {
    auto& t = hmm.t[k];
    if (t[duet::kMD] == 0.0f) {
      t[duet::kMD] = 0.01f;
      t[duet::kMM] -= 0.01f;
      t[duet::kDM] = 0.5f;
      t[duet::kDD] = 0.5f;
    }
  }
  hmm.composition.assign(K, 0.0f);
  for (int k = 1; k <= M; ++k)
    for (int x = 0; x < K; ++x) hmm.composition[x] += hmm.match[k][x] / static_cast<float>(M);
  return hmm;
}

struct Row {
  std::string kernel;  // ssv, msv, msv-full, viterbi, forward, forward-canonical
  Isa isa;             // forward-canonical: scalar (the kernel is core's, whatever the ISA)
};

std::string isa_label(const Row& row) {
  return row.kernel == "forward-canonical" ? "core" : std::string(duet::simd::isa_name(row.isa));
}

// One kernel call on one target; returns a value folded into a checksum so that nothing
// is optimised away.
double run_kernel(const std::string& kernel, SimdFilterKernels& k,
                  duet::CanonicalForward& canonical, const std::vector<Residue>& s) {
  const Residue* dsq = s.data();
  const int L = static_cast<int>(s.size());
  if (kernel == "forward-canonical") return canonical.score(dsq, L);
  if (kernel == "ssv") {
    FilterScore score;
    return k.ssv_only(dsq, L, score) ? score.nats : 0.0;
  }
  if (kernel == "msv") return k.msv(dsq, L).nats;
  if (kernel == "msv-full") return k.msv_only(dsq, L).nats;
  if (kernel == "viterbi") return k.viterbi(dsq, L).nats;
  return k.forward_simd(dsq, L);
}

bool same(const FilterScore& a, const FilterScore& b) {
  return a.overflow == b.overflow && std::memcmp(&a.nats, &b.nats, sizeof(float)) == 0;
}

// The kernel's answer against the reference's; true when they agree.
bool check(const std::string& kernel, SimdFilterKernels& k, duet::CanonicalForward& canonical,
           SimdFilterKernels* sse41, const SearchProfile& p, const std::vector<Residue>& s) {
  const Residue* dsq = s.data();
  const int L = static_cast<int>(s.size());
  if (kernel == "ssv") {
    FilterScore a, b;
    const bool ca = k.ssv_only(dsq, L, a);
    const bool cb = duet::ssv_filter_reference(p.msv, dsq, L, b);
    return ca == cb && (!cb || same(a, b));
  }
  if (kernel == "msv") return same(k.msv(dsq, L), duet::msv_filter_reference(p.msv, dsq, L));
  if (kernel == "msv-full")
    return same(k.msv_only(dsq, L), duet::msv_filter_reference(p.msv, dsq, L));
  if (kernel == "viterbi")
    return same(k.viterbi(dsq, L), duet::viterbi_filter_reference(p.viterbi, dsq, L));
  const float a = kernel == "forward" ? k.forward_simd(dsq, L) : canonical.score(dsq, L);
  if (kernel == "forward-canonical" && sse41 != nullptr) {
    const float exact = sse41->forward_simd(dsq, L);
    if (std::memcmp(&a, &exact, sizeof(float)) != 0) return false;
  }
  const float b = duet::forward_parser_reference(p.forward, dsq, L);
  return std::fabs(double{a} - b) <= duet::simd::kForwardAbsoluteTolerance +
                                         duet::simd::kForwardRelativeTolerance * std::fabs(b);
}

}  // namespace

int main(int argc, char** argv) {
  std::string db = "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz";
  std::string tutorial = "/usr/share/doc/hmmer/examples/tutorial/";
  long long residues_wanted = 2'000'000;
  long long scalar_residues = 100'000;
  std::vector<int> lengths = {50, 100, 200, 400, 800, 1600, 2400};
  std::vector<std::string> kernels = {
      "ssv", "msv", "msv-full", "viterbi", "forward", "forward-canonical", "forward-packed"};
  std::vector<std::string> isa_names = {"scalar", "sse4.1", "avx2", "avx512"};
  double min_seconds = 0.3;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    const auto value = [&]() -> std::string {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (arg == "--db") {
      db = value();
    } else if (arg == "--models") {
      tutorial = value() + "/";
    } else if (arg == "--residues") {
      residues_wanted = std::atoll(value().c_str());
    } else if (arg == "--scalar-residues") {
      scalar_residues = std::atoll(value().c_str());
    } else if (arg == "--lengths") {
      lengths.clear();
      for (const std::string& s : split(value())) lengths.push_back(std::atoi(s.c_str()));
    } else if (arg == "--kernels") {
      kernels = split(value());
    } else if (arg == "--isas") {
      isa_names = split(value());
    } else if (arg == "--min-seconds") {
      min_seconds = std::atof(value().c_str());
    } else {
      std::fprintf(
          stderr,
          "usage: simd_bench [--db FASTA] [--models DIR] [--residues N] [--lengths 50,100,...] "
          "[--kernels "
          "ssv,msv,msv-full,viterbi,forward,forward-canonical,forward-packed] [--isas "
          "scalar,sse4.1,avx2,avx512] "
          "[--min-seconds S] "
          "[--scalar-residues N]\n");
      return 2;
    }
  }

  std::vector<HmmModel> sources;
  for (const char* name : {"Pkinase", "fn3", "globins4"})
    sources.push_back(duet::read_hmm_file(tutorial + name + ".hmm").at(0));
  std::vector<std::vector<Residue>> targets;
  long long residues = 0;
  {
    duet::FastaReader reader(db, duet::Alphabet::amino());
    duet::Sequence s;
    while (residues < residues_wanted && reader.next(s)) {
      residues += static_cast<long long>(s.residues.size());
      targets.push_back(s.residues);
    }
  }
  std::vector<Isa> isas;
  for (const std::string& name : isa_names) {
    const Isa isa = duet::simd::isa_from_name(name);  // throws UsageError when the CPU lacks it
    isas.push_back(isa);
  }
  std::printf("simd_bench: %zu targets, %lld residues (%s); dispatcher's choice: %s\n",
              targets.size(), residues, db.c_str(),
              std::string(duet::simd::isa_name(duet::simd::best_isa())).c_str());

  // results[row][M] = Gc/s
  std::vector<Row> rows;
  for (const std::string& kernel : kernels) {
    if (kernel == "forward-canonical") {
      rows.push_back({kernel, Isa::scalar});
      continue;
    }
    for (Isa isa : isas) {
      if (kernel != "forward-packed" || isa != Isa::scalar) rows.push_back({kernel, isa});
    }
  }
  std::map<std::pair<int, int>, double> gcells;
  int mismatches = 0, checked = 0;
  double checksum = 0;
  for (int M : lengths) {
    const HmmModel hmm = model_of_length(sources, M);
    const SearchProfile profile =
        duet::build_search_profile(hmm, duet::Background::for_alphabet(*hmm.alphabet));
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const Row& row = rows[r];
      SimdFilterKernels k(profile, row.isa);
      duet::CanonicalForward canonical(profile.forward);
      std::unique_ptr<SimdFilterKernels> sse41;
      if (row.kernel == "forward-canonical" && duet::simd::cpu_supports(Isa::sse41))
        sse41 = std::make_unique<SimdFilterKernels>(profile, Isa::sse41);
      // Answers first: a sample of the targets against the reference (forward-packed: a
      // batch of them against forward_canonical, bit for bit).
      if (row.kernel == "forward-packed") {
        std::vector<duet::ForwardTarget> sample;
        for (std::size_t t = 0; t < targets.size(); t += 97)
          sample.push_back({targets[t].data(), static_cast<int>(targets[t].size())});
        std::vector<float> scores(sample.size());
        k.forward_canonical_many(sample, scores);
        for (std::size_t j = 0; j < sample.size(); ++j) {
          ++checked;
          const float want = canonical.score(sample[j].dsq, sample[j].L);
          if (std::memcmp(&want, &scores[j], sizeof(float)) != 0) {
            ++mismatches;
            std::fprintf(stderr, "MISMATCH forward-packed %s M=%d target %zu\n",
                         isa_label(row).c_str(), M, 97 * j);
          }
        }
      }
      for (std::size_t t = 0; t < targets.size() && row.kernel != "forward-packed"; t += 97) {
        ++checked;
        if (!check(row.kernel, k, canonical, sse41.get(), profile, targets[t])) {
          ++mismatches;
          std::fprintf(stderr, "MISMATCH %s %s M=%d target %zu\n", row.kernel.c_str(),
                       isa_label(row).c_str(), M, t);
        }
      }
      // The scalar references are slow: time them on the first targets only.
      const long long budget = row.isa == Isa::scalar ? scalar_residues : residues;
      double cells = 0, seconds = 0;
      const double start = thread_seconds();
      std::vector<duet::ForwardTarget> batch;
      std::vector<float> batch_scores;
      do {
        long long done = 0;
        if (row.kernel == "forward-packed") {
          for (std::size_t t = 0; t < targets.size() && done < budget;) {
            batch.clear();
            for (; t < targets.size() && batch.size() < 32 && done < budget; ++t) {
              batch.push_back({targets[t].data(), static_cast<int>(targets[t].size())});
              done += static_cast<long long>(targets[t].size());
            }
            batch_scores.resize(batch.size());
            k.forward_canonical_many(batch, batch_scores);
            for (float x : batch_scores) checksum += x;
          }
        }
        for (const auto& target : targets) {
          if (done >= budget || row.kernel == "forward-packed") break;
          checksum += run_kernel(row.kernel, k, canonical, target);
          done += static_cast<long long>(target.size());
        }
        cells += static_cast<double>(done) * M;
        seconds = thread_seconds() - start;
      } while (seconds < min_seconds);
      gcells[{static_cast<int>(r), M}] = cells / seconds / 1e9;
      std::fprintf(stderr, "  M=%d %s %s: %.3f Gc/s\n", M, row.kernel.c_str(),
                   isa_label(row).c_str(), cells / seconds / 1e9);
    }
  }

  std::printf("\nGcells/s per core (thread CPU time), by model length M:\n\n| kernel | ISA |");
  for (int M : lengths) std::printf(" %d |", M);
  std::printf("\n| --- | --- |");
  for (std::size_t j = 0; j < lengths.size(); ++j) std::printf(" ---: |");
  std::printf("\n");
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::printf("| %s | %s |", rows[r].kernel.c_str(), isa_label(rows[r]).c_str());
    for (int M : lengths) {
      const double g = gcells[{static_cast<int>(r), M}];
      std::printf(g >= 10 ? " %.1f |" : g >= 1 ? " %.2f |" : " %.3f |", g);
    }
    std::printf("\n");
  }
  std::printf("\nchecked %d targets against the references: %d mismatches (checksum %g)\n", checked,
              mismatches, checksum);
  return mismatches == 0 ? 0 : 1;
}
