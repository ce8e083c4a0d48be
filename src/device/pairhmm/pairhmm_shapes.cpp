// The intra-task kernel's shape choice (contract in pairhmm_shapes.hpp).
#include "device/pairhmm/pairhmm_shapes.hpp"

#include <algorithm>
#include <stdexcept>

namespace duet::device::pairhmm {

namespace {

// intra_task_kernel (ieee), 2026-11-22: per warp step from 10s.in x64, per step of one warp
// from 10s.in once (no per-warp cost measured).
const std::vector<ShapeCost> kIeeeShapes = {
    {{32, 1}, 140, 0, 700}, {{16, 1}, 142, 0, 700}, {{8, 1}, 202, 0, 700},  {{16, 2}, 243, 0, 900},
    {{8, 2}, 256, 0, 900},  {{4, 2}, 417, 0, 900},  {{8, 4}, 544, 0, 1500}, {{4, 4}, 600, 0, 1500}};
// intra_ftz_kernel with pad rows and predicated steps, 2026-11-27: the first two solved from
// 10s.in x64 and 300,000 pairs of short reads (up to 8 bases) together (4x2 and 8x1 gave a
// negative per-warp cost there: 0, and the first from x64 alone), the third from 10s.in once.
const std::vector<ShapeCost> kFtzShapes = {
    {{32, 1}, 66, 298, 275}, {{16, 1}, 85, 313, 206},  {{8, 1}, 186, 0, 281},
    {{32, 2}, 82, 389, 347}, {{16, 2}, 91, 500, 248},  {{8, 2}, 170, 359, 271},
    {{4, 2}, 363, 0, 281},   {{32, 4}, 117, 597, 529}, {{16, 4}, 124, 595, 384},
    {{8, 4}, 146, 689, 278}, {{4, 4}, 340, 213, 319},  {{8, 8}, 246, 1092, 496}};

// Warp steps of a batch in a shape, in all and of the longest warp, and its warps: the pairs of a
// warp (32 / G consecutive ones) run each strip to the longest of them (C + last_lane steps), as
// the kernel does.
struct WarpSteps {
  double total = 0, longest = 0, warps = 0;
};

// Runs for every shape on every batch the feeder sends, so kept cheap: 32-bit values and K
// (a power of two: intra_shape_compiled's shapes, and the table's, checked by
// choose_intra_shape) as a shift (with a 64-bit division by K it took about 3.5 ms per
// batch of 7,640 pairs on the development machine, more than packing the batch); and a
// batch of more than kSampledPairs pairs is sampled: one run of 32 consecutive pairs (whole
// warps for every shape) in `every`, the total scaled by `every`. The longest warp only
// matters for batches too small to fill the GPU, which are counted whole.
constexpr std::size_t kSampledPairs = 2048;
WarpSteps warp_steps(const PairBatch& b, IntraShape shape) {
  const std::size_t per_warp = static_cast<std::size_t>(32 / shape.lanes);
  const std::int32_t strip = shape.lanes * shape.rows_per_lane;
  int shift = 0;
  while ((1 << shift) < shape.rows_per_lane) ++shift;
  const std::int32_t* const rows = b.rows.data();
  const std::int32_t* const columns = b.columns.data();
  const std::size_t every = std::max<std::size_t>(1, b.pairs() / kSampledPairs);
  WarpSteps steps;
  for (std::size_t run = 0; run < b.pairs(); run += 32 * every) {
    const std::size_t run_end = std::min(b.pairs(), run + 32);
    for (std::size_t first = run; first < run_end; first += per_warp) {
      const std::size_t end = std::min(run_end, first + per_warp);
      std::int32_t max_rows = 0;
      std::int64_t warp = 0;
      for (std::size_t i = first; i < end; ++i) max_rows = std::max(max_rows, rows[i]);
      for (std::int32_t start = 0; start < max_rows; start += strip) {
        std::int32_t longest = 0;  // pairs without rows in this strip add nothing
        for (std::size_t i = first; i < end; ++i) {
          const std::int32_t left = rows[i] - start;
          const std::int32_t here = std::min(std::max(left, 1), strip);
          const std::int32_t pair_steps = left > 0 ? columns[i] + ((here - 1) >> shift) : 0;
          longest = std::max(longest, pair_steps);
        }
        warp += longest;
      }
      steps.total += static_cast<double>(warp);
      steps.longest = std::max(steps.longest, static_cast<double>(warp));
    }
  }
  steps.total *= static_cast<double>(every);
  steps.warps = static_cast<double>((b.pairs() + per_warp - 1) / per_warp);
  return steps;
}

bool power_of_two(int k) {
  return k >= 1 && (k & (k - 1)) == 0;
}

}  // namespace

const char* arithmetic_name(Arithmetic arithmetic) {
  switch (arithmetic) {
    case Arithmetic::automatic:
      return "auto";
    case Arithmetic::ftz:
      return "ftz";
    case Arithmetic::ieee:
      return "ieee";
  }
  return "?";
}

const std::vector<ShapeCost>& measured_shape_costs(Arithmetic arithmetic) {
  if (arithmetic == Arithmetic::ftz) return kFtzShapes;
  if (arithmetic == Arithmetic::ieee) return kIeeeShapes;
  throw std::invalid_argument("measured_shape_costs: ftz or ieee");
}

// The measured tables list every compiled shape (pairhmm_gpu.cu's launch_intra and
// launch_intra_ftz; the GPU tests run each of them).
bool intra_shape_compiled(IntraShape shape, Arithmetic arithmetic) {
  const auto costs = measured_shape_costs(arithmetic);
  return std::any_of(costs.begin(), costs.end(), [&](const ShapeCost& c) {
    return c.shape.lanes == shape.lanes && c.shape.rows_per_lane == shape.rows_per_lane;
  });
}

IntraShape choose_intra_shape(const PairBatch& b, const std::vector<ShapeCost>& shapes, int sms,
                              const ParallelFor& parallel) {
  if (shapes.empty()) throw std::invalid_argument("choose_intra_shape: no shapes");
  for (const ShapeCost& s : shapes) {
    if (s.shape.lanes < 1 || 32 % s.shape.lanes != 0 || !power_of_two(s.shape.rows_per_lane))
      throw std::invalid_argument(
          "choose_intra_shape: a shape's lanes must divide 32 and its "
          "rows per lane be a power of two");
  }
  const double schedulers = 4.0 * std::max(1, sms);
  std::vector<double> costs(shapes.size());
  const auto cost_of = [&](std::size_t k) {
    const ShapeCost& s = shapes[k];
    const WarpSteps steps = warp_steps(b, s.shape);
    costs[k] = std::max(
        (steps.total * s.cycles_per_warp_step + steps.warps * s.cycles_per_warp) / schedulers,
        steps.longest * s.latency_per_step);
  };
  if (parallel) {
    parallel(shapes.size(), 1, cost_of);
  } else {
    for (std::size_t k = 0; k < shapes.size(); ++k) cost_of(k);
  }
  const std::size_t best =
      static_cast<std::size_t>(std::min_element(costs.begin(), costs.end()) - costs.begin());
  return shapes[best].shape;
}

}  // namespace duet::device::pairhmm
