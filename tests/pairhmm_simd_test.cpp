// Every pair-HMM CPU kernel of the variant table, and every study kernel of
// bench/pairhmm_study, against the canonical float sum (bit for bit) and, through
// finish_likelihood, against the double reference; ISAs this CPU lacks are skipped. Random
// tests print their seed; DUET_TEST_SEED replays one.
#include "host_simd/pairhmm/pairhmm_simd.hpp"

#include <gtest/gtest.h>
#include <simde/x86/sse.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/error.hpp"
#include "core/pairhmm/pairhmm_model.hpp"
#include "pairhmm_study/pairhmm_study.hpp"
#include "pairhmm_test_support.hpp"
#include "test_support.hpp"

namespace duet::simd::pairhmm {
namespace {

using duet::pairhmm::Input;
using duet::pairhmm::Model;
using duet::pairhmm::Pair;

class PairhmmKernel : public ::testing::TestWithParam<PairhmmVariant> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam().isa)) GTEST_SKIP() << "this CPU lacks " << GetParam().name;
  }
  // Kernel sums bit for bit equal to forward_sum<float>, for any order of pairs.
  static void expect_canonical(const Model& model, const std::vector<Pair>& pairs) {
    std::vector<float> sums(pairs.size(), -1.0f);
    GetParam().function(model, pairs, sums.data());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const float canonical = duet::pairhmm::forward_sum<float>(model, pairs[i]);
      EXPECT_EQ(std::memcmp(&sums[i], &canonical, sizeof(float)), 0)
          << GetParam().name << " pair " << i << " (" << pairs[i].rows() << "x"
          << pairs[i].columns() << "): " << sums[i] << " vs " << canonical;
    }
  }
};

TEST_P(PairhmmKernel, RandomPairsBitForBitAndNearTheReference) {
  std::mt19937_64 rng(test::test_seed());
  const Input input = test::random_input(rng, 50, 500, 5, 5);
  const Model model;
  const auto pairs = input.pair_list();
  std::vector<float> sums(pairs.size());
  GetParam().function(model, pairs, sums.data());
  int in_double = 0;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const float canonical = duet::pairhmm::forward_sum<float>(model, pairs[i]);
    ASSERT_EQ(std::memcmp(&sums[i], &canonical, sizeof(float)), 0) << "pair " << i;
    const auto l = duet::pairhmm::finish_likelihood(model, pairs[i], sums[i]);
    const double reference = duet::pairhmm::reference_log10_likelihood(model, pairs[i]);
    // The double pass is the reference's arithmetic (equal, -inf included when even double
    // underflows); the float pass is within 1e-4 in log10.
    if (l.in_double) {
      EXPECT_EQ(l.log10, reference) << "pair " << i;
    } else {
      EXPECT_NEAR(l.log10, reference, 1e-4) << "pair " << i;
    }
    in_double += l.in_double;
  }
  EXPECT_GT(in_double, 0) << "no pair needed the double fallback";
}

TEST_P(PairhmmKernel, GroupEdgesAndSizes) {
  std::mt19937_64 rng(test::test_seed());
  const Model model;
  // 1 .. 2W+1 pairs (partial groups), lengths 1..40 and 1..3 (edge sizes).
  for (int length : {3, 40}) {
    const Input input = test::random_input(rng, 12, length, 3, 3);
    std::vector<Pair> pairs = input.pair_list();
    for (std::size_t n = 1; n <= std::min<std::size_t>(pairs.size(), 2 * GetParam().lanes + 1);
         ++n) {
      expect_canonical(
          model, std::vector<Pair>(pairs.begin(), pairs.begin() + static_cast<std::ptrdiff_t>(n)));
    }
  }
}

