// Kernel-only throughput of the hmmsearch GPU kernels (src/device/hmmsearch/hmm_gpu.hpp): MSV and
// the Viterbi filter, in cells per second (model length x residues / kernel time, CUDA
// events, uploads excluded), against model length, on the MMseqs2 example database
// replicated to a given size. Each run checks a sample of its scores against the scalar
// references (a benchmark that does not check its answers proves nothing). MSV is printed
// as the fast kernel plus the exact re-run (MSV) and the fast kernel alone (SSV: HMMER's
// SSV, the begin score held constant), with 16 and 32 nodes per thread beside the default.
//   usage: hmm_gpu_bench [msv_residues (default 1e9)] [viterbi_residues (default 3e7)]
//                        [model lengths... (default 50 100 200 400 800 1500 2500)]
//          (msv_residues 0: no MSV, and the Viterbi filter's strip and warp kernels only)
//          hmm_gpu_bench forward [residues (default 3e7)] [model lengths...]
//          hmm_gpu_bench canonical [residues (default 2e7)] [cpu_cells (default 4e8)]
//                                  [model lengths...]
//          hmm_gpu_bench jit [msv_residues (default 1e9)] [exact_residues (default 1e8)]
//                            [model lengths... (default 50 100 260 500 1000 2500)]
// The jit mode compares the exact MSV kernel's static build with its run-time
// specialisation (NVRTC, msv_exact_kernel.cuh): the time to get the specialisation
// (compiled, from the memory cache, from the disk cache in a new folder $DUET_JIT_CACHE it
// makes), the exact kernel alone on every target of exact_residues (static, JIT), and MSV
// as a search runs it (fast kernel + exact re-run) on msv_residues (static, JIT).
// The forward mode times the float Forward parser and checks a sample of its scores
// against forward_parser_reference within the GPU tolerance (hmm_gpu.hpp).
// The canonical mode times the GPU canonical Forward (kernel only, and with the host's
// finish and CPU fallbacks), then the CPU's forward_canonical on this thread (one core) on
// the first targets up to cpu_cells cells, whose scores the GPU's must equal bit for bit.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../tests/simd_test_support.hpp"
#include "core/fasta_reader.hpp"
#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"
#include "device/hmmsearch/hmm_gpu.hpp"
#include "device/hmmsearch/hmm_gpu_timing.hpp"
#include "device/nvrtc_jit.hpp"

using namespace duet;

