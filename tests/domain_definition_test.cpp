// Unit tests of domain definition's pieces (core/hmmsearch/posterior_dp, domain_definition,
// hmmer_random). The whole against hmmsearch 3.3.2 is in e2e_hmmer_test.cpp.
#include "core/hmmsearch/domain_definition.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/hmmsearch/cascade.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/posterior_dp.hpp"
#include "core/hmmsearch/synthetic.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

const std::string kTutorial = "/usr/share/doc/hmmer/examples/tutorial/";

SearchProfile tutorial_profile(const std::string& name) {
  const std::vector<HmmModel> models = read_hmm_file(kTutorial + name + ".hmm");
  return build_search_profile(models.front(), Background::for_alphabet(*models.front().alphabet));
}

// Easel 0.48's esl_randomness_CreateFast(42) and esl_random, and esl_rnd_FChoose after
// esl_randomness_Init(r, 7), as printed by a program built against Easel's own
// esl_random.c outside this repository.
TEST(HmmerRandom, DrawsAsEaselsFastGenerator) {
  HmmerRandom r(42);
  EXPECT_DOUBLE_EQ(r.uniform(), 0.10076649952679873);
  EXPECT_DOUBLE_EQ(r.uniform(), 0.84135581669397652);
  EXPECT_DOUBLE_EQ(r.uniform(), 0.60490323649719357);
  EXPECT_DOUBLE_EQ(r.uniform(), 0.061641624895855784);
  EXPECT_DOUBLE_EQ(r.uniform(), 0.52538993209600449);
  r.reseed(7);
  const float p[3] = {0.2f, 0.5f, 0.3f};
  const int expected[10] = {1, 0, 1, 1, 1, 2, 0, 0, 0, 0};
  for (int e : expected) EXPECT_EQ(r.choose(p, 3), e);
  r.reseed(42);
  EXPECT_DOUBLE_EQ(r.uniform(), 0.10076649952679873) << "reseeding starts the draws again";
}

// The Forward's probabilities are HMMER's floats: MADE1's local entries into nodes 3 and 63
// as HMMER 3.3.2's optimised profile holds them (its striped B->M vector 2, lanes 0 and 3,
// printed by a build of HMMER 3.3.2 and Easel 0.48 outside this repository). The C
// library's expf of the same log scores gives 0.000313624187 and 0.000309372641.
TEST(PosteriorDp, ProbabilitiesAreHmmersFloats) {
  const SearchProfile p = tutorial_profile("MADE1");
  EXPECT_EQ(p.forward.bm[3], 0.000313624216f);
  EXPECT_EQ(p.forward.bm[63], 0.000309372612f);
  EXPECT_EQ(p.forward.bm[1], 0.000320021936f);  // the same in both
}