TEST_P(PairhmmKernel, GklCasesAndDegenerateQualities) {
  const Input gkl = duet::pairhmm::read_input(test::kGklTestData);
  expect_canonical(Model{}, gkl.pair_list());
  // Insertion and deletion qualities 0..3 make match-to-match zero or negative: still the
  // canonical sums, whatever they are.
  std::mt19937_64 rng(test::test_seed());
  Input input = test::random_input(rng, 10, 60);
  for (auto& b : input.batches)
    for (auto& r : b.reads)
      for (std::size_t i = 0; i < r.bases.size(); ++i) {
        r.insertion_quality[i] = static_cast<std::uint8_t>(rng() % 4);
        r.deletion_quality[i] = static_cast<std::uint8_t>(rng() % 4);
      }
  expect_canonical(Model(duet::pairhmm::ModelOptions{0}), input.pair_list());
}

TEST_P(PairhmmKernel, ManyPairsInAnyOrder) {
  // More pairs than one chunk of the grouping (1024), of many sizes; then the same pairs
  // shuffled, so that the pairs of a read are no longer next to each other.
  std::mt19937_64 rng(test::test_seed());
  const Input input = test::random_input(rng, 400, 24, 4, 4);
  std::vector<Pair> pairs = input.pair_list();
  ASSERT_GT(pairs.size(), 1100u);
  expect_canonical(Model{}, pairs);
  std::shuffle(pairs.begin(), pairs.end(), rng);
  expect_canonical(Model{}, pairs);
}

TEST_P(PairhmmKernel, GroupedFormOnGroupedPairs) {
  // The grouped form on pairs grouped as the scheduler's blocks hold them: windows of
  // kGroupingPairs input pairs, each ordered by group_pairs, cut into runs of whole groups
  // (a block) at random; each run's sums bit for bit canonical and near the reference.
  std::mt19937_64 rng(test::test_seed());
  const Input input = test::random_input(rng, 200, 200, 5, 5);
  const Model model;
  const std::vector<Pair> pairs = input.pair_list();
  ASSERT_GT(pairs.size(), kGroupingPairs + 100);
  const auto lanes = static_cast<std::size_t>(GetParam().lanes);
  std::vector<Pair> grouped;
  std::vector<std::size_t> order, input_index;
  for (std::size_t start = 0; start < pairs.size(); start += kGroupingPairs) {
    const auto window =
        std::span<const Pair>(pairs).subspan(start, std::min(kGroupingPairs, pairs.size() - start));
    group_pairs(window, GetParam().lanes, order);
    // A permutation of the window: every pair once.
    std::vector<std::size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t k = 0; k < window.size(); ++k) ASSERT_EQ(sorted[k], k);
    for (std::size_t k : order) {
      grouped.push_back(window[k]);
      input_index.push_back(start + k);
    }
  }
  std::vector<float> sums(grouped.size(), -1.0f);
  for (std::size_t first = 0; first < grouped.size();) {
    const std::size_t n = std::min(grouped.size() - first, lanes * (1 + rng() % 80));
    GetParam().grouped(model, std::span<const Pair>(grouped).subspan(first, n),
                       sums.data() + first);
    first += n;
  }
  int in_double = 0;
  for (std::size_t i = 0; i < grouped.size(); ++i) {
    const float canonical = duet::pairhmm::forward_sum<float>(model, grouped[i]);
    ASSERT_EQ(std::memcmp(&sums[i], &canonical, sizeof(float)), 0)
        << "grouped pair " << i << " (input pair " << input_index[i] << ")";
    const auto l = duet::pairhmm::finish_likelihood(model, grouped[i], sums[i]);
    const double reference = duet::pairhmm::reference_log10_likelihood(model, grouped[i]);
    if (l.in_double) {
      EXPECT_EQ(l.log10, reference) << "input pair " << input_index[i];
    } else {
      EXPECT_NEAR(l.log10, reference, 1e-4) << "input pair " << input_index[i];
    }
    in_double += l.in_double;
  }
  EXPECT_GT(in_double, 0) << "no pair needed the double fallback";
}

