// The pair-HMM intra-task kernel's shape choice: which compiled shape (lanes per pair, rows
// per lane) runs a batch, from a table of costs measured once per GPU model. Plain C++,
// built in every build (no device needed), so that a table's shapes are checked and its
// choices tested anywhere.
#pragma once

#include <cstdint>
#include <vector>

#include "device/pairhmm/pairhmm_gpu.hpp"

namespace duet::device::pairhmm {

// The costs (ShapeCost, pairhmm_gpu.hpp) measured on the H100 (132 SMs; bench/RESULTS.md)
// for an arithmetic (ftz or ieee): one row for every shape compiled for it.
// configs/gpu-kernels.toml's [pairhmm_shapes] holds the same; a run without a table uses these.
const std::vector<ShapeCost>& measured_shape_costs(Arithmetic arithmetic);

// Whether the intra-task kernel is compiled in `shape` for `arithmetic` (ftz or ieee).
bool intra_shape_compiled(IntraShape shape, Arithmetic arithmetic);

// The SM count the measured costs' full-GPU term assumes.
inline constexpr int kMeasuredSms = 132;

// The shape of `costs` with the fewest estimated cycles for the batch on a GPU of `sms`
// SMs: the larger of the full-GPU issue time and the longest warp's latency; the first of
// least cost in table order. Reads only the batch's rows and columns. With `parallel`, the
// shapes are costed on several threads (the same choice). Throws std::invalid_argument for
// no costs.
IntraShape choose_intra_shape(const PairBatch& batch, const std::vector<ShapeCost>& costs,
                              int sms = kMeasuredSms, const ParallelFor& parallel = {});

}  // namespace duet::device::pairhmm
