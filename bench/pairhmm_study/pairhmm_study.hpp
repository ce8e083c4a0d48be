// The pair-HMM study kernels: two other vectorisations of the Forward, kept to be measured
// (bench/pairhmm_cpu_bench) and tested (tests/pairhmm_simd_test.cpp) beside the kernels
// of src/host_simd/pairhmm, never run by `duet pairhmm`. Their contract is those kernels'
// (host_simd/pairhmm/pairhmm_simd.hpp): the canonical float sum of each pair, bit for bit.
//   skewed:   the inter-pair kernel with the rows of a strip skewed, one column further
//             left per row, so that the cells of a step are independent.
//   diagonal: anti-diagonal (intra-pair) vectorisation, one pair at a time, W read rows
//             per strip, a step computing the W cells of an anti-diagonal (GKL's layout).
#pragma once

#include <array>
#include <span>

#include "core/pairhmm/pairhmm_model.hpp"
#include "host_simd/pairhmm/pairhmm_simd.hpp"

namespace duet::simd::pairhmm {

// One row per study: the benchmark and the tests read this table.
struct PairhmmStudy {
  PairhmmVariant kernel;  // lanes: pairs at once (1 for the anti-diagonal kernels)
  int diagonal_rows = 0;  // anti-diagonal kernels: read rows per vector
};

void forward_sums_avx2_skewed(const duet::pairhmm::Model& model,
                              std::span<const duet::pairhmm::Pair> pairs, float* sums);
void forward_sums_avx512_skewed(const duet::pairhmm::Model& model,
                                std::span<const duet::pairhmm::Pair> pairs, float* sums);
void forward_sums_avx2_skewed_grouped(const duet::pairhmm::Model& model,
                                      std::span<const duet::pairhmm::Pair> pairs, float* sums);
void forward_sums_avx512_skewed_grouped(const duet::pairhmm::Model& model,
                                        std::span<const duet::pairhmm::Pair> pairs, float* sums);
// One pair at a time: also their grouped form.
void forward_sums_avx2_diagonal(const duet::pairhmm::Model& model,
                                std::span<const duet::pairhmm::Pair> pairs, float* sums);
void forward_sums_avx512_diagonal(const duet::pairhmm::Model& model,
                                  std::span<const duet::pairhmm::Pair> pairs, float* sums);

inline constexpr std::array<PairhmmStudy, 4> kPairhmmStudies{{
    {{Isa::avx2, "avx2-skewed", 8, 32, &forward_sums_avx2_skewed,
      &forward_sums_avx2_skewed_grouped}},
    {{Isa::avx512, "avx512-skewed", 16, 32, &forward_sums_avx512_skewed,
      &forward_sums_avx512_skewed_grouped}},
    {{Isa::avx2, "avx2-diagonal", 1, 32, &forward_sums_avx2_diagonal, &forward_sums_avx2_diagonal},
     8},
    {{Isa::avx512, "avx512-diagonal", 1, 32, &forward_sums_avx512_diagonal,
      &forward_sums_avx512_diagonal},
     16},
}};

}  // namespace duet::simd::pairhmm