TEST(PairhmmGrouping, FullGroupsOfOneSizeFirst) {
  // Sizes 5x7 (20 pairs) and 3x2 (12 pairs), interleaved: with 8 lanes, the larger size
  // first (two groups of it, then its last 4 pairs with 4 of the smaller), each size in
  // input order.
  std::mt19937_64 rng(test::test_seed());
  Input input = test::random_input(rng, 1, 10, 1, 1);
  duet::pairhmm::Read big = input.batches[0].reads[0], small = big;
  auto resize = [](duet::pairhmm::Read& r, std::size_t n) {
    for (auto* v :
         {&r.bases, &r.base_quality, &r.insertion_quality, &r.deletion_quality, &r.gcp_quality})
      v->resize(n, v->front());
  };
  resize(big, 5);
  resize(small, 3);
  duet::pairhmm::Haplotype wide{duet::pairhmm::Bytes(7, duet::pairhmm::kA)};
  duet::pairhmm::Haplotype narrow{duet::pairhmm::Bytes(2, duet::pairhmm::kC)};
  std::vector<Pair> pairs;
  for (int k = 0; k < 32; ++k)
    pairs.push_back(k % 8 < 5 ? Pair{&big, &wide} : Pair{&small, &narrow});
  std::vector<std::size_t> order;
  group_pairs(pairs, 8, order);
  ASSERT_EQ(order.size(), pairs.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    const bool expect_big = k < 20;
    EXPECT_EQ(pairs[order[k]].read == &big, expect_big) << "position " << k;
  }
  // Within a size, input order.
  for (std::size_t k = 1; k < order.size(); ++k)
    if (pairs[order[k]].read == pairs[order[k - 1]].read) {
      EXPECT_LT(order[k - 1], order[k]);
    }
}

// group_pairs as its header describes it, written plainly: sizes by cells (largest
// first, then fewer rows, then input order); a group starts with the largest size left and
// takes the size leaving the fewest idle cells (the first such) until it is full.
std::vector<std::size_t> plain_greedy_groups(const std::vector<Pair>& pairs, std::size_t lanes) {
  std::vector<std::size_t> sorted(pairs.size());
  for (std::size_t i = 0; i < sorted.size(); ++i) sorted[i] = i;
  std::sort(sorted.begin(), sorted.end(), [&](std::size_t a, std::size_t b) {
    if (pairs[a].cells() != pairs[b].cells()) return pairs[a].cells() > pairs[b].cells();
    if (pairs[a].rows() != pairs[b].rows()) return pairs[a].rows() < pairs[b].rows();
    return a < b;
  });
  std::vector<std::vector<std::size_t>> sizes;  // pairs left of each size, in sorted order
  for (std::size_t i : sorted) {
    if (sizes.empty() || pairs[i].rows() != pairs[sizes.back().front()].rows() ||
        pairs[i].columns() != pairs[sizes.back().front()].columns())
      sizes.emplace_back();
    sizes.back().push_back(i);
  }
  std::vector<std::size_t> order;
  while (order.size() < pairs.size()) {
    std::size_t take = 0;
    while (sizes[take].empty()) ++take;
    std::int64_t R = 0, C = 0;
    std::size_t filled = 0;
    while (true) {
      auto& left = sizes[take];
      const std::size_t k = std::min(lanes - filled, left.size());
      order.insert(order.end(), left.begin(), left.begin() + static_cast<std::ptrdiff_t>(k));
      left.erase(left.begin(), left.begin() + static_cast<std::ptrdiff_t>(k));
      filled += k;
      const Pair& p = pairs[order.back()];
      R = std::max<std::int64_t>(R, p.rows());
      C = std::max<std::int64_t>(C, p.columns());
      if (filled == lanes || order.size() == pairs.size()) break;
      std::int64_t best = -1;
      for (std::size_t s = 0; s < sizes.size(); ++s) {
        if (sizes[s].empty()) continue;
        const Pair& q = pairs[sizes[s].front()];
        const std::int64_t idle =
            std::max<std::int64_t>(R, q.rows()) * std::max<std::int64_t>(C, q.columns()) -
            q.cells();
        if (best < 0 || idle < best) {
          best = idle;
          take = s;
        }
      }
    }
  }
  return order;
}

