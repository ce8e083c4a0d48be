// The GPU kernels of hmmsearch (src/device/hmmsearch/hmm_gpu.hpp) against the scalar references,
// and whole searches with and without the GPU. Labelled `gpu`; where no GPU is present
// the device tests are skipped with a message (the layout round trips still run).
// Random models and targets print their seed; DUET_TEST_SEED replays one.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <numeric>
#include <optional>
#include <random>

#include "app/hmmsearch/search.hpp"
#include "core/hmmsearch/cascade.hpp"
#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/length_terms.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"
#include "core/text_reader.hpp"
#include "device/gpu_info.hpp"
#include "device/hmmsearch/hmm_gpu.hpp"
#include "device/hmmsearch/hmm_gpu_timing.hpp"
#include "device/hmmsearch/jit_sources.hpp"
#include "device/jit_cache.hpp"
#include "device/nvrtc_jit.hpp"
#include "gpu_test_support.hpp"
#include "search_compare.hpp"
#include "simd_test_support.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

using simd_test::test_seed;

using gpu_test::profile_of;

// ---- layouts (host only) ----

TEST(GpuLayouts, RoundTripOnRandomModels) {
  std::mt19937_64 rng(test_seed() ^ 0x1a);
  for (int M : {1, 2, 17, 128, 129, 256, 257, 511, 512, 513, 1500, 3000}) {
    for (const Alphabet* abc : {&Alphabet::amino(), &Alphabet::dna()}) {
      const HmmModel hmm = simd_test::random_hmm(rng, *abc, M, simd_test::random_style(rng));
      const SearchProfile p = profile_of(hmm);
      for (int nodes : {16, 32}) {
        const device::MsvDeviceLayout ml =
            device::build_msv_device_layout(p.msv, device::msv_group_threads(M), nodes);
        EXPECT_EQ(device::msv_costs_from_device_layout(ml), p.msv.cost)
            << "M=" << M << " nodes " << nodes;
      }
      const device::ViterbiDeviceLayout vl = device::build_viterbi_device_layout(p.viterbi);
      const ViterbiScores back = device::viterbi_scores_from_device_layout(vl, p.viterbi.scale);
      EXPECT_EQ(back.match, p.viterbi.match) << "M=" << M;
      EXPECT_EQ(back.bm, p.viterbi.bm);
      EXPECT_EQ(back.mm, p.viterbi.mm);
      EXPECT_EQ(back.im, p.viterbi.im);
      EXPECT_EQ(back.dm, p.viterbi.dm);
      EXPECT_EQ(back.md, p.viterbi.md);
      EXPECT_EQ(back.mi, p.viterbi.mi);
      EXPECT_EQ(back.ii, p.viterbi.ii);
      EXPECT_EQ(back.dd, p.viterbi.dd);
      EXPECT_EQ(back.dd_bound, p.viterbi.dd_bound);
      EXPECT_EQ(back.e_loop, p.viterbi.e_loop);
      EXPECT_EQ(back.e_move, p.viterbi.e_move);
    }
  }
}

// The strip kernel's interleaved tables: every node's emissions and record where
// hmm_gpu.hpp says, pads past M; and random models have no positive transition, so the
// kernel tests below run the strip kernel (the engine falls back to the warp kernel
// otherwise).
TEST(GpuLayouts, StripTablesPlaceEveryNode) {
  std::mt19937_64 rng(test_seed() ^ 0x1b);
  for (int M : {1, 5, 127, 128, 129, 300, 513, 1024}) {
    const HmmModel hmm =
        simd_test::random_hmm(rng, Alphabet::amino(), M, simd_test::random_style(rng));
    const device::ViterbiDeviceLayout vl =
        device::build_viterbi_device_layout(profile_of(hmm).viterbi);
    EXPECT_TRUE(device::viterbi_transitions_nonpositive(vl)) << "M=" << M;
    for (int S : {4, 8, 12, 16, 24, 32}) {
      if (32 * S < M) {
        EXPECT_THROW(device::viterbi_strip_records(vl, S), std::invalid_argument);
        continue;
      }
      const std::vector<std::int32_t> e = device::viterbi_strip_emissions(vl, S);
      const std::vector<std::int16_t> r = device::viterbi_strip_records(vl, S);
      ASSERT_EQ(e.size(), static_cast<std::size_t>(vl.Kp) * 32 * S);
      ASSERT_EQ(r.size(), static_cast<std::size_t>(32 * S * device::kViterbiNodeFields));
      const std::size_t row = static_cast<std::size_t>(M) + 1;
      for (int lane = 0; lane < 32; ++lane) {
        for (int j = 0; j < S; ++j) {
          const int k = lane * S + j + 1;
          for (int x = 0; x < vl.Kp; ++x) {
            const std::size_t at =
                ((static_cast<std::size_t>(x) * (S / 4) + j / 4) * 32 + lane) * 4 + j % 4;
            EXPECT_EQ(e[at], k <= M ? std::int32_t{vl.match[x * row + k]}
                                    : device::kViterbiStripPadEmission)
                << "M=" << M << " S=" << S << " k=" << k << " x=" << x;
          }
          for (int f = 0; f < device::kViterbiNodeFields; ++f) {
            const std::size_t at =
                (static_cast<std::size_t>(j) * 32 + lane) * device::kViterbiNodeFields + f;
            EXPECT_EQ(r[at], k <= M ? vl.nodes[k * device::kViterbiNodeFields + f] : -32768)
                << "M=" << M << " S=" << S << " k=" << k << " field " << f;
          }
        }
      }
      if (HasFailure()) return;
    }
  }
}

// ---- kernels against the references ----

struct TargetSet {
  std::vector<std::vector<Residue>> seqs;
  std::vector<device::GpuTarget> view() const {
    std::vector<device::GpuTarget> v;
    for (const auto& s : seqs) v.push_back({s.data(), static_cast<int>(s.size())});
    return v;
  }
};

// Real sequences from the MMseqs2 example database, random codes of every kind (lengths
// 0, 1 and more), sequences sampled from the model (strong hits: the J state and
// overflow), the consensus repeated (overflow) and with deletions (D->D paths).
TargetSet targets_for(std::mt19937_64& rng, const HmmModel& hmm, int database_count) {
  TargetSet t;
  static const auto amino_db =
      simd_test::read_sequences(simd_test::kMmseqsDatabase, Alphabet::amino(), 3000);
  if (hmm.alphabet == &Alphabet::amino()) {
    std::uniform_int_distribution<std::size_t> pick(0, amino_db.empty() ? 0 : amino_db.size() - 1);
    for (int i = 0; i < database_count && !amino_db.empty(); ++i)
      t.seqs.push_back(amino_db[pick(rng)].residues);
  }
  std::uniform_int_distribution<int> length(1, 800);
  for (int L : {0, 1, 2, 3}) t.seqs.push_back(simd_test::random_codes(rng, *hmm.alphabet, L));
  for (int i = 0; i < 40; ++i)
    t.seqs.push_back(simd_test::random_codes(rng, *hmm.alphabet, length(rng)));
  for (int i = 0; i < 40; ++i) {
    t.seqs.push_back(simd_test::sampled_from_model(rng, hmm, std::max(1, hmm.M / 2 + length(rng)),
                                                   0.05 * (i % 4)));
  }
  t.seqs.push_back(simd_test::consensus_repeated(hmm, 3 * hmm.M + 5));
  t.seqs.push_back(simd_test::consensus_repeated(hmm, std::max(1, hmm.M / 3)));
  for (int gaps : {1, 3, 8}) t.seqs.push_back(simd_test::consensus_with_deletions(rng, hmm, gaps));
  std::shuffle(t.seqs.begin(), t.seqs.end(), rng);
  return t;
}

void expect_same(const FilterScore& gpu, const FilterScore& ref, const std::string& what) {
  EXPECT_EQ(gpu.overflow, ref.overflow) << what;
  EXPECT_EQ(0, std::memcmp(&gpu.nats, &ref.nats, sizeof(float)))
      << what << ": gpu " << gpu.nats << " reference " << ref.nats;
}

void check_model(const HmmModel& hmm, std::mt19937_64& rng, device::GpuKernelChoice choice,
                 int database_count, const std::string& what) {
  const SearchProfile p = profile_of(hmm);
  const TargetSet targets = targets_for(rng, hmm, database_count);
  device::HmmGpuEngine engine(0, p, choice);
  const device::GpuKernelChoice used = engine.kernel_choice();
  EXPECT_EQ(used.msv_group_threads, choice.msv_group_threads == 0 ? device::msv_group_threads(hmm.M)
                                                                  : choice.msv_group_threads)
      << what;
  EXPECT_EQ(used.viterbi, choice.viterbi) << what;
  if (choice.msv_nodes_per_thread != 0) {
    EXPECT_EQ(used.msv_nodes_per_thread, choice.msv_nodes_per_thread) << what;
  }
  const std::vector<FilterScore> msv = engine.msv(targets.view());
  const std::vector<FilterScore> vit = engine.viterbi(targets.view());
  ASSERT_EQ(msv.size(), targets.seqs.size());
  ASSERT_EQ(vit.size(), targets.seqs.size());
  int failures = 0;
  for (std::size_t i = 0; i < targets.seqs.size() && failures < 5; ++i) {
    const auto& s = targets.seqs[i];
    const int L = static_cast<int>(s.size());
    const std::string where = what + " target " + std::to_string(i) + " L=" + std::to_string(L);
    const FilterScore m = msv_filter_reference(p.msv, s.data(), L);
    const FilterScore v = viterbi_filter_reference(p.viterbi, s.data(), L);
    expect_same(msv[i], m, where + " MSV");
    expect_same(vit[i], v, where + " Viterbi");
    if (::testing::Test::HasFailure()) ++failures;
  }
}

