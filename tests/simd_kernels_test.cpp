// Every SIMD variant of duet::simd::kVariants against the scalar references
// (core/hmmsearch/reference_kernels.hpp): SSV, MSV and the Viterbi filter bit for bit, the Forward
// parser within the stated tolerance; on random models and targets (seeded, replayable
// with DUET_TEST_SEED) and on HMMER's tutorial models against the MMseqs2 example
// database. Also: the striped layouts' round trip, the variant table, the dispatcher, and
// the cascade run through SimdFilterKernels.
#include "host_simd/hmmsearch/simd_kernels.hpp"

#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/hmmsearch/cascade.hpp"
#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"
#include "core/hmmsearch/statistics.hpp"
#include "host_simd/hmmsearch/striped_profiles.hpp"
#include "simd_test_support.hpp"

namespace duet::simd {

// Readable test parameters ("msv avx2" rather than bytes); found by argument lookup.
void PrintTo(const Variant& v, std::ostream* out) {
  *out << kernel_name(v.kernel) << " " << isa_name(v.isa);
}
void PrintTo(Kernel kernel, std::ostream* out) {
  *out << kernel_name(kernel);
}

namespace {

using simd_test::test_seed;

// ---------------------------------------------------------------------------
// Inputs

using simd_test::make_model;
using simd_test::TestModel;

struct TestCase {
  int model = 0;
  std::string label;
  std::vector<Residue> dsq;
};

struct Corpus {
  std::vector<TestModel> models;
  std::vector<TestCase> cases;
};

const int kEdgeModelLengths[] = {1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65};
// Around the SSV sweep widths (12 or 16 registers of 16, 32 or 64 lanes) and the largest.
const int kBoundaryModelLengths[] = {191, 192, 193, 383, 384, 385, 1023, 1024, 1025, 3000};

void add_case(Corpus& corpus, int model, std::string kind, std::vector<Residue> dsq) {
  TestCase c;
  c.model = model;
  c.label = kind + " L=" + std::to_string(dsq.size());
  c.dsq = std::move(dsq);
  corpus.cases.push_back(std::move(c));
}

// Targets of every kind for one model: any codes, the model's own paths (with and without
// noise), and its consensus repeated (high scores: MSV and Viterbi overflow).
void add_targets(Corpus& corpus, std::mt19937_64& rng, int model, const std::vector<int>& lengths) {
  const HmmModel& hmm = corpus.models[model].hmm;
  const Alphabet& abc = *hmm.alphabet;
  for (int L : lengths) add_case(corpus, model, "codes", simd_test::random_codes(rng, abc, L));
  const int L = std::max(lengths.back(), 2 * hmm.M);
  add_case(corpus, model, "sampled", simd_test::sampled_from_model(rng, hmm, L, 0.0));
  add_case(corpus, model, "sampled+noise", simd_test::sampled_from_model(rng, hmm, L, 0.05));
  add_case(corpus, model, "consensus", simd_test::consensus_repeated(hmm, 3 * hmm.M + 40));
}

int log_uniform(std::mt19937_64& rng, int low, int high) {
  const double u = std::uniform_real_distribution<double>(std::log(low), std::log(high + 1.0))(rng);
  return std::clamp(static_cast<int>(std::exp(u)), low, high);
}

Corpus build_corpus(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Corpus corpus;
  const Alphabet* alphabets[] = {&Alphabet::amino(), &Alphabet::dna()};
  // Edge sizes: every small model length around the vector widths, both alphabets.
  for (const Alphabet* abc : alphabets) {
    for (int M : kEdgeModelLengths) {
      corpus.models.push_back(make_model(rng, *abc, M));
      add_targets(corpus, rng, static_cast<int>(corpus.models.size()) - 1,
                  {0, 1, 2, 3, 17, 100, 400});
    }
  }
  // Model lengths where the SSV sweeps change shape, and the longest model.
  for (int M : kBoundaryModelLengths) {
    corpus.models.push_back(make_model(rng, *alphabets[M % 2], M));
    add_targets(corpus, rng, static_cast<int>(corpus.models.size()) - 1,
                {1, log_uniform(rng, 50, 1500)});
  }
  // Random model and target lengths.
  for (int j = 0; j < 30; ++j) {
    const int M = log_uniform(rng, 1, 3000);
    corpus.models.push_back(make_model(rng, *alphabets[j % 2], M));
    add_targets(corpus, rng, static_cast<int>(corpus.models.size()) - 1,
                {log_uniform(rng, 1, 4000), log_uniform(rng, 1, 4000)});
  }
  // HMMER's D->D skipping rule rarely decides a score with real bounds: copies of models
  // with long delete chains whose bound is lowered, so that skipped chains would have
  // mattered on some rows. The kernels must follow the rule as the reference does.
  for (int j = 0; j < 8; ++j) {
    // Flat emissions and long cheap delete chains: scores stay below overflow.
    const simd_test::ModelStyle deletions{1.0, 0.1, 0.9};
    TestModel m = make_model(rng, *alphabets[j % 2], log_uniform(rng, 20, 200), deletions);
    const int lowered = std::uniform_int_distribution<int>(1000, 20000)(rng);
    m.profile.viterbi.dd_bound =
        static_cast<std::int16_t>(std::max(-32768, m.profile.viterbi.dd_bound - lowered));
    m.label += " dd_bound lowered by " + std::to_string(lowered);
    corpus.models.push_back(std::move(m));
    const int model = static_cast<int>(corpus.models.size()) - 1;
    const HmmModel& hmm = corpus.models[model].hmm;
    for (int k = 0; k < 2; ++k)
      add_case(corpus, model, "sampled", simd_test::sampled_from_model(rng, hmm, 3 * hmm.M, 0.02));
    for (int gaps : {1, 2, 4})
      add_case(corpus, model, "consensus with deletions",
               simd_test::consensus_with_deletions(rng, hmm, gaps));
  }
  // A few long targets (up to 50,000 residues), sparingly.
  for (int j = 0; j < 2; ++j) {
    const int M = log_uniform(rng, 20, 200);
    corpus.models.push_back(make_model(rng, *alphabets[j], M));
    const int model = static_cast<int>(corpus.models.size()) - 1;
    add_case(corpus, model, "long sampled",
             simd_test::sampled_from_model(rng, corpus.models[model].hmm, 50000, 0.02));
  }
  return corpus;
}

const Corpus& random_corpus() {
  static const Corpus corpus = build_corpus(test_seed());
  return corpus;
}

struct Tutorial {
  std::vector<TestModel> models;
  std::vector<Sequence> sequences;
};

// Pkinase, fn3 and globins4 against the first 3000 sequences of the MMseqs2 example DB.
const Tutorial& tutorial() {
  static const Tutorial t = [] {
    Tutorial out;
    out.sequences = simd_test::read_sequences(simd_test::kMmseqsDatabase, Alphabet::amino(), 3000);
    for (const char* name : {"Pkinase", "fn3", "globins4"}) {
      const std::string path = std::string(simd_test::kTutorialDir) + name + ".hmm";
      if (out.sequences.empty() || !std::filesystem::exists(path)) return Tutorial{};
      TestModel m;
      m.label = name;
      m.hmm = read_hmm_file(path).at(0);
      m.profile = build_search_profile(m.hmm, Background::for_alphabet(*m.hmm.alphabet));
      out.models.push_back(std::move(m));
    }
    return out;
  }();
  return t;
}

// ---------------------------------------------------------------------------
// Comparisons

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}
bool same_score(const FilterScore& a, const FilterScore& b) {
  return a.overflow == b.overflow && same_bits(a.nats, b.nats);
}

std::string show(const FilterScore& s) {
  std::ostringstream out;
  out.precision(9);
  out << s.nats << (s.overflow ? " (overflow)" : "");
  return out.str();
}

bool within_forward_tolerance(float simd, float reference) {
  if (std::isinf(reference) || std::isinf(simd)) return simd == reference;
  const double tolerance =
      kForwardAbsoluteTolerance + kForwardRelativeTolerance * std::fabs(reference);
  return std::fabs(static_cast<double>(simd) - reference) <= tolerance;
}

// One kernel's answer on one target.
struct KernelResult {
  bool conclusive = true;  // SSV only
  FilterScore score;       // SSV, MSV (msv_only), Viterbi
  FilterScore stage;       // MSV: the stage as the cascade runs it (SSV, then MSV)
  float forward = 0;
};

KernelResult reference_result(Kernel kernel, const SearchProfile& profile,
                              const std::vector<Residue>& target) {
  const Residue* dsq = target.data();
  const int L = static_cast<int>(target.size());
  KernelResult r;
  switch (kernel) {
    case Kernel::ssv:
      r.conclusive = ssv_filter_reference(profile.msv, dsq, L, r.score);
      break;
    case Kernel::msv:
      r.score = r.stage = msv_filter_reference(profile.msv, dsq, L);
      break;
    case Kernel::viterbi:
      r.score = viterbi_filter_reference(profile.viterbi, dsq, L);
      break;
    case Kernel::forward:
      r.forward = forward_parser_reference(profile.forward, dsq, L);
      break;
  }
  return r;
}

KernelResult simd_result(Kernel kernel, SimdFilterKernels& kernels,
                         const std::vector<Residue>& target) {
  const Residue* dsq = target.data();
  const int L = static_cast<int>(target.size());
  KernelResult r;
  switch (kernel) {
    case Kernel::ssv:
      r.conclusive = kernels.ssv_only(dsq, L, r.score);
      break;
    case Kernel::msv:
      r.score = kernels.msv_only(dsq, L);
      r.stage = kernels.msv(dsq, L);
      break;
    case Kernel::viterbi:
      r.score = kernels.viterbi(dsq, L);
      break;
    case Kernel::forward:
      r.forward = kernels.forward_simd(dsq, L);
      break;
  }
  return r;
}

// What the targets exercised, summed over one test.
struct Tally {
  int targets = 0;
  int msv_overflows = 0;
  int ssv_conclusive = 0;
  int ssv_inconclusive = 0;
  int viterbi_overflows = 0;
  double forward_worst_error = 0;  // |simd - reference| / (abs + rel * |reference|)
};

void count(Kernel kernel, const KernelResult& reference, Tally& tally) {
  ++tally.targets;
  if (kernel == Kernel::ssv)
    (reference.conclusive ? tally.ssv_conclusive : tally.ssv_inconclusive)++;
  if (kernel == Kernel::msv && reference.score.overflow) ++tally.msv_overflows;
  if (kernel == Kernel::viterbi && reference.score.overflow) ++tally.viterbi_overflows;
}

// A SIMD result against the reference's; empty when they agree.
std::string compare(Kernel kernel, const KernelResult& simd, const KernelResult& reference,
                    Tally& tally) {
  switch (kernel) {
    case Kernel::ssv:
      if (simd.conclusive != reference.conclusive) {
        return std::string("SSV conclusive: simd ") + (simd.conclusive ? "yes" : "no") +
               ", reference " + (reference.conclusive ? "yes" : "no");
      }
      if (reference.conclusive && !same_score(simd.score, reference.score)) {
        return "SSV score: simd " + show(simd.score) + ", reference " + show(reference.score);
      }
      return {};
    case Kernel::msv:
      if (!same_score(simd.score, reference.score)) {
        return "MSV score: simd " + show(simd.score) + ", reference " + show(reference.score);
      }
      if (!same_score(simd.stage, reference.stage)) {
        return "MSV stage (SSV, then MSV): simd " + show(simd.stage) + ", reference " +
               show(reference.stage);
      }
      return {};
    case Kernel::viterbi:
      if (!same_score(simd.score, reference.score)) {
        return "Viterbi score: simd " + show(simd.score) + ", reference " + show(reference.score);
      }
      return {};
    case Kernel::forward: {
      if (std::isfinite(reference.forward) && std::isfinite(simd.forward)) {
        const double tolerance =
            kForwardAbsoluteTolerance + kForwardRelativeTolerance * std::fabs(reference.forward);
        tally.forward_worst_error =
            std::max(tally.forward_worst_error,
                     std::fabs(double{simd.forward} - reference.forward) / tolerance);
      }
      if (!within_forward_tolerance(simd.forward, reference.forward)) {
        std::ostringstream out;
        out.precision(9);
        out << "Forward score: simd " << simd.forward << ", reference " << reference.forward;
        return out.str();
      }
      return {};
    }
  }
  return "unknown kernel";
}

void print_tally(Kernel kernel, std::string_view isa, const Tally& t) {
  std::cout << "[ tally    ] " << kernel_name(kernel) << " " << isa << ": " << t.targets
            << " targets";
  if (kernel == Kernel::ssv)
    std::cout << ", conclusive " << t.ssv_conclusive << ", inconclusive " << t.ssv_inconclusive;
  if (kernel == Kernel::msv) std::cout << ", overflows " << t.msv_overflows;
  if (kernel == Kernel::viterbi) std::cout << ", overflows " << t.viterbi_overflows;
  if (kernel == Kernel::forward)
    std::cout << ", worst error " << t.forward_worst_error << " of the tolerance";
  std::cout << std::endl;
}

// ---------------------------------------------------------------------------
// Every SIMD kernel and ISA against the reference.

std::vector<Variant> simd_variants() {
  std::vector<Variant> out;
  for (const Variant& v : kVariants) {
    if (v.isa != Isa::scalar) out.push_back(v);
  }
  return out;
}

std::string variant_test_name(const testing::TestParamInfo<Variant>& info) {
  std::string isa(isa_name(info.param.isa));
  isa.erase(std::remove(isa.begin(), isa.end(), '.'), isa.end());
  return std::string(kernel_name(info.param.kernel)) + "_" + isa;
}

class SimdKernelTest : public testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam().isa))
      GTEST_SKIP() << "this CPU lacks " << isa_name(GetParam().isa);
  }
};