// Forward and Backward give one score; every residue is emitted by exactly one state, so
// each row's posteriors sum to 1; the parser's score is the full matrix's. Random targets
// around a model's emissions, multihit and unihit.
TEST(PosteriorDp, ForwardBackwardAgreeAndPosteriorsSumToOne) {
  const auto seed = static_cast<unsigned>(test::test_seed());
  std::mt19937 rng(seed);
  for (const char* name : {"globins4", "fn3", "Pkinase"}) {
    const SearchProfile p = tutorial_profile(name);
    const DpProfile dp(p.forward);
    for (int t = 0; t < 4; ++t) {
      std::uniform_int_distribution<int> length(1, 400), residue(0, p.alphabet->K() - 1);
      std::vector<Residue> dsq(length(rng));
      for (Residue& x : dsq) x = static_cast<Residue>(residue(rng));
      const int L = static_cast<int>(dsq.size());
      for (bool uni : {false, true}) {
        const std::string what = std::string(name) + " L=" + std::to_string(L) +
                                 (uni ? " unihit" : " multihit") + " seed " + std::to_string(seed);
        const SpecialMoves mv =
            uni ? SpecialMoves::unihit(L) : SpecialMoves::multihit(p.forward, L);
        DpMatrix fwd, bck, parser;
        fwd.reset(p.M, L, true);
        bck.reset(p.M, L, true);
        parser.reset(p.M, L, false);
        const float f = forward_dp(dp, mv, dsq.data(), L, fwd);
        const float b = backward_dp(dp, mv, dsq.data(), L, fwd, bck);
        EXPECT_EQ(forward_dp(dp, mv, dsq.data(), L, parser), f) << what;
        EXPECT_NEAR(f, b, 1e-4 * std::fabs(f) + 1e-3) << what;
        if (!uni) {
          // The same recursion in the same order as the canonical Forward: the same score.
          CanonicalForward canonical(p.forward);
          EXPECT_EQ(f, canonical.score(dsq.data(), L)) << what;
        }
        {
          // HMMER's order of the D->D paths: the same scores up to the last bits, and
          // posteriors that sum to 1 as well (below).
          DpMatrix hf, hb;
          hf.reset(p.M, L, true);
          hb.reset(p.M, L, true);
          const float hf_score = forward_dp(dp, mv, dsq.data(), L, hf, DeletePaths::passes);
          const float hb_score = backward_dp(dp, mv, dsq.data(), L, hf, hb, DeletePaths::passes);
          EXPECT_NEAR(hf_score, f, 1e-5 * std::fabs(f) + 1e-5) << what;
          EXPECT_NEAR(hb_score, b, 1e-5 * std::fabs(b) + 1e-5) << what;
          ASSERT_TRUE(decode_posteriors(mv, hf, hb, hb)) << what;
          for (int i = 1; i <= L; ++i) {
            double sum = hb.x(i, DpMatrix::kN) + hb.x(i, DpMatrix::kJ) + hb.x(i, DpMatrix::kC);
            for (int k = 1; k <= p.M; ++k) sum += hb.mrow(i)[hb.at(k)] + hb.irow(i)[hb.at(k)];
            ASSERT_NEAR(sum, 1.0, 2e-3) << what << " row " << i << ", HMMER's order";
          }
        }
        ASSERT_TRUE(decode_posteriors(mv, fwd, bck, bck)) << what;
        for (int i = 1; i <= L; ++i) {
          double sum = bck.x(i, DpMatrix::kN) + bck.x(i, DpMatrix::kJ) + bck.x(i, DpMatrix::kC);
          for (int k = 1; k <= p.M; ++k) sum += bck.mrow(i)[bck.at(k)] + bck.irow(i)[bck.at(k)];
          ASSERT_NEAR(sum, 1.0, 2e-3) << what << " row " << i;
        }
      }
    }
  }
}

// The canonical Forward's parser states (what the Forward filter keeps for domain
// definition) are forward_dp's special states (in the canonical order, DeletePaths::scan)
// bit for bit, rescaled rows included: random
// targets and the model's consensus repeated between random flanks.
TEST(PosteriorDp, ParserStatesAreTheCanonicalForwards) {
  const auto seed = static_cast<unsigned>(test::test_seed());
  std::mt19937 rng(seed);
  int rescaled = 0;
  for (const char* name : {"globins4", "fn3", "Pkinase"}) {
    const SearchProfile p = tutorial_profile(name);
    const DpProfile dp(p.forward);
    CanonicalForward canonical(p.forward);
    std::uniform_int_distribution<int> length(1, 400), residue(0, p.alphabet->K() - 1);
    for (int t = 0; t < 6; ++t) {
      std::vector<Residue> dsq(length(rng));
      for (Residue& x : dsq) x = static_cast<Residue>(residue(rng));
      if (t >= 3) {  // high-scoring: the consensus t - 2 times
        for (int copy = 0; copy < t - 2; ++copy)
          for (int k = 1; k <= p.M; ++k) dsq.push_back(p.alphabet->digitize(p.consensus[k]));
        for (int j = 0; j < 30; ++j) dsq.push_back(static_cast<Residue>(residue(rng)));
      }
      const int L = static_cast<int>(dsq.size());
      const std::string what =
          std::string(name) + " L=" + std::to_string(L) + " seed " + std::to_string(seed);
      DpMatrix parser;
      parser.reset(p.M, L, false);
      forward_dp(dp, SpecialMoves::multihit(p.forward, L), dsq.data(), L, parser);
      std::vector<float> states((static_cast<std::size_t>(L) + 1) * kParserStates, -1.0f);
      canonical.score(dsq.data(), L, states.data());
      for (int i = 0; i <= L; ++i) {
        for (int x = 0; x < kParserStates; ++x) {
          const float want = parser.x(i, static_cast<DpMatrix::Special>(x));
          const float got = states[static_cast<std::size_t>(i) * kParserStates + x];
          ASSERT_EQ(std::memcmp(&want, &got, sizeof want), 0)
              << what << " row " << i << " state " << x << ": " << got << " against " << want;
        }
        if (i > 0 && parser.x(i, DpMatrix::kScale) != 1.0f) ++rescaled;
      }
    }
  }
  EXPECT_GT(rescaled, 0) << "no row rescaled: the test did not reach the rescaling";
}