void check_model(const HmmModel& hmm, std::mt19937_64& rng, device::GpuStrategy strategy,
                 int database_count, const std::string& what) {
  check_model(hmm, rng, device::GpuKernelChoice{0, strategy}, database_count, what);
}

TEST(GpuKernels, MatchReferenceOnRandomModels) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x2b);
  for (int M : {1, 2, 5, 31, 100, 128, 129, 200, 256, 257, 400, 511, 512, 513, 1000, 2100, 3000}) {
    for (const Alphabet* abc : {&Alphabet::amino(), &Alphabet::dna()}) {
      const HmmModel hmm = simd_test::random_hmm(rng, *abc, M, simd_test::random_style(rng));
      for (const auto strategy :
           {device::GpuStrategy::warp_groups, device::GpuStrategy::warp_strip}) {
        check_model(hmm, rng, strategy, M > 1000 ? 60 : 200,
                    "M=" + std::to_string(M) + (abc == &Alphabet::dna() ? " dna " : " amino ") +
                        device::gpu_strategy_name(strategy));
        if (HasFailure()) return;
      }
    }
  }
}

// A target of 2^24 + 1 residues (from 2^24 on the length terms are computed in double,
// core/hmmsearch/length_terms.hpp; the engine takes them by length without a table that long)
// beside a short one: MSV, the Viterbi filter and the canonical Forward bit for bit, on a small
// model that keeps the references (L x M cells) affordable.
TEST(GpuKernels, LongTargetMatchesReference) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x4d);
  const HmmModel hmm =
      simd_test::random_hmm(rng, Alphabet::amino(), 20, simd_test::random_style(rng));
  const SearchProfile p = profile_of(hmm);
  std::vector<Residue> long_target = simd_test::random_codes(rng, Alphabet::amino(), (1 << 24) + 1);
  const std::vector<Residue> domain = simd_test::sampled_from_model(rng, hmm, 3 * hmm.M, 0.0);
  std::copy(domain.begin(), domain.end(), long_target.begin() + (1 << 23));
  const std::vector<Residue> short_target = simd_test::random_codes(rng, Alphabet::amino(), 300);
  const std::vector<device::GpuTarget> targets = {
      {long_target.data(), static_cast<int>(long_target.size())},
      {short_target.data(), static_cast<int>(short_target.size())}};
  device::HmmGpuEngine engine(0, p);
  const std::vector<FilterScore> msv = engine.msv(targets);
  const std::vector<FilterScore> vit = engine.viterbi(targets);
  const std::vector<float> canonical = engine.canonical_forward(targets);
  CanonicalForward cpu(p.forward);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const int L = targets[i].length;
    const std::string where = "L=" + std::to_string(L);
    expect_same(msv[i], msv_filter_reference(p.msv, targets[i].residues, L), where + " MSV");
    expect_same(vit[i], viterbi_filter_reference(p.viterbi, targets[i].residues, L),
                where + " Viterbi");
    const float ref = cpu.score(targets[i].residues, L);
    EXPECT_TRUE(std::isfinite(ref)) << where;
    EXPECT_EQ(0, std::memcmp(&canonical[i], &ref, sizeof(float)))
        << where << " canonical Forward: gpu " << canonical[i] << " cpu " << ref;
  }
}

TEST(GpuKernels, ThreadPerTargetStrategyMatchesReference) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x3c);
  for (int M : {1, 40, 300, 1200}) {
    const HmmModel hmm =
        simd_test::random_hmm(rng, Alphabet::amino(), M, simd_test::random_style(rng));
    check_model(hmm, rng, device::GpuStrategy::thread_per_target, 100,
                "thread strategy M=" + std::to_string(M));
    if (HasFailure()) return;
  }
}

// Every explicit kernel choice (the kernel-choice table's rows can name any) gives the
// references' scores, at lengths on both sides of the tile sizes of 8, 16 and 32 threads
// with 16 and 32 MSV nodes per thread.
TEST(GpuKernels, EveryExplicitKernelChoiceMatchesReference) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x6f);
  for (int M : {1, 16, 100, 128, 129, 256, 257, 513, 1024, 1025, 1500, 3000}) {
    const HmmModel hmm =
        simd_test::random_hmm(rng, Alphabet::amino(), M, simd_test::random_style(rng));
    for (int group : {8, 16, 32}) {
      for (const auto strategy :
           {device::GpuStrategy::warp_groups, device::GpuStrategy::thread_per_target,
            device::GpuStrategy::warp_strip}) {
        check_model(hmm, rng, device::GpuKernelChoice{group, strategy}, 60,
                    "M=" + std::to_string(M) + " group " + std::to_string(group) + " " +
                        device::gpu_strategy_name(strategy));
        if (HasFailure()) return;
      }
      for (int nodes : {16, 32}) {
        check_model(hmm, rng,
                    device::GpuKernelChoice{group, device::GpuStrategy::warp_groups, nodes}, 60,
                    "M=" + std::to_string(M) + " group " + std::to_string(group) + " nodes " +
                        std::to_string(nodes));
        if (HasFailure()) return;
      }
    }
  }
  const SearchProfile p =
      profile_of(simd_test::random_hmm(rng, Alphabet::amino(), 50, simd_test::random_style(rng)));
  EXPECT_THROW(
      device::HmmGpuEngine(0, p, device::GpuKernelChoice{12, device::GpuStrategy::warp_groups}),
      std::invalid_argument);
  EXPECT_THROW(
      device::HmmGpuEngine(0, p, device::GpuKernelChoice{8, device::GpuStrategy::warp_groups, 24}),
      std::invalid_argument);
}

// The timing library of `duet tune` and the kernel bench checks its scores.
TEST(GpuKernels, TimingChecksItsScores) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x70);
  const HmmModel hmm =
      simd_test::random_hmm(rng, Alphabet::amino(), 300, simd_test::random_style(rng));
  const TargetSet targets = targets_for(rng, hmm, 500);
  const auto view = targets.view();
  const device::HmmKernelTiming t = device::time_hmm_kernels(
      0, profile_of(hmm), {16, device::GpuStrategy::thread_per_target}, view, view, 40);
  EXPECT_GT(t.msv_ms, 0);
  EXPECT_GT(t.viterbi_ms, 0);
  // Every (n / samples + 1)-th score of each kernel is checked (n: the targets, more with
  // the mmseqs2 example database than without it).
  const std::size_t every = view.size() / 40 + 1;
  EXPECT_EQ(t.checked, static_cast<int>(2 * ((view.size() + every - 1) / every)));
  EXPECT_GE(t.checked, 60);
  EXPECT_EQ(t.wrong, 0);
}

TEST(GpuKernels, MatchReferenceOnTutorialModels) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x4d);
  int found = 0;
  for (const char* name : {"Pkinase.hmm", "fn3.hmm", "globins4.hmm", "MADE1.hmm"}) {
    const std::string path = std::string(simd_test::kTutorialDir) + name;
    if (!std::ifstream(path)) continue;
    ++found;
    for (const HmmModel& hmm : read_hmm_file(path)) {
      for (const auto strategy :
           {device::GpuStrategy::warp_groups, device::GpuStrategy::warp_strip}) {
        check_model(hmm, rng, strategy, 1500,
                    std::string(name) + " " + device::gpu_strategy_name(strategy));
      }
    }
  }
  EXPECT_GT(found, 0) << "no tutorial models in " << simd_test::kTutorialDir
                      << " (Debian package hmmer-examples)";
}

// Scores do not depend on a target's neighbours in a batch, nor on the slot.
TEST(GpuKernels, BatchesAndSlotsAgree) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x5e);
  const HmmModel hmm =
      simd_test::random_hmm(rng, Alphabet::amino(), 700, simd_test::random_style(rng));
  const SearchProfile p = profile_of(hmm);
  const TargetSet targets = targets_for(rng, hmm, 300);
  device::HmmGpuEngine engine(0, p);
  const auto all = targets.view();
  engine.submit_msv(1, all.data() + 10, 50);
  engine.submit_msv(0, all.data(), all.size());
  const std::vector<FilterScore> whole = engine.wait_msv(0);
  const std::vector<FilterScore> part = engine.wait_msv(1);
  for (int i = 0; i < 50; ++i)
    expect_same(part[i], whole[10 + i], "slot 1 target " + std::to_string(i));
}