namespace {

std::vector<device::GpuTarget> replicate_database(const std::vector<Sequence>& db, double residues,
                                                  double& total) {
  std::vector<device::GpuTarget> t;
  total = 0;
  while (total < residues) {
    for (const auto& s : db) {
      t.push_back({s.residues.data(), static_cast<int>(s.residues.size())});
      total += static_cast<double>(s.residues.size());
      if (total >= residues) break;
    }
  }
  return t;
}

int forward_bench(int argc, char** argv) {
  const double residues = argc > 2 ? std::atof(argv[2]) : 3e7;
  std::vector<int> lengths;
  for (int i = 3; i < argc; ++i) lengths.push_back(std::atoi(argv[i]));
  if (lengths.empty()) lengths = {50, 100, 200, 400, 800, 1500, 2500};
  const Alphabet& abc = Alphabet::amino();
  const auto db = simd_test::read_sequences(simd_test::kMmseqsDatabase, abc, 1 << 30);
  double total = 0;
  const std::vector<device::GpuTarget> targets = replicate_database(db, residues, total);
  std::printf("forward: %zu targets, %.3g residues (MMseqs2 example database)\n", targets.size(),
              total);
  std::printf("%6s %10s %10s %8s %12s\n", "M", "FWD_ms", "FWD_GCUPS", "checked", "worst/tol");
  std::mt19937_64 rng(42);
  std::vector<int> all(targets.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  // The tail: a launch of the 32 longest targets alone, as the search's small launches end
  // (their time is that of the longest target's rows x vectors, walked in sequence).
  std::vector<int> longest_first = all;
  std::stable_sort(longest_first.begin(), longest_first.end(),
                   [&](int a, int b) { return targets[a].length > targets[b].length; });
  longest_first.resize(std::min<std::size_t>(longest_first.size(), 32));
  for (int M : lengths) {
    const HmmModel hmm = simd_test::random_hmm(rng, abc, M, simd_test::random_style(rng));
    const SearchProfile p = build_search_profile(hmm, Background::for_alphabet(abc));
    device::HmmGpuEngine engine(0, p);
    engine.submit_msv(0, targets.data(), targets.size());
    engine.wait_msv(0);
    // Warm-up on a small part, then the timed run.
    engine.submit_forward(0, all.data(), std::min<std::size_t>(all.size(), 2000));
    engine.wait_forward(0);
    engine.submit_forward(0, all.data(), all.size());
    const std::vector<float>& scores = engine.wait_forward(0);
    const double ms = engine.kernel_times(0).forward_ms;
    int checked = 0, wrong = 0;
    double worst = 0;
    for (std::size_t i = 0; i < scores.size(); i += scores.size() / 20 + 1) {
      const float r = forward_parser_reference(p.forward, targets[i].residues, targets[i].length);
      const double tol = device::kGpuForwardAbsoluteTolerance +
                         device::kGpuForwardRelativeTolerance * std::fabs(r);
      const double err = std::fabs(static_cast<double>(scores[i]) - r);
      worst = std::max(worst, err / tol);
      ++checked;
      if (!(err <= tol)) ++wrong;
    }
    std::printf("%6d %10.2f %10.1f %5d/%d %12.3g%s\n", M, ms, total * M / ms / 1e6, checked - wrong,
                checked, worst, wrong ? "  MISMATCH" : "");
    std::fflush(stdout);
    if (wrong) return 1;
  }
  return 0;
}

int canonical_bench(int argc, char** argv) {
  const double residues = argc > 2 ? std::atof(argv[2]) : 2e7;
  const double cpu_cells = argc > 3 ? std::atof(argv[3]) : 4e8;
  std::vector<int> lengths;
  for (int i = 4; i < argc; ++i) lengths.push_back(std::atoi(argv[i]));
  if (lengths.empty()) lengths = {50, 100, 200, 400, 800, 1500, 2500};
  const Alphabet& abc = Alphabet::amino();
  const auto db = simd_test::read_sequences(simd_test::kMmseqsDatabase, abc, 1 << 30);
  double total = 0;
  const std::vector<device::GpuTarget> targets = replicate_database(db, residues, total);
  const char* rows = std::getenv("DUET_CANONICAL_GPU_ROWS");
  int longest = 0;
  for (const auto& t : targets) longest = std::max(longest, t.length);
  std::printf(
      "canonical: %zu targets, %.3g residues (MMseqs2 example database), longest %d, rows %s\n",
      targets.size(), total, longest, rows != nullptr ? rows : "auto");
  std::printf("%6s %10s %10s %10s %8s %10s %10s %8s %8s %9s %9s\n", "M", "GPU_ms", "GPU_GCUPS",
              "finish_ms", "cpu_tgts", "CPU_ms", "CPU_GCUPS", "ratio", "checked", "tail_ms",
              "ns/step");
  std::mt19937_64 rng(42);
  std::vector<int> all(targets.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  // The tail: a launch of the 32 longest targets alone, as the search's small launches end
  // (their time is that of the longest target's rows x vectors, walked in sequence).
  std::vector<int> longest_first = all;
  std::stable_sort(longest_first.begin(), longest_first.end(),
                   [&](int a, int b) { return targets[a].length > targets[b].length; });
  longest_first.resize(std::min<std::size_t>(longest_first.size(), 32));
  for (int M : lengths) {
    const HmmModel hmm = simd_test::random_hmm(rng, abc, M, simd_test::random_style(rng));
    const SearchProfile p = build_search_profile(hmm, Background::for_alphabet(abc));
    device::HmmGpuEngine engine(0, p);
    engine.submit_msv(0, targets.data(), targets.size());
    engine.wait_msv(0);
    engine.submit_canonical_forward(0, all.data(), std::min<std::size_t>(all.size(), 2000));
    engine.wait_canonical_forward(0);  // warm-up
    const auto wall_start = std::chrono::steady_clock::now();
    engine.submit_canonical_forward(0, all.data(), all.size());
    const std::vector<float> gpu = engine.wait_canonical_forward(0);
    const double wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start)
            .count();
    const device::GpuKernelTimes times = engine.kernel_times(0);
    const double ms = times.canonical_ms;
    engine.submit_canonical_forward(0, longest_first.data(), longest_first.size());
    engine.wait_canonical_forward(0);
    const double tail_ms = engine.kernel_times(0).canonical_ms;
    const double tail_steps = static_cast<double>(longest) * ((M + 3) / 4);
    // The CPU, one core, on the first targets; every one of its scores checked.
    CanonicalForward cpu(p.forward);
    double cells = 0;
    std::vector<float> ref;
    const auto cpu_start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < targets.size() && cells < cpu_cells; ++i) {
      ref.push_back(cpu.score(targets[i].residues, targets[i].length));
      cells += static_cast<double>(targets[i].length) * M;
    }
    const double cpu_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - cpu_start)
            .count();
    int wrong = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      if (std::memcmp(&ref[i], &gpu[i], sizeof(float)) != 0) ++wrong;
    }
    const double gpu_gcups = total * M / ms / 1e6;
    const double cpu_gcups = cells / cpu_ms / 1e6;
    std::printf("%6d %10.2f %10.1f %10.2f %8lld %10.1f %10.2f %8.1f %5zu/%zu %9.2f %9.1f%s\n", M,
                ms, gpu_gcups, wall_ms - ms, static_cast<long long>(times.canonical_cpu_targets),
                cpu_ms, cpu_gcups, gpu_gcups / cpu_gcups, ref.size() - wrong, ref.size(), tail_ms,
                tail_ms * 1e6 / tail_steps, wrong ? "  MISMATCH" : "");
    std::fflush(stdout);
    if (wrong) return 1;
  }
  return 0;
}

