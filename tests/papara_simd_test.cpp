// Every CPU SIMD variant of PaPaRa's scoring kernel (host_simd/papara, kPaparaVariants)
// against the scalar reference score_edges_scalar, exactly: random profiles, queries and
// scoring schemes (seed printed; DUET_TEST_SEED replays), edge ranges that end inside a
// vector or at the layout's end, the smallest inputs, scores that wrap around 16 bits, and
// the many-query block form. Every variant's traceback against papara::traceback, Trace
// for Trace: random inputs with queries of mixed lengths in one call, and inputs made of
// ties. The same for protein profiles (int32 lanes, 20-bit state sets) against
// score_edges_protein_scalar, including scores past 16 bits. Variants this CPU lacks are
// skipped.
#include "host_simd/papara/papara_simd.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/papara/papara_alignment.hpp"
#include "core/papara/papara_kernel.hpp"
#include "test_support.hpp"

namespace duet::simd::papara {

// Test names and failure messages show the variant by name.
void PrintTo(const PaparaVariant& variant, std::ostream* os) {
  *os << variant.name;
}

namespace {

using duet::papara::kEdgeAlign;
using duet::papara::kFlagBit;
using duet::papara::ProfileView;
using duet::papara::Scoring;

// Profiles of `edges` edges in the interleaved layout, padding edges repeating the last.
struct Profiles {
  int columns = 0, edges = 0, stride = 0;
  std::vector<std::uint8_t> cells;
  ProfileView view() const { return {columns, edges, stride, cells.data()}; }
};

// A state set 1..15: mostly one base (as most profile columns and queries are), else any.
std::uint8_t random_state(std::mt19937_64& rng) {
  if (std::uniform_int_distribution<int>(0, 3)(rng) != 0)
    return static_cast<std::uint8_t>(1 << std::uniform_int_distribution<int>(0, 3)(rng));
  return static_cast<std::uint8_t>(std::uniform_int_distribution<int>(1, 15)(rng));
}

// Random states; each column's gap flag set with probability flag_rate.
Profiles random_profiles(std::mt19937_64& rng, int columns, int edges, double flag_rate) {
  Profiles p;
  p.columns = columns;
  p.edges = edges;
  p.stride = (edges + kEdgeAlign - 1) / kEdgeAlign * kEdgeAlign;
  p.cells.resize(static_cast<std::size_t>(columns) * static_cast<std::size_t>(p.stride));
  std::bernoulli_distribution flag(flag_rate);
  for (int j = 0; j < columns; ++j) {
    std::uint8_t* row = p.cells.data() + static_cast<std::size_t>(j) * p.stride;
    for (int e = 0; e < edges; ++e)
      row[e] = static_cast<std::uint8_t>(random_state(rng) | (flag(rng) ? kFlagBit : 0));
    std::fill(row + edges, row + p.stride, row[edges - 1]);
  }
  return p;
}

std::vector<std::uint8_t> random_query(std::mt19937_64& rng, int length) {
  std::vector<std::uint8_t> q(static_cast<std::size_t>(length));
  for (std::uint8_t& r : q) r = random_state(rng);
  return q;
}

// gap_open and gap_extend in -6..0, match 1..5, match + match_cgap in -5..-1.
Scoring random_scoring(std::mt19937_64& rng) {
  auto uniform = [&rng](int lo, int hi) {
    return static_cast<std::int16_t>(std::uniform_int_distribution<int>(lo, hi)(rng));
  };
  Scoring s;
  s.gap_open = uniform(-6, 0);
  s.gap_extend = uniform(-6, 0);
  s.match = uniform(1, 5);
  s.match_cgap = static_cast<std::int16_t>(uniform(-5, -1) - s.match);
  return s;
}

std::string describe(const Scoring& s) {
  return "scoring " + std::to_string(s.gap_open) + ":" + std::to_string(s.gap_extend) + ":" +
         std::to_string(s.match) + ":" + std::to_string(s.match_cgap);
}

std::vector<std::int16_t> scalar_scores(std::span<const std::uint8_t> query, const Profiles& p,
                                        int first_edge, int count, const Scoring& scoring) {
  std::vector<std::int16_t> out(static_cast<std::size_t>(count));
  duet::papara::score_edges_scalar(query, p.view(), first_edge, count, scoring, out.data());
  return out;
}

std::vector<std::int16_t> variant_scores(const PaparaVariant& v,
                                         std::span<const std::uint8_t> query, const Profiles& p,
                                         int first_edge, int count, const Scoring& scoring) {
  // One more than asked, holding a canary: a kernel must write exactly `count` scores.
  std::vector<std::int16_t> out(static_cast<std::size_t>(count) + 1, 12345);
  v.function(query, p.view(), first_edge, count, scoring, out.data());
  EXPECT_EQ(out.back(), 12345) << v.name << " wrote past its last score";
  out.pop_back();
  return out;
}

template <class Score>
::testing::AssertionResult same_scores(const std::vector<Score>& expected,
                                       const std::vector<Score>& actual, int first_edge) {
  if (expected.size() != actual.size())
    return ::testing::AssertionFailure() << "sizes " << expected.size() << " != " << actual.size();
  for (std::size_t k = 0; k < expected.size(); ++k) {
    if (expected[k] != actual[k]) {
      return ::testing::AssertionFailure()
             << "edge " << first_edge + static_cast<int>(k) << ": scalar " << expected[k]
             << ", variant " << actual[k];
    }
  }
  return ::testing::AssertionSuccess();
}

class PaparaSimd : public ::testing::TestWithParam<PaparaVariant> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam().isa))
      GTEST_SKIP() << "this CPU lacks " << isa_name(GetParam().isa);
  }
};

