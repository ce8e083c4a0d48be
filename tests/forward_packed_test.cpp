// The packed canonical Forward (IsaKernels::forward_canonical_packed: several targets side
// by side, one per 128 bits of the vector) against forward_canonical, bit for bit, for
// every ISA this CPU has: random models of many lengths (M = 1 to 1000, multiples of 4 or
// not, both alphabets) and batches of targets of mixed lengths (0 included) in any order,
// with long high-scoring targets that make rows rescale (the tests check that the
// rescaling ran); the kernel called directly and through SimdFilterKernels; the caller's
// denormal mode; and the Forward stage run for several targets (run_forward_stages) giving
// exactly run_cascade's results; the parser states it writes for domain definition, bit
// for bit forward_canonical's. Seed printed; DUET_TEST_SEED replays.
#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "core/hmmsearch/cascade.hpp"
#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/posterior_dp.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/striping.hpp"
#include "host_simd/hmmsearch/isa_kernels.hpp"
#include "host_simd/hmmsearch/simd_kernels.hpp"
#include "simd_test_support.hpp"

namespace duet::simd {

void PrintTo(Isa isa, std::ostream* out) {
  *out << isa_name(isa);
}

namespace {

using simd_test::test_seed;

constexpr int kMaxReportedFailures = 10;

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

const IsaKernels& kernels_of(Isa isa) {
  switch (isa) {
    case Isa::sse41:
      return sse41::isa_kernels();
    case Isa::avx2:
      return avx2::isa_kernels();
    default:
      return avx512::isa_kernels();
  }
}

using Model = simd_test::TestModel;
using simd_test::make_model;

// A batch of targets of mixed lengths and kinds for one model: empty, tiny, random codes,
// sampled from the model (long ones score high and rescale), the consensus repeated.
std::vector<std::vector<Residue>> make_targets(std::mt19937_64& rng, const HmmModel& hmm) {
  const Alphabet& abc = *hmm.alphabet;
  std::vector<std::vector<Residue>> out;
  const auto length = [&](int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(rng);
  };
  out.emplace_back();  // L = 0
  out.push_back(simd_test::random_codes(rng, abc, 1));
  out.push_back(simd_test::random_codes(rng, abc, length(2, 9)));
  for (int j = 0; j < 4; ++j) out.push_back(simd_test::random_codes(rng, abc, length(10, 800)));
  out.push_back(simd_test::sampled_from_model(rng, hmm, std::max(length(50, 400), hmm.M), 0.0));
  out.push_back(simd_test::sampled_from_model(rng, hmm, length(500, 2500), 0.02));
  out.push_back(simd_test::consensus_repeated(hmm, length(hmm.M, 3 * hmm.M + 40)));
  if (length(0, 1) == 1) out.emplace_back();  // a second empty one, sometimes
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

std::vector<Isa> simd_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::sse41, Isa::avx2, Isa::avx512}) out.push_back(isa);
  return out;
}

class PackedForwardTest : public testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not on this CPU";
  }
};

const int kModelLengths[] = {1,  2,  3,  4,  5,  7,  8,   9,   15,  16,
                             17, 31, 33, 63, 64, 65, 127, 260, 511, 1000};

