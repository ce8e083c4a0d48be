// GPU kernels of the pair-HMM Forward, behind a plain C++ header (C++17: the
// CUDA sources include it; pairhmm_gpu_layout.hpp builds a PairBatch from core pairs).
//
// Contract: the canonical float sum of every pair, bit for bit that of
// duet::pairhmm::forward_sum<float> (core/pairhmm/pairhmm_model.hpp): the same order of operations,
// no fused multiply-add, and x86's flush-to-zero reproduced exactly (the GPU's own FTZ
// where a probe shows it equal, else IEEE arithmetic with results near FLT_MIN re-decided
// from the exact value). The host turns sums into
// likelihoods (double fallback included).
//
// Three kernels, selectable for throughput studies:
// - inter_task: one thread per pair, row by row (Ren et al.'s inter-task design);
// - intra_task: G lanes per pair (4 to 32), each owning K read rows (1 to 8), strips of G K
//   rows along anti-diagonals, values passed between lanes by warp shuffles (their
//   intra-task design, with a group of lanes for a block); the shape is chosen per batch.
//   Two arithmetics: ftz, the GPU's own flush-to-zero products and sums, where a probe at
//   first use finds them equal to the canonical ones (ftz_matches_canonical); else ieee,
//   plain IEEE products while the warp's values stay far from FLT_MIN and checked ones near
//   it (one vote per step decides; see pairhmm_gpu.cu for why that is exact);
// - intra_checked: a warp per pair, 32 rows per strip, checking every product and sum for a
//   tiny result (the first intra-task kernel, kept to measure against; the app does not
//   offer it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace duet::device::pairhmm {

enum class Kernel { inter_task, intra_task, intra_checked };
const char* kernel_name(Kernel kernel);  // "inter", "intra", "intra-checked"

// Pairs in the device layout. Each distinct read's rows and each distinct haplotype's bases
// are stored once per batch; a pair is a record pointing at its read (row_offset, in rows)
// and its haplotype (column_offset, in bases), so pairs of one read share its rows.
// scratch_offset: where the pair's three rows of columns + 1 floats start in the device's
// scratch (in units of three floats; scratch_columns in all).
//
// A row is its base (read_bases) and one quality word (qualities: base quality, already
// raised to the minimum, | insertion << 8 | deletion << 16 | gap continuation << 24); the
// device expands each word into the row's seven float parameters by table lookups
// (expand_row, `tables`: the packer's float tables, kRowTableFloats of them), the same
// floats Model::rows<float> gives, 5 bytes a row to copy instead of 29.
inline constexpr std::uint32_t kRowQualities = 128;  // qualities 0..127 (Model::kMaxQuality)
// tables: error(q), 1 - error(q), error(q) / 3, each for q < 128, then match-to-match by
// [insertion * 128 + deletion].
inline constexpr std::size_t kRowTableFloats = 3 * kRowQualities + kRowQualities * kRowQualities;
struct PairBatch {
  std::vector<std::uint32_t> qualities;
  std::vector<float> tables;
  std::vector<std::uint8_t> read_bases, haplotype_bases;
  std::vector<std::int32_t> rows, columns;
  std::vector<std::int64_t> row_offset, column_offset, scratch_offset;
  std::vector<float> initial_deletion;
  std::int64_t cells = 0, scratch_columns = 0;
  std::size_t pairs() const { return rows.size(); }
  std::size_t read_rows() const { return qualities.size(); }
};

#if defined(__CUDACC__)
#define DUET_PAIRHMM_HOST_DEVICE __host__ __device__
#else
#define DUET_PAIRHMM_HOST_DEVICE
#endif
// A row's seven parameters from its quality word, in the order of simd::pairhmm::
// RowParameter (mm, gm, mi, md, ge, match, mismatch); the device's expansion and the host's
// (row_parameters in pairhmm_gpu_layout.hpp) are this one function.
DUET_PAIRHMM_HOST_DEVICE inline void expand_row(std::uint32_t word, const float* tables,
                                                float* out) {
  const std::uint32_t base = word & 0xffu, insertion = (word >> 8) & 0xffu,
                      deletion = (word >> 16) & 0xffu, gap = word >> 24;
  const float* const error = tables;
  const float* const correct = tables + kRowQualities;
  const float* const third = tables + 2 * kRowQualities;
  const float* const match_to_match = tables + 3 * kRowQualities;
  out[0] = match_to_match[insertion * kRowQualities + deletion];
  out[1] = correct[gap];
  out[2] = error[insertion];
  out[3] = error[deletion];
  out[4] = error[gap];
  out[5] = correct[base];
  out[6] = third[base];
}
#undef DUET_PAIRHMM_HOST_DEVICE

// The intra-task kernel's shape: lanes per pair (4 to 32) and read rows per lane. Compiled:
// 32x1, 16x1, 8x1, 16x2, 8x2, 4x2, 8x4, 4x4; for ftz also 32x2, 32x4, 16x4, 8x8.
struct IntraShape {
  int lanes = 0, rows_per_lane = 0;
};