TEST_P(PaparaSimd, MatchesScalarOnRandomInputs) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(test::test_seed());
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const double flag_rates[] = {0.0, 0.1, 0.5, 1.0};
  for (int round = 0; round < 60; ++round) {
    const int columns = round % 10 == 0 ? 1 : uniform(1, 700);
    // Edge counts around the vector widths and the layout's 64, and any up to 200.
    const int edges =
        round % 3 == 0 ? kEdgeAlign * uniform(1, 2) - uniform(0, 33) : uniform(1, 200);
    const Profiles p = random_profiles(rng, columns, edges, flag_rates[uniform(0, 3)]);
    const int first_edge = uniform(0, edges - 1);
    const int count = round % 4 == 0 ? edges - first_edge : uniform(1, edges - first_edge);
    const std::vector<std::uint8_t> query = random_query(rng, round % 7 == 0 ? 1 : uniform(1, 400));
    const Scoring scoring = random_scoring(rng);
    SCOPED_TRACE("round " + std::to_string(round) + ": " + std::to_string(columns) + " columns, " +
                 "edges [" + std::to_string(first_edge) + ", " +
                 std::to_string(first_edge + count) + ") of " + std::to_string(edges) +
                 ", query length " + std::to_string(query.size()) + ", " + describe(scoring));
    ASSERT_TRUE(same_scores(scalar_scores(query, p, first_edge, count, scoring),
                            variant_scores(v, query, p, first_edge, count, scoring), first_edge));
  }
}

// Ranges ending at the last edge of a layout whose stride leaves a group no padding edges
// to read (the kernel's group then starts earlier), and ranges of one edge.
TEST_P(PaparaSimd, EdgeRangesAtTheLayoutsEnd) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(test::test_seed());
  const std::vector<std::uint8_t> query = random_query(rng, 57);
  const Scoring scoring = random_scoring(rng);
  for (int edges : {1, 7, 31, 33, 64, 100, 128}) {
    const Profiles p = random_profiles(rng, 45, edges, 0.2);
    for (int first_edge : {0, 1, edges / 2, edges - 17, edges - 1}) {
      if (first_edge < 0 || first_edge >= edges) continue;
      for (int count : {edges - first_edge, 1}) {
        SCOPED_TRACE(std::to_string(edges) + " edges, first " + std::to_string(first_edge) +
                     ", count " + std::to_string(count));
        EXPECT_TRUE(same_scores(scalar_scores(query, p, first_edge, count, scoring),
                                variant_scores(v, query, p, first_edge, count, scoring),
                                first_edge));
      }
    }
  }
}

