// PaPaRa's GPU scoring kernels (label gpu): every kernel and strip width against the scalar
// reference (score_edges_scalar for DNA, score_edges_protein_scalar for protein), score for
// score, on random profiles, queries and scorings (seed printed; DUET_TEST_SEED replays),
// scorings that wrap 16 bits (DNA) and 32 bits (protein), a batch split into several
// launches, and bad arguments. Skipped where no CUDA device exists, except the choice of
// kernel (resolve_kernel), which needs none.
#include "device/papara/papara_gpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/papara/papara_kernel.hpp"
#include "device/gpu_info.hpp"
#include "test_support.hpp"

namespace duet::device::papara {
namespace {

using duet::papara::ProfileView;
using duet::papara::Scoring;

// Profiles in ProfileView's layout, owning their cells.
struct Profiles {
  int columns = 0, edges = 0, edge_stride = 0;
  std::vector<std::uint8_t> cells;
  ProfileView view() const { return {columns, edges, edge_stride, cells.data()}; }
};

// Random states 1..15 (mostly one base, as ancestral profiles are) and random flags; the
// padding edges repeat the last edge.
Profiles random_profiles(std::mt19937_64& rng, int columns, int edges, double flag_rate) {
  Profiles p;
  p.columns = columns;
  p.edges = edges;
  p.edge_stride =
      (edges + duet::papara::kEdgeAlign - 1) / duet::papara::kEdgeAlign * duet::papara::kEdgeAlign;
  p.cells.resize(static_cast<std::size_t>(columns) * static_cast<std::size_t>(p.edge_stride));
  std::uniform_real_distribution<double> unit(0, 1);
  for (int j = 0; j < columns; ++j) {
    std::uint8_t* row = p.cells.data() + static_cast<std::size_t>(j) * p.edge_stride;
    for (int e = 0; e < edges; ++e) {
      const auto state =
          static_cast<unsigned>(unit(rng) < 0.6 ? 1u << (rng() % 4) : 1 + rng() % 15);
      row[e] =
          static_cast<std::uint8_t>(state | (unit(rng) < flag_rate ? duet::papara::kFlagBit : 0));
    }
    for (int e = edges; e < p.edge_stride; ++e) row[e] = row[edges - 1];
  }
  return p;
}

// Queries, concatenated: mostly single bases, some IUPAC sets (1..15).
struct Queries {
  std::vector<std::uint8_t> residues;
  std::vector<std::int64_t> offsets{0};
  std::size_t size() const { return offsets.size() - 1; }
  std::span<const std::uint8_t> query(std::size_t q) const {
    return {residues.data() + offsets[q], static_cast<std::size_t>(offsets[q + 1] - offsets[q])};
  }
  void add(std::mt19937_64& rng, int length) {
    for (int i = 0; i < length; ++i) {
      residues.push_back(
          static_cast<std::uint8_t>(rng() % 8 != 0 ? 1u << (rng() % 4) : 1 + rng() % 15));
    }
    offsets.push_back(static_cast<std::int64_t>(residues.size()));
  }
};

// A valid scoring: gaps -6..0, match 1..5, match + match_cgap < 0; one in four extreme
// (magnitudes up to 30000, so that sums wrap 16 bits all the time).
Scoring random_scoring(std::mt19937_64& rng) {
  Scoring s;
  if (rng() % 4 == 0) {
    s.gap_open = static_cast<std::int16_t>(-static_cast<int>(rng() % 30000));
    s.gap_extend = static_cast<std::int16_t>(-static_cast<int>(rng() % 30000));
    s.match = static_cast<std::int16_t>(1 + rng() % 30000);
    s.match_cgap = static_cast<std::int16_t>(-s.match - 1 - static_cast<int>(rng() % 2000));
  } else {
    s.gap_open = static_cast<std::int16_t>(-static_cast<int>(rng() % 7));
    s.gap_extend = static_cast<std::int16_t>(-static_cast<int>(rng() % 7));
    s.match = static_cast<std::int16_t>(1 + rng() % 5);
    s.match_cgap = static_cast<std::int16_t>(-s.match - 1 - static_cast<int>(rng() % 5));
  }
  return s;
}

std::string describe(const Scoring& s) {
  return std::to_string(s.gap_open) + ":" + std::to_string(s.gap_extend) + ":" +
         std::to_string(s.match) + ":" + std::to_string(s.match_cgap);
}

// The scalar's scores of every query against [first_edge, first_edge + count), on every
// core (pieces of 8 edges of one query).
std::vector<std::int16_t> scalar_scores(const Profiles& p, const Queries& queries, int first_edge,
                                        int count, const Scoring& scoring) {
  std::vector<std::int16_t> scores(queries.size() * static_cast<std::size_t>(count));
  const std::size_t pieces_per_query = (static_cast<std::size_t>(count) + 7) / 8;
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t piece; (piece = next++) < queries.size() * pieces_per_query;) {
      const std::size_t q = piece / pieces_per_query;
      const int k = static_cast<int>(piece % pieces_per_query) * 8;
      duet::papara::score_edges_scalar(
          queries.query(q), p.view(), first_edge + k, std::min(8, count - k), scoring,
          scores.data() + q * static_cast<std::size_t>(count) + static_cast<std::size_t>(k));
    }
  };
  std::vector<std::thread> threads(std::max(1u, std::thread::hardware_concurrency()));
  for (auto& t : threads) t = std::thread(work);
  for (auto& t : threads) t.join();
  return scores;
}

