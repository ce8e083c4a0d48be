// The MSV stage's gate (core/hmmsearch/msv_gate.hpp and msv_pass_bits in cascade.hpp), the
// test a GPU applies to every (model, target) pair, against the host's own decision
// (decide_after_msv) at and around its boundary.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/alphabet.hpp"
#include "core/hmmsearch/cascade.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/length_terms.hpp"
#include "core/hmmsearch/msv_gate.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"
#include "core/hmmsearch/statistics.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

// The host's decision on a target of length L whose MSV filter ended on J value xJ.
bool host_passes(const SearchProfile& sp, const CascadeSettings& settings, int L, int xJ) {
  FilterScore msv{msv_nats_of_xj(xJ, sp.msv.tjb(L), sp.msv.base, sp.msv.scale), false};
  TargetScores out;
  return decide_after_msv(sp, settings, L, msv, out) != NextStage::none;
}

SearchProfile tutorial_profile(const char* name) {
  const HmmModel hmm =
      read_hmm_file(std::string("/usr/share/doc/hmmer/examples/tutorial/") + name + ".hmm")[0];
  return build_search_profile(hmm, Background::for_alphabet(Alphabet::amino()));
}

// The SSV floor as a J value is ssv_decision's on the begin score's cell (128), for random
// byte constants of a model and N->B costs, where it applies and where it does not.
TEST(MsvGate, FloorIsSsvDecisionOnTheBeginScore) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  MsvScores msv;
  msv.scale = static_cast<float>(3.0 / kLog2);
  int with_floor = 0;
  for (int trial = 0; trial < 200000; ++trial) {
    msv.base = static_cast<std::uint8_t>(trial % 2 == 0 ? 190 : 100 + rng() % 150);
    msv.bias = static_cast<std::uint8_t>(rng() % 140);
    msv.tbm = static_cast<std::uint8_t>(rng() % 80);
    msv.tec = static_cast<std::uint8_t>(rng() % 40);
    const int tjb = static_cast<int>(rng() % 80);
    FilterScore floor;
    const bool applies = tjb + msv.tbm + msv.tec + msv.bias < 127 &&
                         ssv_decision(msv, tjb, 128, floor) && !floor.overflow;
    const int xJ = msv_floor_xj(tjb, msv.base, msv.tbm, msv.tec, msv.bias);
    ASSERT_EQ(xJ != kNoMsvFloor, applies)
        << "seed " << seed << " base " << int{msv.base} << " bias " << int{msv.bias} << " tbm "
        << int{msv.tbm} << " tec " << int{msv.tec} << " tjb " << tjb;
    if (!applies) continue;
    ++with_floor;
    ASSERT_EQ(msv_nats_of_xj(xJ, tjb, msv.base, msv.scale), floor.nats);
  }
  EXPECT_GT(with_floor, 1000);
}

// Every J value 0..255 at every length 1..700 and random longer ones, for the tutorial
// models with HMMER's F1, others, and F1 set to the exact P-value of one pair (so that
// pair's score is on the boundary) and to the double just below it: the gate passes a pair
// exactly where decide_after_msv does. Also the pass bits themselves: the boundary float
// passes, the 2,000 floats below it fail.
TEST(MsvGate, DecidesEveryPairAsTheCascade) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  std::vector<int> lengths;
  for (int L = 1; L <= 700; ++L) lengths.push_back(L);
  for (int r = 0; r < 60; ++r) lengths.push_back(701 + static_cast<int>(rng() % 100000));
  for (const char* name : {"globins4", "fn3", "Pkinase"}) {
    const SearchProfile sp = tutorial_profile(name);
    std::vector<double> thresholds = {0.02, 1e-4, 0.3, 1.0, 0.0};
    for (int r = 0; r < 2; ++r) {
      // A pair's own P-value, and the double below it: that pair sits on the boundary.
      const int L = lengths[rng() % lengths.size()];
      const int xJ = 100 + static_cast<int>(rng() % 120);
      const float bits = msv_sequence_bits(
          msv_nats_of_xj(xJ, sp.msv.tjb(L), sp.msv.base, sp.msv.scale), null_score(L));
      const double P = gumbel_survival(bits, sp.msv_mu, sp.msv_lambda);
      thresholds.push_back(P);
      thresholds.push_back(std::nextafter(P, 0.0));
    }
    for (const double F1 : thresholds) {
      CascadeSettings settings;
      settings.F1 = F1;
      const MsvGate g = msv_gate_of(sp.msv, msv_pass_bits(sp, settings));
      const std::string what =
          std::string(name) + " F1 " + std::to_string(F1) + " seed " + std::to_string(seed);
      int passed = 0, failed = 0;
      for (const int L : lengths) {
        const int tjb = sp.msv.tjb(L);
        const float null_nats = null_score(L);
        for (int xJ = 0; xJ <= 255; ++xJ) {
          const bool want = host_passes(sp, settings, L, xJ);
          ASSERT_EQ(msv_gate_passes(g, false, xJ, tjb, null_nats), want)
              << what << " L " << L << " xJ " << xJ;
          (want ? passed : failed) += 1;
        }
        ASSERT_TRUE(msv_gate_passes(g, true, 0, tjb, null_nats)) << "an overflow passes";
      }
      if (F1 == 0.02) {
        EXPECT_GT(passed, 0) << what;
      }
      if (F1 < 1.0) {
        EXPECT_GT(failed, 0) << what;
      }
      if (!std::isfinite(g.min_bits)) continue;
      // The boundary float and its neighbours, through the stage's P-value test.
      double below = certain_msv_reject_below(sp, F1);
      const auto passes = [&](float x) {
        return !(x < below) && !(gumbel_survival(x, sp.msv_mu, sp.msv_lambda) > F1);
      };
      EXPECT_TRUE(passes(g.min_bits)) << what;
      float x = g.min_bits;
      for (int step = 0; step < 2000; ++step) {
        x = std::nextafter(x, -std::numeric_limits<float>::infinity());
        ASSERT_FALSE(passes(x)) << what << " " << step << " floats below";
      }
    }
  }
  // Every score passes with F1 = 1; none but an overflow with F1 below 0.
  const SearchProfile sp = tutorial_profile("fn3");
  CascadeSettings all;
  all.F1 = 1.0;
  EXPECT_EQ(msv_pass_bits(sp, all), -std::numeric_limits<float>::infinity());
  CascadeSettings none;
  none.F1 = -1.0;
  EXPECT_EQ(msv_pass_bits(sp, none), std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace duet
