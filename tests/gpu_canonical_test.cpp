// The GPU canonical Forward (HmmGpuEngine::canonical_forward, src/device/hmmsearch/hmm_gpu.hpp)
// against the CPU's canonical Forward (core/hmmsearch/forward_canonical.hpp), bit for bit (the
// floats' bits compared), on random models of every length class and on the tutorial
// models; targets of every residue code, lengths 0 to 5000, long strong hits that rescale
// more often than the kernel records (the CPU fallback); both row placements (shared and
// global memory). Labelled `gpu`; skipped without a GPU (the layout round trip still
// runs). Random models and targets print their seed; DUET_TEST_SEED replays one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/striping.hpp"
#include "core/text_reader.hpp"
#include "device/gpu_info.hpp"
#include "device/hmmsearch/hmm_gpu.hpp"
#include "gpu_test_support.hpp"
#include "simd_test_support.hpp"

namespace duet {
namespace {

using simd_test::test_seed;

using gpu_test::profile_of;

// Where the kernel keeps its rows: nullptr lets the engine choose (shared memory when it
// fits), "global" forces global memory (DUET_CANONICAL_GPU_ROWS, read when an engine is made).
class RowPlacement {
 public:
  explicit RowPlacement(const char* placement) {
    if (placement == nullptr) {
      unsetenv("DUET_CANONICAL_GPU_ROWS");
    } else {
      setenv("DUET_CANONICAL_GPU_ROWS", placement, 1);
    }
  }
  ~RowPlacement() { unsetenv("DUET_CANONICAL_GPU_ROWS"); }
  RowPlacement(const RowPlacement&) = delete;
  RowPlacement& operator=(const RowPlacement&) = delete;
};

struct TargetSet {
  std::vector<std::vector<Residue>> seqs;
  std::vector<device::GpuTarget> view() const {
    std::vector<device::GpuTarget> v;
    for (const auto& s : seqs) v.push_back({s.data(), static_cast<int>(s.size())});
    return v;
  }
};

// Lengths 0..3, random codes of every kind, sequences sampled from the model (hits: the J
// state, rescaling), the consensus with deletions (D->D paths), and `long_count` long
// targets up to 5000 residues: random codes, sampled hits and the consensus repeated (it
// rescales every few rows: more than kCanonicalGpuRescalings times, the CPU fallback).
TargetSet targets_for(std::mt19937_64& rng, const HmmModel& hmm, int count, int long_count) {
  TargetSet t;
  const Alphabet& abc = *hmm.alphabet;
  std::uniform_int_distribution<int> length(1, 800);
  for (int L : {0, 1, 2, 3}) t.seqs.push_back(simd_test::random_codes(rng, abc, L));
  for (int i = 0; i < count; ++i) t.seqs.push_back(simd_test::random_codes(rng, abc, length(rng)));
  for (int i = 0; i < count; ++i) {
    t.seqs.push_back(simd_test::sampled_from_model(rng, hmm, std::max(1, hmm.M / 2 + length(rng)),
                                                   0.05 * (i % 4)));
  }
  for (int gaps : {1, 3}) t.seqs.push_back(simd_test::consensus_with_deletions(rng, hmm, gaps));
  std::uniform_int_distribution<int> long_length(1500, 5000);
  for (int i = 0; i < long_count; ++i) {
    t.seqs.push_back(simd_test::random_codes(rng, abc, long_length(rng)));
    t.seqs.push_back(simd_test::sampled_from_model(rng, hmm, long_length(rng), 0.05 * (i % 3)));
    t.seqs.push_back(simd_test::consensus_repeated(hmm, long_length(rng)));
  }
  std::shuffle(t.seqs.begin(), t.seqs.end(), rng);
  return t;
}

struct Tally {
  std::int64_t targets = 0, cpu_targets = 0;
};

// Every target's GPU canonical score against CanonicalForward::score, bits compared.
void check_bits(const HmmModel& hmm, const TargetSet& targets, const std::string& what,
                Tally& tally) {
  const SearchProfile p = profile_of(hmm);
  device::HmmGpuEngine engine(0, p);
  const std::vector<float> gpu = engine.canonical_forward(targets.view());
  ASSERT_EQ(gpu.size(), targets.seqs.size()) << what;
  tally.targets += static_cast<std::int64_t>(gpu.size());
  tally.cpu_targets += engine.kernel_times(0).canonical_cpu_targets;
  CanonicalForward cpu(p.forward);
  int failures = 0;
  for (std::size_t i = 0; i < targets.seqs.size() && failures < 5; ++i) {
    const auto& s = targets.seqs[i];
    const int L = static_cast<int>(s.size());
    const float ref = cpu.score(s.data(), L);
    std::uint32_t gpu_bits = 0, ref_bits = 0;
    std::memcpy(&gpu_bits, &gpu[i], sizeof gpu_bits);
    std::memcpy(&ref_bits, &ref, sizeof ref_bits);
    EXPECT_EQ(gpu_bits, ref_bits) << what << " target " << i << " L=" << L << ": gpu " << gpu[i]
                                  << " cpu " << ref;
    if (gpu_bits != ref_bits) ++failures;
  }
}

// ---- layout (host only) ----

TEST(GpuCanonicalLayout, RoundTripOnRandomModels) {
  std::mt19937_64 rng(test_seed() ^ 0xc1);
  for (int M : {1, 2, 3, 4, 5, 17, 128, 129, 1001, 3000}) {
    for (const Alphabet* abc : {&Alphabet::amino(), &Alphabet::dna()}) {
      const HmmModel hmm = simd_test::random_hmm(rng, *abc, M, simd_test::random_style(rng));
      const StripedForwardProfile s = stripe_forward_scores(profile_of(hmm).forward, 4);
      const device::CanonicalDeviceLayout l = device::build_canonical_device_layout(s);
      EXPECT_EQ(l.Q, s.Q);
      EXPECT_EQ(l.nodes.size(), static_cast<std::size_t>(s.Q) * 4 * device::kCanonicalNodeFields);
      const StripedForwardProfile back = device::striped_profile_from_canonical_layout(l);
      EXPECT_EQ(back.M, s.M) << "M=" << M;
      EXPECT_EQ(back.Kp, s.Kp);
      EXPECT_EQ(back.Q, s.Q);
      EXPECT_EQ(back.lanes, 4);
      EXPECT_EQ(back.e_loop, s.e_loop);
      EXPECT_EQ(back.e_move, s.e_move);
      EXPECT_EQ(back.match, s.match) << "M=" << M;
      EXPECT_EQ(back.transitions, s.transitions) << "M=" << M;
      EXPECT_EQ(back.dd_prefix, s.dd_prefix) << "M=" << M;
    }
  }
  const HmmModel hmm = simd_test::random_hmm(rng, Alphabet::amino(), 20, simd_test::ModelStyle{});
  EXPECT_THROW(
      device::build_canonical_device_layout(stripe_forward_scores(profile_of(hmm).forward, 8)),
      std::invalid_argument);
}

// ---- the kernel against forward_canonical ----

TEST(GpuCanonicalForward, BitForBitOnRandomModels) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0xc2);
  std::vector<int> lengths = {1, 2, 3, 4, 5, 6, 7, 8, 9, 31, 100, 149, 257, 602, 1001, 2100, 3000};
  std::uniform_int_distribution<int> any_length(1, 3000);
  for (int i = 0; i < 6; ++i) lengths.push_back(any_length(rng));
  Tally tally;
  for (int M : lengths) {
    for (const Alphabet* abc : {&Alphabet::amino(), &Alphabet::dna()}) {
      const HmmModel hmm = simd_test::random_hmm(rng, *abc, M, simd_test::random_style(rng));
      const TargetSet targets = targets_for(rng, hmm, M > 1000 ? 30 : 80, M > 1000 ? 2 : 4);
      check_bits(hmm, targets,
                 "M=" + std::to_string(M) + (abc == &Alphabet::dna() ? " dna" : " amino"), tally);
      if (HasFailure()) return;
    }
  }
  std::printf("canonical Forward: %lld targets bit for bit, %lld of them computed on the CPU\n",
              static_cast<long long>(tally.targets), static_cast<long long>(tally.cpu_targets));
  EXPECT_GT(tally.cpu_targets, 0) << "no target exercised the CPU fallback";
  EXPECT_LT(tally.cpu_targets, tally.targets / 4);
}