// The GPU's scores of every query against [first_edge, first_edge + count) (output poisoned
// first) equal `reference`, or the scalar's when none is given.
void expect_scalar_scores(PaparaGpu& gpu, const Profiles& p, const Queries& queries, int first_edge,
                          int count, const Scoring& scoring,
                          const std::vector<std::int16_t>* reference = nullptr) {
  SCOPED_TRACE("columns " + std::to_string(p.columns) + ", edges [" + std::to_string(first_edge) +
               ", +" + std::to_string(count) + "), " + std::to_string(queries.size()) +
               " queries, scoring " + describe(scoring));
  std::vector<std::int16_t> out(queries.size() * static_cast<std::size_t>(count), 0x7b7b);
  gpu.score(queries.residues.data(), queries.offsets.data(), queries.size(), first_edge, count,
            scoring, out.data());
  const std::vector<std::int16_t> computed =
      reference != nullptr ? std::vector<std::int16_t>{}
                           : scalar_scores(p, queries, first_edge, count, scoring);
  const std::vector<std::int16_t>& expected = reference != nullptr ? *reference : computed;
  int mismatches = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] != expected[i] && ++mismatches <= 5) {
      const std::size_t q = i / static_cast<std::size_t>(count);
      ADD_FAILURE() << kernel_name(gpu.last_kernel()) << " width " << gpu.last_strip_width()
                    << ": query " << q << " (length " << queries.query(q).size() << ") edge "
                    << first_edge + static_cast<int>(i % static_cast<std::size_t>(count)) << ": "
                    << out[i] << " vs " << expected[i];
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// One entry of the kernel table: a kernel and a strip width.
struct Variant {
  Kernel kernel;
  int strip_width;
};

std::vector<Variant> all_variants() {
  std::vector<Variant> v;
  for (Kernel k : {Kernel::base_rows, Kernel::match_mask}) {
    for (int w : kStripWidths) v.push_back({k, w});
  }
  v.push_back({Kernel::automatic, 0});
  return v;
}

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  std::string name = kernel_name(info.param.kernel);
  std::replace(name.begin(), name.end(), '-', '_');
  return info.param.strip_width > 0 ? name + "_" + std::to_string(info.param.strip_width) : name;
}

class PaparaGpuKernel : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    if (::duet::device::list_gpus().gpus.empty()) GTEST_SKIP() << "no CUDA device";
  }
};

// Random profiles of 1..700 columns (multiples of every strip width and not), edge ranges of
// any size and start, and one batch of queries of mixed lengths 1..400.
TEST_P(PaparaGpuKernel, RandomInputsEqualScalar) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int columns_cases[] = {1 + static_cast<int>(rng() % 700), 1 + static_cast<int>(rng() % 30),
                               240, 241 + static_cast<int>(rng() % 19)};
  for (int columns : columns_cases) {
    const int edges = 1 + static_cast<int>(rng() % 200);
    const Profiles p = random_profiles(rng, columns, edges, static_cast<double>(rng() % 4) / 4.0);
    PaparaGpu gpu(0, p.view());
    gpu.set_kernel(GetParam().kernel, GetParam().strip_width);
    Queries queries;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int q = 0; q < n; ++q) {
      queries.add(rng, rng() % 3 == 0 ? 1 + static_cast<int>(rng() % 400)
                                      : 1 + static_cast<int>(rng() % 40));
    }
    int first_edge = static_cast<int>(rng() % static_cast<unsigned>(edges));
    if (first_edge % 2 == 0 && first_edge + 1 < edges) ++first_edge;  // odd where possible
    const int count = 1 + static_cast<int>(rng() % static_cast<unsigned>(edges - first_edge));
    expect_scalar_scores(gpu, p, queries, first_edge, count, random_scoring(rng));
    // The whole range, another scoring, on the same resident profiles.
    expect_scalar_scores(gpu, p, queries, 0, edges, random_scoring(rng));
  }
}