// ---- database blocks resident on the GPU (GpuResidentStore) ----

struct EngineScores {
  std::vector<FilterScore> msv, vit;
  std::vector<float> forward, canonical;
  device::GpuKernelTimes times;
};

// Every stage on every target of one batch (slot 0), the blocks `spans` given.
EngineScores score_batch(device::HmmGpuEngine& engine, const std::vector<device::GpuTarget>& all,
                         const std::vector<device::GpuBlockSpan>& spans) {
  EngineScores s;
  engine.submit_msv(0, all.data(), all.size(), {}, spans.data(), spans.size());
  s.msv = engine.wait_msv(0);
  std::vector<int> every(all.size());
  std::iota(every.begin(), every.end(), 0);
  engine.submit_viterbi(0, every.data(), every.size());
  s.vit = engine.wait_viterbi(0);
  engine.submit_forward(0, every.data(), every.size());
  s.forward = engine.wait_forward(0);
  engine.submit_canonical_forward(0, every.data(), every.size());
  s.canonical = engine.wait_canonical_forward(0);
  s.times = engine.kernel_times(0);
  return s;
}

void expect_same_scores(const EngineScores& a, const EngineScores& b, const std::string& what) {
  ASSERT_EQ(a.msv.size(), b.msv.size()) << what;
  for (std::size_t i = 0; i < a.msv.size(); ++i) {
    const std::string where = what + " target " + std::to_string(i);
    expect_same(a.msv[i], b.msv[i], where + " MSV");
    expect_same(a.vit[i], b.vit[i], where + " Viterbi");
    EXPECT_EQ(0, std::memcmp(&a.forward[i], &b.forward[i], sizeof(float))) << where << " Forward";
    EXPECT_EQ(0, std::memcmp(&a.canonical[i], &b.canonical[i], sizeof(float)))
        << where << " canonical Forward: " << a.canonical[i] << " vs " << b.canonical[i];
    if (::testing::Test::HasFailure()) return;
  }
}

// An engine given another model (set_model, as a GPU feeder runs the models of a pass in
// turn on one engine) scores every stage as a fresh engine of that model, bit for bit,
// models of other lengths and kernels included, and back again.
TEST(GpuKernels, SetModelScoresAsAFreshEngine) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x5d);
  std::vector<SearchProfile> profiles;
  std::vector<HmmModel> hmms;
  for (int M : {40, 700, 260}) {
    hmms.push_back(simd_test::random_hmm(rng, Alphabet::amino(), M, simd_test::random_style(rng)));
    profiles.push_back(profile_of(hmms.back()));
  }
  const TargetSet targets = targets_for(rng, hmms[1], 200);
  const std::vector<device::GpuTarget> all = targets.view();
  device::HmmGpuEngine switching(0, profiles[0]);
  const std::size_t order[] = {0, 1, 2, 0};
  for (std::size_t step = 0; step < std::size(order); ++step) {
    const std::size_t k = order[step];
    const std::string what = "step " + std::to_string(step) + ", model " + std::to_string(k) +
                             " (M " + std::to_string(profiles[k].M) + ")";
    if (step > 0) switching.set_model(profiles[k], {});
    device::HmmGpuEngine fresh(0, profiles[k]);
    expect_same_scores(score_batch(fresh, all, {}), score_batch(switching, all, {}), what);
  }
}

// Random models of the given lengths for a model set, each with the default kernel choice
// but an explicit one (8 threads, 32 nodes per thread) at `explicit_at` and the exact
// kernel only at `exact_only_at`, and targets drawn for the models at `sources` (so that
// some pairs pass and some need the exact kernel).
struct RandomModelSet {
  std::vector<HmmModel> hmms;
  std::vector<device::GpuKernelChoice> choices;
  std::vector<SearchProfile> profiles;
  TargetSet targets;
};
RandomModelSet random_model_set(std::mt19937_64& rng, const Alphabet& abc,
                                std::initializer_list<int> lengths, std::size_t explicit_at,
                                std::size_t exact_only_at,
                                std::initializer_list<std::size_t> sources) {
  RandomModelSet r;
  for (int M : lengths) {
    r.hmms.push_back(simd_test::random_hmm(rng, abc, M, simd_test::random_style(rng)));
    r.choices.emplace_back();
  }
  r.choices[explicit_at] = device::GpuKernelChoice{8, device::GpuStrategy::warp_groups, 32};
  r.choices[exact_only_at].msv_exact_only = true;
  for (const HmmModel& hmm : r.hmms) r.profiles.push_back(profile_of(hmm));
  for (std::size_t k : sources) {
    TargetSet some = targets_for(rng, r.hmms[k], 60);
    r.targets.seqs.insert(r.targets.seqs.end(), some.seqs.begin(), some.seqs.end());
  }
  return r;
}

// The MSV filter of a set of models in one go (set_models, submit_msv_models): every
// model's score of every target equals msv_filter_reference's, bit for bit, for models of
// every kernel shape, of several tiles (boundary columns), too long for shared memory, and
// with explicit choices; on both slots, with a second set and a smaller batch after a
// larger one; and with every model through the exact kernel (every register bucket of
// exact_chunks_bucket, at both sides of its bounds, and the rows in global memory). The Viterbi
// filter of (model, target) pairs of the set (submit_viterbi_models: the strip kernel of each width
// and the warp kernel for the models past 1,024 nodes) equals viterbi_filter_reference's, on a
// fifth of the pairs.
TEST(GpuKernels, ModelSetMatchesReference) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x7a);
  for (const Alphabet* abc : {&Alphabet::amino(), &Alphabet::dna()}) {
    const RandomModelSet r = random_model_set(rng, *abc,
                                              {1, 31, 100, 128, 129, 256, 257, 513, 1025, 2100,
                                               4200, 60, 300, 400, 900, 64, 65, 1536, 1537},
                                              11, 12, {2, 6, 11});
    std::vector<device::GpuKernelChoice> choices = r.choices;
    const std::vector<SearchProfile>& profiles = r.profiles;
    const TargetSet& targets = r.targets;
    const std::vector<device::GpuTarget> all = targets.view();
    device::HmmGpuEngine engine(0, profiles[0]);
    const auto check_set = [&](const std::vector<std::size_t>& members, int slot, std::size_t n,
                               const std::string& what) {
      std::vector<device::HmmGpuEngine::SetModel> set;
      for (std::size_t k : members) set.push_back({&profiles[k], choices[k]});
      engine.set_models(set.data(), set.size());
      ASSERT_EQ(engine.set_model_count(), members.size());
      engine.submit_msv_models(slot, all.data(), n);
      const std::vector<FilterScore> scores = engine.wait_msv_models(slot);
      ASSERT_EQ(scores.size(), members.size() * n) << what;
      int failures = 0;
      for (std::size_t m = 0; m < members.size(); ++m) {
        const SearchProfile& p = profiles[members[m]];
        for (std::size_t i = 0; i < n && failures < 5; ++i) {
          const auto& seq = targets.seqs[i];
          const FilterScore ref =
              msv_filter_reference(p.msv, seq.data(), static_cast<int>(seq.size()));
          expect_same(scores[m * n + i], ref,
                      what + ": model M=" + std::to_string(p.M) + " target " + std::to_string(i));
          if (HasFailure()) ++failures;
        }
      }
      if (failures == 0) {
        EXPECT_GT(engine.kernel_times(slot).msv_exact_targets, 0)
            << what << ": exact kernel unused";
      }
      std::vector<device::HmmGpuEngine::SetItem> items;
      for (std::size_t m = 0; m < members.size(); ++m) {
        for (std::size_t i = m % 5; i < n; i += 5)
          items.push_back({static_cast<int>(m), static_cast<int>(i)});
      }
      engine.submit_viterbi_models(slot, items.data(), items.size());
      const std::vector<FilterScore> vit = engine.wait_viterbi_models(slot);
      ASSERT_EQ(vit.size(), items.size()) << what;
      for (std::size_t j = 0; j < items.size() && failures < 5; ++j) {
        const SearchProfile& p = profiles[members[static_cast<std::size_t>(items[j].model)]];
        const auto& seq = targets.seqs[static_cast<std::size_t>(items[j].target)];
        const FilterScore ref =
            viterbi_filter_reference(p.viterbi, seq.data(), static_cast<int>(seq.size()));
        expect_same(vit[j], ref,
                    what + ": Viterbi, model M=" + std::to_string(p.M) + " target " +
                        std::to_string(items[j].target));
        if (HasFailure()) ++failures;
      }
      const device::HmmGpuEngine::SetItem outside{static_cast<int>(members.size()), 0};
      EXPECT_THROW(engine.submit_viterbi_models(slot, &outside, 1), std::invalid_argument);
    };
    std::vector<std::size_t> every(profiles.size());
    std::iota(every.begin(), every.end(), std::size_t{0});
    const std::string alphabet = abc == &Alphabet::dna() ? "dna" : "amino";
    check_set(every, 0, all.size(), alphabet + " every model, slot 0");
    if (HasFailure()) return;
    check_set({12, 3, 9, 3}, 1, all.size() / 3, alphabet + " four models, slot 1");
    if (HasFailure()) return;
    check_set(every, 1, all.size(), alphabet + " every model again, slot 1");
    if (HasFailure()) return;
    for (device::GpuKernelChoice& choice : choices) choice.msv_exact_only = true;
    check_set(every, 0, all.size(), alphabet + " every model through the exact kernel");
    if (HasFailure()) return;
  }
}

