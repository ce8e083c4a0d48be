// PaPaRa scoring kernels (host_simd/papara, kPaparaVariants), one thread: G cells/s of each
// variant this CPU runs (cells = query length * columns per query and edge), on random
// profiles in the interleaved layout and random queries, through the many-query block
// form. Every variant's scores are checked against score_edges_scalar on the first
// edges; the scalar variant is timed on those edges only.
//
// Then the tracebacks (traceback_many of each variant): `tracebacks` random queries of
// query_length - 50 .. query_length residues, each at a random edge, ns per cell (cells =
// query length * columns), every Trace checked against papara::traceback's.
//
// Usage: papara_kernel_bench [columns=1500] [edges=10000] [query_length=150] [queries=8]
//                            [tracebacks=256]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/papara/papara_alignment.hpp"
#include "core/papara/papara_kernel.hpp"
#include "host_simd/papara/papara_simd.hpp"

namespace {

using duet::papara::ProfileView;
using duet::papara::Scoring;
using duet::simd::papara::kPaparaVariants;
using duet::simd::papara::PaparaVariant;

// A state set as profiles and queries mostly hold them: one base, now and then any set.
std::uint8_t random_state(std::mt19937_64& rng) {
  if (rng() % 8 != 0) return static_cast<std::uint8_t>(1u << (rng() % 4));
  return static_cast<std::uint8_t>(1 + rng() % 15);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int columns = argc > 1 ? std::atoi(argv[1]) : 1500;
  const int edges = argc > 2 ? std::atoi(argv[2]) : 10000;
  const int query_length = argc > 3 ? std::atoi(argv[3]) : 150;
  const int queries = argc > 4 ? std::atoi(argv[4]) : 8;
  const int tracebacks = argc > 5 ? std::atoi(argv[5]) : 256;
  if (columns < 1 || edges < 1 || query_length < 1 || queries < 1 || tracebacks < 1) {
    std::fprintf(stderr,
                 "usage: papara_kernel_bench [columns] [edges] [query_length] [queries] "
                 "[tracebacks]\n");
    return 2;
  }
  std::mt19937_64 rng(42);
  const int stride =
      (edges + duet::papara::kEdgeAlign - 1) / duet::papara::kEdgeAlign * duet::papara::kEdgeAlign;
  // Columns flagged as gaps in one edge in ten, as in the ancestral profiles of an alignment.
  std::vector<std::uint8_t> cells(static_cast<std::size_t>(columns) * stride);
  for (int j = 0; j < columns; ++j) {
    std::uint8_t* row = cells.data() + static_cast<std::size_t>(j) * stride;
    for (int e = 0; e < edges; ++e) {
      row[e] = rng() % 10 == 0 ? static_cast<std::uint8_t>(15 | duet::papara::kFlagBit)
                               : random_state(rng);
    }
    std::fill(row + edges, row + stride, row[edges - 1]);
  }
  const ProfileView profiles{columns, edges, stride, cells.data()};
  std::vector<std::uint8_t> residues(static_cast<std::size_t>(queries) * query_length);
  for (std::uint8_t& r : residues) r = random_state(rng);
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(queries) + 1);
  for (int q = 0; q <= queries; ++q) offsets[q] = static_cast<std::int64_t>(q) * query_length;
  const Scoring scoring;

  // The reference scores of the first edges.
  const int checked = std::min(edges, 256);
  std::vector<std::int16_t> expected(static_cast<std::size_t>(queries) * checked);
  for (int q = 0; q < queries; ++q) {
    duet::papara::score_edges_scalar(
        std::span<const std::uint8_t>(residues.data() + offsets[q], query_length), profiles, 0,
        checked, scoring, expected.data() + static_cast<std::size_t>(q) * checked);
  }