// Sizes at the edges: one column, one residue, one edge, the last edge alone, a strip
// exactly full.
TEST_P(PaparaGpuKernel, SmallSizes) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int columns : {1, 2, 7, 8, 12, 16, 20, 24, 25}) {
    const Profiles p = random_profiles(rng, columns, 65, 0.3);
    PaparaGpu gpu(0, p.view());
    gpu.set_kernel(GetParam().kernel, GetParam().strip_width);
    Queries queries;
    for (int length : {1, 2, 3, 17}) queries.add(rng, length);
    const Scoring scoring = random_scoring(rng);
    expect_scalar_scores(gpu, p, queries, 0, 1, scoring);
    expect_scalar_scores(gpu, p, queries, 64, 1, scoring);
    expect_scalar_scores(gpu, p, queries, 1, 64, scoring);
    expect_scalar_scores(gpu, p, queries, 0, 65, scoring);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, PaparaGpuKernel, ::testing::ValuesIn(all_variants()),
                         variant_name);

class PaparaGpuBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::duet::device::list_gpus().gpus.empty()) GTEST_SKIP() << "no CUDA device";
  }
};

// A long query against a long profile that mostly matches it: the diagonal alone is worth
// more than 32767 (a mismatch costs 0), so the int16 score has wrapped, in the scalar as on
// the GPU.
TEST_F(PaparaGpuBatch, LongAlignmentWraps) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Profiles p = random_profiles(rng, 7000, 8, 0);
  Queries queries;
  queries.add(rng, 6900);
  const Scoring scoring{-3, -1, 5, -6};
  int diagonal_matches = 6900;
  for (int e = 0; e < p.edge_stride; ++e) {
    for (int j = 0; j < 6900; ++j) {
      std::uint8_t& cell =
          p.cells[static_cast<std::size_t>(j) * p.edge_stride + static_cast<std::size_t>(e)];
      if (e >= p.edges) {
        cell = p.cells[static_cast<std::size_t>(j) * p.edge_stride +
                       static_cast<std::size_t>(p.edges - 1)];
      } else if (rng() % 50 != 0) {
        cell = queries.residues[static_cast<std::size_t>(j)];
      } else if (e == 0 && (cell & queries.residues[static_cast<std::size_t>(j)]) == 0) {
        --diagonal_matches;
      }
    }
  }
  ASSERT_GT(diagonal_matches * scoring.match, 32767);
  const std::vector<std::int16_t> reference = scalar_scores(p, queries, 0, p.edges, scoring);
  for (Kernel k : {Kernel::base_rows, Kernel::match_mask}) {
    PaparaGpu gpu(0, p.view());
    gpu.set_kernel(k);
    expect_scalar_scores(gpu, p, queries, 0, p.edges, scoring, &reference);
  }
  std::cout << "[ info     ] edge 0: diagonal worth " << diagonal_matches * scoring.match
            << ", int16 score " << reference[0] << "\n";
}

// A negative match: the base-rows kernel is not exact there, automatic takes the match mask
// (its two-step inc where the one-step one would carry between lanes), forcing base rows
// throws.
TEST_F(PaparaGpuBatch, NegativeMatch) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const Profiles p = random_profiles(rng, 333, 150, 0.3);
  Queries queries;
  for (int q = 0; q < 6; ++q) queries.add(rng, 1 + static_cast<int>(rng() % 200));
  PaparaGpu gpu(0, p.view());
  for (const Scoring& s :
       {Scoring{-3, -1, -2, -5}, Scoring{-3, -1, -20000, -20000}, Scoring{-4, -2, -3, 2}}) {
    gpu.set_kernel(Kernel::automatic);
    expect_scalar_scores(gpu, p, queries, 3, 140, s);
    EXPECT_EQ(gpu.last_kernel(), Kernel::match_mask);
    gpu.set_kernel(Kernel::base_rows);
    std::vector<std::int16_t> out(queries.size() * 140);
    EXPECT_THROW(gpu.score(queries.residues.data(), queries.offsets.data(), queries.size(), 3, 140,
                           s, out.data()),
                 std::invalid_argument);
  }
}

