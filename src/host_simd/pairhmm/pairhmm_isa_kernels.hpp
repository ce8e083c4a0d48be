// The boundary between the ISA-independent pair-HMM code (pairhmm_simd.cpp: grouping and
// packing) and the per-ISA kernel objects (pairhmm_kernel_impl.hpp compiled per ISA).
// Plain data and declarations only: this header is included by code compiled with ISA
// flags, where no standard-library template may be instantiated.
//
// Inter-pair layout: a group of W pairs (W = lanes of the vector), one pair per lane,
// padded to the group's largest read (rows) and haplotype (columns). Element [i][lane] of
// an array sits at i * W + lane. Padding lanes and rows hold zeros; a lane's result only
// depends on its own rows 1..R and columns 1..C, so padding never changes it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace duet::simd::pairhmm {

// Row parameters in this order, each a W-lane vector: [row][kParameters][W].
enum RowParameter {
  kMatchToMatch = 0,
  kIndelToMatch,
  kMatchToInsertion,
  kMatchToDeletion,
  kGapExtension,
  kEmissionMatch,
  kEmissionMismatch,
  kReadBase,  // the read's base code (int32 bits), 0 in padding
  kParameters
};

struct PairGroupView {
  int lanes = 0;                                  // W: must be the kernel's vector width in floats
  int rows = 0;                                   // largest read length of the group
  int columns = 0;                                // largest haplotype length of the group
  const float* parameters = nullptr;              // [rows][kParameters][W], 64-byte aligned
  const std::int32_t* haplotype_bases = nullptr;  // [columns][W] base codes (0 in padding)
  const std::int32_t* lane_rows = nullptr;  // [W] read length of each lane's pair (0: empty lane)
  const std::int32_t* lane_columns = nullptr;  // [W] haplotype length of each lane's pair
  const std::uint8_t* row_ends = nullptr;      // [rows + 1] 1 where some lane's read ends
  const float* initial_deletion = nullptr;     // [W] row 0 deletion value, 2^120 / C
  float* work = nullptr;  // scratch: work_floats(columns, W) floats, 64-byte aligned
  float* sums = nullptr;  // [W] out: each lane's canonical float sum
};

// Columns of padding each side of the kernels' rows (at least the rows of a strip less 1).
inline constexpr int kPadColumns = 7;
// Scratch of a group: rows of M, X and Y with their padding, and a key per haplotype base.
inline constexpr std::size_t work_floats(int columns, int lanes) {
  return static_cast<std::size_t>(3 * (columns + 1 + 2 * kPadColumns) + columns + 2 * kPadColumns) *
         static_cast<std::size_t>(lanes);
}

namespace avx2 {
inline constexpr int kLanes = 8;
void forward_group(const PairGroupView& group);
}  // namespace avx2
namespace avx512 {
inline constexpr int kLanes = 16;
void forward_group(const PairGroupView& group);
}  // namespace avx512

}  // namespace duet::simd::pairhmm