// The kernel called directly, the targets in random order (a group's next target may be
// longer or shorter than the one it ends), the batch cut at random sizes.
TEST_P(PackedForwardTest, KernelEqualsForwardCanonicalBitForBit) {
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  const Isa isa = GetParam();
  const IsaKernels& kernels = kernels_of(isa);
  std::mt19937_64 rng(test_seed() ^ 0x9e3779b97f4a7c15ULL);
  std::vector<int> lengths(std::begin(kModelLengths), std::end(kModelLengths));
  for (int j = 0; j < 10; ++j) lengths.push_back(std::uniform_int_distribution<int>(1, 1000)(rng));
  int failures = 0, targets = 0, finite = 0, with_states_checked = 0;
  std::int64_t rescaled = 0;
  for (std::size_t m = 0; m < lengths.size(); ++m) {
    const Alphabet& abc = m % 2 == 0 ? Alphabet::amino() : Alphabet::dna();
    const Model model = make_model(rng, abc, lengths[m]);
    const ForwardScores& fwd = model.profile.forward;
    const StripedForwardProfile striped = stripe_forward_scores(fwd, kCanonicalForwardLanes);
    AlignedBuffer<float> rows(3 * striped_row_elements(striped.Q, kernels.vector_bytes / 4));
    std::vector<std::vector<Residue>> batch = make_targets(rng, model.hmm);
    std::vector<float> want(batch.size());
    std::vector<CanonicalTarget> packed(batch.size());
    // The parser states, on every other batch: forward_canonical's and the kernel's.
    const bool with_states = m % 2 == 1;
    std::vector<std::vector<float>> want_states(batch.size()), got_states(batch.size());
    CanonicalForward canonical(fwd);
    for (std::size_t t = 0; t < batch.size(); ++t) {
      const int L = static_cast<int>(batch[t].size());
      const std::size_t n_states = (static_cast<std::size_t>(L) + 1) * kParserStates;
      want_states[t].assign(n_states, -1.0f);
      got_states[t].assign(n_states, -2.0f);
      want[t] = canonical.score(batch[t].data(), L, want_states[t].data());
      const ForwardScores::Length ncj = fwd.ncj(L);
      packed[t] = {batch[t].data(), L, ncj.loop, ncj.move,
                   with_states ? got_states[t].data() : nullptr};
    }
    // The whole batch at once, then cut into random pieces.
    for (int cut = 0; cut < 2; ++cut) {
      std::size_t start = 0;
      while (start < batch.size()) {
        const std::size_t size =
            cut == 0 ? batch.size()
                     : std::uniform_int_distribution<std::size_t>(1, batch.size() - start)(rng);
        std::vector<float> got(size, -1.0f);
        kernels.forward_canonical_packed(striped.view(), packed.data() + start,
                                         static_cast<int>(size), got.data(), rows.data(),
                                         &rescaled);
        for (std::size_t t = 0; t < size; ++t) {
          ++targets;
          if (std::isfinite(got[t])) ++finite;
          if (!same_bits(got[t], want[start + t]) && failures++ < kMaxReportedFailures) {
            ADD_FAILURE() << isa_name(isa) << " " << model.label << " L=" << batch[start + t].size()
                          << ": packed " << got[t] << ", forward_canonical " << want[start + t];
          }
          if (!with_states) continue;
          const std::vector<float>& w = want_states[start + t];
          const std::vector<float>& g = got_states[start + t];
          ++with_states_checked;
          if (std::memcmp(w.data(), g.data(), w.size() * sizeof(float)) != 0 &&
              failures++ < kMaxReportedFailures) {
            ADD_FAILURE() << isa_name(isa) << " " << model.label << " L=" << batch[start + t].size()
                          << ": the parser states differ from forward_canonical's";
          }
        }
        start += size;
      }
    }
  }
  std::cout << "[ packed   ] " << isa_name(isa) << ": " << targets << " targets (" << finite
            << " finite, " << with_states_checked << " with parser states), " << rescaled
            << " rows rescaled" << std::endl;
  EXPECT_EQ(failures, 0);
  EXPECT_GT(finite, 0);
  EXPECT_GT(with_states_checked, 0);
  EXPECT_GT(rescaled, 0) << "no target made the packed kernel rescale";
}