// A scratch budget too small for the long queries on every warp: they run first, on a few
// warps each taking many tasks, then the short ones on all warps.
TEST_F(PaparaGpuBatch, SeveralLaunches) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const Profiles p = random_profiles(rng, 157, 133, 0.2);
  Queries queries;
  for (int q = 0; q < 120; ++q) {
    queries.add(rng, q % 3 == 0 ? 1 : 1 + static_cast<int>(rng() % 300));
  }
  const Scoring scoring = random_scoring(rng);
  const std::vector<std::int16_t> reference = scalar_scores(p, queries, 1, 130, scoring);
  for (Kernel k : {Kernel::base_rows, Kernel::match_mask}) {
    PaparaGpu gpu(0, p.view(), std::size_t{1} << 20);
    gpu.set_kernel(k);
    expect_scalar_scores(gpu, p, queries, 1, 130, scoring, &reference);
    EXPECT_EQ(gpu.last_launches(), 2);
  }
}

// No columns: every score is the scalar's 0.
TEST_F(PaparaGpuBatch, NoColumns) {
  std::mt19937_64 rng(1);
  const Profiles p = random_profiles(rng, 0, 5, 0);
  PaparaGpu gpu(0, p.view());
  Queries queries;
  queries.add(rng, 10);
  expect_scalar_scores(gpu, p, queries, 0, 5, Scoring{});
}

TEST_F(PaparaGpuBatch, BadArguments) {
  std::mt19937_64 rng(1);
  const Profiles p = random_profiles(rng, 10, 70, 0.1);
  PaparaGpu gpu(0, p.view());
  std::vector<std::int16_t> out(1000);
  Queries good;
  good.add(rng, 5);
  EXPECT_THROW(
      gpu.score(good.residues.data(), good.offsets.data(), 1, 60, 11, Scoring{}, out.data()),
      std::invalid_argument);
  EXPECT_THROW(
      gpu.score(good.residues.data(), good.offsets.data(), 1, -1, 2, Scoring{}, out.data()),
      std::invalid_argument);
  Queries zero = good;
  zero.residues[2] = 0;
  EXPECT_THROW(
      gpu.score(zero.residues.data(), zero.offsets.data(), 1, 0, 70, Scoring{}, out.data()),
      std::invalid_argument);
  Queries empty = good;
  empty.offsets.push_back(empty.offsets.back());
  EXPECT_THROW(
      gpu.score(empty.residues.data(), empty.offsets.data(), 2, 0, 70, Scoring{}, out.data()),
      std::invalid_argument);
  EXPECT_THROW(gpu.set_kernel(Kernel::base_rows, 13), std::invalid_argument);
  ProfileView bad = p.view();
  bad.edge_stride = 65;
  EXPECT_THROW(PaparaGpu(0, bad), std::invalid_argument);
}

// ---- protein ----

// Protein profiles in ProfileView's layout (one 32-bit word per cell), owning their words.
struct ProteinProfiles {
  int columns = 0, edges = 0, edge_stride = 0;
  std::vector<std::uint32_t> cells;
  ProfileView view() const {
    return {columns, edges, edge_stride, nullptr, cells.data(), duet::papara::Alphabet::protein};
  }
};

// Random 20-bit state sets (mostly one amino acid, as ancestral profiles are; some sets of
// several, and now and then bits above the flag, which every kernel ignores) and random
// flags; the padding edges repeat the last edge.
ProteinProfiles random_protein_profiles(std::mt19937_64& rng, int columns, int edges,
                                        double flag_rate) {
  ProteinProfiles p;
  p.columns = columns;
  p.edges = edges;
  p.edge_stride =
      (edges + duet::papara::kEdgeAlign - 1) / duet::papara::kEdgeAlign * duet::papara::kEdgeAlign;
  p.cells.resize(static_cast<std::size_t>(columns) * static_cast<std::size_t>(p.edge_stride));
  std::uniform_real_distribution<double> unit(0, 1);
  for (int j = 0; j < columns; ++j) {
    std::uint32_t* row = p.cells.data() + static_cast<std::size_t>(j) * p.edge_stride;
    for (int e = 0; e < edges; ++e) {
      std::uint32_t word =
          unit(rng) < 0.7 ? 1u << (rng() % 20)
                          : static_cast<std::uint32_t>(rng()) & duet::papara::kProteinStateMask;
      if (unit(rng) < flag_rate) word |= duet::papara::kProteinFlagBit;
      if (rng() % 16 == 0) word |= static_cast<std::uint32_t>(rng()) << 21;
      row[e] = word;
    }
    for (int e = edges; e < p.edge_stride; ++e) row[e] = row[edges - 1];
  }
  return p;
}

// Protein queries: amino acids 0..19.
void add_protein_query(Queries& queries, std::mt19937_64& rng, int length) {
  for (int i = 0; i < length; ++i)
    queries.residues.push_back(static_cast<std::uint8_t>(rng() % 20));
  queries.offsets.push_back(static_cast<std::int64_t>(queries.residues.size()));
}