constexpr int kMaxReportedFailures = 10;

TEST_P(SimdKernelTest, RandomModelsMatchReference) {
  const Variant v = GetParam();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  const Corpus& corpus = random_corpus();
  Tally tally;
  int failures = 0;
  for (std::size_t m = 0; m < corpus.models.size() && failures < kMaxReportedFailures; ++m) {
    const TestModel& model = corpus.models[m];
    SimdFilterKernels kernels(model.profile, v.isa);
    for (const TestCase& c : corpus.cases) {
      if (c.model != static_cast<int>(m)) continue;
      const KernelResult reference = reference_result(v.kernel, model.profile, c.dsq);
      count(v.kernel, reference, tally);
      const std::string problem =
          compare(v.kernel, simd_result(v.kernel, kernels, c.dsq), reference, tally);
      if (!problem.empty()) {
        ADD_FAILURE() << problem << "\n  model: " << model.label << "\n  target: " << c.label;
        if (++failures >= kMaxReportedFailures) break;
      }
    }
  }
  print_tally(v.kernel, isa_name(v.isa), tally);
  if (v.kernel == Kernel::msv) {
    EXPECT_GT(tally.msv_overflows, 0) << "the corpus should overflow MSV";
  }
  if (v.kernel == Kernel::ssv) {
    EXPECT_GT(tally.ssv_conclusive, 0);
    EXPECT_GT(tally.ssv_inconclusive, 0);
  }
  if (v.kernel == Kernel::viterbi) {
    EXPECT_GT(tally.viterbi_overflows, 0) << "the corpus should overflow Viterbi";
  }
}