// Through SimdFilterKernels (forward_canonical_many and forward_many, longest first) on
// HMMER's tutorial models and the MMseqs2 database, with long sampled targets added.
TEST_P(PackedForwardTest, SimdFilterKernelsGiveTheCanonicalScores) {
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  const Isa isa = GetParam();
  std::mt19937_64 rng(test_seed() ^ 0x5851f42d4c957f2dULL);
  const std::vector<Sequence> db =
      simd_test::read_sequences(simd_test::kMmseqsDatabase, Alphabet::amino(), 400);
  std::vector<Model> models;
  for (const char* name : {"Pkinase", "fn3", "globins4"}) {
    const std::string path = std::string(simd_test::kTutorialDir) + name + ".hmm";
    if (db.empty() || !std::filesystem::exists(path)) continue;
    Model m;
    m.label = name;
    m.hmm = read_hmm_file(path).at(0);
    m.profile = build_search_profile(m.hmm, Background::for_alphabet(*m.hmm.alphabet));
    models.push_back(std::move(m));
  }
  models.push_back(make_model(rng, Alphabet::amino(), 150));
  models.push_back(make_model(rng, Alphabet::dna(), 333));
  int failures = 0, targets = 0;
  std::int64_t rescaled = 0;
  for (const Model& model : models) {
    std::vector<std::vector<Residue>> own;
    for (int j = 0; j < 6; ++j)
      own.push_back(simd_test::sampled_from_model(rng, model.hmm, 300 + 400 * j, 0.01));
    std::vector<ForwardTarget> batch;
    if (model.hmm.alphabet == &Alphabet::amino()) {
      for (const Sequence& s : db)
        batch.push_back({s.residues.data(), static_cast<int>(s.residues.size())});
    }
    for (const auto& t : own) batch.push_back({t.data(), static_cast<int>(t.size())});
    batch.push_back({nullptr, 0});
    SimdFilterKernels kernels(model.profile, isa);
    std::vector<float> got(batch.size()), via_filter_kernels(batch.size()), few(batch.size());
    kernels.forward_canonical_many(batch, got);
    static_cast<FilterKernels&>(kernels).forward_many(batch, via_filter_kernels);
    // Calls of one to five targets, which take narrower ISAs' kernels.
    for (std::size_t start = 0, size = 1; start < batch.size();
         start += size, size = size % 5 + 1) {
      const std::size_t n = std::min(size, batch.size() - start);
      kernels.forward_canonical_many(std::span(batch).subspan(start, n),
                                     std::span(few).subspan(start, n));
    }
    for (std::size_t t = 0; t < batch.size(); ++t) {
      ++targets;
      const float want = forward_canonical(model.profile.forward, batch[t].dsq, batch[t].L);
      if ((!same_bits(got[t], want) || !same_bits(via_filter_kernels[t], want) ||
           !same_bits(few[t], want)) &&
          failures++ < kMaxReportedFailures) {
        ADD_FAILURE() << isa_name(isa) << " " << model.label << " target " << t
                      << " L=" << batch[t].L << ": packed " << got[t] << " / "
                      << via_filter_kernels[t] << " / " << few[t] << ", forward_canonical " << want;
      }
    }
    EXPECT_EQ(kernels.forward_canonical_calls(), 3 * static_cast<std::int64_t>(batch.size()));
    rescaled += kernels.canonical_rescaled_rows();
  }
  std::cout << "[ packed   ] " << isa_name(isa) << ": " << targets << " targets on "
            << models.size() << " models, " << rescaled << " rows rescaled" << std::endl;
  EXPECT_EQ(failures, 0);
  EXPECT_GT(rescaled, 0);
}

// The caller's denormal mode neither matters nor changes.
TEST_P(PackedForwardTest, CallersDenormalModeNeitherMattersNorChanges) {
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  const Isa isa = GetParam();
  std::mt19937_64 rng(test_seed() ^ 0x2545f4914f6cdd1dULL);
  const Model model = make_model(rng, Alphabet::amino(), 97);
  const std::vector<std::vector<Residue>> batch = make_targets(rng, model.hmm);
  std::vector<ForwardTarget> targets;
  for (const auto& t : batch) targets.push_back({t.data(), static_cast<int>(t.size())});
  SimdFilterKernels kernels(model.profile, isa);
  const unsigned saved = _mm_getcsr() & ~0x3Fu;
  const unsigned plain = saved & ~0x8040u;
  std::vector<float> a(targets.size()), b(targets.size());
  _mm_setcsr(plain);
  kernels.forward_canonical_many(targets, a);
  EXPECT_EQ(_mm_getcsr() & ~0x3Fu, plain);
  _mm_setcsr(plain | 0x8040u);
  kernels.forward_canonical_many(targets, b);
  EXPECT_EQ(_mm_getcsr() & ~0x3Fu, plain | 0x8040u);
  _mm_setcsr(saved);
  for (std::size_t t = 0; t < targets.size(); ++t) {
    const float want = forward_canonical(model.profile.forward, targets[t].dsq, targets[t].L);
    EXPECT_TRUE(same_bits(a[t], want)) << "L=" << targets[t].L << " " << a[t] << " " << want;
    EXPECT_TRUE(same_bits(b[t], want)) << "L=" << targets[t].L << " " << b[t] << " " << want;
  }
}

bool same_or_both_nan(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}
bool same_bits_or_both_nan(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || same_bits(a, b);
}