// A gated model-set launch (the MSV stage decided on the device, the passing pairs
// compacted there), and a gated launch of one model, return exactly the pairs whose
// decide_after_msv on the reference MSV score does not stop them, by model then target, each with
// the reference's score: every kernel shape, the exact kernel, empty targets and overflows; HMMER's
// F1, F1 = 1 (every non-empty pair passes: more than the share copied back with the count), and F1
// set to one pair's own P-value and the double below it (that pair on the boundary).
TEST(GpuKernels, ModelSetGatePassesWhatTheCascadePasses) {
  REQUIRE_GPU();
  const std::uint64_t seed = test_seed() ^ 0x9a7e;
  std::mt19937_64 rng(seed);
  const RandomModelSet r = random_model_set(
      rng, Alphabet::amino(), {1, 31, 100, 129, 257, 513, 1025, 2100, 60, 300}, 8, 9, {2, 4, 9});
  const std::vector<device::GpuKernelChoice>& choices = r.choices;
  const std::vector<SearchProfile>& profiles = r.profiles;
  const std::vector<device::GpuTarget> all = r.targets.view();
  const std::size_t n = all.size();
  // The reference's MSV score of every pair.
  std::vector<FilterScore> ref(profiles.size() * n);
  for (std::size_t m = 0; m < profiles.size(); ++m) {
    for (std::size_t i = 0; i < n; ++i)
      ref[m * n + i] = msv_filter_reference(profiles[m].msv, all[i].residues, all[i].length);
  }
  std::vector<float> null_nats(n);
  for (std::size_t i = 0; i < n; ++i) null_nats[i] = null_score(all[i].length);
  // One pair's P-value: a model's score on a sampled target.
  std::vector<double> thresholds = {0.02, 1.0};
  for (std::size_t i = 0; i < n && thresholds.size() < 4; ++i) {
    FilterScore score = ref[3 * n + i];
    TargetScores out;
    CascadeSettings every;
    every.F1 = 1.0;
    if (score.overflow || all[i].length == 0) continue;
    decide_after_msv(profiles[3], every, all[i].length, score, out);
    if (out.pvalue > 1e-3) continue;
    thresholds.push_back(out.pvalue);
    thresholds.push_back(std::nextafter(out.pvalue, 0.0));
  }
  ASSERT_EQ(thresholds.size(), 4u) << "no target scores well against model 3; seed " << seed;
  device::HmmGpuEngine engine(0, profiles[0]);
  int slot = 0;
  for (const double F1 : thresholds) {
    CascadeSettings settings;
    settings.F1 = F1;
    std::vector<device::HmmGpuEngine::SetModel> set;
    for (std::size_t k = 0; k < profiles.size(); ++k)
      set.push_back({&profiles[k], choices[k], msv_pass_bits(profiles[k], settings)});
    engine.set_models(set.data(), set.size());
    engine.submit_msv_models(slot, all.data(), n, {}, nullptr, 0, &null_nats);
    const std::vector<device::HmmGpuEngine::MsvPass> passes = engine.wait_msv_passes(slot);
    EXPECT_THROW(engine.wait_msv_models(slot), std::logic_error);
    const std::string what = "F1 " + std::to_string(F1) + " seed " + std::to_string(seed);
    std::size_t at = 0, want_count = 0;
    for (std::size_t m = 0; m < profiles.size(); ++m) {
      for (std::size_t i = 0; i < n; ++i) {
        FilterScore score = ref[m * n + i];
        TargetScores out;
        const bool want =
            decide_after_msv(profiles[m], settings, all[i].length, score, out) != NextStage::none;
        const bool got = at < passes.size() && passes[at].model == static_cast<int>(m) &&
                         passes[at].target == static_cast<int>(i);
        ASSERT_EQ(got, want) << what << ": model M=" << profiles[m].M << " target " << i
                             << " length " << all[i].length;
        if (!got) continue;
        expect_same(passes[at].score, ref[m * n + i],
                    what + ": model M=" + std::to_string(profiles[m].M));
        ++at;
        ++want_count;
      }
    }
    EXPECT_EQ(at, passes.size()) << what;
    EXPECT_GT(want_count, 0u) << what;
    if (F1 < 1.0) {
      EXPECT_LT(want_count, profiles.size() * n) << what;
    }
    // One model's gated launch (submit_msv): the same test, the targets as model 0's.
    for (const std::size_t k : {std::size_t{3}, std::size_t{7}}) {
      engine.set_model(profiles[k], choices[k]);
      engine.submit_msv(slot, all.data(), n, {}, nullptr, 0, &null_nats,
                        msv_pass_bits(profiles[k], settings));
      const std::vector<device::HmmGpuEngine::MsvPass> one = engine.wait_msv_passes(slot);
      EXPECT_THROW(engine.wait_msv(slot), std::logic_error);
      std::size_t got = 0;
      for (std::size_t i = 0; i < n; ++i) {
        FilterScore score = ref[k * n + i];
        TargetScores out;
        if (decide_after_msv(profiles[k], settings, all[i].length, score, out) == NextStage::none)
          continue;
        ASSERT_LT(got, one.size()) << what << ": one model, M=" << profiles[k].M;
        ASSERT_EQ(one[got].model, 0) << what;
        ASSERT_EQ(one[got].target, static_cast<int>(i))
            << what << ": one model, M=" << profiles[k].M;
        expect_same(one[got].score, ref[k * n + i], what + ": one model");
        ++got;
      }
      EXPECT_EQ(got, one.size()) << what << ": one model, M=" << profiles[k].M;
    }
    slot = 1 - slot;
  }
  // No targets (a batch of one block leaves its second half empty): gated launches that
  // return no pairs; null scores of another count are refused before anything starts.
  const std::vector<float> none;
  engine.submit_msv(0, all.data(), 0, {}, nullptr, 0, &none, 0.0f);
  EXPECT_TRUE(engine.wait_msv_passes(0).empty());
  std::vector<device::HmmGpuEngine::SetModel> set = {{&profiles[0], choices[0], 0.0f}};
  engine.set_models(set.data(), set.size());
  engine.submit_msv_models(1, all.data(), 0, {}, nullptr, 0, &none);
  EXPECT_TRUE(engine.wait_msv_passes(1).empty());
  EXPECT_THROW(engine.submit_msv(0, all.data(), 3, {}, nullptr, 0, &none, 0.0f),
               std::invalid_argument);
  EXPECT_THROW(engine.submit_msv_models(1, all.data(), 3, {}, nullptr, 0, &none),
               std::invalid_argument);
}