// score_edges_protein_scalar's scores of every query against [first_edge, first_edge + count),
// on every core (pieces of 8 edges of one query).
std::vector<std::int32_t> protein_scalar_scores(const ProteinProfiles& p, const Queries& queries,
                                                int first_edge, int count, const Scoring& scoring) {
  std::vector<std::int32_t> scores(queries.size() * static_cast<std::size_t>(count));
  const std::size_t pieces_per_query = (static_cast<std::size_t>(count) + 7) / 8;
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t piece; (piece = next++) < queries.size() * pieces_per_query;) {
      const std::size_t q = piece / pieces_per_query;
      const int k = static_cast<int>(piece % pieces_per_query) * 8;
      duet::papara::score_edges_protein_scalar(
          queries.query(q), p.view(), first_edge + k, std::min(8, count - k), scoring,
          scores.data() + q * static_cast<std::size_t>(count) + static_cast<std::size_t>(k));
    }
  };
  std::vector<std::thread> threads(std::max(1u, std::thread::hardware_concurrency()));
  for (auto& t : threads) t = std::thread(work);
  for (auto& t : threads) t.join();
  return scores;
}

// As expect_scalar_scores, for protein.
void expect_protein_scalar_scores(PaparaGpu& gpu, const ProteinProfiles& p, const Queries& queries,
                                  int first_edge, int count, const Scoring& scoring,
                                  const std::vector<std::int32_t>* reference = nullptr) {
  SCOPED_TRACE("protein, columns " + std::to_string(p.columns) + ", edges [" +
               std::to_string(first_edge) + ", +" + std::to_string(count) + "), " +
               std::to_string(queries.size()) + " queries, scoring " + describe(scoring));
  std::vector<std::int32_t> out(queries.size() * static_cast<std::size_t>(count), 0x7b7b7b7b);
  gpu.score(queries.residues.data(), queries.offsets.data(), queries.size(), first_edge, count,
            scoring, out.data());
  const std::vector<std::int32_t> computed =
      reference != nullptr ? std::vector<std::int32_t>{}
                           : protein_scalar_scores(p, queries, first_edge, count, scoring);
  const std::vector<std::int32_t>& expected = reference != nullptr ? *reference : computed;
  int mismatches = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] != expected[i] && ++mismatches <= 5) {
      const std::size_t q = i / static_cast<std::size_t>(count);
      ADD_FAILURE() << kernel_name(gpu.last_kernel()) << " width " << gpu.last_strip_width()
                    << ": query " << q << " (length " << queries.query(q).size() << ") edge "
                    << first_edge + static_cast<int>(i % static_cast<std::size_t>(count)) << ": "
                    << out[i] << " vs " << expected[i];
    }
  }
  EXPECT_EQ(mismatches, 0);
}

std::vector<Variant> protein_variants() {
  std::vector<Variant> v;
  for (int w : kStripWidths) v.push_back({Kernel::protein, w});
  v.push_back({Kernel::automatic, 0});
  return v;
}

class PaparaGpuProteinKernel : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    if (::duet::device::list_gpus().gpus.empty()) GTEST_SKIP() << "no CUDA device";
  }
};

// As PaparaGpuKernel.RandomInputsEqualScalar on protein profiles: 1..700 columns, edge ranges
// of any size and start (more than one task of 32 edges per query), batches of queries of
// mixed lengths 1..400, and some long ones (up to 3000 residues).
TEST_P(PaparaGpuProteinKernel, RandomInputsEqualScalar) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int columns_cases[] = {1 + static_cast<int>(rng() % 700), 1 + static_cast<int>(rng() % 30),
                               240, 241 + static_cast<int>(rng() % 19)};
  for (int columns : columns_cases) {
    const int edges = 1 + static_cast<int>(rng() % 200);
    const ProteinProfiles p =
        random_protein_profiles(rng, columns, edges, static_cast<double>(rng() % 4) / 4.0);
    PaparaGpu gpu(0, p.view());
    EXPECT_TRUE(gpu.protein());
    gpu.set_kernel(GetParam().kernel, GetParam().strip_width);
    Queries queries;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int q = 0; q < n; ++q) {
      add_protein_query(
          queries, rng,
          rng() % 3 == 0 ? 1 + static_cast<int>(rng() % 400) : 1 + static_cast<int>(rng() % 40));
    }
    if (rng() % 2 == 0) add_protein_query(queries, rng, 1000 + static_cast<int>(rng() % 2000));
    int first_edge = static_cast<int>(rng() % static_cast<unsigned>(edges));
    if (first_edge % 2 == 0 && first_edge + 1 < edges) ++first_edge;  // odd where possible
    const int count = 1 + static_cast<int>(rng() % static_cast<unsigned>(edges - first_edge));
    expect_protein_scalar_scores(gpu, p, queries, first_edge, count, random_scoring(rng));
    EXPECT_EQ(gpu.last_kernel(), Kernel::protein);
    // The whole range, another scoring, on the same resident profiles.
    expect_protein_scalar_scores(gpu, p, queries, 0, edges, random_scoring(rng));
  }
}