// The optimal-accuracy trace is a path: S N.. B, then M/D/I steps that advance the node
// and residue by HMMER's rules, E C.. T, emitting every residue once.
TEST(PosteriorDp, OptimalAccuracyTraceIsAPath) {
  const SearchProfile p = tutorial_profile("globins4");
  const DpProfile dp(p.forward);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> residue(0, p.alphabet->K() - 1);
  std::vector<Residue> dsq(180);
  for (Residue& x : dsq) x = static_cast<Residue>(residue(rng));
  const int L = static_cast<int>(dsq.size());
  const SpecialMoves mv = SpecialMoves::unihit(L);
  DpMatrix fwd, bck;
  fwd.reset(p.M, L, true);
  bck.reset(p.M, L, true);
  forward_dp(dp, mv, dsq.data(), L, fwd);
  backward_dp(dp, mv, dsq.data(), L, fwd, bck);
  ASSERT_TRUE(decode_posteriors(mv, fwd, bck, bck));
  const float oa = optimal_accuracy(dp, mv, bck, fwd);
  EXPECT_GT(oa, 0.0f);
  EXPECT_LE(oa, static_cast<float>(L));
  const Trace tr = optimal_accuracy_trace(p.forward, mv, bck, fwd);
  ASSERT_GE(tr.size(), 5u);
  EXPECT_EQ(tr.front().state, TraceState::S);
  EXPECT_EQ(tr.back().state, TraceState::T);
  int emitted = 0, last_i = 0;
  float pp_sum = 0.0f;
  for (const TraceStep& s : tr) {
    if (s.i > 0) {
      EXPECT_EQ(s.i, last_i + 1);
      last_i = s.i;
      ++emitted;
    }
    pp_sum += s.pp;
  }
  EXPECT_EQ(emitted, L);
  EXPECT_NEAR(pp_sum, oa, 1e-3f * oa) << "the trace's posteriors add up to its score";
}

// Two copies of a sequence sampled from the model, apart: two domains, each inside its
// copy, on both sides of the join.
TEST(DomainDefinition, TwoCopiesGiveTwoDomains) {
  const std::vector<HmmModel> models = read_hmm_file(kTutorial + "globins4.hmm");
  const HmmModel& hmm = models.front();
  const SearchProfile p = build_search_profile(hmm, Background::for_alphabet(*hmm.alphabet));
  std::uint64_t state = 3;
  const std::vector<Residue> copy = emit_domain(hmm, state);
  ASSERT_GT(copy.size(), 50u);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> residue(0, p.alphabet->K() - 1);
  std::vector<Residue> dsq;
  for (int part = 0; part < 2; ++part) {
    for (int j = 0; j < 60; ++j) dsq.push_back(static_cast<Residue>(residue(rng)));
    dsq.insert(dsq.end(), copy.begin(), copy.end());
  }
  for (int j = 0; j < 60; ++j) dsq.push_back(static_cast<Residue>(residue(rng)));
  const int L = static_cast<int>(dsq.size());
  CanonicalForward canonical(p.forward);
  DomainWorkspace ws;
  const DpProfile dp(p.forward);
  const TargetDomains d = define_domains(p, dp, dsq.data(), L, canonical.score(dsq.data(), L),
                                         null_score(L), DomainSettings{}, ws);
  ASSERT_EQ(d.domains.size(), 2u);
  const int first_end = 60 + static_cast<int>(copy.size());
  EXPECT_LE(d.domains[0].ali_to, first_end + 5);
  EXPECT_GE(d.domains[1].ali_from, first_end + 55);
  for (const Domain& x : d.domains) {
    EXPECT_LE(x.env_from, x.ali_from);
    EXPECT_LE(x.ali_to, x.env_to);
    EXPECT_LE(1, x.hmm_from);
    EXPECT_LE(x.hmm_to, p.M);
    EXPECT_GT(x.bits, 20.0f);
  }
  EXPECT_GT(d.score_bits, d.domains[0].bits);
  EXPECT_GE(d.regions, 1);
}

}  // namespace
}  // namespace duet