int jit_bench(int argc, char** argv) {
  const double msv_residues = argc > 2 ? std::atof(argv[2]) : 1e9;
  const double exact_residues = argc > 3 ? std::atof(argv[3]) : 1e8;
  std::vector<int> lengths;
  for (int i = 4; i < argc; ++i) lengths.push_back(std::atoi(argv[i]));
  if (lengths.empty()) lengths = {50, 100, 260, 500, 1000, 2500};
  const Alphabet& abc = Alphabet::amino();
  const auto db = simd_test::read_sequences(simd_test::kMmseqsDatabase, abc, 1 << 30);
  double msv_total = 0, exact_total = 0;
  const std::vector<device::GpuTarget> msv_targets =
      replicate_database(db, msv_residues, msv_total);
  const std::vector<device::GpuTarget> exact_targets =
      replicate_database(db, exact_residues, exact_total);
  // A fresh disk cache, so that the first request compiles.
  const std::filesystem::path cache = std::filesystem::temp_directory_path() /
                                      ("duet-jit-bench-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(cache);
  ::setenv("DUET_JIT_CACHE", cache.c_str(), 1);
  std::printf("jit: %s; MSV on %.3g residues (%zu targets), exact-only on %.3g (%zu); cache %s\n",
              device::jit::nvrtc_version().c_str(), msv_total, msv_targets.size(), exact_total,
              exact_targets.size(), cache.c_str());
  std::printf("%6s %10s %9s %9s | %10s %10s %7s %9s %9s | %10s %10s %10s %10s %7s %8s\n", "M",
              "compile_s", "disk_ms", "mem_ms", "exact_st", "exact_jit", "x", "st_GCUPS",
              "jit_GCUPS", "MSV_st", "(exact)", "MSV_jit", "(exact)", "x", "checked");
  for (int M : lengths) {
    std::mt19937_64 rng(42 + M);  // the main mode's model for this length
    const HmmModel hmm = simd_test::random_hmm(rng, abc, M, simd_test::random_style(rng));
    const SearchProfile p = build_search_profile(hmm, Background::for_alphabet(abc));
    device::GpuKernelChoice jit_choice;
    jit_choice.jit = true;
    double origin_s[3] = {0, 0, 0};
    const char* expected[3] = {"compiled", "memory", "disk cache"};
    for (int k = 0; k < 3; ++k) {
      if (k == 2) device::jit::drop_memory_cache();  // as a new process
      device::HmmGpuEngine engine(0, p, jit_choice);
      const device::GpuJitInfo& info = engine.jit_info();
      if (!info.used || info.origin != expected[k]) {
        std::printf("M=%d: JIT %s (expected %s): %s\n", M, info.used ? "used" : "not used",
                    expected[k], info.used ? info.origin.c_str() : info.failure.c_str());
        return 1;
      }
      origin_s[k] = info.seconds;
    }
    const std::vector<device::GpuTarget> none;
    device::GpuKernelChoice exact_static;
    exact_static.msv_exact_only = true;
    device::GpuKernelChoice exact_jit = exact_static;
    exact_jit.jit = true;
    const device::HmmKernelTiming es =
        device::time_hmm_kernels(0, p, exact_static, exact_targets, none);
    const device::HmmKernelTiming ej =
        device::time_hmm_kernels(0, p, exact_jit, exact_targets, none);
    const device::HmmKernelTiming ms = device::time_hmm_kernels(0, p, {}, msv_targets, none);
    const device::HmmKernelTiming mj =
        device::time_hmm_kernels(0, p, jit_choice, msv_targets, none);
    const int checked = es.checked + ej.checked + ms.checked + mj.checked;
    const int wrong = es.wrong + ej.wrong + ms.wrong + mj.wrong;
    const bool jit_ran = ej.jit_used && mj.jit_used && !es.jit_used && !ms.jit_used;
    std::printf(
        "%6d %10.3f %9.2f %9.3f | %10.2f %10.2f %7.2f %9.1f %9.1f | %10.2f %10.2f %10.2f %10.2f "
        "%7.2f %5d/%d%s%s\n",
        M, origin_s[0], origin_s[2] * 1e3, origin_s[1] * 1e3, es.msv_exact_ms, ej.msv_exact_ms,
        es.msv_exact_ms / ej.msv_exact_ms, exact_total * M / es.msv_exact_ms / 1e6,
        exact_total * M / ej.msv_exact_ms / 1e6, ms.msv_ms, ms.msv_exact_ms, mj.msv_ms,
        mj.msv_exact_ms, ms.msv_ms / mj.msv_ms, checked - wrong, checked, wrong ? "  MISMATCH" : "",
        jit_ran ? "" : "  JIT NOT RUN");
    std::fflush(stdout);
    if (wrong || !jit_ran) return 1;
  }
  std::filesystem::remove_all(cache);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "jit") == 0) return jit_bench(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "forward") == 0) return forward_bench(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "canonical") == 0) return canonical_bench(argc, argv);
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

  // MSV = the fast kernel (HMMER's SSV: begin score held constant) plus the exact re-run of
  // the targets where the J state could matter; SSV = the fast kernel alone.
  std::printf("%6s %10s %10s %10s %10s %12s %10s %10s %8s %s\n", "M", "MSV_ms", "MSV_GCUPS",
              "SSV_ms", "SSV_GCUPS", "exact_tgts", "VIT_ms", "VIT_GCUPS", "checked", "kernels");
  for (const auto strategy : {device::GpuStrategy::warp_strip, device::GpuStrategy::warp_groups,
                              device::GpuStrategy::thread_per_target}) {
    // msv_residues 0: the Viterbi filter's warp kernels alone (the thread kernel is slow).
    if (msv_residues == 0 && strategy == device::GpuStrategy::thread_per_target) continue;
    for (int M : lengths) {
      std::mt19937_64 rng(42 + M);  // the same model for every strategy
      const HmmModel hmm = simd_test::random_hmm(rng, abc, M, simd_test::random_style(rng));
      const SearchProfile p = build_search_profile(hmm, Background::for_alphabet(abc));
      // MSV runs with the warp strategy only: with its default kernel (nodes per thread
      // chosen by length), then with 16 and with 32 nodes per thread (MSV only).
      const int g = device::msv_group_threads(M);
      const int auto_nodes = device::msv_nodes_per_thread(M, g);
      std::vector<int> node_choices = {0};
      if (strategy == device::GpuStrategy::warp_groups) node_choices = {0, 16, 32};
      for (int nodes : node_choices) {
        // The timing code of `duet tune` (device/hmmsearch/hmm_gpu_timing.hpp): warm-up, CUDA
        // events, sampled scores checked against the references.
        const std::vector<device::GpuTarget> none;
        const bool msv = strategy == device::GpuStrategy::warp_groups;
        const device::HmmKernelTiming t =
            device::time_hmm_kernels(0, p, {0, strategy, nodes}, msv ? msv_targets : none,
                                     nodes == 0 ? vit_targets : none, 50);
        const double ssv_ms = t.msv_ms - t.msv_exact_ms, all_ms = t.msv_ms, vit_ms = t.viterbi_ms;
        const long long exact = t.msv_exact_targets;
        const int checked = t.checked, wrong = t.wrong;
        const double msv_gcups = all_ms > 0 ? msv_total * M / all_ms / 1e6 : 0;
        const double ssv_gcups = ssv_ms > 0 ? msv_total * M / ssv_ms / 1e6 : 0;
        const double vit_gcups = vit_ms > 0 ? vit_total * M / vit_ms / 1e6 : 0;
        std::printf("%6d %10.2f %10.1f %10.2f %10.1f %12lld %10.2f %10.1f %5d/%d %s g%d n%d%s%s\n",
                    M, all_ms, msv_gcups, ssv_ms, ssv_gcups, exact, vit_ms, vit_gcups,
                    checked - wrong, checked, device::gpu_strategy_name(strategy).c_str(), g,
                    nodes == 0 ? auto_nodes : nodes, nodes == 0 ? " (default)" : "",
                    wrong ? "  MISMATCH" : "");
        std::fflush(stdout);
        if (wrong) return 1;
      }
    }
  }
  return 0;
}
