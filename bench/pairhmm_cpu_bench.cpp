// Per-core throughput of the pair-HMM CPU kernels (src/host_simd/pairhmm) and of the study
// kernels (bench/pairhmm_study): GCUPS (cells of the pairs, not of the padded lanes, per
// second of this thread's CPU time) of every variant of kPairhmmVariants and
// kPairhmmStudies this CPU runs, single thread, on a pair-HMM input file
// (10s.in of the shared data for the figures in bench/RESULTS.md). Each variant's sums are
// checked bit for bit against the scalar canonical kernel before it is timed; a mismatch
// fails the run. Also timed, to show where the time of `duet pairhmm --cpu 1` goes besides
// the kernel: the per-read row parameters (Model::rows, which the SIMD kernels compute for
// each pair they pack) and finish_likelihood (log10 and the double fallback).
//
// Usage: pairhmm_cpu_bench INPUT [--copies N] [--isas LIST] [--repeats N]
//   --copies N   the pairs N times over (as the x64 replication does; default 1)
//   --isas LIST  comma-separated variant names (default: every one this CPU runs)
//   --repeats N  timed runs per variant, the best is printed (default 5)
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/pairhmm/pairhmm_input.hpp"
#include "core/pairhmm/pairhmm_model.hpp"
#include "host_simd/pairhmm/pairhmm_simd.hpp"
#include "pairhmm_study/pairhmm_study.hpp"

namespace {

using duet::pairhmm::Model;
using duet::pairhmm::Pair;
using duet::simd::pairhmm::PairhmmStudy;
using duet::simd::pairhmm::PairhmmVariant;

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The best (least) thread CPU time of `repeats` runs of f.
template <class F>
double best_seconds(int repeats, F&& f) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const double t0 = thread_seconds();
    f();
    best = std::min(best, thread_seconds() - t0);
  }
  return best;
}

int usage() {
  std::fprintf(stderr, "usage: pairhmm_cpu_bench INPUT [--copies N] [--isas LIST] [--repeats N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, isas;
  int copies = 1, repeats = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--copies" || a == "--isas" || a == "--repeats") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--copies") copies = std::atoi(v.c_str());
      if (a == "--isas") isas = "," + v + ",";
      if (a == "--repeats") repeats = std::atoi(v.c_str());
    } else if (!a.empty() && a[0] != '-' && path.empty()) {
      path = a;
    } else {
      return usage();
    }
  }
  if (path.empty() || copies < 1 || repeats < 1) return usage();

  const duet::pairhmm::Input input = duet::pairhmm::read_input(path);
  const Model model;
  const std::vector<Pair> one = input.pair_list();
  std::vector<Pair> pairs;
  for (int k = 0; k < copies; ++k) pairs.insert(pairs.end(), one.begin(), one.end());
  std::int64_t cells = 0;
  for (const Pair& p : pairs) cells += p.cells();
  std::printf("# %s x%d: %zu pairs, %lld cells; best of %d runs, thread CPU time\n", path.c_str(),
              copies, pairs.size(), static_cast<long long>(cells), repeats);
  std::printf("%-24s %10s %10s\n", "what", "seconds", "GCUPS");

  // The canonical sums, from the scalar kernel on one copy (also timed: one run).
  std::vector<float> canonical(one.size());
  const double scalar =
      best_seconds(1, [&] { duet::pairhmm::forward_sums_scalar(model, one, canonical.data()); });
  std::printf("%-24s %10.4f %10.3f\n", "scalar (1 copy, 1 run)", scalar,
              static_cast<double>(cells / copies) / scalar * 1e-9);
  for (int k = 1; k < copies; ++k)
    canonical.insert(canonical.end(), canonical.begin(),
                     canonical.begin() + static_cast<std::ptrdiff_t>(one.size()));

  int failures = 0;
  std::vector<float> sums(pairs.size());
  // One variant, `width` its vector's pairs (inter-pair) or read rows (anti-diagonal).
  const auto measure = [&](const PairhmmVariant& v, int width) {
    if (!isas.empty() && isas.find("," + std::string(v.name) + ",") == std::string::npos) return;
    if (!duet::simd::cpu_supports(v.isa)) {
      std::printf("%-24s %10s %10s\n", std::string(v.name).c_str(), "-", "no CPU");
      return;
    }
    std::fill(sums.begin(), sums.end(), -1.0f);
    v.function(model, pairs, sums.data());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < pairs.size(); ++i)
      wrong += std::memcmp(&sums[i], &canonical[i], sizeof(float)) != 0;
    if (wrong != 0) {
      std::printf("%-24s %zu of %zu sums differ from the canonical ones\n",
                  std::string(v.name).c_str(), wrong, pairs.size());
      ++failures;
      return;
    }
    const double s = best_seconds(repeats, [&] { v.function(model, pairs, sums.data()); });
    const std::string name = std::string(v.name) + " x" + std::to_string(width);
    std::printf("%-24s %10.4f %10.3f\n", name.c_str(), s, static_cast<double>(cells) / s * 1e-9);
  };
  for (const PairhmmVariant& v : duet::simd::pairhmm::kPairhmmVariants)
    if (v.isa != duet::simd::Isa::scalar) measure(v, v.lanes);
  for (const PairhmmStudy& study : duet::simd::pairhmm::kPairhmmStudies)
    measure(study.kernel, study.diagonal_rows > 0 ? study.diagonal_rows : study.kernel.lanes);

  // Around the kernel: row parameters of every pair's read, and the reported values.
  std::vector<duet::pairhmm::RowParameters<float>> rows;
  const double setup = best_seconds(repeats, [&] {
    for (const Pair& p : pairs) model.rows(*p.read, rows);
  });
  std::printf("%-24s %10.4f\n", "Model::rows per pair", setup);
  int in_double = 0;
  const double finish = best_seconds(repeats, [&] {
    in_double = 0;
    for (std::size_t i = 0; i < pairs.size(); ++i)
      in_double += duet::pairhmm::finish_likelihood(model, pairs[i], canonical[i]).in_double;
  });
  std::printf("%-24s %10.4f   (%d pairs in double)\n", "finish_likelihood", finish, in_double);
  return failures == 0 ? 0 : 1;
}