TEST(PairhmmGrouping, SameGroupsAsThePlainGreedy) {
  std::mt19937_64 rng(test::test_seed());
  for (int round = 0; round < 20; ++round) {
    const int max_length = round % 3 == 0 ? 6 : round % 3 == 1 ? 40 : 300;
    const Input input = test::random_input(rng, 1 + static_cast<int>(rng() % 60), max_length, 6, 6);
    const std::vector<Pair> pairs = input.pair_list();
    for (std::size_t lanes : {1u, 4u, 8u, 16u}) {
      std::vector<std::size_t> order;
      group_pairs(pairs, static_cast<int>(lanes), order);
      EXPECT_EQ(order, plain_greedy_groups(pairs, lanes))
          << "round " << round << ", " << pairs.size() << " pairs, " << lanes << " lanes";
    }
  }
}

TEST_P(PairhmmKernel, EveryFourBitBaseCode) {
  // The emission keys cover codes 0..15 (a match: the codes share a bit), not only the
  // reader's A, C, G, T and N.
  std::mt19937_64 rng(test::test_seed());
  Input input = test::random_input(rng, 30, 50);
  for (auto& b : input.batches) {
    for (auto& r : b.reads)
      for (auto& x : r.bases) x = static_cast<std::uint8_t>(rng() % 16);
    for (auto& h : b.haplotypes)
      for (auto& x : h.bases) x = static_cast<std::uint8_t>(rng() % 16);
  }
  expect_canonical(Model{}, input.pair_list());
}

TEST_P(PairhmmKernel, RefusesBaseCodesAbove15) {
  if (GetParam().isa == simd::Isa::scalar) GTEST_SKIP() << "the scalar kernel takes any code";
  std::mt19937_64 rng(test::test_seed());
  Input input = test::random_input(rng, 1, 10, 1, 1);
  input.batches[0].haplotypes[0].bases[0] = 16;
  const auto pairs = input.pair_list();
  std::vector<float> sums(pairs.size());
  EXPECT_THROW(GetParam().function(Model{}, pairs, sums.data()), std::invalid_argument);
}

TEST_P(PairhmmKernel, LeavesTheFloatingPointModeAsFound) {
  // The control bits of MXCSR (rounding, flush to zero, masks); the low six bits are
  // sticky exception flags that any arithmetic sets.
  const auto control = [] { return simde_mm_getcsr() & ~0x3Fu; };
  const unsigned before = control();
  const Input gkl = duet::pairhmm::read_input(test::kGklTestData);
  std::vector<float> sums(static_cast<std::size_t>(gkl.pairs()));
  GetParam().function(Model{}, gkl.pair_list(), sums.data());
  EXPECT_EQ(control(), before);
}

std::string test_name(const ::testing::TestParamInfo<PairhmmVariant>& variant) {
  std::string name(variant.param.name);  // avx2-skewed: avx2_skewed
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::vector<PairhmmVariant> study_kernels() {
  std::vector<PairhmmVariant> kernels;
  for (const PairhmmStudy& study : kPairhmmStudies) kernels.push_back(study.kernel);
  return kernels;
}

INSTANTIATE_TEST_SUITE_P(Variants, PairhmmKernel, ::testing::ValuesIn(kPairhmmVariants), test_name);
INSTANTIATE_TEST_SUITE_P(Studies, PairhmmKernel, ::testing::ValuesIn(study_kernels()), test_name);

TEST(PairhmmDispatch, BestVariantAndNames) {
  EXPECT_TRUE(cpu_supports(best_pairhmm_variant().isa));
  EXPECT_EQ(&pairhmm_variant("auto"), &best_pairhmm_variant());
  EXPECT_EQ(pairhmm_variant("scalar").lanes, 1);
  EXPECT_THROW(pairhmm_variant("sse2"), duet::UsageError);
  // The study kernels are no variants of the dispatcher: "auto" never picks one, nor does
  // --isa name one.
  for (const PairhmmStudy& study : kPairhmmStudies)
    EXPECT_THROW(pairhmm_variant(study.kernel.name), duet::UsageError) << study.kernel.name;
}

}  // namespace
}  // namespace duet::simd::pairhmm
