// The boundary between the ISA-independent PaPaRa code (papara_simd.cpp: dispatch, scratch
// memory, the traceback's grouping and walk back) and the per-ISA kernel objects
// (papara_kernel_impl.hpp and papara_traceback_impl.hpp compiled per ISA).
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
// Rows of a strip's match-score table: one per query residue (DNA state sets 0..15,
// protein amino acids 0..19).
inline constexpr int kMaxStripStates = 32;
// Scratch of a kernel: H and L of one column (a vector per query row) and the match-score
// table of a strip (kMaxStripStates by kMaxStripColumns), 64-byte aligned.
inline constexpr std::size_t work_bytes(std::int64_t longest) {
  return (2 * static_cast<std::size_t>(longest) + kMaxStripStates * kMaxStripColumns) *
         kVectorBytes;
}

// A group of the traceback DP (papara_traceback_impl.hpp): W queries, one per int32 lane,
// each against its own edge, padded to the longest (`rows`). Element [i][lane] of an array
// sits at i * W + lane. DNA or protein, as the profiles are.
struct TracebackGroupView {
  int rows = 0;                           // the longest query of the group
  const std::int32_t* lengths = nullptr;  // [W] each lane's query length, 1..rows
  const std::int32_t* edges = nullptr;    // [W] each lane's edge, 0..profiles.edges - 1
  // [rows][W] the residues as state sets (DNA: as they are; protein: 1 << amino acid), 0
  // past a lane's end; 64-byte aligned.
  const std::int32_t* residues = nullptr;
  // Out: the choices of each cell (i, j) of the DP (the bits of papara::traceback's
  // pointers), by column: choice b of cell (i, j) is the word (4 * j + b) * rows + i, of
  // traceback_choice_word_bytes(W) bytes, lane k its bit k; b = 0: H from U, 1: H from L,
  // 2: L extends, 3: U extends (H is from the diagonal where neither 0 nor 1 is set).
  // traceback_choice_bytes(columns, rows, W) bytes; the words of rows past a lane's end
  // are unspecified.
  std::uint8_t* choices = nullptr;
};

// Each lane's end cell and score, as papara::traceback chooses them.
struct TracebackEnd {
  std::int32_t score, row, column;
};

inline constexpr std::size_t traceback_choice_word_bytes(int lanes) {
  return lanes <= 8 ? 1 : 2;
}
inline constexpr std::size_t traceback_choice_bytes(int columns, int rows, int lanes) {
  return 4 * static_cast<std::size_t>(columns) * static_cast<std::size_t>(rows) *
         traceback_choice_word_bytes(lanes);
}
// Scratch of the traceback DP: H and L of one column, a vector per row, 64-byte aligned.
inline constexpr std::size_t traceback_work_bytes(int rows) {
  return 2 * static_cast<std::size_t>(rows) * kVectorBytes;
}

// Scores every query of `block` against edges [first_edge, first_edge + count):
// out[q * count + k] is query q's score on edge first_edge + k, as score_edges_scalar gives
// it (score_block_protein: score_edges_protein_scalar). `work`: work_bytes(block.longest)
// bytes, 64-byte aligned.
// traceback_group: the DP of papara::traceback for each lane of `group`, its choices into
// group.choices and its end cell into ends[lane]; profiles.columns >= 1. `work`:
// traceback_work_bytes(group.rows) bytes, 64-byte aligned. One per ISA:
namespace sse41 {
inline constexpr int kLanes = 8;  // int16 edges per vector
void score_block(const QueryBlockView& block, const duet::papara::ProfileView& profiles,
                 int first_edge, int count, const duet::papara::Scoring& scoring, std::int16_t* out,
                 void* work);
inline constexpr int kProteinLanes = 4;  // int32 edges per vector
void score_block_protein(const QueryBlockView& block, const duet::papara::ProfileView& profiles,
                         int first_edge, int count, const duet::papara::Scoring& scoring,
                         std::int32_t* out, void* work);
inline constexpr int kTracebackLanes = 4;  // int32 queries per vector
void traceback_group(const TracebackGroupView& group, const duet::papara::ProfileView& profiles,
                     const duet::papara::Scoring& scoring, TracebackEnd* ends, void* work);
}  // namespace sse41
namespace avx2 {
inline constexpr int kLanes = 16;  // int16 edges per vector
void score_block(const QueryBlockView& block, const duet::papara::ProfileView& profiles,
                 int first_edge, int count, const duet::papara::Scoring& scoring, std::int16_t* out,
                 void* work);
inline constexpr int kProteinLanes = 8;  // int32 edges per vector
void score_block_protein(const QueryBlockView& block, const duet::papara::ProfileView& profiles,
                         int first_edge, int count, const duet::papara::Scoring& scoring,
                         std::int32_t* out, void* work);
inline constexpr int kTracebackLanes = 8;  // int32 queries per vector
void traceback_group(const TracebackGroupView& group, const duet::papara::ProfileView& profiles,
                     const duet::papara::Scoring& scoring, TracebackEnd* ends, void* work);
}  // namespace avx2
namespace avx512 {
inline constexpr int kLanes = 32;  // int16 edges per vector
void score_block(const QueryBlockView& block, const duet::papara::ProfileView& profiles,
                 int first_edge, int count, const duet::papara::Scoring& scoring, std::int16_t* out,
                 void* work);
inline constexpr int kProteinLanes = 16;  // int32 edges per vector
void score_block_protein(const QueryBlockView& block, const duet::papara::ProfileView& profiles,
                         int first_edge, int count, const duet::papara::Scoring& scoring,
                         std::int32_t* out, void* work);
inline constexpr int kTracebackLanes = 16;  // int32 queries per vector
void traceback_group(const TracebackGroupView& group, const duet::papara::ProfileView& profiles,
                     const duet::papara::Scoring& scoring, TracebackEnd* ends, void* work);
}  // namespace avx512

}  // namespace duet::simd::papara
