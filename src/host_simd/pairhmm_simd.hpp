// CPU SIMD kernels of the pair-HMM Forward (issue 7) and their run-time dispatch.
//
// Contract (every variant): the canonical float sum of each pair, bit for bit equal to
// pairhmm::forward_sum<float> (core/pairhmm_model.hpp); the caller turns sums into
// likelihoods with pairhmm::finish_likelihood (double fallback included). Thread-safe:
// scratch memory is per thread.
//
// Inter-pair vectorisation: pairs are sorted by size and taken W at a time (W = 8 floats
// for AVX2, 16 for AVX-512), one pair per lane, each lane running the whole recurrence.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>

#include "core/pairhmm_model.hpp"

namespace duet::simd::pairhmm {

enum class PairhmmIsa { scalar, avx2, avx512 };

// One row per variant: tests, benchmarks and the dispatcher read this table.
struct PairhmmVariant {
  PairhmmIsa isa;
  std::string_view name;  // "scalar", "avx2", "avx512"
  int lanes;              // pairs computed at once
  int element_bits;       // 32: float
  duet::pairhmm::ForwardSumsFunction function;
  bool study = false;  // kept for measurements: never chosen by "auto"
};

void forward_sums_avx2(const duet::pairhmm::Model& model,
                       std::span<const duet::pairhmm::Pair> pairs, float* sums);
void forward_sums_avx512(const duet::pairhmm::Model& model,
                         std::span<const duet::pairhmm::Pair> pairs, float* sums);
// The same with the rows of a strip skewed (one column further left per row, so that the
// cells of a step are independent): a study, no faster on the development machine.
void forward_sums_avx2_skewed(const duet::pairhmm::Model& model,
                              std::span<const duet::pairhmm::Pair> pairs, float* sums);
void forward_sums_avx512_skewed(const duet::pairhmm::Model& model,
                                std::span<const duet::pairhmm::Pair> pairs, float* sums);

inline constexpr std::array<PairhmmVariant, 5> kPairhmmVariants{{
    {PairhmmIsa::scalar, "scalar", 1, 32, &duet::pairhmm::forward_sums_scalar},
    {PairhmmIsa::avx2, "avx2", 8, 32, &forward_sums_avx2},
    {PairhmmIsa::avx512, "avx512", 16, 32, &forward_sums_avx512},
    {PairhmmIsa::avx2, "avx2-skewed", 8, 32, &forward_sums_avx2_skewed, true},
    {PairhmmIsa::avx512, "avx512-skewed", 16, 32, &forward_sums_avx512_skewed, true},
}};

bool cpu_supports(PairhmmIsa isa);
// The fastest variant this CPU runs (AVX-512, then AVX2, then scalar), decided once.
const PairhmmVariant& best_pairhmm_variant();
// A variant by name ("auto" is the best); throws UsageError when unknown or unsupported.
const PairhmmVariant& pairhmm_variant(std::string_view name);

}  // namespace duet::simd::pairhmm