// Both row placements (shared memory, global memory with loads one vector ahead: two
// instances of the kernel) on models where both are possible; the random models above take
// shared memory up to M = 1208 and global memory past it.
TEST(GpuCanonicalForward, BitForBitInBothRowPlacements) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0xc3);
  Tally tally;
  for (int M : {1, 3, 4, 13, 64, 150, 400}) {
    const HmmModel hmm =
        simd_test::random_hmm(rng, Alphabet::amino(), M, simd_test::random_style(rng));
    const TargetSet targets = targets_for(rng, hmm, 40, 1);
    for (const char* placement : {static_cast<const char*>(nullptr), "global"}) {
      const RowPlacement rows(placement);
      check_bits(hmm, targets,
                 "M=" + std::to_string(M) + " rows " + (placement != nullptr ? placement : "auto"),
                 tally);
      if (HasFailure()) return;
    }
  }
}

// A small case, the one compute-sanitizer runs (memcheck, racecheck): both row placements.
TEST(GpuCanonicalForward, SmallBatchInBothRowPlacements) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0xc6);
  Tally tally;
  for (int M : {3, 50}) {
    const HmmModel hmm =
        simd_test::random_hmm(rng, Alphabet::amino(), M, simd_test::random_style(rng));
    TargetSet targets = targets_for(rng, hmm, 8, 0);
    targets.seqs.push_back(simd_test::consensus_repeated(hmm, 1200));  // the CPU fallback
    for (const char* placement : {static_cast<const char*>(nullptr), "global"}) {
      const RowPlacement rows(placement);
      check_bits(hmm, targets,
                 "M=" + std::to_string(M) + " rows " + (placement != nullptr ? placement : "auto"),
                 tally);
      if (HasFailure()) return;
    }
  }
}