// Long targets: every kernel and ISA against the reference on a target of 2^24 + 1
// residues (from 2^24 on the length terms are computed in double, core/hmmsearch/length_terms.hpp),
// and MSV, whose reference is the cheapest, also on one of 5 x 10^7. Random codes with one
// domain sampled from the model in the middle, on a small model that keeps the references
// (L x M cells) affordable; each reference result is computed once for every ISA.
struct LongCase {
  TestModel model;
  std::vector<Residue> dsq;
};

const LongCase& long_case(int L) {
  static std::map<int, LongCase> cases;
  auto found = cases.find(L);
  if (found != cases.end()) return found->second;
  std::mt19937_64 rng(test_seed() + static_cast<std::uint64_t>(L));
  LongCase c{make_model(rng, Alphabet::amino(), 20), {}};
  c.dsq = simd_test::random_codes(rng, Alphabet::amino(), L);
  const std::vector<Residue> domain =
      simd_test::sampled_from_model(rng, c.model.hmm, 3 * c.model.hmm.M, 0.0);
  std::copy(domain.begin(), domain.end(), c.dsq.begin() + L / 2);
  return cases.emplace(L, std::move(c)).first->second;
}

const KernelResult& long_reference(Kernel kernel, int L) {
  static std::map<std::pair<Kernel, int>, KernelResult> results;
  auto found = results.find({kernel, L});
  if (found != results.end()) return found->second;
  const LongCase& c = long_case(L);
  return results.emplace(std::pair{kernel, L}, reference_result(kernel, c.model.profile, c.dsq))
      .first->second;
}

float long_canonical_reference(int L) {
  static std::map<int, float> scores;
  auto found = scores.find(L);
  if (found != scores.end()) return found->second;
  const LongCase& c = long_case(L);
  const float score = forward_canonical(c.model.profile.forward, c.dsq.data(), L);
  scores.emplace(L, score);
  return score;
}