// One column and one residue: every profile byte (state 0..15, flag or not) against every
// query state; and a profile of no columns (score 0).
TEST_P(PaparaSimd, SmallestInputs) {
  const PaparaVariant& v = GetParam();
  Profiles p;
  p.columns = 1;
  p.edges = 32;
  p.stride = kEdgeAlign;
  p.cells.resize(kEdgeAlign);
  for (int e = 0; e < kEdgeAlign; ++e) p.cells[e] = static_cast<std::uint8_t>(std::min(e, 31));
  const Scoring scoring;
  for (std::uint8_t state = 1; state <= 15; ++state) {
    const std::vector<std::uint8_t> query{state};
    SCOPED_TRACE("query state " + std::to_string(state));
    EXPECT_TRUE(same_scores(scalar_scores(query, p, 0, 32, scoring),
                            variant_scores(v, query, p, 0, 32, scoring), 0));
  }
  Profiles none = p;
  none.columns = 0;
  const std::vector<std::uint8_t> query{1, 2, 4};
  EXPECT_TRUE(same_scores(scalar_scores(query, none, 0, 5, scoring),
                          variant_scores(v, query, none, 0, 5, scoring), 0));
}

// Scores past 32767. Edge 0 matches every residue in every column: without wrapping
// H(i, j) would be 5 * (min(i, j) + 1); at the last cell (6553, 6553) that is 32770, which
// wraps, so the cell takes its gap neighbours (32765 - 6), and the score is H(6553, 6552) =
// 32765 (saturating lanes would give 32767). Edges 1 and 2 mostly match, so their wraps
// come at other cells.
TEST_P(PaparaSimd, ScoresWrapAround) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(test::test_seed());
  const int length = 6554;
  Profiles p = random_profiles(rng, length, 3, 0.02);
  std::bernoulli_distribution keep(0.03);
  for (int j = 0; j < length; ++j) {
    std::uint8_t* row = p.cells.data() + static_cast<std::size_t>(j) * p.stride;
    for (int e = 0; e < p.stride; ++e) {
      if (e == 0 || !keep(rng)) row[e] = 15;
    }
  }
  const std::vector<std::uint8_t> query = random_query(rng, length);
  const Scoring scoring{-6, -6, 5, -6};
  const std::vector<std::int16_t> expected = scalar_scores(query, p, 0, 3, scoring);
  ASSERT_EQ(expected[0], 32765);
  EXPECT_TRUE(same_scores(expected, variant_scores(v, query, p, 0, 3, scoring), 0));
}

// The block form: many queries of many lengths at once, each query's row as the scalar
// kernel scores it alone.
TEST_P(PaparaSimd, BlockMatchesScalarPerQuery) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(test::test_seed());
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 8; ++round) {
    const int edges = uniform(1, 150);
    const Profiles p = random_profiles(rng, uniform(1, 300), edges, 0.2);
    const int queries = uniform(1, 12);
    std::vector<std::uint8_t> residues;
    std::vector<std::int64_t> offsets{0};
    for (int q = 0; q < queries; ++q) {
      const std::vector<std::uint8_t> query = random_query(rng, uniform(1, 400));
      residues.insert(residues.end(), query.begin(), query.end());
      offsets.push_back(static_cast<std::int64_t>(residues.size()));
    }
    const int first_edge = uniform(0, edges - 1);
    const int count = uniform(1, edges - first_edge);
    const Scoring scoring = random_scoring(rng);
    std::vector<std::int16_t> out(static_cast<std::size_t>(queries) * count, 12345);
    v.block(residues.data(), offsets.data(), queries, p.view(), first_edge, count, scoring,
            out.data());
    for (int q = 0; q < queries; ++q) {
      SCOPED_TRACE("round " + std::to_string(round) + ", query " + std::to_string(q) + " of " +
                   std::to_string(queries) + ", edges [" + std::to_string(first_edge) + ", " +
                   std::to_string(first_edge + count) + "), " + describe(scoring));
      const std::span<const std::uint8_t> query(
          residues.data() + offsets[q], static_cast<std::size_t>(offsets[q + 1] - offsets[q]));
      const std::vector<std::int16_t> row(out.begin() + q * count, out.begin() + (q + 1) * count);
      ASSERT_TRUE(
          same_scores(scalar_scores(query, p, first_edge, count, scoring), row, first_edge));
    }
  }
}

TEST_P(PaparaSimd, BlockRefusesAnEmptyQuery) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(1);
  const Profiles p = random_profiles(rng, 10, 4, 0.0);
  const std::vector<std::uint8_t> residues{1, 2};
  const std::vector<std::int64_t> offsets{0, 2, 2};
  std::vector<std::int16_t> out(8);
  EXPECT_THROW(v.block(residues.data(), offsets.data(), 2, p.view(), 0, 4, Scoring{}, out.data()),
               std::invalid_argument);
}

