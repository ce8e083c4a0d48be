// The device layout of pair-HMM pairs, built on the host from core pairs.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "core/pairhmm_model.hpp"
#include "device/pairhmm_gpu.hpp"

namespace duet::device::pairhmm {

// Packs pairs into the device layout. The float row parameters come from tables by quality
// built once from the model: the same doubles Model::rows<float> computes, rounded once, so
// the rows are bit for bit those of Model::rows<float>, written straight into the batch.
class PairPacker {
 public:
  explicit PairPacker(const duet::pairhmm::Model& model);
  // `out`'s vectors are cleared and refilled (their capacity reused).
  void pack(std::span<const duet::pairhmm::Pair> pairs, PairBatch& out) const;

 private:
  static constexpr int kQualities = duet::pairhmm::Model::kMaxQuality + 1;
  std::size_t min_base_quality_;  // within [0, kMaxQuality]
  // error: err(q); correct: 1 - err(q); third: err(q) / 3; each rounded once to float.
  std::array<float, kQualities> error_{}, correct_{}, third_{};
  std::vector<float> match_to_match_;  // [insertion * kQualities + deletion]
};

PairBatch pack_pairs(const duet::pairhmm::Model& model, std::span<const duet::pairhmm::Pair> pairs);
// The same into `out`, whose vectors are cleared and refilled (their capacity reused).
void pack_pairs(const duet::pairhmm::Model& model, std::span<const duet::pairhmm::Pair> pairs,
                PairBatch& out);

}  // namespace duet::device::pairhmm