// Each pass of a gated launch carries the bias filter's composition score computed on the
// device: bias_composition_score's bit for bit, or it is left to the host (NaN) for a small share
// of the passes. Real sequences, random codes of every kind, sampled targets, low-complexity runs
// (the biased state's ground) and a long target; amino and DNA models; a model set's launch and one
// model's.
TEST(GpuKernels, GatedPassesCarryTheBiasFilterScore) {
  REQUIRE_GPU();
  const std::uint64_t seed = test_seed() ^ 0xb1a5;
  std::mt19937_64 rng(seed);
  std::size_t computed = 0, left = 0;
  for (const Alphabet* abc : {&Alphabet::amino(), &Alphabet::dna()}) {
    std::vector<SearchProfile> profiles;
    std::vector<HmmModel> hmms;
    for (int M : {40, 200, 700}) {
      hmms.push_back(simd_test::random_hmm(rng, *abc, M, simd_test::random_style(rng)));
      profiles.push_back(profile_of(hmms.back()));
    }
    TargetSet targets = targets_for(rng, hmms[1], 400);
    std::uniform_int_distribution<int> code(0, abc->K() - 1);
    for (int period : {1, 2, 3}) {
      for (int L : {30, 300, 3000}) {
        std::vector<Residue> run(static_cast<std::size_t>(L));
        std::vector<Residue> unit(static_cast<std::size_t>(period));
        for (Residue& r : unit) r = static_cast<Residue>(code(rng));
        for (int i = 0; i < L; ++i)
          run[static_cast<std::size_t>(i)] = unit[static_cast<std::size_t>(i % period)];
        targets.seqs.push_back(std::move(run));
      }
    }
    targets.seqs.push_back(simd_test::random_codes(rng, *abc, 20000));
    const std::vector<device::GpuTarget> all = targets.view();
    const std::size_t n = all.size();
    std::vector<float> null_nats(n);
    for (std::size_t i = 0; i < n; ++i) null_nats[i] = null_score(all[i].length);
    CascadeSettings every;  // every non-empty pair passes MSV
    every.F1 = 1.0;
    const auto check = [&](const std::vector<device::HmmGpuEngine::MsvPass>& passes,
                           const std::vector<const SearchProfile*>& of_model,
                           const std::string& what) {
      std::size_t nonempty = 0;
      for (const auto& t : all) nonempty += t.length > 0 ? 1 : 0;
      EXPECT_EQ(passes.size(), nonempty * of_model.size()) << what << " seed " << seed;
      for (const auto& p : passes) {
        const device::GpuTarget& t = all[static_cast<std::size_t>(p.target)];
        const SearchProfile& profile = *of_model[static_cast<std::size_t>(p.model)];
        if (std::isnan(p.bias_composition)) {
          ++left;
          continue;
        }
        ++computed;
        const float host = bias_composition_score(profile.bias, t.residues, t.length);
        const float device = p.bias_composition;
        ASSERT_EQ(std::bit_cast<std::uint32_t>(device), std::bit_cast<std::uint32_t>(host))
            << what << ": model M=" << profile.M << " target " << p.target << " length " << t.length
            << " (device " << device << ", host " << host << "), seed " << seed;
      }
    };
    device::HmmGpuEngine engine(0, profiles[0]);
    std::vector<device::HmmGpuEngine::SetModel> set;
    std::vector<const SearchProfile*> of_model;
    for (const SearchProfile& p : profiles) {
      set.push_back({&p, device::resolve_kernel_choice({}, p.M), msv_pass_bits(p, every)});
      of_model.push_back(&p);
    }
    engine.set_models(set.data(), set.size());
    engine.submit_msv_models(0, all.data(), n, {}, nullptr, 0, &null_nats);
    check(engine.wait_msv_passes(0), of_model, std::string(abc->name()) + " model set");
    if (HasFailure()) return;
    engine.set_model(profiles[2], device::resolve_kernel_choice({}, profiles[2].M));
    engine.submit_msv(1, all.data(), n, {}, nullptr, 0, &null_nats,
                      msv_pass_bits(profiles[2], every));
    check(engine.wait_msv_passes(1), {&profiles[2]}, std::string(abc->name()) + " one model");
    if (HasFailure()) return;
  }
  // Rounding boundaries are rare: about 6e-8 of the rows, far under one pass in a hundred.
  std::printf("bias filter on the device: %zu passes computed, %zu left to the host\n", computed,
              left);
  EXPECT_GT(computed, 0u);
  EXPECT_LE(left * 100, computed) << "seed " << seed;
}

// A batch mixing targets read from the resident store (kept there by another engine, as
// by an earlier query model), targets kept now and targets uploaded gives every stage's
// scores of the same batch all uploaded, bit for bit; a block of a kept index but other
// sequences is not served from the store.
TEST(GpuResident, MixedBatchScoresAsAllUploaded) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x7e51);
  const HmmModel hmm =
      simd_test::random_hmm(rng, Alphabet::amino(), 300, simd_test::random_style(rng));
  const SearchProfile p = profile_of(hmm);
  TargetSet targets = targets_for(rng, hmm, 200);
  // Long strong hits: rescaled often, some past the GPU's record (their canonical score
  // is computed on the host, from the caller's residues when they came from the store).
  for (int times : {20, 40})
    targets.seqs.push_back(simd_test::consensus_repeated(hmm, times * hmm.M));
  const std::vector<device::GpuTarget> all = targets.view();
  const std::size_t n = all.size(), q = n / 4;
  std::int64_t block_residues[4] = {0, 0, 0, 0};
  for (std::size_t i = 0; i < n; ++i)
    block_residues[std::min<std::size_t>(i / q, 3)] += all[i].length;
  const auto span = [&](std::int64_t index, std::int64_t first_sequence) {
    return device::GpuBlockSpan{index, first_sequence, static_cast<std::size_t>(index) * q, q};
  };

  device::HmmGpuEngine plain(0, p);
  const EngineScores reference = score_batch(plain, all, {});
  EXPECT_EQ(reference.times.resident_residues, 0);

  device::GpuResidentStore store(0, 0);
  {
    device::HmmGpuEngine first(0, p, device::GpuKernelChoice{}, &store);
    const EngineScores kept = score_batch(first, all, {span(0, 0), span(2, 2 * q)});
    expect_same_scores(kept, reference, "blocks 0 and 2 kept");
    EXPECT_EQ(kept.times.resident_residues, 0);
    EXPECT_EQ(kept.times.kept_residues, block_residues[0] + block_residues[2]);
  }
  EXPECT_EQ(store.kept_blocks(), 2u);
  EXPECT_EQ(store.kept_bytes(), static_cast<std::uint64_t>(block_residues[0] + block_residues[2]));
  device::HmmGpuEngine second(0, p, device::GpuKernelChoice{}, &store);
  // Block 0 from the store, block 1 kept now, "block 2" with other sequences uploaded,
  // the last quarter (no block) uploaded.
  const EngineScores mixed = score_batch(second, all, {span(0, 0), span(1, q), span(2, 5)});
  expect_same_scores(mixed, reference, "mixed batch");
  EXPECT_EQ(mixed.times.resident_residues, block_residues[0]);
  EXPECT_EQ(mixed.times.kept_residues, block_residues[1]);
  EXPECT_EQ(mixed.times.uploaded_residues,
            block_residues[1] + block_residues[2] + block_residues[3]);
  std::cout << "canonical Forward on the host: " << mixed.times.canonical_cpu_targets
            << " targets\n";
  // Everything kept so far from the store, in another order of blocks.
  const EngineScores again = score_batch(second, all, {span(1, q), span(0, 0)});
  expect_same_scores(again, reference, "blocks 0 and 1 from the store");
  EXPECT_EQ(again.times.resident_residues, block_residues[0] + block_residues[1]);
}

// Three tutorial models in one search: results identical to the CPU's with the resident
// store off, on (auto) and too small for the database; with it on, the second and third
// models read residues from it.
TEST(GpuSearch, ResidentBlocksServeLaterModels) {
  REQUIRE_GPU();
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 6000);
  std::vector<HmmModel> models;
  for (const char* name : {"Pkinase.hmm", "fn3.hmm", "globins4.hmm"}) {
    std::vector<HmmModel> one = read_hmm_file(std::string(simd_test::kTutorialDir) + name);
    models.push_back(std::move(one.front()));
  }
  io::Config config;
  config.run.cpu = 4;
  app::HybridOptions cpu;
  cpu.gpu = app::HybridOptions::Gpu::off;
  const app::SearchRun reference = app::run_hmmsearch(models, db, config, cpu);
  for (const std::optional<std::uint64_t> budget :
       {std::optional<std::uint64_t>{0}, std::optional<std::uint64_t>{},
        std::optional<std::uint64_t>{100000}}) {
    for (auto mode : {app::HybridOptions::Gpu::only, app::HybridOptions::Gpu::auto_detect}) {
      app::HybridOptions gpu;
      gpu.gpu = mode;
      gpu.gpu_devices = std::vector<int>{0};
      gpu.block_residues = 40000;
      gpu.gpu_batch_blocks = 4;
      gpu.policy = scheduler::SplitPolicy::static_fraction;
      gpu.static_cpu_fraction = 0.5;
      gpu.gpu_resident = budget;
      // A pass per model: later passes read the blocks an earlier one kept (the models of
      // one pass run at once on the batch, each uploading what is not kept yet).
      gpu.models_per_pass = 1;
      const std::string what = std::string("resident ") +
                               (budget ? std::to_string(*budget) : std::string("auto")) +
                               (mode == app::HybridOptions::Gpu::only ? " gpu-only" : " hybrid");
      const app::SearchRun run = app::run_hmmsearch(models, db, config, gpu);
      test::expect_identical(reference, run, what);
      ASSERT_EQ(run.queries.size(), 3u);
      for (std::size_t q = 0; q < 3; ++q) {
        const app::QueryResult& r = run.queries[q];
        std::cout << what << " query " << q << ": resident " << r.gpu_resident_residues
                  << ", uploaded " << r.gpu_uploaded_residues << " (kept " << r.gpu_kept_residues
                  << ")\n";
        EXPECT_EQ(r.gpu_resident_residues + r.gpu_uploaded_residues, r.schedule.gpu_residues)
            << what << " query " << q;
      }
      const app::QueryResult& q0 = run.queries[0];
      if (budget == std::optional<std::uint64_t>{0}) {
        for (const auto& r : run.queries) {
          EXPECT_EQ(r.gpu_resident_residues, 0) << what;
          EXPECT_EQ(r.gpu_kept_residues, 0) << what;
        }
        continue;
      }
      EXPECT_EQ(q0.gpu_resident_residues, 0) << what;
      EXPECT_GT(q0.gpu_kept_residues, 0) << what;
      if (mode != app::HybridOptions::Gpu::only) continue;  // the split may move blocks
      for (std::size_t q : {1, 2}) {
        const app::QueryResult& r = run.queries[q];
        EXPECT_EQ(r.gpu_resident_residues, q0.gpu_kept_residues) << what << " query " << q;
        if (!budget) {
          EXPECT_EQ(r.gpu_uploaded_residues, 0) << what << " query " << q;
        } else {
          EXPECT_GT(r.gpu_uploaded_residues, 0) << what << " query " << q;
        }
      }
    }
  }
}