// ---- traceback ----

using duet::papara::Trace;

// Each query's Trace from the variant, in one call, against papara::traceback's.
::testing::AssertionResult same_traces(const PaparaVariant& v, const Profiles& p,
                                       const std::vector<std::vector<std::uint8_t>>& queries,
                                       const std::vector<int>& edges, const Scoring& scoring) {
  const std::vector<std::span<const std::uint8_t>> spans(queries.begin(), queries.end());
  std::vector<Trace> actual(queries.size());
  v.traceback(p.view(), scoring, spans, edges, actual);
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const Trace expected = duet::papara::traceback(queries[q], p.view(), edges[q], scoring);
    const Trace& got = actual[q];
    if (expected.score == got.score && expected.codes == got.codes) continue;
    const auto differ = std::mismatch(expected.codes.begin(), expected.codes.end(),
                                      got.codes.begin(), got.codes.end());
    return ::testing::AssertionFailure()
           << "query " << q << " of " << queries.size() << " (length " << queries[q].size()
           << ", edge " << edges[q] << "): scalar score " << expected.score << ", "
           << expected.codes.size() << " codes; " << v.name << " score " << got.score << ", "
           << got.codes.size() << " codes; first differing code at "
           << (differ.first - expected.codes.begin());
  }
  return ::testing::AssertionSuccess();
}

// Random profiles, edges, scorings and queries of lengths 1..400, mixed in one call, in
// numbers that are not multiples of the lanes.
TEST_P(PaparaSimd, TracebackMatchesScalarOnRandomInputs) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(test::test_seed());
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const double flag_rates[] = {0.0, 0.1, 0.5, 1.0};
  for (int round = 0; round < 16; ++round) {
    const int columns = round % 5 == 0 ? uniform(1, 3) : uniform(1, 700);
    const int edges = uniform(1, 200);
    const Profiles p = random_profiles(rng, columns, edges, flag_rates[uniform(0, 3)]);
    const int count = round == 1 ? 1 : uniform(2, 45);
    std::vector<std::vector<std::uint8_t>> queries;
    std::vector<int> query_edges;
    for (int q = 0; q < count; ++q) {
      queries.push_back(random_query(rng, uniform(0, 5) == 0 ? uniform(1, 3) : uniform(1, 400)));
      query_edges.push_back(uniform(0, edges - 1));
    }
    const Scoring scoring = random_scoring(rng);
    SCOPED_TRACE("round " + std::to_string(round) + ": " + std::to_string(columns) + " columns, " +
                 std::to_string(edges) + " edges, " + std::to_string(count) + " queries, " +
                 describe(scoring));
    ASSERT_TRUE(same_traces(v, p, queries, query_edges, scoring));
  }
}

// Ties everywhere: one state in every profile column and one in every residue (both 15,
// both A, or A against C), flags all set or none, gap costs equal or zero, so that the tie
// rules (extend only if strictly better; U, then L, then the diagonal; the first end cell)
// decide every choice.
TEST_P(PaparaSimd, TracebackMatchesScalarOnTies) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(test::test_seed());
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const Scoring scorings[] = {{0, 0, 1, -2},   {-1, -1, 1, -2}, {-2, 0, 2, -3},
                              {-3, -1, 2, -3}, {0, -1, 5, -6},  random_scoring(rng)};
  const std::pair<std::uint8_t, std::uint8_t> states[] = {{15, 15}, {1, 1}, {1, 2}};
  for (const auto& [state, residue] : states) {
    for (const bool flags : {true, false}) {
      for (const Scoring& scoring : scorings) {
        const int columns = uniform(1, 300), edges = uniform(1, 40);
        Profiles p = random_profiles(rng, columns, edges, 0.0);
        std::fill(p.cells.begin(), p.cells.end(),
                  static_cast<std::uint8_t>(state | (flags ? kFlagBit : 0)));
        std::vector<std::vector<std::uint8_t>> queries;
        std::vector<int> query_edges;
        for (int q = 0, count = uniform(1, 40); q < count; ++q) {
          queries.emplace_back(static_cast<std::size_t>(uniform(1, 350)), residue);
          query_edges.push_back(uniform(0, edges - 1));
        }
        SCOPED_TRACE("state " + std::to_string(state) + ", residue " + std::to_string(residue) +
                     (flags ? ", flagged" : "") + ", " + std::to_string(columns) + " columns, " +
                     describe(scoring));
        ASSERT_TRUE(same_traces(v, p, queries, query_edges, scoring));
      }
    }
  }
}

