// The boundary between the ISA-independent PaPaRa scoring code (papara_simd.cpp: dispatch,
// scratch memory) and the per-ISA kernel objects (papara_kernel_impl.hpp compiled per ISA).
// Plain data and declarations only: this header is included by code compiled with ISA
// flags, where no standard-library template may be instantiated.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/papara/papara_kernel.hpp"

namespace duet::simd::papara {

// Queries of a block, back to back: query k is residues[offsets[k], offsets[k + 1]), at
// least one residue each. `longest` is the longest query's length.
struct QueryBlockView {
  const std::uint8_t* residues = nullptr;
  const std::int64_t* offsets = nullptr;
  int queries = 0;
  std::int64_t longest = 0;
};

// Bytes of the widest vector (AVX-512): scratch is sized and aligned for it.
inline constexpr std::size_t kVectorBytes = 64;
// Most profile columns a kernel takes at once (papara_kernel_impl.hpp's strips).
inline constexpr int kMaxStripColumns = 8;
// Scratch of a kernel: H and L of one column (a vector per query row) and the match-score
// table of a strip (16 query states by kMaxStripColumns columns), 64-byte aligned.
inline constexpr std::size_t work_bytes(std::int64_t longest) {
  return (2 * static_cast<std::size_t>(longest) + 16 * kMaxStripColumns) * kVectorBytes;
}

// Scores every query of `block` against edges [first_edge, first_edge + count):
// out[q * count + k] is query q's score on edge first_edge + k, as score_edges_scalar gives
// it. `work`: work_bytes(block.longest) bytes, 64-byte aligned. One per ISA:
namespace sse41 {
inline constexpr int kLanes = 8;  // int16 edges per vector
void score_block(const QueryBlockView& block, const duet::papara::ProfileView& profiles,
                 int first_edge, int count, const duet::papara::Scoring& scoring, std::int16_t* out,
                 void* work);
}  // namespace sse41
namespace avx2 {
inline constexpr int kLanes = 16;  // int16 edges per vector
void score_block(const QueryBlockView& block, const duet::papara::ProfileView& profiles,
                 int first_edge, int count, const duet::papara::Scoring& scoring, std::int16_t* out,
                 void* work);
}  // namespace avx2
namespace avx512 {
inline constexpr int kLanes = 32;  // int16 edges per vector
void score_block(const QueryBlockView& block, const duet::papara::ProfileView& profiles,
                 int first_edge, int count, const duet::papara::Scoring& scoring, std::int16_t* out,
                 void* work);
}  // namespace avx512

}  // namespace duet::simd::papara