// Sizes at the edges: one column, one residue, one edge, the last edge alone, a strip
// exactly full, 32 and 33 edges (one task of a warp, and one edge past it).
TEST_P(PaparaGpuProteinKernel, SmallSizes) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int columns : {1, 2, 7, 8, 12, 16, 20, 24, 25, 48}) {
    const ProteinProfiles p = random_protein_profiles(rng, columns, 65, 0.3);
    PaparaGpu gpu(0, p.view());
    gpu.set_kernel(GetParam().kernel, GetParam().strip_width);
    Queries queries;
    for (int length : {1, 2, 3, 17}) add_protein_query(queries, rng, length);
    const Scoring scoring = random_scoring(rng);
    expect_protein_scalar_scores(gpu, p, queries, 0, 1, scoring);
    expect_protein_scalar_scores(gpu, p, queries, 64, 1, scoring);
    expect_protein_scalar_scores(gpu, p, queries, 1, 64, scoring);
    expect_protein_scalar_scores(gpu, p, queries, 0, 32, scoring);
    expect_protein_scalar_scores(gpu, p, queries, 31, 33, scoring);
    expect_protein_scalar_scores(gpu, p, queries, 0, 65, scoring);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, PaparaGpuProteinKernel, ::testing::ValuesIn(protein_variants()),
                         variant_name);

// A query's own residues as most of a long profile, and the default scoring: the diagonal is
// worth far more than 32767, which int32 scores keep (no 16-bit wrapping in protein).
TEST_F(PaparaGpuBatch, ProteinLongAlignment) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  ProteinProfiles p = random_protein_profiles(rng, 7000, 40, 0.05);
  Queries queries;
  add_protein_query(queries, rng, 6900);
  add_protein_query(queries, rng, 50);
  for (int e = 0; e < p.edge_stride; ++e) {
    for (int j = 0; j < 6900; ++j) {
      if (e < p.edges && rng() % 50 == 0) continue;
      std::uint32_t& cell =
          p.cells[static_cast<std::size_t>(j) * p.edge_stride + static_cast<std::size_t>(e)];
      cell = e >= p.edges ? p.cells[static_cast<std::size_t>(j) * p.edge_stride +
                                    static_cast<std::size_t>(p.edges - 1)]
                          : 1u << queries.residues[static_cast<std::size_t>(j)];
    }
  }
  const Scoring scoring{-3, -1, 7, -8};
  const std::vector<std::int32_t> reference =
      protein_scalar_scores(p, queries, 0, p.edges, scoring);
  ASSERT_GT(reference[0], 32767);
  PaparaGpu gpu(0, p.view());
  expect_protein_scalar_scores(gpu, p, queries, 0, p.edges, scoring, &reference);
  std::cout << "[ info     ] edge 0: int32 score " << reference[0] << "\n";
}

// Positive gap scores and a query of 80,000 residues: U grows by 30000 a row, past 2^31, so
// the int32 sums wrap, in the scalar as on the GPU. The scratch holds so few warps' rows that
// the long query runs in a launch of its own.
TEST_F(PaparaGpuBatch, ProteinScoresWrap32Bits) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const ProteinProfiles p = random_protein_profiles(rng, 37, 40, 0.3);
  Queries queries;
  add_protein_query(queries, rng, 80000);
  // Short enough for every warp's rows within the budget: the second launch.
  for (int q = 0; q < 5; ++q) add_protein_query(queries, rng, 1 + static_cast<int>(rng() % 50));
  const Scoring scoring{30000, 30000, 5, -7};
  const std::vector<std::int32_t> reference =
      protein_scalar_scores(p, queries, 0, p.edges, scoring);
  for (int w : kStripWidths) {
    PaparaGpu gpu(0, p.view(), std::size_t{64} << 20);
    gpu.set_kernel(Kernel::protein, w);
    expect_protein_scalar_scores(gpu, p, queries, 0, p.edges, scoring, &reference);
    EXPECT_EQ(gpu.last_launches(), 2);
  }
  std::cout << "[ info     ] edge 0: wrapped int32 score " << reference[0] << "\n";
}

