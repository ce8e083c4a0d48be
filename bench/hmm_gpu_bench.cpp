// Kernel-only throughput of the hmmsearch GPU kernels (src/device/hmm_gpu.hpp): MSV and
// the Viterbi filter, in cells per second (model length x residues / kernel time, CUDA
// events, uploads excluded), against model length, on the MMseqs2 example database
// replicated to a given size. Each run checks a sample of its scores against the scalar
// references (a benchmark that does not check its answers proves nothing).
//   usage: hmm_gpu_bench [msv_residues (default 1e9)] [viterbi_residues (default 3e7)]
//                        [model lengths... (default 50 100 200 400 800 1500 2500)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../tests/simd_test_support.hpp"
#include "core/fasta_reader.hpp"
#include "core/profile.hpp"
#include "core/reference_kernels.hpp"
#include "device/hmm_gpu.hpp"
#include "device/hmm_gpu_timing.hpp"

using namespace duet;

int main(int argc, char** argv) {
  const double msv_residues = argc > 1 ? std::atof(argv[1]) : 1e9;
  const double vit_residues = argc > 2 ? std::atof(argv[2]) : 3e7;
  std::vector<int> lengths;
  for (int i = 3; i < argc; ++i) lengths.push_back(std::atoi(argv[i]));
  if (lengths.empty()) lengths = {50, 100, 200, 400, 800, 1500, 2500};

  const Alphabet& abc = Alphabet::amino();
  const auto db = simd_test::read_sequences(simd_test::kMmseqsDatabase, abc, 1 << 30);
  std::size_t db_residues = 0;
  for (const auto& s : db) db_residues += s.residues.size();
  std::printf(
      "database: %zu sequences, %zu residues; replicated to %.3g (MSV) and %.3g (Viterbi) "
      "residues\n",
      db.size(), db_residues, msv_residues, vit_residues);
  const auto replicate = [&](double residues) {
    std::vector<device::GpuTarget> t;
    double total = 0;
    while (total < residues) {
      for (const auto& s : db) {
        t.push_back({s.residues.data(), static_cast<int>(s.residues.size())});
        total += static_cast<double>(s.residues.size());
        if (total >= residues) break;
      }
    }
    return std::make_pair(t, total);
  };
  const auto [msv_targets, msv_total] = replicate(msv_residues);
  const auto [vit_targets, vit_total] = replicate(vit_residues);

  std::mt19937_64 rng(42);
  std::printf("%6s %10s %10s %12s %10s %10s %8s %s\n", "M", "MSV_ms", "MSV_GCUPS", "exact_tgts",
              "VIT_ms", "VIT_GCUPS", "checked", "strategy");
  for (const auto strategy :
       {device::GpuStrategy::warp_groups, device::GpuStrategy::thread_per_target}) {
    for (int M : lengths) {
      const HmmModel hmm = simd_test::random_hmm(rng, abc, M, simd_test::random_style(rng));
      const SearchProfile p = build_search_profile(hmm, Background::for_alphabet(abc));
      // The timing code of `duet tune` (device/hmm_gpu_timing.hpp): warm-up, CUDA events,
      // sampled scores checked against the references.
      const std::vector<device::GpuTarget> none;
      const device::HmmKernelTiming t = device::time_hmm_kernels(
          0, p, {0, strategy}, strategy == device::GpuStrategy::warp_groups ? msv_targets : none,
          vit_targets, 50);
      const double msv_ms = t.msv_ms - t.msv_exact_ms, msv_exact_ms = t.msv_exact_ms,
                   vit_ms = t.viterbi_ms;
      const long long exact = t.msv_exact_targets;
      const int checked = t.checked, wrong = t.wrong;
      const double msv_gcups = msv_ms > 0 ? msv_total * M / (msv_ms + msv_exact_ms) / 1e6 : 0;
      const double vit_gcups = vit_total * M / vit_ms / 1e6;
      std::printf("%6d %10.2f %10.1f %12lld %10.2f %10.1f %5d/%d %s%s\n", M, msv_ms + msv_exact_ms,
                  msv_gcups, exact, vit_ms, vit_gcups, checked - wrong, checked,
                  device::gpu_strategy_name(strategy).c_str(), wrong ? "  MISMATCH" : "");
      std::fflush(stdout);
      if (wrong) return 1;
    }
  }
  return 0;
}