TEST_P(PaparaSimd, TracebackRefusesBadInputs) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(1);
  const Profiles p = random_profiles(rng, 10, 4, 0.0);
  const std::vector<std::uint8_t> query{1, 2};
  std::vector<std::span<const std::uint8_t>> queries{query, {}};
  std::vector<Trace> out(2);
  std::vector<int> edges{0, 1};
  EXPECT_THROW(v.traceback(p.view(), Scoring{}, queries, edges, out), std::invalid_argument);
  queries[1] = query;
  edges[1] = 4;
  EXPECT_THROW(v.traceback(p.view(), Scoring{}, queries, edges, out), std::invalid_argument);
  edges[1] = -1;
  EXPECT_THROW(v.traceback(p.view(), Scoring{}, queries, edges, out), std::invalid_argument);
  edges.pop_back();
  EXPECT_THROW(v.traceback(p.view(), Scoring{}, queries, edges, out), std::invalid_argument);
}

// ---- protein (-a) ----

using duet::papara::kProteinFlagBit;
using duet::papara::kProteinStateMask;

// Protein profiles in the interleaved layout (one word per cell), padding edges repeating
// the last.
struct ProteinProfiles {
  int columns = 0, edges = 0, stride = 0;
  std::vector<std::uint32_t> cells;
  ProfileView view() const {
    return {columns, edges, stride, nullptr, cells.data(), duet::papara::Alphabet::protein};
  }
};

// A 20-bit state set: mostly one amino acid, else two (as B and Z), the gap state, or any.
std::uint32_t random_protein_state(std::mt19937_64& rng) {
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  switch (uniform(0, 7)) {
    case 0:
      return (1u << uniform(0, 19)) | (1u << uniform(0, 19));
    case 1:
      return kProteinStateMask;
    case 2:
      return static_cast<std::uint32_t>(uniform(1, static_cast<int>(kProteinStateMask)));
    default:
      return 1u << uniform(0, 19);
  }
}

ProteinProfiles random_protein_profiles(std::mt19937_64& rng, int columns, int edges,
                                        double flag_rate) {
  ProteinProfiles p;
  p.columns = columns;
  p.edges = edges;
  p.stride = (edges + kEdgeAlign - 1) / kEdgeAlign * kEdgeAlign;
  p.cells.resize(static_cast<std::size_t>(columns) * static_cast<std::size_t>(p.stride));
  std::bernoulli_distribution flag(flag_rate);
  for (int j = 0; j < columns; ++j) {
    std::uint32_t* row = p.cells.data() + static_cast<std::size_t>(j) * p.stride;
    for (int e = 0; e < edges; ++e)
      row[e] = random_protein_state(rng) | (flag(rng) ? kProteinFlagBit : 0u);
    std::fill(row + edges, row + p.stride, row[edges - 1]);
  }
  return p;
}

// Amino acids 0..19.
std::vector<std::uint8_t> random_protein_query(std::mt19937_64& rng, int length) {
  std::vector<std::uint8_t> q(static_cast<std::size_t>(length));
  for (std::uint8_t& r : q)
    r = static_cast<std::uint8_t>(std::uniform_int_distribution<int>(0, 19)(rng));
  return q;
}

std::vector<std::int32_t> protein_scalar_scores(std::span<const std::uint8_t> query,
                                                const ProteinProfiles& p, int first_edge, int count,
                                                const Scoring& scoring) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(count));
  duet::papara::score_edges_protein_scalar(query, p.view(), first_edge, count, scoring, out.data());
  return out;
}

std::vector<std::int32_t> protein_variant_scores(const PaparaVariant& v,
                                                 std::span<const std::uint8_t> query,
                                                 const ProteinProfiles& p, int first_edge,
                                                 int count, const Scoring& scoring) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(count) + 1, 12345);
  v.protein_function(query, p.view(), first_edge, count, scoring, out.data());
  EXPECT_EQ(out.back(), 12345) << v.name << " wrote past its last score";
  out.pop_back();
  return out;
}