  std::printf("papara_kernel_bench: %d columns, %d edges, %d queries of %d residues, 1 thread\n",
              columns, edges, queries, query_length);
  std::printf("%-8s %6s %10s %10s\n", "variant", "lanes", "seconds", "Gcells/s");
  int failures = 0;
  for (const PaparaVariant& v : kPaparaVariants) {
    if (!duet::simd::cpu_supports(v.isa)) {
      std::printf("%-8s %6d %10s %10s\n", std::string(v.name).c_str(), v.lanes, "-", "no cpu");
      continue;
    }
    const int count = v.lanes == 1 ? checked : edges;
    std::vector<std::int16_t> out(static_cast<std::size_t>(queries) * count);
    double best = 1e30;
    for (int repeat = 0; repeat < 3; ++repeat) {  // the fastest of three: the machine is shared
      const auto start = std::chrono::steady_clock::now();
      v.block(residues.data(), offsets.data(), queries, profiles, 0, count, scoring, out.data());
      best = std::min(best, seconds_since(start));
    }
    for (int q = 0; q < queries; ++q) {
      for (int k = 0; k < checked; ++k) {
        if (out[static_cast<std::size_t>(q) * count + k] !=
            expected[static_cast<std::size_t>(q) * checked + k]) {
          ++failures;
        }
      }
    }
    const double computed = static_cast<double>(queries) * query_length * columns * count;
    std::printf("%-8s %6d %10.3f %10.2f\n", std::string(v.name).c_str(), v.lanes, best,
                computed / best * 1e-9);
  }
  if (failures > 0) {
    std::fprintf(stderr, "papara_kernel_bench: %d scores differ from score_edges_scalar\n",
                 failures);
    return 1;
  }

  // Tracebacks: each query at its own random edge.
  std::vector<std::vector<std::uint8_t>> traced(static_cast<std::size_t>(tracebacks));
  std::vector<int> traced_edges(static_cast<std::size_t>(tracebacks));
  const int shortest = std::max(1, query_length - 50);
  double traced_cells = 0;
  for (int q = 0; q < tracebacks; ++q) {
    traced[q].resize(static_cast<std::size_t>(shortest) +
                     rng() % static_cast<std::size_t>(query_length - shortest + 1));
    for (std::uint8_t& r : traced[q]) r = random_state(rng);
    traced_edges[q] = static_cast<int>(rng() % static_cast<std::uint64_t>(edges));
    traced_cells += static_cast<double>(traced[q].size()) * columns;
  }
  const std::vector<std::span<const std::uint8_t>> traced_spans(traced.begin(), traced.end());
  std::vector<duet::papara::Trace> expected_traces(traced.size());
  duet::simd::papara::traceback_many_scalar(profiles, scoring, traced_spans, traced_edges,
                                            expected_traces);
  std::printf("\ntracebacks: %d queries of %d..%d residues at random edges, 1 thread\n", tracebacks,
              shortest, query_length);
  std::printf("%-8s %6s %10s %10s\n", "variant", "lanes", "seconds", "ns/cell");
  for (const PaparaVariant& v : kPaparaVariants) {
    if (!duet::simd::cpu_supports(v.isa)) {
      std::printf("%-8s %6d %10s %10s\n", std::string(v.name).c_str(), v.traceback_lanes, "-",
                  "no cpu");
      continue;
    }
    std::vector<duet::papara::Trace> out(traced.size());
    double best = 1e30;
    for (int repeat = 0; repeat < 3; ++repeat) {
      const auto start = std::chrono::steady_clock::now();
      v.traceback(profiles, scoring, traced_spans, traced_edges, out);
      best = std::min(best, seconds_since(start));
    }
    for (std::size_t q = 0; q < out.size(); ++q) {
      if (out[q].score != expected_traces[q].score || out[q].codes != expected_traces[q].codes)
        ++failures;
    }
    std::printf("%-8s %6d %10.3f %10.3f\n", std::string(v.name).c_str(), v.traceback_lanes, best,
                best / traced_cells * 1e9);
  }
  if (failures > 0) {
    std::fprintf(stderr, "papara_kernel_bench: %d traces differ from papara::traceback\n",
                 failures);
    return 1;
  }
  return 0;
}