// A shape's costs for the per-batch choice (pairhmm_shapes.hpp), in cycles of one warp
// scheduler, measured kernel-only on one GPU model:
// - per warp step and per warp when the GPU is full: a batch's warp steps times the first
//   plus its warps times the second, over the GPU's schedulers (4 per SM), is the kernel's
//   time (stalls, the checked path and the memory instructions included; the second is a
//   warp's own start: its pairs' sizes, rows and the end);
// - per step of one warp when the batch is too small to fill the GPU (the kernel took about
//   this times the longest warp's steps).
struct ShapeCost {
  IntraShape shape;
  double cycles_per_warp_step = 0, cycles_per_warp = 0, latency_per_step = 0;
};

// The intra-task kernel's float arithmetic (see above); automatic: ftz where the device
// passes the probe, else ieee.
enum class Arithmetic { automatic, ftz, ieee };
const char* arithmetic_name(Arithmetic arithmetic);  // "auto", "ftz", "ieee"

// Whether the device's mul.rn.ftz and add.rn.ftz give canonical_product and canonical_sum
// (core/pairhmm/pairhmm_model.hpp) bit for bit on every case of ftz_probe_cases
// (pairhmm_gpu_layout.hpp); probed once per device and process, then remembered.
bool ftz_matches_canonical(int device);
// The probe's device side: mul.rn.ftz and add.rn.ftz of each operand pair (a[i], b[i]).
void device_ftz_operations(int device, const std::vector<float>& a, const std::vector<float>& b,
                           std::vector<float>& products, std::vector<float>& sums);

// Runs body(i) for i < n, in chunks, on several threads (a scheduler's host-loop runner).
using ParallelFor = std::function<void(std::size_t n, std::size_t chunk,
                                       const std::function<void(std::size_t)>& body)>;

// Seconds one batch took: the host's copy into the pinned buffer (staging), the kernel
// alone (CUDA events), the copies in and out with staging (transfer), and the host's
// choice of the intra-task shape (choice).
struct SlotTimes {
  double staging = 0, kernel = 0, transfer = 0, choice = 0;
};

// A GPU with `slots` slots, each with its own stream, pinned staging buffer and device
// buffers (kept between batches, grown as needed; the pinned buffer holds what is copied in
// and out, the device buffers also the kernels' scratch). Batches on different slots run
// independently: while one slot's copies and kernel run, the host can stage the next batch
// into another (see pairhmm_gpu_feed.hpp). Calls from one thread at a time.
class PairhmmGpu {
 public:
  explicit PairhmmGpu(int device, int slots = 2);
  ~PairhmmGpu();
  PairhmmGpu(const PairhmmGpu&) = delete;
  PairhmmGpu& operator=(const PairhmmGpu&) = delete;
  std::string name() const;
  int slots() const;
  // intra_task: its shape; {0, 0} (the default) picks one per batch. Throws
  // std::invalid_argument (at the next submit) for a shape not compiled.
  void set_intra_shape(IntraShape shape) { shape_ = shape; }
  // intra_task: the costs the per-batch choice weighs for an arithmetic (ftz or ieee);
  // by default measured_shape_costs (pairhmm_shapes.hpp). Throws std::invalid_argument for
  // no costs or a shape not compiled for the arithmetic.
  void set_shape_costs(Arithmetic arithmetic, std::vector<ShapeCost> costs);
  IntraShape last_intra_shape() const { return last_shape_; }
  // intra_task: its arithmetic (automatic by default). Forcing ftz on a device that fails
  // the probe gives sums that may differ from the canonical ones (for studies and tests).
  void set_arithmetic(Arithmetic arithmetic) { arithmetic_ = arithmetic; }
  // The arithmetic the intra-task kernel runs with (automatic resolved; may run the probe).
  Arithmetic arithmetic_used() const;

  // Sums of every pair of the batch, on slot 0 (submit then finish). Throws
  // std::runtime_error on any CUDA failure. kernel_seconds: time of the kernel alone;
  // transfer_seconds: copies in and out, including the host's copy into the pinned buffer.
  std::vector<float> forward_sums(const PairBatch& batch, Kernel kernel,
                                  double* kernel_seconds = nullptr,
                                  double* transfer_seconds = nullptr);

  // Asynchronous use, slot by slot. submit stages the batch into the slot's pinned buffer
  // (on this thread) and queues the copy in, the kernel and the copy out on the slot's
  // stream; the batch may be changed or destroyed as soon as it returns. finish waits for
  // the slot's batch and writes its sums (batch.pairs() floats, possibly none) to `sums`.
  // A slot holds one batch from submit to finish (std::logic_error otherwise). On a CUDA
  // failure both throw std::runtime_error; then call abandon() before using the slots again.
  // With `parallel`, the shape choice and the staging run on several threads.
  void submit(int slot, const PairBatch& batch, Kernel kernel, const ParallelFor& parallel = {});
  void finish(int slot, float* sums, SlotTimes* times = nullptr);
  // Waits for whatever the slots still run and forgets their batches.
  void abandon() noexcept;

 private:
  struct State;
  State* state_;
  IntraShape shape_{}, last_shape_{};
  std::vector<ShapeCost> ftz_costs_, ieee_costs_;
  Arithmetic arithmetic_ = Arithmetic::automatic;
};

}  // namespace duet::device::pairhmm