// run_filters then run_forward_stages (packed Forward, gated kernels as the search makes
// them) gives exactly run_cascade with the reference kernels, on the tutorial models and
// the database plus sampled targets that pass every filter.
TEST_P(PackedForwardTest, ForwardStagesGiveTheCascadeResults) {
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  const Isa isa = GetParam();
  std::mt19937_64 rng(test_seed() ^ 0x14057b7ef767814fULL);
  const std::vector<Sequence> db =
      simd_test::read_sequences(simd_test::kMmseqsDatabase, Alphabet::amino(), 1500);
  if (db.empty()) GTEST_SKIP() << "MMseqs2 example data not installed";
  const CascadeSettings settings;
  int failures = 0, at_forward = 0, passed = 0;
  for (const char* name : {"Pkinase", "fn3", "globins4"}) {
    const std::string path = std::string(simd_test::kTutorialDir) + name + ".hmm";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "HMMER tutorial models not installed";
    const HmmModel hmm = read_hmm_file(path).at(0);
    const SearchProfile profile =
        build_search_profile(hmm, Background::for_alphabet(*hmm.alphabet));
    std::vector<std::vector<Residue>> targets;
    for (const Sequence& s : db) targets.push_back(s.residues);
    for (int j = 0; j < 20; ++j)
      targets.push_back(simd_test::sampled_from_model(rng, hmm, 100 + 60 * j, 0.02));
    SimdFilterKernels kernels(profile, isa, ForwardGate::from(settings));
    ReferenceKernels reference(profile);
    std::vector<TargetScores> got(targets.size());
    std::vector<ForwardTarget> forward_targets;
    std::vector<TargetScores*> outs;
    for (std::size_t t = 0; t < targets.size(); ++t) {
      got[t] = run_filters(profile, settings, kernels, targets[t].data(),
                           static_cast<int>(targets[t].size()));
      if (!needs_forward(got[t])) continue;
      forward_targets.push_back({targets[t].data(), static_cast<int>(targets[t].size())});
      outs.push_back(&got[t]);
    }
    at_forward += static_cast<int>(outs.size());
    run_forward_stages(profile, settings, kernels, forward_targets, outs);
    for (std::size_t t = 0; t < targets.size(); ++t) {
      const TargetScores want = run_cascade(profile, settings, reference, targets[t].data(),
                                            static_cast<int>(targets[t].size()));
      if (want.stage == Stage::passed) ++passed;
      const TargetScores& g = got[t];
      const bool same = want.stage == g.stage && want.forward_run == g.forward_run &&
                        same_bits_or_both_nan(want.msv_bits, g.msv_bits) &&
                        same_bits_or_both_nan(want.viterbi_bits, g.viterbi_bits) &&
                        same_bits_or_both_nan(want.forward_bits, g.forward_bits) &&
                        same_or_both_nan(want.pvalue, g.pvalue);
      if (!same && failures++ < kMaxReportedFailures) {
        ADD_FAILURE() << isa_name(isa) << " " << name << " target " << t << ": stage "
                      << int(g.stage) << " fwd " << g.forward_bits << " P " << g.pvalue
                      << ", reference stage " << int(want.stage) << " fwd " << want.forward_bits
                      << " P " << want.pvalue;
      }
    }
  }
  std::cout << "[ stages   ] " << isa_name(isa) << ": " << at_forward << " targets at Forward, "
            << passed << " passed" << std::endl;
  EXPECT_EQ(failures, 0);
  EXPECT_GT(passed, 0);
  EXPECT_GT(at_forward, passed);
}