TEST_P(SimdKernelTest, LongTargetsMatchReference) {
  const Variant v = GetParam();
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  std::vector<int> lengths = {(1 << 24) + 1};
  if (v.kernel == Kernel::msv) lengths.push_back(50'000'000);
  for (const int L : lengths) {
    const LongCase& c = long_case(L);
    SimdFilterKernels kernels(c.model.profile, v.isa);
    const KernelResult& reference = long_reference(v.kernel, L);
    Tally tally;
    EXPECT_EQ(compare(v.kernel, simd_result(v.kernel, kernels, c.dsq), reference, tally), "")
        << c.model.label << " L=" << L;
    // A score is finite unless the 8-bit or 16-bit range overflowed (a strong random
    // segment in so long a target does that for some seeds; the kernels then agree on the
    // overflow, checked above): infinite length terms would show here.
    if ((v.kernel == Kernel::msv || v.kernel == Kernel::viterbi) && !reference.score.overflow) {
      EXPECT_TRUE(std::isfinite(reference.score.nats)) << "L=" << L;
    }
    if (v.kernel == Kernel::forward) {
      EXPECT_TRUE(std::isfinite(reference.forward)) << "L=" << L;
      // The canonical score, bit for bit, alone and several targets at once.
      const float canonical = long_canonical_reference(L);
      EXPECT_TRUE(same_bits(kernels.forward(c.dsq.data(), L), canonical)) << "L=" << L;
      const ForwardTarget targets[] = {{c.dsq.data(), L}, {c.dsq.data(), 1000}};
      float scores[2] = {0, 0};
      kernels.forward_canonical_many(targets, scores);
      EXPECT_TRUE(same_bits(scores[0], canonical)) << "L=" << L;
      EXPECT_TRUE(
          same_bits(scores[1], forward_canonical(c.model.profile.forward, c.dsq.data(), 1000)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, SimdKernelTest, testing::ValuesIn(simd_variants()),
                         variant_test_name);

// The tutorial models on the database: per kernel, every ISA of the table this CPU has
// against one reference run (the reference is the slow part).
class TutorialTest : public testing::TestWithParam<Kernel> {};

TEST_P(TutorialTest, EverySupportedIsaMatchesReference) {
  const Kernel kernel = GetParam();
  const Tutorial& t = tutorial();
  if (t.models.empty())
    GTEST_SKIP() << "HMMER tutorial models or MMseqs2 example data not installed";
  std::vector<Isa> isas;
  for (const Variant& v : kVariants) {
    if (v.kernel == kernel && v.isa != Isa::scalar && cpu_supports(v.isa)) isas.push_back(v.isa);
  }
  // Forward's reference is the slowest and only a tolerance is checked: every fifth target.
  // SSV alone: every third (msv's stage check runs SSV on every target anyway).
  const std::size_t stride = kernel == Kernel::forward ? 5 : kernel == Kernel::ssv ? 3 : 1;
  std::vector<Tally> tallies(isas.size());
  int failures = 0;
  for (const TestModel& model : t.models) {
    std::vector<std::unique_ptr<SimdFilterKernels>> kernels;
    for (Isa isa : isas) kernels.push_back(std::make_unique<SimdFilterKernels>(model.profile, isa));
    for (std::size_t s = 0; s < t.sequences.size() && failures < kMaxReportedFailures;
         s += stride) {
      const std::vector<Residue>& target = t.sequences[s].residues;
      const KernelResult reference = reference_result(kernel, model.profile, target);
      for (std::size_t j = 0; j < isas.size(); ++j) {
        count(kernel, reference, tallies[j]);
        const std::string problem =
            compare(kernel, simd_result(kernel, *kernels[j], target), reference, tallies[j]);
        if (!problem.empty()) {
          ADD_FAILURE() << isa_name(isas[j]) << ": " << problem << "\n  model: " << model.label
                        << "\n  target: " << t.sequences[s].name;
          ++failures;
        }
      }
    }
  }
  for (std::size_t j = 0; j < isas.size(); ++j) print_tally(kernel, isa_name(isas[j]), tallies[j]);
}

std::string kernel_test_name(const testing::TestParamInfo<Kernel>& param) {
  return std::string(kernel_name(param.param));
}

INSTANTIATE_TEST_SUITE_P(Kernels, TutorialTest,
                         testing::Values(Kernel::ssv, Kernel::msv, Kernel::viterbi,
                                         Kernel::forward),
                         kernel_test_name);

// ---------------------------------------------------------------------------
// Striped layouts: plain -> striped -> plain gives the source back, for every lane count
// of the table (the layouts do not depend on the CPU, so nothing is skipped).

class StripedLayoutTest : public testing::TestWithParam<Variant> {};

template <class T>
void expect_same_rows(const std::vector<std::vector<T>>& a, const std::vector<std::vector<T>>& b,
                      const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t x = 0; x < a.size(); ++x) EXPECT_EQ(a[x], b[x]) << what << " residue " << x;
}

TEST_P(StripedLayoutTest, RoundTripGivesTheSourceBack) {
  const Variant v = GetParam();
  std::mt19937_64 rng(test_seed() + 1);
  std::vector<int> lengths(std::begin(kEdgeModelLengths), std::end(kEdgeModelLengths));
  for (int M : {v.lanes - 1, v.lanes, v.lanes + 1, 5 * v.lanes + 3, 1000})
    lengths.push_back(std::max(M, 1));
  for (int M : lengths) {
    for (const Alphabet* abc : {&Alphabet::amino(), &Alphabet::dna()}) {
      const TestModel model = make_model(rng, *abc, M);
      SCOPED_TRACE(model.label);
      const SearchProfile& p = model.profile;
      switch (v.kernel) {
        case Kernel::msv: {
          const StripedMsvProfile striped = stripe_msv_scores(p.msv, v.lanes);
          EXPECT_EQ(striped.Q, striped_segments(M, v.lanes));
          EXPECT_EQ(reinterpret_cast<std::uintptr_t>(striped.cost.data()) % kBufferAlignment, 0u);
          const MsvScores back = unstripe_msv_scores(striped);
          EXPECT_EQ(back.M, p.msv.M);
          EXPECT_TRUE(same_bits(back.scale, p.msv.scale));
          EXPECT_EQ(back.base, p.msv.base);
          EXPECT_EQ(back.bias, p.msv.bias);
          EXPECT_EQ(back.tbm, p.msv.tbm);
          EXPECT_EQ(back.tec, p.msv.tec);
          expect_same_rows(back.cost, p.msv.cost, "cost");
          break;
        }
        case Kernel::ssv: {
          // SSV's steps are derived, not invertible: check every element, extension included.
          const int extension = 15;
          const StripedSsvProfile striped = stripe_ssv_steps(p.msv, v.lanes, extension);
          const int Q = striped.Q;
          for (int x = 0; x < abc->Kp(); ++x) {
            for (int q = 0; q < Q + extension; ++q) {
              for (int lane = 0; lane < v.lanes; ++lane) {
                const int k = (q % Q) + lane * Q + 1;
                const int expected =
                    k <= M ? std::min(int{p.msv.cost[x][k]} - int{p.msv.bias}, 127) : 127;
                const std::size_t at =
                    (static_cast<std::size_t>(x) * (Q + extension) + q) * v.lanes + lane;
                ASSERT_EQ(int{striped.step[at]}, expected)
                    << "x=" << x << " q=" << q << " lane=" << lane;
              }
            }
          }
          break;
        }
        case Kernel::viterbi: {
          const ViterbiScores back =
              unstripe_viterbi_scores(stripe_viterbi_scores(p.viterbi, v.lanes));
          const ViterbiScores& s = p.viterbi;
          EXPECT_EQ(back.M, s.M);
          EXPECT_TRUE(same_bits(back.scale, s.scale));
          EXPECT_EQ(back.base, s.base);
          EXPECT_EQ(back.e_loop, s.e_loop);
          EXPECT_EQ(back.e_move, s.e_move);
          EXPECT_EQ(back.dd_bound, s.dd_bound);
          expect_same_rows(back.match, s.match, "match");
          EXPECT_EQ(back.bm, s.bm);
          EXPECT_EQ(back.mm, s.mm);
          EXPECT_EQ(back.im, s.im);
          EXPECT_EQ(back.dm, s.dm);
          EXPECT_EQ(back.md, s.md);
          EXPECT_EQ(back.mi, s.mi);
          EXPECT_EQ(back.ii, s.ii);
          EXPECT_EQ(back.dd, s.dd);
          for (int L : {0, 1, 100, 100000}) EXPECT_EQ(back.ncj_move(L), s.ncj_move(L));
          break;
        }
        case Kernel::forward: {
          const StripedForwardProfile striped = stripe_forward_scores(p.forward, v.lanes);
          // The derived D->D products: lane by lane, in node order, from 1.
          for (int lane = 0; lane < v.lanes; ++lane) {
            float product = 1.0f;
            for (int q = 0; q <= striped.Q; ++q) {
              ASSERT_TRUE(same_bits(striped.dd_prefix[static_cast<std::size_t>(q) * v.lanes + lane],
                                    product))
                  << "lane " << lane << " q " << q;
              const int k = lane * striped.Q + q + 1;
              if (q < striped.Q) product *= k <= M ? p.forward.dd[k] : 0.0f;
            }
          }
          const ForwardScores back = unstripe_forward_scores(striped);
          const ForwardScores& s = p.forward;
          EXPECT_EQ(back.M, s.M);
          EXPECT_TRUE(same_bits(back.e_loop, s.e_loop));
          EXPECT_TRUE(same_bits(back.e_move, s.e_move));
          expect_same_rows(back.match, s.match, "match");
          EXPECT_EQ(back.bm, s.bm);
          EXPECT_EQ(back.mm, s.mm);
          EXPECT_EQ(back.im, s.im);
          EXPECT_EQ(back.dm, s.dm);
          EXPECT_EQ(back.md, s.md);
          EXPECT_EQ(back.mi, s.mi);
          EXPECT_EQ(back.ii, s.ii);
          EXPECT_EQ(back.dd, s.dd);
          break;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, StripedLayoutTest, testing::ValuesIn(simd_variants()),
                         variant_test_name);

// ---------------------------------------------------------------------------
// The variant table and the dispatcher.

TEST(SimdDispatch, TableHasEveryKernelAndIsaOnceWithTheVectorWidth) {
  for (Kernel kernel : {Kernel::ssv, Kernel::msv, Kernel::viterbi, Kernel::forward}) {
    for (Isa isa : kIsaPreference) {
      const auto n = std::count_if(kVariants.begin(), kVariants.end(), [&](const Variant& v) {
        return v.kernel == kernel && v.isa == isa;
      });
      EXPECT_EQ(n, 1) << kernel_name(kernel) << " " << isa_name(isa);
      const Variant& v = variant(kernel, isa);
      if (isa == Isa::scalar) {
        EXPECT_EQ(v.lanes, 1);
      } else {
        EXPECT_EQ(v.lanes * v.element_bits, vector_bytes(isa) * 8)
            << kernel_name(kernel) << " " << isa_name(isa);
      }
    }
  }
}

TEST(SimdDispatch, BestIsaIsTheFirstSupportedOfThePreference) {
  const Isa best = best_isa();
  EXPECT_TRUE(cpu_supports(best));
  for (Isa isa : kIsaPreference) {
    if (isa == best) break;
    EXPECT_FALSE(cpu_supports(isa))
        << isa_name(isa) << " is supported and preferred to " << isa_name(best);
  }
  EXPECT_TRUE(cpu_supports(Isa::scalar));
  std::cout << "[ isa      ] dispatcher picks " << isa_name(best) << std::endl;
}

TEST(SimdDispatch, IsaByNameForcesOneOrFailsClearly) {
  EXPECT_EQ(isa_from_name("auto"), best_isa());
  EXPECT_EQ(isa_from_name("scalar"), Isa::scalar);
  for (Isa isa : kIsaPreference) {
    if (cpu_supports(isa)) {
      EXPECT_EQ(isa_from_name(isa_name(isa)), isa);
    } else {
      EXPECT_THROW(isa_from_name(isa_name(isa)), UsageError);
      const TestModel model = [] {
        std::mt19937_64 rng(1);
        return make_model(rng, Alphabet::amino(), 10);
      }();
      EXPECT_THROW(SimdFilterKernels(model.profile, isa), UsageError);
    }
  }
  EXPECT_THROW(isa_from_name("avx1024"), UsageError);
  EXPECT_THROW(isa_from_name("AVX2"), UsageError);
  try {
    isa_from_name("neon");
    ADD_FAILURE() << "no exception";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("neon"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------
// The cascade through SimdFilterKernels gives the reference's results.

std::string show(const TargetScores& s) {
  std::ostringstream out;
  out.precision(9);
  out << "stage " << int(s.stage) << " msv " << s.msv_bits << " vit " << s.viterbi_bits << " fwd "
      << s.forward_bits << " P " << s.pvalue;
  return out.str();
}

bool same_bits_or_both_nan(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || same_bits(a, b);
}
bool same_or_both_nan(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

bool same_results(const TargetScores& a, const TargetScores& b) {
  return a.stage == b.stage && same_bits_or_both_nan(a.msv_bits, b.msv_bits) &&
         same_bits_or_both_nan(a.viterbi_bits, b.viterbi_bits) &&
         same_bits_or_both_nan(a.forward_bits, b.forward_bits) &&
         same_or_both_nan(a.pvalue, b.pvalue);
}

// Tutorial models on the database, plus the random models on their own targets (sampled
// ones pass every filter, so that reported Forward scores are compared). The reference
// cascade runs once; every ISA this CPU has (scalar included) is compared with it, with
// the Forward gate off and on: every result the same. (Should the cascade keep the
// Forward score of a target that F3 rejects, the gated kernels may give a SIMD score
// there: only that score and its P-value are then exempt.)
// Striped profiles serve only kernels of their own ISA.
TEST(SimdDispatch, StripedProfilesOfAnotherIsaAreRefused) {
  std::mt19937_64 rng(3);
  const TestModel model = make_model(rng, Alphabet::amino(), 40);
  EXPECT_EQ(stripe_profiles(model.profile, Isa::scalar), nullptr);
  for (Isa isa : kIsaPreference) {
    if (!cpu_supports(isa) || isa == Isa::scalar) continue;
    const auto striped = stripe_profiles(model.profile, isa);
    ASSERT_NE(striped, nullptr);
    EXPECT_THROW(SimdFilterKernels(model.profile, Isa::scalar, {}, striped), std::invalid_argument);
    for (Isa other : kIsaPreference) {
      if (other != isa && other != Isa::scalar && cpu_supports(other)) {
        EXPECT_THROW(SimdFilterKernels(model.profile, other, {}, striped), std::invalid_argument);
      }
    }
  }
}

TEST(SimdCascade, EveryIsaGivesTheReferenceResults) {
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  struct Job {
    const TestModel* model;
    const std::vector<Residue>* dsq;
  };
  std::vector<Job> jobs;
  const Tutorial& t = tutorial();
  for (const TestModel& model : t.models)
    for (std::size_t s = 0; s < t.sequences.size(); s += 5)
      jobs.push_back({&model, &t.sequences[s].residues});
  const Corpus& corpus = random_corpus();
  for (const TestCase& c : corpus.cases) {
    if (c.dsq.size() <= 5000) jobs.push_back({&corpus.models[c.model], &c.dsq});
  }
  std::vector<Isa> isas;
  for (Isa isa : kIsaPreference) {
    if (cpu_supports(isa)) isas.push_back(isa);
  }
  const CascadeSettings settings;
  int failures = 0, passed = 0, forward_reached = 0;
  std::int64_t gated_canonical_calls = 0;
  const TestModel* current = nullptr;
  std::vector<std::unique_ptr<SimdFilterKernels>> exact, gated;
  for (const Job& job : jobs) {
    if (job.model != current) {
      for (const auto& g : gated) gated_canonical_calls += g->forward_canonical_calls();
      current = job.model;
      exact.clear();
      gated.clear();
      for (Isa isa : isas) {
        // The gated kernels run on striped profiles built apart (stripe_profiles), as the
        // workers of a search share them.
        exact.push_back(std::make_unique<SimdFilterKernels>(current->profile, isa));
        gated.push_back(
            std::make_unique<SimdFilterKernels>(current->profile, isa, ForwardGate::from(settings),
                                                stripe_profiles(current->profile, isa)));
      }
    }
    ReferenceKernels reference(current->profile);
    const Residue* dsq = job.dsq->data();
    const int L = static_cast<int>(job.dsq->size());
    const TargetScores want = run_cascade(current->profile, settings, reference, dsq, L);
    if (want.stage == Stage::passed) ++passed;
    if (want.stage >= Stage::forward) ++forward_reached;
    for (std::size_t j = 0; j < isas.size() && failures < kMaxReportedFailures; ++j) {
      const TargetScores got = run_cascade(current->profile, settings, *exact[j], dsq, L);
      const TargetScores got_gated = run_cascade(current->profile, settings, *gated[j], dsq, L);
      const bool same = same_results(want, got);
      bool same_gated = same_results(want, got_gated);
      if (want.stage == Stage::forward && !std::isnan(want.forward_bits)) {
        TargetScores exempt = got_gated;
        exempt.forward_bits = want.forward_bits;
        exempt.pvalue = want.pvalue;
        same_gated = same_results(want, exempt);
      }
      if (!same || !same_gated) {
        ADD_FAILURE() << isa_name(isas[j]) << ": " << current->label << " L=" << L
                      << "\n  reference " << show(want) << "\n  simd      " << show(got)
                      << "\n  gated     " << show(got_gated);
        ++failures;
      }
    }
  }
  for (const auto& g : gated) gated_canonical_calls += g->forward_canonical_calls();
  std::cout << "[ cascade  ] " << jobs.size() << " targets, " << forward_reached
            << " reached Forward, " << passed << " passed; " << isas.size()
            << " ISAs; gated Forward computed the canonical score " << gated_canonical_calls
            << " times of " << forward_reached * static_cast<int>(isas.size()) << std::endl;
  EXPECT_GT(passed, 0);
}

// SimdFilterKernels::forward(): without the gate, always the canonical score; with it,
// either the canonical score or a SIMD score for a target the canonical score would
// also reject at F3, whatever the threshold.
TEST(SimdForwardGate, NeverChangesTheF3Decision) {
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  const Corpus& corpus = random_corpus();
  const Isa isa = best_isa();
  if (isa == Isa::scalar) GTEST_SKIP() << "no SIMD ISA on this CPU";
  std::vector<CascadeSettings> thresholds(3);
  thresholds[0].F3 = 1e-5;
  thresholds[1].F3 = 1e-2;
  thresholds[1].bias_filter = false;  // both nulls of the F3 test
  thresholds[2].F3 = 0.5;
  int simd_scores = 0, canonical_scores = 0;
  for (std::size_t m = 0; m < corpus.models.size(); ++m) {
    const SearchProfile& p = corpus.models[m].profile;
    SimdFilterKernels exact(p, isa);
    std::vector<std::unique_ptr<SimdFilterKernels>> gated;
    for (const CascadeSettings& settings : thresholds) {
      gated.push_back(std::make_unique<SimdFilterKernels>(p, isa, ForwardGate::from(settings)));
    }
    for (const TestCase& c : corpus.cases) {
      if (c.model != static_cast<int>(m) || c.dsq.size() * static_cast<std::size_t>(p.M) > 1000000)
        continue;
      const Residue* dsq = c.dsq.data();
      const int L = static_cast<int>(c.dsq.size());
      const float canonical = forward_canonical(p.forward, dsq, L);
      ASSERT_TRUE(same_bits(exact.forward(dsq, L), canonical)) << corpus.models[m].label;
      for (std::size_t j = 0; j < thresholds.size(); ++j) {
        const float got = gated[j]->forward(dsq, L);
        if (same_bits(got, canonical)) {
          ++canonical_scores;
          continue;
        }
        ++simd_scores;
        const float null =
            thresholds[j].bias_filter ? bias_filter_score(p.bias, dsq, L) : null_score(L);
        const double P = exponential_survival((canonical - null) / static_cast<float>(kLog2),
                                              p.forward_tau, p.forward_lambda);
        EXPECT_GT(P, thresholds[j].F3)
            << corpus.models[m].label << " " << c.label << ": the SIMD score " << got
            << " stood in for " << canonical << " on a target that passes F3";
      }
    }
  }
  std::cout << "[ gate     ] " << isa_name(isa) << ": " << simd_scores << " SIMD scores, "
            << canonical_scores << " canonical scores" << std::endl;
  EXPECT_GT(simd_scores, 0);
}

// ---------------------------------------------------------------------------
// The canonical Forward (core/hmmsearch/forward_canonical.hpp): the SSE4.1 parser equals it bit for
// bit; it is within the SIMD tolerance of the textbook reference; the wider parsers are
// within the tolerance of it. Random corpus (every target, the 50,000-residue ones
// included) and the tutorial models on the database.

struct CanonicalTally {
  int targets = 0, finite = 0, rescaled = 0;
  double worst_reference = 0;     // |canonical - reference| in tolerances
  double worst_wide[2] = {0, 0};  // |avx2 / avx512 - canonical| in tolerances
};

double in_tolerances(float a, float b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return 0;
  return std::fabs(double{a} - b) /
         (kForwardAbsoluteTolerance + kForwardRelativeTolerance * std::fabs(b));
}

// Every check of one target; the failures go to `failures` (at most kMaxReportedFailures).
void check_canonical(const TestModel& model, SimdFilterKernels* sse41,
                     std::vector<std::unique_ptr<SimdFilterKernels>>& wide,
                     const std::vector<Residue>& target, const std::string& label,
                     CanonicalTally& tally, int& failures) {
  const Residue* dsq = target.data();
  const int L = static_cast<int>(target.size());
  const float canonical = forward_canonical(model.profile.forward, dsq, L);
  ++tally.targets;
  if (std::isfinite(canonical)) ++tally.finite;
  const auto fail = [&](const std::string& what, float got) {
    if (failures++ >= kMaxReportedFailures) return;
    std::ostringstream out;
    out.precision(9);
    out << what << ": " << got << ", canonical " << canonical << "\n  model: " << model.label
        << "\n  target: " << label;
    ADD_FAILURE() << out.str();
  };
  if (sse41 != nullptr) {
    const float simd = sse41->forward_simd(dsq, L);
    if (!same_bits(simd, canonical)) fail("sse4.1 parser", simd);
  }
  const float reference = forward_parser_reference(model.profile.forward, dsq, L);
  if (!within_forward_tolerance(canonical, reference)) fail("forward_parser_reference", reference);
  tally.worst_reference = std::max(tally.worst_reference, in_tolerances(canonical, reference));
  for (std::size_t j = 0; j < wide.size(); ++j) {
    const float simd = wide[j]->forward_simd(dsq, L);
    if (!within_forward_tolerance(simd, canonical))
      fail(std::string(isa_name(wide[j]->isa())), simd);
    tally.worst_wide[j] = std::max(tally.worst_wide[j], in_tolerances(simd, canonical));
  }
}

void check_canonical_corpus(const std::vector<const TestModel*>& models,
                            const std::vector<std::vector<const std::vector<Residue>*>>& targets,
                            const std::vector<std::vector<std::string>>& labels) {
  CanonicalTally tally;
  int failures = 0;
  const bool have_sse41 = cpu_supports(Isa::sse41);
  for (std::size_t m = 0; m < models.size(); ++m) {
    std::unique_ptr<SimdFilterKernels> sse41;
    if (have_sse41) sse41 = std::make_unique<SimdFilterKernels>(models[m]->profile, Isa::sse41);
    std::vector<std::unique_ptr<SimdFilterKernels>> wide;
    for (Isa isa : {Isa::avx2, Isa::avx512}) {
      if (cpu_supports(isa))
        wide.push_back(std::make_unique<SimdFilterKernels>(models[m]->profile, isa));
    }
    for (std::size_t t = 0; t < targets[m].size(); ++t) {
      check_canonical(*models[m], sse41.get(), wide, *targets[m][t], labels[m][t], tally, failures);
    }
  }
  std::cout << "[ canonical] " << tally.targets << " targets (" << tally.finite
            << " finite scores); sse4.1 " << (have_sse41 ? "bit for bit" : "not run")
            << "; worst error of the reference " << tally.worst_reference << ", of avx2 "
            << tally.worst_wide[0] << ", of avx512 " << tally.worst_wide[1] << " of the tolerance"
            << std::endl;
  EXPECT_GT(tally.finite, 0);
}

TEST(CanonicalForward, RandomModelsSse41BitForBitOthersWithinTolerance) {
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  const Corpus& corpus = random_corpus();
  std::vector<const TestModel*> models;
  std::vector<std::vector<const std::vector<Residue>*>> targets(corpus.models.size());
  std::vector<std::vector<std::string>> labels(corpus.models.size());
  for (const TestModel& m : corpus.models) models.push_back(&m);
  for (const TestCase& c : corpus.cases) {
    targets[c.model].push_back(&c.dsq);
    labels[c.model].push_back(c.label);
  }
  check_canonical_corpus(models, targets, labels);
}

TEST(CanonicalForward, TutorialModelsSse41BitForBitOthersWithinTolerance) {
  const Tutorial& t = tutorial();
  if (t.models.empty())
    GTEST_SKIP() << "HMMER tutorial models or MMseqs2 example data not installed";
  std::vector<const TestModel*> models;
  std::vector<std::vector<const std::vector<Residue>*>> targets(t.models.size());
  std::vector<std::vector<std::string>> labels(t.models.size());
  for (std::size_t m = 0; m < t.models.size(); ++m) {
    models.push_back(&t.models[m]);
    for (std::size_t s = 0; s < t.sequences.size(); s += 3) {  // the reference is the slow part
      targets[m].push_back(&t.sequences[s].residues);
      labels[m].push_back(t.sequences[s].name);
    }
  }
  check_canonical_corpus(models, targets, labels);
}

// The canonical score does not depend on the caller's denormal mode, and leaves it as it
// was: with FTZ/DAZ set or clear around the call, the same bits and the same MXCSR after.
TEST(CanonicalForward, CallersDenormalModeNeitherMattersNorChanges) {
  // MXCSR without its six sticky exception flags: the mode bits.
  const auto control_register = [] { return _mm_getcsr() & ~0x3Fu; };
  const auto set_control_register = [](unsigned mode) { _mm_setcsr(mode); };
  const Corpus& corpus = random_corpus();
  const unsigned saved = control_register();
  int checked = 0;
  for (const TestCase& c : corpus.cases) {
    if (c.dsq.size() > 5000 || checked >= 200) continue;
    ++checked;
    const SearchProfile& p = corpus.models[c.model].profile;
    const int L = static_cast<int>(c.dsq.size());
    const unsigned plain = saved & ~0x8040u;
    set_control_register(plain);
    const float a = forward_canonical(p.forward, c.dsq.data(), L);
    EXPECT_EQ(control_register(), plain);
    set_control_register(plain | 0x8040u);
    const float b = forward_canonical(p.forward, c.dsq.data(), L);
    EXPECT_EQ(control_register(), plain | 0x8040u);
    set_control_register(saved);
    ASSERT_TRUE(same_bits(a, b)) << corpus.models[c.model].label << " " << c.label;
  }
}

// ---------------------------------------------------------------------------
// The corpus reaches what the kernels must get right: D->D chains decide some Viterbi
// scores, and HMMER's skipping rule decides some (scalar references only).

TEST(SimdCorpus, DeleteChainsAndTheirSkippingRuleMatter) {
  SCOPED_TRACE("DUET_TEST_SEED=" + std::to_string(test_seed()));
  const Corpus& corpus = random_corpus();
  int chains_matter = 0, rule_matters = 0, checked = 0;
  for (const TestCase& c : corpus.cases) {
    if (c.dsq.size() > 5000) continue;
    const SearchProfile& p = corpus.models[c.model].profile;
    const Residue* dsq = c.dsq.data();
    const int L = static_cast<int>(c.dsq.size());
    const FilterScore actual = viterbi_filter_reference(p.viterbi, dsq, L);
    ViterbiScores no_chains = p.viterbi;
    std::fill(no_chains.dd.begin(), no_chains.dd.end(), std::int16_t{-32768});
    ViterbiScores always = p.viterbi;
    always.dd_bound = 32767;
    chains_matter += !same_score(viterbi_filter_reference(no_chains, dsq, L), actual);
    rule_matters += !same_score(viterbi_filter_reference(always, dsq, L), actual);
    ++checked;
  }
  std::cout << "[ corpus   ] of " << checked << " targets, D->D chains change " << chains_matter
            << " Viterbi scores; evaluating them on every row would change " << rule_matters
            << std::endl;
  EXPECT_GT(chains_matter, 0);
  EXPECT_GT(rule_matters, 0);
}

}  // namespace
}  // namespace duet::simd