// 2,000 short models (20 to 60 nodes) in one run on the GPU, grouped by the default rule
// (a batch runs against many models at once, on several engines): every query's results
// equal its model's searched alone on the CPU, GPU-only and in the hybrid.
TEST(GpuSearch, TwoThousandShortModelsInOneRun) {
  REQUIRE_GPU();
  const std::uint64_t seed = test_seed();  // printed
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 2000);
  std::vector<HmmModel> drawn;
  const std::vector<HmmModel> models = test::short_models(2000, 16, seed, drawn);
  io::Config config;
  config.run.cpu = 4;
  app::HybridOptions cpu;
  cpu.gpu = app::HybridOptions::Gpu::off;
  std::vector<app::SearchRun> alone;
  for (const HmmModel& m : drawn) alone.push_back(app::run_hmmsearch({m}, db, config, cpu));
  for (auto mode : {app::HybridOptions::Gpu::only, app::HybridOptions::Gpu::auto_detect}) {
    app::HybridOptions gpu;
    gpu.gpu = mode;
    gpu.gpu_devices = std::vector<int>{0};  // (not `= {0}`: g++ 13 -Wnonnull false positive)
    gpu.gpu_min_database = 0;
    gpu.block_residues = 50000;
    const std::string what = std::string("2000 models") +
                             (mode == app::HybridOptions::Gpu::only ? " gpu-only" : " hybrid");
    const app::SearchRun run = app::run_hmmsearch(models, db, config, gpu);
    ASSERT_EQ(run.queries.size(), 2000u) << what;
    EXPECT_GT(run.queries[0].pass_models, 1u) << what;
    std::int64_t gpu_residues = 0;
    for (const auto& q : run.queries) gpu_residues += q.schedule.gpu_residues;
    EXPECT_GT(gpu_residues, 0) << what;
    test::expect_each_as_alone(run, alone, what);
  }
}

// ---- run-time specialisation (NVRTC) of the exact MSV kernel ----

// DUET_JIT_CACHE pointed at a fresh folder for one test, and the memory cache emptied,
// so that the test starts as a new process with an empty disk cache would.
class JitCacheFolder {
 public:
  JitCacheFolder() {
    const char* old = std::getenv("DUET_JIT_CACHE");
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    ::setenv("DUET_JIT_CACHE", dir_.path().c_str(), 1);
    device::jit::drop_memory_cache();
  }
  ~JitCacheFolder() {
    device::jit::drop_memory_cache();
    if (had_old_) {
      ::setenv("DUET_JIT_CACHE", old_.c_str(), 1);
    } else {
      ::unsetenv("DUET_JIT_CACHE");
    }
  }
  const std::filesystem::path& path() const { return dir_.path(); }

 private:
  test::TempDir dir_;
  bool had_old_ = false;
  std::string old_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The text NVRTC compiles is the header nvcc compiled (no GPU needed: runs everywhere).
TEST(GpuJit, EmbeddedSourceIsTheKernelHeader) {
  const std::string header =
      read_bytes(DUET_SOURCE_DIR "/src/device/hmmsearch/msv_exact_kernel.cuh");
  ASSERT_FALSE(header.empty());
  EXPECT_EQ(std::string(device::msv_exact_kernel_source()), header);
  EXPECT_NE(header.find("duet_msv_exact_jit"), std::string::npos);
  EXPECT_EQ(header.find("#include"), std::string::npos) << "NVRTC has no headers to include";
}

// The specialised exact kernel gives the static kernel's and the reference's scores on
// every target, at lengths around the 32-node chunks, 1, past 1000, at both sides of the
// static kernel's register buckets (64, 1536) and past them (each target through the exact
// kernel, and as a search runs it: the fast kernel first).
TEST(GpuJit, ExactMsvMatchesStaticKernelAndReference) {
  REQUIRE_GPU();
  JitCacheFolder cache;
  std::mt19937_64 rng(test_seed() ^ 0x81);
  for (int M : {1, 2, 31, 32, 33, 64, 65, 100, 260, 500, 1000, 1025, 1536, 1537, 2500, 3072}) {
    for (const Alphabet* abc : {&Alphabet::amino(), &Alphabet::dna()}) {
      const HmmModel hmm = simd_test::random_hmm(rng, *abc, M, simd_test::random_style(rng));
      const SearchProfile p = profile_of(hmm);
      const TargetSet targets = targets_for(rng, hmm, M > 1000 ? 60 : 150);
      const std::string what =
          "M=" + std::to_string(M) + (abc == &Alphabet::dna() ? " dna" : " amino");
      for (const bool exact_only : {true, false}) {
        device::GpuKernelChoice choice;
        choice.msv_exact_only = exact_only;
        device::HmmGpuEngine static_engine(0, p, choice);
        choice.jit = true;
        device::HmmGpuEngine jit_engine(0, p, choice);
        ASSERT_TRUE(jit_engine.jit_info().used) << what << ": " << jit_engine.jit_info().failure;
        EXPECT_TRUE(jit_engine.kernel_choice().jit);
        EXPECT_FALSE(static_engine.kernel_choice().jit);
        const auto view = targets.view();
        const std::vector<FilterScore> fixed = static_engine.msv(view);
        const std::vector<FilterScore> jitted = jit_engine.msv(view);
        if (exact_only) {
          EXPECT_EQ(jit_engine.kernel_times(0).msv_exact_targets,
                    static_cast<std::int64_t>(view.size()))
              << what;
        }
        ASSERT_EQ(jitted.size(), view.size());
        int failures = 0;
        for (std::size_t i = 0; i < view.size() && failures < 5; ++i) {
          const std::string where = what + (exact_only ? " exact only" : " fast+exact") +
                                    " target " + std::to_string(i) +
                                    " L=" + std::to_string(view[i].length);
          const FilterScore r = msv_filter_reference(p.msv, view[i].residues, view[i].length);
          expect_same(jitted[i], fixed[i], where + " JIT vs static");
          expect_same(jitted[i], r, where + " JIT vs reference");
          if (HasFailure()) ++failures;
        }
        if (HasFailure()) return;
      }
    }
  }
}

// Compiled once, then from memory; a new process (memory cache dropped) loads the disk
// entry; a corrupted, truncated or unloadable entry is compiled again and rewritten.
TEST(GpuJit, DiskCacheRoundTripAndCorruptEntries) {
  REQUIRE_GPU();
  JitCacheFolder cache;
  std::mt19937_64 rng(test_seed() ^ 0x82);
  const HmmModel hmm =
      simd_test::random_hmm(rng, Alphabet::amino(), 77, simd_test::random_style(rng));
  const SearchProfile p = profile_of(hmm);
  const TargetSet targets = targets_for(rng, hmm, 100);
  const auto view = targets.view();
  device::GpuKernelChoice choice;
  choice.jit = true;
  choice.msv_exact_only = true;
  device::GpuKernelChoice static_choice;
  static_choice.msv_exact_only = true;
  const std::vector<FilterScore> expected = device::HmmGpuEngine(0, p, static_choice).msv(view);
  const auto engine_from = [&](const std::string& origin, const std::string& what) {
    device::HmmGpuEngine engine(0, p, choice);
    EXPECT_TRUE(engine.jit_info().used) << what << ": " << engine.jit_info().failure;
    EXPECT_EQ(engine.jit_info().origin, origin) << what;
    const std::vector<FilterScore> scores = engine.msv(view);
    for (std::size_t i = 0; i < view.size(); ++i)
      expect_same(scores[i], expected[i], what + " target " + std::to_string(i));
  };
  engine_from("compiled", "first");
  engine_from("memory", "second");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(cache.path())) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u) << "one entry, no temporary files left";
  const std::string entry = files[0].string();
  EXPECT_NE(entry.find("duet_msv_exact_jit-M77-sm_"), std::string::npos) << entry;
  const std::string good = read_bytes(entry);
  device::jit::drop_memory_cache();
  engine_from("disk cache", "new process");

  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x40);
  // An intact entry (right key and checksum) whose payload the driver cannot load: the
  // key text is the entry's own, read from its header (magic, length, text).
  std::uint64_t key_length = 0;
  for (int i = 0; i < 8; ++i)
    key_length |= std::uint64_t{static_cast<unsigned char>(good[8 + i])} << (8 * i);
  const std::string key_text = good.substr(16, key_length);
  ASSERT_NE(key_text.find("DUET_JIT_M=77"), std::string::npos) << key_text;
  const std::string not_a_cubin = device::jit::encode_entry(key_text, "not a cubin");
  for (const auto& [bad, what] :
       {std::pair{flipped, std::string("one byte flipped")},
        std::pair{good.substr(0, good.size() - 100), std::string("truncated")},
        std::pair{std::string(), std::string("empty")},
        std::pair{not_a_cubin, std::string("checksum right, not a cubin")}}) {
    write_bytes(entry, bad);
    device::jit::drop_memory_cache();
    engine_from("compiled", what);
    EXPECT_EQ(read_bytes(entry), good) << what << ": the entry is written again";
  }
}

