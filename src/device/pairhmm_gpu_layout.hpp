// The device layout of pair-HMM pairs, built on the host from core pairs.
#pragma once

#include <span>

#include "core/pairhmm_model.hpp"
#include "device/pairhmm_gpu.hpp"

namespace duet::device::pairhmm {

PairBatch pack_pairs(const duet::pairhmm::Model& model, std::span<const duet::pairhmm::Pair> pairs);

}  // namespace duet::device::pairhmm
