// The pair-HMM GPU kernels (label gpu): both kernels against the canonical float sums, bit
// for bit, on random pairs (seed printed; DUET_TEST_SEED replays) and GKL's cases; skipped
// where no CUDA device exists. Also prints kernel-only and with-transfer GCUPS on 10s.in
// replicated, for bench/RESULTS.md.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/pairhmm_model.hpp"
#include "device/pairhmm_gpu_layout.hpp"
#include "pairhmm_test_support.hpp"
#include "test_support.hpp"

namespace duet::device::pairhmm {
namespace {

using duet::pairhmm::Model;
using duet::pairhmm::Pair;

class PairhmmGpuKernel : public ::testing::TestWithParam<Kernel> {
 protected:
  void SetUp() override {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

void expect_canonical(Kernel kernel, const Model& model, const std::vector<Pair>& pairs) {
  PairhmmGpu gpu(0);
  const std::vector<float> sums = gpu.forward_sums(pack_pairs(model, pairs), kernel);
  int mismatches = 0;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const float canonical = duet::pairhmm::forward_sum<float>(model, pairs[i]);
    if (std::memcmp(&sums[i], &canonical, sizeof(float)) != 0 && ++mismatches <= 5) {
      ADD_FAILURE() << kernel_name(kernel) << " pair " << i << " (" << pairs[i].rows() << "x" << pairs[i].columns()
                    << "): " << sums[i] << " vs " << canonical;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(PairhmmGpuKernel, RandomPairsBitForBit) {
  std::mt19937_64 rng(test::test_seed());
  const auto input = test::random_input(rng, 80, 500, 5, 5);
  expect_canonical(GetParam(), Model{}, input.pair_list());
  const auto small = test::random_input(rng, 40, 40, 4, 4);
  expect_canonical(GetParam(), Model{}, small.pair_list());
}

TEST_P(PairhmmGpuKernel, GklCases) {
  const auto gkl = duet::pairhmm::read_input(test::kGklTestData);
  expect_canonical(GetParam(), Model{}, gkl.pair_list());
}

TEST_P(PairhmmGpuKernel, Throughput) {
  const auto input = duet::pairhmm::read_input(test::kPairhmmData + "10s.in");
  const Model model;
  std::vector<Pair> pairs;
  for (int copy = 0; copy < 64; ++copy) {
    const auto list = input.pair_list();
    pairs.insert(pairs.end(), list.begin(), list.end());
  }
  const PairBatch batch = pack_pairs(model, pairs);
  PairhmmGpu gpu(0);
  double kernel = 0, transfer = 0;
  gpu.forward_sums(batch, GetParam(), &kernel, &transfer);  // warm-up
  gpu.forward_sums(batch, GetParam(), &kernel, &transfer);
  const auto cells = static_cast<double>(batch.cells);
  std::cout << "[ gcups    ] " << gpu.name() << " " << kernel_name(GetParam()) << "-task: 10s.in x64 ("
            << batch.cells << " cells): kernel " << cells / kernel / 1e9 << " GCUPS, with transfers "
            << cells / (kernel + transfer) / 1e9 << " GCUPS\n";
}

INSTANTIATE_TEST_SUITE_P(Kernels, PairhmmGpuKernel, ::testing::Values(Kernel::inter_task, Kernel::intra_task),
                         [](const ::testing::TestParamInfo<Kernel>& k) { return std::string(kernel_name(k.param)); });

}  // namespace
}  // namespace duet::device::pairhmm