TEST_P(PaparaSimd, ProteinMatchesScalarOnRandomInputs) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(test::test_seed());
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const double flag_rates[] = {0.0, 0.1, 0.5, 1.0};
  for (int round = 0; round < 50; ++round) {
    const int columns = round % 10 == 0 ? 1 : uniform(1, 600);
    const int edges =
        round % 3 == 0 ? kEdgeAlign * uniform(1, 2) - uniform(0, 33) : uniform(1, 200);
    const ProteinProfiles p =
        random_protein_profiles(rng, columns, edges, flag_rates[uniform(0, 3)]);
    const int first_edge = uniform(0, edges - 1);
    const int count = round % 4 == 0 ? edges - first_edge : uniform(1, edges - first_edge);
    const std::vector<std::uint8_t> query =
        random_protein_query(rng, round % 7 == 0 ? 1 : uniform(1, 300));
    const Scoring scoring = random_scoring(rng);
    SCOPED_TRACE("round " + std::to_string(round) + ": " + std::to_string(columns) + " columns, " +
                 "edges [" + std::to_string(first_edge) + ", " +
                 std::to_string(first_edge + count) + ") of " + std::to_string(edges) +
                 ", query length " + std::to_string(query.size()) + ", " + describe(scoring));
    ASSERT_TRUE(same_scores(protein_scalar_scores(query, p, first_edge, count, scoring),
                            protein_variant_scores(v, query, p, first_edge, count, scoring),
                            first_edge));
  }
}

// Protein lanes are int32: edge 0 matches every residue in every column, and its score,
// 5 * 6554 = 32770, does not wrap as DNA's would (ScoresWrapAround).
TEST_P(PaparaSimd, ProteinScoresPast16Bits) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(test::test_seed());
  const int length = 6554;
  ProteinProfiles p = random_protein_profiles(rng, length, 3, 0.0);
  for (int j = 0; j < length; ++j)
    p.cells[static_cast<std::size_t>(j) * p.stride] = kProteinStateMask;
  const std::vector<std::uint8_t> query = random_protein_query(rng, length);
  const Scoring scoring{-6, -6, 5, -6};
  const std::vector<std::int32_t> expected = protein_scalar_scores(query, p, 0, 3, scoring);
  ASSERT_EQ(expected[0], 32770);
  EXPECT_TRUE(same_scores(expected, protein_variant_scores(v, query, p, 0, 3, scoring), 0));
}

TEST_P(PaparaSimd, ProteinBlockMatchesScalarPerQuery) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(test::test_seed());
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 8; ++round) {
    const int edges = uniform(1, 150);
    const ProteinProfiles p = random_protein_profiles(rng, uniform(1, 300), edges, 0.2);
    const int queries = uniform(1, 12);
    std::vector<std::uint8_t> residues;
    std::vector<std::int64_t> offsets{0};
    for (int q = 0; q < queries; ++q) {
      const std::vector<std::uint8_t> query = random_protein_query(rng, uniform(1, 300));
      residues.insert(residues.end(), query.begin(), query.end());
      offsets.push_back(static_cast<std::int64_t>(residues.size()));
    }
    const int first_edge = uniform(0, edges - 1);
    const int count = uniform(1, edges - first_edge);
    const Scoring scoring = random_scoring(rng);
    std::vector<std::int32_t> out(static_cast<std::size_t>(queries) * count, 12345);
    v.protein_block(residues.data(), offsets.data(), queries, p.view(), first_edge, count, scoring,
                    out.data());
    for (int q = 0; q < queries; ++q) {
      SCOPED_TRACE("round " + std::to_string(round) + ", query " + std::to_string(q) + " of " +
                   std::to_string(queries) + ", edges [" + std::to_string(first_edge) + ", " +
                   std::to_string(first_edge + count) + "), " + describe(scoring));
      const std::span<const std::uint8_t> query(
          residues.data() + offsets[q], static_cast<std::size_t>(offsets[q + 1] - offsets[q]));
      const std::vector<std::int32_t> row(out.begin() + q * count, out.begin() + (q + 1) * count);
      ASSERT_TRUE(same_scores(protein_scalar_scores(query, p, first_edge, count, scoring), row,
                              first_edge));
    }
  }
}

