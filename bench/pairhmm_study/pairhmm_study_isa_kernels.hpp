// The boundary between the study kernels' drivers (pairhmm_study.cpp) and their per-ISA
// objects (pairhmm_study_kernel_impl.hpp compiled per ISA). Plain data and declarations
// only, for the reason src/host_simd/pairhmm/pairhmm_isa_kernels.hpp gives; the skewed
// kernel takes that header's inter-pair layout (PairGroupView).
#pragma once

#include <cstddef>
#include <cstdint>

#include "host_simd/pairhmm/pairhmm_isa_kernels.hpp"

namespace duet::simd::pairhmm {

// Anti-diagonal (intra-pair) layout: one pair, its read rows W at a time (one row per
// lane), each step an anti-diagonal of W cells.
struct DiagonalPairView {
  int rows = 0, columns = 0;  // R >= 1, C >= 1
  int padded_rows = 0;        // R rounded up to a multiple of W
  // [kParameters][padded_rows]: parameter k of row r at k * padded_rows + r (the read base
  // code's int32 bits as parameter kReadBase); zeros past row R; 64-byte aligned.
  const float* parameters = nullptr;
  // The haplotype's base codes reversed: haplotype[j] = base C - 1 - j for 0 <= j < C,
  // 0 for -(W - 1) <= j < 0 and C <= j < C + W - 1.
  const std::int32_t* haplotype = nullptr;
  float initial_deletion = 0;  // 2^120 / C
  float* work = nullptr;       // diagonal_work_floats(columns, W) floats
};
inline constexpr std::size_t diagonal_work_floats(int columns, int lanes) {
  return 3 * static_cast<std::size_t>(columns + 2 * lanes);
}

namespace avx2 {
void forward_group_skewed(const PairGroupView& group);      // the skewed strip
float forward_pair_diagonal(const DiagonalPairView& pair);  // the canonical float sum
}  // namespace avx2
namespace avx512 {
void forward_group_skewed(const PairGroupView& group);
float forward_pair_diagonal(const DiagonalPairView& pair);
}  // namespace avx512

}  // namespace duet::simd::pairhmm