// A source NVRTC cannot compile is an error that carries NVRTC's log; an engine asked for
// a model past the specialisation's limit runs the static kernel and says why.
TEST(GpuJit, FailuresAreClearAndFallBack) {
  REQUIRE_GPU();
  JitCacheFolder cache;
  std::mt19937_64 rng(test_seed() ^ 0x83);
  const HmmModel hmm = simd_test::random_hmm(
      rng, Alphabet::amino(), device::kMsvExactJitMaxLength + 1, simd_test::random_style(rng));
  device::GpuKernelChoice choice;
  choice.jit = true;
  device::HmmGpuEngine engine(0, profile_of(hmm), choice);  // makes GPU 0 current
  try {
    device::jit::get_function(
        {"extern \"C\" __global__ void k() { undeclared_name(); }", "broken.cu", "k"}, {},
        "broken");
    FAIL() << "expected an NVRTC error";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("NVRTC could not compile broken.cu"), std::string::npos) << message;
    EXPECT_NE(message.find("undeclared_name"), std::string::npos) << message;
  }
  EXPECT_TRUE(engine.jit_info().asked);
  EXPECT_FALSE(engine.jit_info().used);
  EXPECT_FALSE(engine.kernel_choice().jit);
  EXPECT_NE(engine.jit_info().failure.find("longer than"), std::string::npos)
      << engine.jit_info().failure;
}

// ---- the Forward parser: a filter within a stated tolerance ----

// Checks every target's GPU Forward score against forward_parser_reference; returns the
// largest error as a fraction of the tolerance.
double check_forward(const HmmModel& hmm, const TargetSet& targets, const std::string& what) {
  const SearchProfile p = profile_of(hmm);
  device::HmmGpuEngine engine(0, p);
  const std::vector<float> fwd = engine.forward(targets.view());
  EXPECT_EQ(fwd.size(), targets.seqs.size());
  double worst = 0;
  int failures = 0;
  for (std::size_t i = 0; i < targets.seqs.size() && i < fwd.size() && failures < 5; ++i) {
    const auto& s = targets.seqs[i];
    const int L = static_cast<int>(s.size());
    const float ref = forward_parser_reference(p.forward, s.data(), L);
    const std::string where = what + " target " + std::to_string(i) + " L=" + std::to_string(L);
    if (!std::isfinite(ref)) {  // L = 0: log(0)
      EXPECT_EQ(fwd[i], ref) << where;
      if (fwd[i] != ref) ++failures;
      continue;
    }
    const double tolerance = device::kGpuForwardAbsoluteTolerance +
                             device::kGpuForwardRelativeTolerance * std::fabs(ref);
    const double error = std::fabs(static_cast<double>(fwd[i]) - ref);
    worst = std::max(worst, error / tolerance);
    EXPECT_LE(error, tolerance) << where << ": gpu " << fwd[i] << " reference " << ref;
    if (!(error <= tolerance)) ++failures;
  }
  return worst;
}

TEST(GpuForward, WithinToleranceOfReferenceOnRandomModels) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x6f);
  double worst = 0;
  for (int M : {1, 2, 5, 31, 32, 33, 64, 65, 100, 128, 129, 200, 400, 513, 1000, 2100, 3000}) {
    for (const Alphabet* abc : {&Alphabet::amino(), &Alphabet::dna()}) {
      const HmmModel hmm = simd_test::random_hmm(rng, *abc, M, simd_test::random_style(rng));
      TargetSet targets = targets_for(rng, hmm, M > 1000 ? 40 : 150);
      // A few long targets (a few thousand residues): random, and model-sampled hits.
      std::uniform_int_distribution<int> long_length(1500, 4000);
      for (int i = 0; i < 3; ++i) {
        targets.seqs.push_back(simd_test::random_codes(rng, *abc, long_length(rng)));
        targets.seqs.push_back(simd_test::sampled_from_model(rng, hmm, long_length(rng), 0.05 * i));
      }
      const std::string what =
          "M=" + std::to_string(M) + (abc == &Alphabet::dna() ? " dna" : " amino");
      worst = std::max(worst, check_forward(hmm, targets, what));
      if (HasFailure()) return;
    }
  }
  std::printf("largest GPU Forward error: %.3g of the tolerance\n", worst);
}

TEST(GpuForward, WithinToleranceOnTutorialModels) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0x70);
  for (const char* name : {"Pkinase.hmm", "fn3.hmm", "globins4.hmm", "MADE1.hmm"}) {
    const std::string path = std::string(simd_test::kTutorialDir) + name;
    if (!std::ifstream(path)) continue;
    for (const HmmModel& hmm : read_hmm_file(path)) {
      const double worst = check_forward(hmm, targets_for(rng, hmm, 1000), name);
      std::printf("%s: largest GPU Forward error %.3g of the tolerance\n", name, worst);
    }
  }
}

// ---- whole searches ----

TEST(GpuSearch, ResultsIdenticalWithAndWithoutGpu) {
  REQUIRE_GPU();
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 6000);
  for (const char* name : {"globins4.hmm", "Pkinase.hmm", "fn3.hmm"}) {
    const std::vector<HmmModel> models = read_hmm_file(std::string(simd_test::kTutorialDir) + name);
    for (int variant : {0, 1, 2}) {
      io::Config config;
      config.run.cpu = 4;
      if (variant == 1) {  // many targets reach Viterbi, Forward and the post-queue
        config.search.F1 = 0.3;
        config.search.F2 = 0.05;
        config.search.F3 = 0.01;
      }
      if (variant == 2) {  // many targets reach Forward, and most are rejected there
        config.search.F1 = 0.5;
        config.search.F2 = 0.5;
      }
      app::HybridOptions cpu;
      cpu.gpu = app::HybridOptions::Gpu::off;
      const app::SearchRun reference = app::run_hmmsearch(models, db, config, cpu);
      if (variant == 2) {  // the GPU Forward filter has targets to reject
        const auto& counts = reference.queries.at(0).counts;
        EXPECT_GT(counts.passed_viterbi - counts.passed_forward, 50) << name;
      }
      for (const char* strategy : {"warp", "thread", "strip"}) {
        for (auto mode : {app::HybridOptions::Gpu::only, app::HybridOptions::Gpu::auto_detect}) {
          app::HybridOptions gpu;
          gpu.gpu = mode;
          gpu.gpu_devices = std::vector<int>{0};  // (not `= {0}`: g++ 13 -Wnonnull false positive)
          gpu.gpu_strategy = strategy;
          gpu.block_residues = 40000;  // many blocks: several batches, both slots
          gpu.gpu_batch_blocks = 4;
          // The hybrid runs split the blocks up front: with the dynamic policy the CPU
          // workers may finish this small database while the GPU is still being set up
          // (on its feeder's thread), and the GPU would take nothing.
          gpu.policy = scheduler::SplitPolicy::static_fraction;
          gpu.static_cpu_fraction = 0.5;
          const app::SearchRun run = app::run_hmmsearch(models, db, config, gpu);
          EXPECT_GT(run.queries.at(0).schedule.gpu_residues, 0);
          test::expect_identical(
              reference, run,
              std::string(name) + " variant " + std::to_string(variant) + " " + strategy +
                  (mode == app::HybridOptions::Gpu::only ? " gpu-only" : " hybrid"));
        }
      }
    }
  }
}

// Several feeder threads per GPU, each with its own engine and batches, give the results
// of a CPU-only run (the blocks of a pass are spread over them in any order).
// Several models in one pass on small GPU batches take the model-set path (every model's
// MSV filter at once, the later stages on the CPU; a model with enough Viterbi targets to
// fill the GPU moves to its own lanes): results identical to the CPU's, with the default
// thresholds, with many targets through every stage, and with every target through the MSV
// filter on a batch of the whole database (the lanes).
TEST(GpuSearch, ModelSetPassesGiveIdenticalResults) {
  REQUIRE_GPU();
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 6000);
  std::vector<HmmModel> models;
  for (const char* name : {"globins4.hmm", "Pkinase.hmm", "fn3.hmm"}) {
    for (HmmModel& m : read_hmm_file(std::string(simd_test::kTutorialDir) + name))
      models.push_back(std::move(m));
  }
  for (int variant : {0, 1, 2}) {
    io::Config config;
    config.run.cpu = 4;
    if (variant == 1) {
      config.search.F1 = 0.3;
      config.search.F2 = 0.05;
      config.search.F3 = 0.01;
    }
    if (variant == 2) config.search.F1 = 1.0;
    app::HybridOptions cpu;
    cpu.gpu = app::HybridOptions::Gpu::off;
    const app::SearchRun reference = app::run_hmmsearch(models, db, config, cpu);
    for (auto mode : {app::HybridOptions::Gpu::only, app::HybridOptions::Gpu::auto_detect}) {
      app::HybridOptions gpu;
      gpu.gpu = mode;
      gpu.gpu_devices = std::vector<int>{0};  // (not `= {0}`: g++ 13 -Wnonnull false positive)
      gpu.gpu_min_database = 0;
      if (variant < 2) {
        gpu.block_residues = 40000;
        gpu.gpu_batch_blocks = 4;
      }
      gpu.policy = scheduler::SplitPolicy::static_fraction;
      gpu.static_cpu_fraction = 0.5;
      const app::SearchRun run = app::run_hmmsearch(models, db, config, gpu);
      ASSERT_EQ(run.queries.size(), models.size());
      EXPECT_EQ(run.queries[0].pass_models, models.size());
      EXPECT_GT(run.queries.at(0).schedule.gpu_residues, 0);
      test::expect_identical(reference, run,
                             "three models, variant " + std::to_string(variant) +
                                 (mode == app::HybridOptions::Gpu::only ? " gpu-only" : " hybrid"));
    }
  }
}