TEST(GpuCanonicalForward, BitForBitOnTutorialModels) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0xc4);
  int models = 0;
  Tally tally;
  for (const char* name : {"Pkinase.hmm", "fn3.hmm", "globins4.hmm", "MADE1.hmm"}) {
    const std::string path = std::string(simd_test::kTutorialDir) + name;
    if (!std::ifstream(path)) continue;
    for (const HmmModel& hmm : read_hmm_file(path)) {
      TargetSet targets = targets_for(rng, hmm, 300, 3);
      for (const auto& s : simd_test::read_sequences(simd_test::kMmseqsDatabase, *hmm.alphabet,
                                                     hmm.alphabet == &Alphabet::amino() ? 3000 : 0))
        targets.seqs.push_back(s.residues);
      check_bits(hmm, targets, name, tally);
      ++models;
    }
  }
  if (models == 0) GTEST_SKIP() << "HMMER's tutorial models not installed";
}

// A subset of a batch, on either slot, gives the scores of the whole batch.
TEST(GpuCanonicalForward, SubsetsAndSlotsAgree) {
  REQUIRE_GPU();
  std::mt19937_64 rng(test_seed() ^ 0xc5);
  const HmmModel hmm =
      simd_test::random_hmm(rng, Alphabet::amino(), 230, simd_test::random_style(rng));
  const TargetSet targets = targets_for(rng, hmm, 60, 2);
  device::HmmGpuEngine engine(0, profile_of(hmm));
  const std::vector<float> whole = engine.canonical_forward(targets.view());
  const auto all = targets.view();
  std::vector<int> odd;
  for (int i = 1; i < static_cast<int>(all.size()); i += 2) odd.push_back(i);
  engine.submit_msv(1, all.data(), all.size());
  engine.wait_msv(1);
  engine.submit_canonical_forward(1, odd.data(), odd.size());
  const std::vector<float> part = engine.wait_canonical_forward(1);
  ASSERT_EQ(part.size(), odd.size());
  for (std::size_t i = 0; i < odd.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(&part[i], &whole[odd[i]], sizeof(float))) << "target " << odd[i];
  }
  engine.submit_canonical_forward(1, nullptr, 0);
  EXPECT_TRUE(engine.wait_canonical_forward(1).empty());
}

}  // namespace
}  // namespace duet