// A kernel given the other alphabet's profiles refuses them.
TEST_P(PaparaSimd, KernelsRefuseTheOtherAlphabet) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(1);
  const Profiles dna = random_profiles(rng, 10, 4, 0.0);
  const ProteinProfiles protein = random_protein_profiles(rng, 10, 4, 0.0);
  const std::vector<std::uint8_t> residues{1, 2};
  const std::vector<std::int64_t> offsets{0, 2};
  std::vector<std::int16_t> out16(4);
  std::vector<std::int32_t> out32(4);
  EXPECT_THROW(
      v.block(residues.data(), offsets.data(), 1, protein.view(), 0, 4, Scoring{}, out16.data()),
      std::invalid_argument);
  EXPECT_THROW(v.protein_block(residues.data(), offsets.data(), 1, dna.view(), 0, 4, Scoring{},
                               out32.data()),
               std::invalid_argument);
}

// Each protein query's Trace from the variant, in one call, against papara::traceback's.
::testing::AssertionResult same_protein_traces(
    const PaparaVariant& v, const ProteinProfiles& p,
    const std::vector<std::vector<std::uint8_t>>& queries, const std::vector<int>& edges,
    const Scoring& scoring) {
  const std::vector<std::span<const std::uint8_t>> spans(queries.begin(), queries.end());
  std::vector<Trace> actual(queries.size());
  v.traceback(p.view(), scoring, spans, edges, actual);
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const Trace expected = duet::papara::traceback(queries[q], p.view(), edges[q], scoring);
    if (expected.score == actual[q].score && expected.codes == actual[q].codes) continue;
    return ::testing::AssertionFailure()
           << "query " << q << " of " << queries.size() << " (length " << queries[q].size()
           << ", edge " << edges[q] << "): scalar score " << expected.score << ", " << v.name
           << " score " << actual[q].score;
  }
  return ::testing::AssertionSuccess();
}

TEST_P(PaparaSimd, ProteinTracebackMatchesScalarOnRandomInputs) {
  const PaparaVariant& v = GetParam();
  std::mt19937_64 rng(test::test_seed());
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const double flag_rates[] = {0.0, 0.1, 0.5, 1.0};
  for (int round = 0; round < 12; ++round) {
    const int columns = round % 5 == 0 ? uniform(1, 3) : uniform(1, 500);
    const int edges = uniform(1, 200);
    const ProteinProfiles p =
        random_protein_profiles(rng, columns, edges, flag_rates[uniform(0, 3)]);
    const int count = round == 1 ? 1 : uniform(2, 40);
    std::vector<std::vector<std::uint8_t>> queries;
    std::vector<int> query_edges;
    for (int q = 0; q < count; ++q) {
      queries.push_back(
          random_protein_query(rng, uniform(0, 5) == 0 ? uniform(1, 3) : uniform(1, 300)));
      query_edges.push_back(uniform(0, edges - 1));
    }
    const Scoring scoring = random_scoring(rng);
    SCOPED_TRACE("round " + std::to_string(round) + ": " + std::to_string(columns) + " columns, " +
                 std::to_string(edges) + " edges, " + std::to_string(count) + " queries, " +
                 describe(scoring));
    ASSERT_TRUE(same_protein_traces(v, p, queries, query_edges, scoring));
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, PaparaSimd, ::testing::ValuesIn(kPaparaVariants),
                         [](const ::testing::TestParamInfo<PaparaVariant>& param_info) {
                           std::string name(param_info.param.name);
                           std::erase(name, '.');
                           return name;
                         });

TEST(PaparaSimdDispatch, ChoosesTheWidestSupportedVariant) {
  const PaparaVariant& best = best_papara_variant();
  EXPECT_TRUE(cpu_supports(best.isa));
  for (const PaparaVariant& v : kPaparaVariants) {
    EXPECT_EQ(v.name, isa_name(v.isa));
    EXPECT_EQ(v.element_bits, 16);
    EXPECT_EQ(v.traceback_lanes, v.lanes == 1 ? 1 : v.lanes / 2);  // int32 queries, int16 edges
    EXPECT_EQ(v.protein_lanes, v.traceback_lanes);                 // int32 edges
    if (cpu_supports(v.isa)) {
      EXPECT_GE(best.lanes, v.lanes);
      EXPECT_EQ(&papara_variant(v.name), &v);
    } else {
      EXPECT_THROW(papara_variant(v.name), UsageError);
    }
  }
  EXPECT_EQ(&papara_variant("auto"), &best);
  EXPECT_THROW(papara_variant("sse2"), UsageError);
}

}  // namespace
}  // namespace duet::simd::papara