TEST(GpuSearch, SeveralFeedersPerGpuGiveIdenticalResults) {
  REQUIRE_GPU();
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 4000);
  const std::vector<HmmModel> models =
      read_hmm_file(std::string(simd_test::kTutorialDir) + "Pkinase.hmm");
  io::Config config;
  config.run.cpu = 4;
  config.search.F1 = 0.3;  // many targets reach Viterbi, Forward and the post-queue
  config.search.F2 = 0.05;
  config.search.F3 = 0.01;
  app::HybridOptions cpu;
  cpu.gpu = app::HybridOptions::Gpu::off;
  const app::SearchRun reference = app::run_hmmsearch(models, db, config, cpu);
  for (int feeders : {1, 2, 3}) {
    for (auto mode : {app::HybridOptions::Gpu::only, app::HybridOptions::Gpu::auto_detect}) {
      app::HybridOptions gpu;
      gpu.gpu = mode;
      gpu.gpu_devices = std::vector<int>{0};
      gpu.gpu_feeders = feeders;
      gpu.block_residues = 20000;
      gpu.gpu_batch_blocks = 3;
      gpu.policy = scheduler::SplitPolicy::static_fraction;
      gpu.static_cpu_fraction = 0.3;
      const app::SearchRun run = app::run_hmmsearch(models, db, config, gpu);
      EXPECT_GT(run.queries.at(0).schedule.gpu_residues, 0);
      test::expect_identical(reference, run,
                             std::to_string(feeders) + " feeders" +
                                 (mode == app::HybridOptions::Gpu::only ? " gpu-only" : " hybrid"));
    }
  }
}

// A kernel-choice table picks the kernels by model length (recorded with the run);
// --gpu-strategy wins over the table's Viterbi strategy; results stay identical.
TEST(GpuSearch, KernelTableChoosesByLengthAndIsRecorded) {
  REQUIRE_GPU();
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 3000);
  const std::string table = dir.file("kernels.toml");
  std::ofstream(table)
      << "device = \"test\"\nmeasured = \"now\"\n"
         "[[row]]\nmax_length = 100\nmsv_group_threads = 32\nviterbi_strategy = \"warp\"\n"
         "[[row]]\nmax_length = 200\nmsv_group_threads = 8\nviterbi_strategy = \"thread\"\n";
  const std::vector<HmmModel> models =
      read_hmm_file(std::string(simd_test::kTutorialDir) + "globins4.hmm");
  ASSERT_EQ(models.at(0).M, 149);
  io::Config config;
  config.run.cpu = 2;
  app::HybridOptions cpu;
  cpu.gpu = app::HybridOptions::Gpu::off;
  const app::SearchRun reference = app::run_hmmsearch(models, db, config, cpu);
  for (const char* strategy : {"", "warp"}) {
    app::HybridOptions gpu;
    gpu.gpu = app::HybridOptions::Gpu::only;
    gpu.gpu_devices = std::vector<int>{0};  // (not `= {0}`: g++ 13 -Wnonnull false positive)
    gpu.gpu_kernel_table = table;
    gpu.gpu_strategy = strategy;
    const app::SearchRun run = app::run_hmmsearch(models, db, config, gpu);
    EXPECT_EQ(run.gpu_kernel_table, table);
    EXPECT_EQ(run.queries.at(0).gpu_kernels,
              std::string("msv_group_threads=8 viterbi=") + (*strategy ? strategy : "thread"));
    test::expect_identical(reference, run,
                           std::string("kernel table, strategy '") + strategy + "'");
  }
  app::HybridOptions builtin;
  builtin.gpu = app::HybridOptions::Gpu::only;
  builtin.gpu_devices = std::vector<int>{0};  // (not `= {0}`: g++ 13 -Wnonnull false positive)
  const app::SearchRun run = app::run_hmmsearch(models, db, config, builtin);
  EXPECT_EQ(run.gpu_kernel_table, "built-in rule");
  EXPECT_EQ(run.queries.at(0).gpu_kernels, "msv_group_threads=16 viterbi=strip");
}

// --gpu-jit: the same results, and the query records what NVRTC gave.
TEST(GpuSearch, JitGivesIdenticalResultsAndIsRecorded) {
  REQUIRE_GPU();
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 3000);
  const std::vector<HmmModel> models =
      read_hmm_file(std::string(simd_test::kTutorialDir) + "globins4.hmm");
  io::Config config;
  config.run.cpu = 2;
  app::HybridOptions cpu;
  cpu.gpu = app::HybridOptions::Gpu::off;
  const app::SearchRun reference = app::run_hmmsearch(models, db, config, cpu);
  config.gpu.jit = true;
  app::HybridOptions gpu = app::hybrid_options(config);
  EXPECT_TRUE(gpu.gpu_jit) << "[gpu] jit";
  gpu.gpu = app::HybridOptions::Gpu::only;
  gpu.gpu_devices = std::vector<int>{0};  // (not `= {0}`: g++ 13 -Wnonnull false positive)
  const app::SearchRun run = app::run_hmmsearch(models, db, config, gpu);
  EXPECT_EQ(run.queries.at(0).gpu_jit.rfind("msv_exact (", 0), 0u) << run.queries.at(0).gpu_jit;
  test::expect_identical(reference, run, "--gpu-jit");
  gpu.gpu_jit = false;
  EXPECT_EQ(app::run_hmmsearch(models, db, config, gpu).queries.at(0).gpu_jit, "");
}

// --gpu-sms: the engines' streams run their kernels on a share of the GPU's SMs (a probe
// kernel on such a stream counts the SMs its blocks ran on), rounded up to the GPU's
// partition size; a search on the share gives the CPU's results; 0 gives the GPU back
// whole.
TEST(GpuSmLimit, KernelsRunOnTheShareAndResultsStay) {
  REQUIRE_GPU();
  const int all = device::list_gpus().gpus.at(0).multiprocessors;
  device::set_gpu_sm_limit(0);
  EXPECT_EQ(device::probe_kernel_sms(0), all);
  EXPECT_EQ(device::gpu_sms_per_gpu(), all);
  for (const int asked : {8, 20}) {
    if (asked >= all) continue;
    device::set_gpu_sm_limit(asked);
    const int used = device::probe_kernel_sms(0);
    const int share = device::gpu_sms_per_gpu();
    EXPECT_GE(share, asked);
    EXPECT_LT(share, all);
    EXPECT_EQ(used, share) << "asked for " << asked;
  }
  device::set_gpu_sm_limit(all + 1);  // above the GPU's count: the whole GPU
  EXPECT_EQ(device::probe_kernel_sms(0), all);

  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 3000);
  const std::vector<HmmModel> models =
      read_hmm_file(std::string(simd_test::kTutorialDir) + "Pkinase.hmm");
  io::Config config;
  config.run.cpu = 2;
  config.search.F1 = 0.3;  // many targets through every stage
  app::HybridOptions cpu;
  cpu.gpu = app::HybridOptions::Gpu::off;
  const app::SearchRun reference = app::run_hmmsearch(models, db, config, cpu);
  device::set_gpu_sm_limit(16);
  app::HybridOptions gpu;
  gpu.gpu = app::HybridOptions::Gpu::only;
  gpu.gpu_devices = std::vector<int>{0};  // (not `= {0}`: g++ 13 -Wnonnull false positive)
  gpu.block_residues = 40000;
  const app::SearchRun run = app::run_hmmsearch(models, db, config, gpu);
  EXPECT_GT(run.queries.at(0).schedule.gpu_residues, 0);
  test::expect_identical(reference, run, "--gpu-sms 16");
  device::set_gpu_sm_limit(0);
}

TEST(GpuSearch, UnknownGpuIsAClearError) {
  test::TempDir dir;
  const std::string db = test::database_prefix(dir, 10);
  const std::vector<HmmModel> models =
      read_hmm_file(std::string(simd_test::kTutorialDir) + "globins4.hmm");
  app::HybridOptions gpu;
  gpu.gpu_devices = std::vector<int>{99};  // (not `= {99}`: g++ 13 -Wnonnull false positive)
  try {
    app::run_hmmsearch(models, db, io::Config{}, gpu);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 99"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace duet