// The packed Backward parser (domain definition's whole-target Backward) against the one
// DP it packs, backward_dp through backward_parser_states: every row's special states and
// the own-scales flag bit for bit, the kernel called directly on random batch cuts and
// through SimdFilterKernels::backward_parsers (in one call, and in calls of one to three
// targets); random models of many lengths, both alphabets, targets that make rows rescale.
TEST_P(PackedForwardTest, BackwardParserEqualsBackwardDpBitForBit) {
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  const Isa isa = GetParam();
  const IsaKernels& kernels = kernels_of(isa);
  std::mt19937_64 rng(test_seed() ^ 0x2545f4914f6cdd1dULL);
  std::vector<int> lengths(std::begin(kModelLengths), std::end(kModelLengths));
  for (int j = 0; j < 6; ++j) lengths.push_back(std::uniform_int_distribution<int>(1, 600)(rng));
  int failures = 0, targets = 0, rescaled_rows = 0;
  for (std::size_t m = 0; m < lengths.size(); ++m) {
    const Alphabet& abc = m % 2 == 0 ? Alphabet::amino() : Alphabet::dna();
    const Model model = make_model(rng, abc, lengths[m]);
    const ForwardScores& fwd = model.profile.forward;
    const DpProfile dp(fwd);
    const StripedForwardProfile striped = stripe_forward_scores(fwd, kCanonicalForwardLanes);
    AlignedBuffer<float> rows(6 * striped_row_elements(striped.Q, kernels.vector_bytes / 4));
    std::vector<std::vector<Residue>> batch = make_targets(rng, model.hmm);
    std::erase_if(batch, [](const std::vector<Residue>& t) { return t.empty(); });
    const std::size_t count = batch.size();
    CanonicalForward canonical(fwd);
    std::vector<std::vector<float>> forward_states(count), want(count), got(count), via(count);
    std::unique_ptr<bool[]> want_own(new bool[count]()), got_own(new bool[count]()),
        via_own(new bool[count]());
    std::vector<BackwardTarget> packed(count);
    std::vector<BackwardParserTarget> through(count);
    for (std::size_t t = 0; t < count; ++t) {
      const int L = static_cast<int>(batch[t].size());
      const std::size_t size = (static_cast<std::size_t>(L) + 1) * kParserStates;
      forward_states[t].assign(size, 0.0f);
      want[t].assign(size, -1.0f);
      got[t].assign(size, -2.0f);
      via[t].assign(size, -3.0f);
      canonical.score(batch[t].data(), L, forward_states[t].data());
      backward_parser_states(dp, batch[t].data(), L, forward_states[t].data(), want[t].data(),
                             want_own[t]);
      for (int i = 1; i <= L; ++i)
        if (want[t][static_cast<std::size_t>(i) * kParserStates + 5] != 1.0f) ++rescaled_rows;
      const SpecialMoves moves = SpecialMoves::multihit(fwd, L);
      packed[t] = {
          batch[t].data(), L,          moves.n_loop, moves.n_move, forward_states[t].data(),
          got[t].data(),   &got_own[t]};
      through[t] = {batch[t].data(), L, forward_states[t].data(), via[t].data(), &via_own[t]};
    }
    std::size_t start = 0;
    while (start < count) {
      const std::size_t size = std::uniform_int_distribution<std::size_t>(1, count - start)(rng);
      kernels.backward_parser_packed(striped.view(), packed.data() + start, static_cast<int>(size),
                                     rows.data());
      start += size;
    }
    SimdFilterKernels simd(model.profile, isa);
    simd.backward_parsers(through);
    // Again in calls of one to three targets, which take narrower ISAs' kernels.
    std::vector<std::vector<float>> few(count);
    std::unique_ptr<bool[]> few_own(new bool[count]());
    for (std::size_t t = 0; t < count; ++t) {
      few[t].assign(want[t].size(), -4.0f);
      through[t].states = few[t].data();
      through[t].own_scales = &few_own[t];
    }
    for (std::size_t first = 0, size = 1; first < count; first += size, size = size % 3 + 1)
      simd.backward_parsers(std::span(through).subspan(first, std::min(size, count - first)));
    for (std::size_t t = 0; t < count; ++t) {
      ++targets;
      const std::size_t bytes = want[t].size() * sizeof(float);
      const bool same = std::memcmp(want[t].data(), got[t].data(), bytes) == 0 &&
                        std::memcmp(want[t].data(), via[t].data(), bytes) == 0 &&
                        std::memcmp(want[t].data(), few[t].data(), bytes) == 0 &&
                        want_own[t] == got_own[t] && want_own[t] == via_own[t] &&
                        want_own[t] == few_own[t];
      if (!same && failures++ < kMaxReportedFailures) {
        std::size_t first = 0;
        while (first < want[t].size() && same_bits(want[t][first], got[t][first])) ++first;
        ADD_FAILURE() << isa_name(isa) << " " << model.label << " L=" << batch[t].size()
                      << ": the packed Backward's states differ from backward_dp's, first at row "
                      << first / kParserStates << " state " << first % kParserStates;
      }
    }
  }
  std::cout << "[ backward ] " << isa_name(isa) << ": " << targets << " targets, " << rescaled_rows
            << " rows rescaled" << std::endl;
  EXPECT_EQ(failures, 0);
  EXPECT_GT(rescaled_rows, 0);
}

INSTANTIATE_TEST_SUITE_P(Isas, PackedForwardTest, testing::ValuesIn(simd_isas()),
                         [](const testing::TestParamInfo<Isa>& param_info) {
                           return param_info.param == Isa::sse41
                                      ? std::string("sse41")
                                      : std::string(isa_name(param_info.param));
                         });

}  // namespace
}  // namespace duet::simd
