// GPU kernels of the pair-HMM Forward (issue 7), behind a plain C++ header (C++17: the
// CUDA sources include it; pairhmm_gpu_layout.hpp builds a PairBatch from core pairs).
//
// Contract: the canonical float sum of every pair, bit for bit that of
// duet::pairhmm::forward_sum<float> (core/pairhmm_model.hpp): the same order of operations,
// no fused multiply-add, and x86's flush-to-zero reproduced exactly (IEEE arithmetic, then a
// result at or below FLT_MIN is re-decided from the exact value). The host turns sums into
// likelihoods (double fallback included).
//
// Three kernels, selectable for throughput studies:
// - inter_task: one thread per pair, row by row (Ren et al.'s inter-task design);
// - intra_task: one warp per pair, 32 rows at a time along anti-diagonals, values passed
//   between rows by warp shuffles (their intra-task design, with a warp for a block); plain
//   IEEE products while the warp's values stay far from FLT_MIN, checked ones near it (one
//   vote per step decides; see pairhmm_gpu.cu for why that is exact);
// - intra_checked: the same scheme checking every product and sum for a tiny result (the
//   first intra-task kernel, kept to measure against; the app does not offer it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace duet::device::pairhmm {

enum class Kernel { inter_task, intra_task, intra_checked };
const char* kernel_name(Kernel kernel);  // "inter", "intra", "intra-checked"

// Pairs in the device layout: per pair, its rows' parameters (7 floats per row in the
// order of simd::pairhmm::RowParameter: mm, gm, mi, md, ge, match, mismatch) and read
// bases from row_offset, its haplotype bases from column_offset; base codes as in core.
struct PairBatch {
  std::vector<float> parameters;
  std::vector<std::uint8_t> read_bases, haplotype_bases;
  std::vector<std::int32_t> rows, columns;
  std::vector<std::int64_t> row_offset, column_offset;
  std::vector<float> initial_deletion;
  std::int64_t cells = 0;
  std::size_t pairs() const { return rows.size(); }
};

// CUDA devices usable (0 without a driver or device).
int device_count();

class PairhmmGpu {
 public:
  explicit PairhmmGpu(int device);
  ~PairhmmGpu();
  PairhmmGpu(const PairhmmGpu&) = delete;
  PairhmmGpu& operator=(const PairhmmGpu&) = delete;
  std::string name() const;
  // Sums of every pair of the batch. Throws std::runtime_error on any CUDA failure.
  // kernel_seconds: time of the kernel alone; transfer_seconds: copies in and out.
  // intra_task: lanes per pair (8, 16 or 32); 0 (the default) picks per batch.
  void set_group_width(int lanes) { group_width_ = lanes; }
  int last_group_width() const { return last_group_width_; }
  std::vector<float> forward_sums(const PairBatch& batch, Kernel kernel,
                                  double* kernel_seconds = nullptr,
                                  double* transfer_seconds = nullptr);

 private:
  struct State;
  State* state_;
  int group_width_ = 0, last_group_width_ = 0;
};

}  // namespace duet::device::pairhmm
