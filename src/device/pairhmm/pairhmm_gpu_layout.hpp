// The device layout of pair-HMM pairs, built on the host from core pairs.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "core/pairhmm/pairhmm_model.hpp"
#include "device/pairhmm/pairhmm_gpu.hpp"

namespace duet::device::pairhmm {

// Packs pairs into the device layout. The float row parameters come from tables by quality
// built once from the model: the same doubles Model::rows<float> computes, rounded once, so
// the rows the device expands are bit for bit those of Model::rows<float>.
class PairPacker {
 public:
  explicit PairPacker(const duet::pairhmm::Model& model);
  // `out`'s vectors are cleared and refilled (their capacity reused).
  void pack(std::span<const duet::pairhmm::Pair> pairs, PairBatch& out) const;

  using ParallelFor = pairhmm::ParallelFor;
  // The same pairs packed in pieces of `piece_pairs` pairs on several threads (`parallel`),
  // each piece into one of `pieces` (scratch kept by the caller), then joined into `out`.
  // Every pair gets the same rows, bases and parameters as with pack(); a read or haplotype
  // that two pieces share is stored once in each (a few more bytes). Without `parallel`,
  // or with fewer than two pieces, this is pack().
  void pack(std::span<const duet::pairhmm::Pair> pairs, PairBatch& out,
            std::vector<PairBatch>& pieces, const ParallelFor& parallel,
            std::size_t piece_pairs = 4096) const;

 private:
  // pack() without the tables (the pieces of a parallel pack; the joined batch gets them).
  void pack_records(std::span<const duet::pairhmm::Pair> pairs, PairBatch& out) const;
  static constexpr int kQualities = duet::pairhmm::Model::kMaxQuality + 1;
  static_assert(kQualities == kRowQualities, "one quality byte per table index");
  std::uint32_t min_base_quality_;  // within [0, kMaxQuality]
  // PairBatch::tables: err(q), 1 - err(q), err(q) / 3, each rounded once to float, then
  // match-to-match by [insertion * kQualities + deletion].
  std::vector<float> tables_;
};

// Operand pairs on which a GPU's flush-to-zero product and sum are checked against the
// canonical ones: products aimed at [FLT_MIN - 2^-150, FLT_MIN) (where x86's rule, tiny
// after rounding with an unbounded exponent, differs from "tiny before rounding" and from
// "subnormal after rounding": about half of them flushed by it), products across the
// subnormal range and around it, sums of values of both signs near FLT_MIN, and ordinary
// values. Deterministic (a fixed seed).
struct FtzCases {
  std::vector<float> a, b;
  std::size_t window = 0;          // products in [FLT_MIN - 2^-150, FLT_MIN)
  std::size_t window_flushed = 0;  // of those, the ones the canonical rule flushes to zero
};
FtzCases ftz_probe_cases();

// The probe on a device: how many cases gave another product or sum than the canonical one
// (bit for bit, the sign of zero included).
struct FtzProbe {
  std::size_t cases = 0, product_mismatches = 0, sum_mismatches = 0;
  bool matches() const { return product_mismatches == 0 && sum_mismatches == 0; }
};
FtzProbe probe_ftz_arithmetic(int device);

// The seven float parameters of every row of the batch (7 * read_rows() floats), as the
// device expands them (expand_row): for tests.
std::vector<float> row_parameters(const PairBatch& batch);

PairBatch pack_pairs(const duet::pairhmm::Model& model, std::span<const duet::pairhmm::Pair> pairs);
// The same into `out`, whose vectors are cleared and refilled (their capacity reused).
void pack_pairs(const duet::pairhmm::Model& model, std::span<const duet::pairhmm::Pair> pairs,
                PairBatch& out);

}  // namespace duet::device::pairhmm