// A scratch budget too small for the long queries on every warp: two launches, as
// PaparaGpuBatch.SeveralLaunches, on protein profiles.
TEST_F(PaparaGpuBatch, ProteinSeveralLaunches) {
  const std::uint64_t seed = test::test_seed();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const ProteinProfiles p = random_protein_profiles(rng, 157, 133, 0.2);
  Queries queries;
  for (int q = 0; q < 120; ++q) {
    add_protein_query(queries, rng, q % 3 == 0 ? 1 : 1 + static_cast<int>(rng() % 300));
  }
  const Scoring scoring = random_scoring(rng);
  const std::vector<std::int32_t> reference = protein_scalar_scores(p, queries, 1, 130, scoring);
  PaparaGpu gpu(0, p.view(), std::size_t{1} << 20);
  expect_protein_scalar_scores(gpu, p, queries, 1, 130, scoring, &reference);
  EXPECT_EQ(gpu.last_launches(), 2);
}

// No columns: every score is the scalar's 0.
TEST_F(PaparaGpuBatch, ProteinNoColumns) {
  std::mt19937_64 rng(1);
  const ProteinProfiles p = random_protein_profiles(rng, 0, 5, 0);
  PaparaGpu gpu(0, p.view());
  Queries queries;
  add_protein_query(queries, rng, 10);
  expect_protein_scalar_scores(gpu, p, queries, 0, 5, Scoring{});
}

// The score call of the other alphabet, a residue past 19, a DNA kernel forced on protein
// profiles and the protein kernel on DNA ones are refused.
TEST_F(PaparaGpuBatch, ProteinBadArguments) {
  std::mt19937_64 rng(1);
  const ProteinProfiles p = random_protein_profiles(rng, 10, 70, 0.1);
  PaparaGpu gpu(0, p.view());
  Queries good;
  add_protein_query(good, rng, 5);
  std::vector<std::int32_t> out(1000);
  std::vector<std::int16_t> dna_out(1000);
  EXPECT_THROW(
      gpu.score(good.residues.data(), good.offsets.data(), 1, 0, 70, Scoring{}, dna_out.data()),
      std::invalid_argument);
  Queries bad = good;
  bad.residues[2] = 20;
  EXPECT_THROW(gpu.score(bad.residues.data(), bad.offsets.data(), 1, 0, 70, Scoring{}, out.data()),
               std::invalid_argument);
  bad.residues[2] = 0;  // amino acid 0 (A) is a residue
  EXPECT_NO_THROW(
      gpu.score(bad.residues.data(), bad.offsets.data(), 1, 0, 70, Scoring{}, out.data()));
  gpu.set_kernel(Kernel::match_mask);
  EXPECT_THROW(
      gpu.score(good.residues.data(), good.offsets.data(), 1, 0, 70, Scoring{}, out.data()),
      std::invalid_argument);
  const Profiles dna = random_profiles(rng, 10, 70, 0.1);
  PaparaGpu dna_gpu(0, dna.view());
  EXPECT_FALSE(dna_gpu.protein());
  dna_gpu.set_kernel(Kernel::protein);
  Queries dna_query;
  dna_query.add(rng, 5);
  EXPECT_THROW(dna_gpu.score(dna_query.residues.data(), dna_query.offsets.data(), 1, 0, 70,
                             Scoring{}, dna_out.data()),
               std::invalid_argument);
  EXPECT_THROW(dna_gpu.score(dna_query.residues.data(), dna_query.offsets.data(), 1, 0, 70,
                             Scoring{}, out.data()),
               std::invalid_argument);
}

// The kernel each alphabet and scoring gets (no GPU needed): protein profiles take the
// protein kernel whatever the scoring, DNA ones base rows where exact, else the match mask;
// a kernel of the other alphabet is refused.
TEST(PaparaGpuKernelChoice, ByAlphabetAndScoring) {
  EXPECT_EQ(resolve_kernel(Kernel::automatic, true, 2, -3), Kernel::protein);
  EXPECT_EQ(resolve_kernel(Kernel::automatic, true, -2, -5), Kernel::protein);
  EXPECT_EQ(resolve_kernel(Kernel::protein, true, 2, -3), Kernel::protein);
  EXPECT_THROW(resolve_kernel(Kernel::base_rows, true, 2, -3), std::invalid_argument);
  EXPECT_THROW(resolve_kernel(Kernel::match_mask, true, 2, -3), std::invalid_argument);
  EXPECT_EQ(resolve_kernel(Kernel::automatic, false, 2, -3), Kernel::base_rows);
  EXPECT_EQ(resolve_kernel(Kernel::automatic, false, -2, -5), Kernel::match_mask);
  EXPECT_EQ(resolve_kernel(Kernel::automatic, false, 30000, 30000), Kernel::match_mask);
  EXPECT_EQ(resolve_kernel(Kernel::match_mask, false, 2, -3), Kernel::match_mask);
  EXPECT_THROW(resolve_kernel(Kernel::base_rows, false, -2, -5), std::invalid_argument);
  EXPECT_THROW(resolve_kernel(Kernel::protein, false, 2, -3), std::invalid_argument);
  EXPECT_STREQ(kernel_name(Kernel::protein), "protein");
}

}  // namespace
}  // namespace duet::device::papara

