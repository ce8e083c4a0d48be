// The pair-HMM intra-task kernel's shape choice (device/pairhmm/pairhmm_shapes.hpp), host
// code that every build has: the committed table's costs are the built-in ones, and the
// choice follows whatever costs and SM count it is given. (Its choices on real inputs with
// the measured costs: PairhmmGpuShape in pairhmm_gpu_test.cpp, CUDA builds.)
#include "device/pairhmm/pairhmm_shapes.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/kernel_table.hpp"
#include "test_support.hpp"

namespace duet::device::pairhmm {
namespace {

// A batch of `pairs` pairs of `rows` x `columns` (the choice reads nothing else).
PairBatch batch_of(std::size_t pairs, std::int32_t rows, std::int32_t columns) {
  PairBatch b;
  b.rows.assign(pairs, rows);
  b.columns.assign(pairs, columns);
  return b;
}

bool same(IntraShape a, IntraShape b) {
  return a.lanes == b.lanes && a.rows_per_lane == b.rows_per_lane;
}

// configs/gpu-kernels.toml's [pairhmm_shapes] is the built-in table, row for row: a run
// with the committed table chooses as one without any.
TEST(PairhmmShapes, CommittedTableHasTheBuiltInCosts) {
  const auto path =
      std::filesystem::path(__FILE__).parent_path().parent_path() / "configs" / "gpu-kernels.toml";
  const io::KernelTable table = io::load_kernel_table(path.string());
  for (const auto& [arithmetic, rows] : {std::pair{Arithmetic::ftz, &table.pairhmm_shapes.ftz},
                                         std::pair{Arithmetic::ieee, &table.pairhmm_shapes.ieee}}) {
    const std::vector<ShapeCost>& built_in = measured_shape_costs(arithmetic);
    ASSERT_EQ(rows->size(), built_in.size()) << arithmetic_name(arithmetic);
    for (std::size_t k = 0; k < built_in.size(); ++k) {
      const io::PairhmmShapeRow& r = (*rows)[k];
      const ShapeCost& c = built_in[k];
      EXPECT_TRUE(r.lanes == c.shape.lanes && r.rows_per_lane == c.shape.rows_per_lane &&
                  r.cycles_per_warp_step == c.cycles_per_warp_step &&
                  r.cycles_per_warp == c.cycles_per_warp &&
                  r.latency_per_step == c.latency_per_step)
          << arithmetic_name(arithmetic) << " row " << k << " (line " << r.line << ")";
    }
  }
}

// The compiled shapes: 8 for ieee, 12 for ftz (pairhmm_gpu.hpp lists them).
TEST(PairhmmShapes, CompiledShapes) {
  EXPECT_EQ(measured_shape_costs(Arithmetic::ieee).size(), 8u);
  EXPECT_EQ(measured_shape_costs(Arithmetic::ftz).size(), 12u);
  EXPECT_TRUE(intra_shape_compiled({8, 4}, Arithmetic::ftz));
  EXPECT_TRUE(intra_shape_compiled({8, 8}, Arithmetic::ftz));
  EXPECT_FALSE(intra_shape_compiled({8, 8}, Arithmetic::ieee));
  EXPECT_FALSE(intra_shape_compiled({32, 2}, Arithmetic::ieee));
  EXPECT_FALSE(intra_shape_compiled({16, 8}, Arithmetic::ftz));
  EXPECT_THROW(measured_shape_costs(Arithmetic::automatic), std::invalid_argument);
}

TEST(PairhmmShapes, ChoiceFollowsTheCosts) {
  const PairBatch large = batch_of(100000, 150, 300), small = batch_of(4, 150, 300);
  // One shape: that one.
  EXPECT_TRUE(same(choose_intra_shape(large, {{{16, 2}, 100, 0, 100}}), {16, 2}));
  // Far cheaper per step: chosen for any batch, wherever it stands in the table.
  const std::vector<ShapeCost> one_cheap = {
      {{32, 1}, 100, 100, 100}, {{8, 4}, 1, 0, 1}, {{4, 4}, 100, 100, 100}};
  EXPECT_TRUE(same(choose_intra_shape(large, one_cheap), {8, 4}));
  EXPECT_TRUE(same(choose_intra_shape(small, one_cheap), {8, 4}));
  // Equal costs in the same shape: the first in table order.
  EXPECT_TRUE(same(choose_intra_shape(large, {{{8, 2}, 10, 0, 10}, {{8, 2}, 10, 0, 10}}), {8, 2}));
  // A fast shape with a slow single warp against the opposite: the GPU full decides the
  // large batch (issue), the longest warp the small one (latency).
  const std::vector<ShapeCost> issue_or_latency = {{{8, 4}, 100, 0, 1000}, {{32, 1}, 400, 0, 100}};
  EXPECT_TRUE(same(choose_intra_shape(large, issue_or_latency), {8, 4}));
  EXPECT_TRUE(same(choose_intra_shape(small, issue_or_latency), {32, 1}));
  // The SM count scales the issue term: on a GPU of very many SMs the large batch is
  // latency bound too.
  EXPECT_TRUE(same(choose_intra_shape(large, issue_or_latency, 1000000), {32, 1}));
  EXPECT_THROW(choose_intra_shape(large, {}), std::invalid_argument);
  EXPECT_THROW(choose_intra_shape(large, {{{3, 1}, 1, 0, 1}}), std::invalid_argument);
  EXPECT_THROW(choose_intra_shape(large, {{{8, 3}, 1, 0, 1}}), std::invalid_argument);
}

// On several threads the same choice as on one, for random batches and the measured costs.
TEST(PairhmmShapes, ParallelChoiceIsTheSame) {
  std::mt19937_64 rng(test::test_seed());
  const ParallelFor in_reverse = [](std::size_t n, std::size_t,
                                    const std::function<void(std::size_t)>& body) {
    for (std::size_t i = n; i-- > 0;) body(i);
  };
  for (int round = 0; round < 50; ++round) {
    PairBatch b;
    const std::size_t pairs = 1 + rng() % 5000;
    for (std::size_t i = 0; i < pairs; ++i) {
      b.rows.push_back(static_cast<std::int32_t>(1 + rng() % 300));
      b.columns.push_back(static_cast<std::int32_t>(1 + rng() % 600));
    }
    for (const Arithmetic a : {Arithmetic::ftz, Arithmetic::ieee}) {
      const auto& costs = measured_shape_costs(a);
      EXPECT_TRUE(same(choose_intra_shape(b, costs, kMeasuredSms, in_reverse),
                       choose_intra_shape(b, costs)))
          << "round " << round << ", " << arithmetic_name(a);
    }
  }
}

}  // namespace
}  // namespace duet::device::pairhmm