// `duet papara` on the GPU: the alignment and the chosen edges of every PaPaRa case, in both
// gap modes, GPU-only and hybrid (small blocks, so that the CPU and the GPU share each run),
// are the CPU-only run's.
namespace duet::papara {
namespace {

TEST(PaparaGpuCommand, GpuOnlyAndHybridMatchTheCpu) {
  if (::duet::device::list_gpus().gpus.empty()) GTEST_SKIP() << "no CUDA device";
  const std::string data = DUET_PAPARA_DATA;
  for (int c = 1; c <= 12; ++c) {
    char name[16];
    std::snprintf(name, sizeof name, "/case%02d", c);
    const std::string dir = data + name;
    for (const std::string mode : {"", "-c"}) {
      test::TempDir out;
      const std::string base = DUET_BINARY " papara -t " + dir + "/ref.tre -s " + dir +
                               "/ref.phy -q " + dir + "/queries.fa --quiet " + mode +
                               " --alignment " + out.file("");
      ASSERT_EQ(test::run_command(base + "cpu.txt --h5 " + out.file("cpu.h5") + " --no-gpu").status,
                0);
      const auto gpu =
          test::run_command(base + "gpu.txt --h5 " + out.file("gpu.h5") + " --gpu-only");
      ASSERT_EQ(gpu.status, 0) << gpu.output;
      const auto hybrid = test::run_command(base + "hybrid.txt --h5 " + out.file("hybrid.h5") +
                                            " --block-cells 20000 --gpu-batch-blocks 2");
      ASSERT_EQ(hybrid.status, 0) << hybrid.output;
      const std::string cpu = test::read_file(out.file("cpu.txt"));
      EXPECT_EQ(test::read_file(out.file("gpu.txt")), cpu) << dir << " " << mode;
      EXPECT_EQ(test::read_file(out.file("hybrid.txt")), cpu) << dir << " " << mode;
    }
  }
}

// Protein (-a) on the GPU: every protein case (13-15) in both gap modes, GPU-only (its
// /run gpu_kernel a GPU's name), hybrid (small blocks, so that the CPU and the GPU share the
// run) and CPU-only, writes PaPaRa 2.5's file.
TEST(PaparaGpuCommand, ProteinOnTheGpuWritesPaparasFile) {
  if (::duet::device::list_gpus().gpus.empty()) GTEST_SKIP() << "no CUDA device";
  const std::string data = DUET_PAPARA_DATA;
  for (int c = 13; c <= 15; ++c) {
    char name[16];
    std::snprintf(name, sizeof name, "/case%02d", c);
    const std::string dir = data + name;
    for (const std::string mode : {"", "-c"}) {
      test::TempDir out;
      const std::string expected =
          test::read_file(dir + (mode.empty() ? "/expected_default.phy" : "/expected_c.phy"));
      const std::string base = DUET_BINARY " papara -a -t " + dir + "/ref.tre -s " + dir +
                               "/ref.phy -q " + dir + "/queries.fa " + mode + " --alignment " +
                               out.file("");
      const auto gpu = test::run_command(base + "gpu.txt --h5 " + out.file("gpu.h5") + " -o " +
                                         out.file("gpu.log") + " --gpu-only");
      ASSERT_EQ(gpu.status, 0) << gpu.output;
      const std::string log = test::read_file(out.file("gpu.log"));
      EXPECT_NE(log.find("GPU GPU 0"), std::string::npos) << log;
      const auto hybrid =
          test::run_command(base + "hybrid.txt --quiet --h5 " + out.file("hybrid.h5") +
                            " --block-cells 20000 --gpu-batch-blocks 2");
      ASSERT_EQ(hybrid.status, 0) << hybrid.output;
      const auto cpu =
          test::run_command(base + "cpu.txt --quiet --h5 " + out.file("cpu.h5") + " --no-gpu");
      ASSERT_EQ(cpu.status, 0) << cpu.output;
      EXPECT_EQ(test::read_file(out.file("gpu.txt")), expected) << dir << " " << mode;
      EXPECT_EQ(test::read_file(out.file("hybrid.txt")), expected) << dir << " " << mode;
      EXPECT_EQ(test::read_file(out.file("cpu.txt")), expected) << dir << " " << mode;
    }
  }
}

}  // namespace
}  // namespace duet::papara
