// The inter-pair pair-HMM Forward kernel: W pairs at once, one per float lane, each lane
// computing exactly the canonical float recurrence of core/pairhmm_model.hpp (same order
// of operations, no fused multiply-add: the build turns contraction off), so its sums are
// bit for bit those of pairhmm::forward_sum<float>.
//
// Compiled once per ISA by pairhmm_avx2.cpp and pairhmm_avx512.cpp with
// DUET_PAIRHMM_NAMESPACE and DUET_PAIRHMM_VECTOR_BITS set (256 or 512). The 256-bit
// operations are commented here; the 512-bit ones compute the same with mask registers.
#pragma once

#include <cstdint>

#include "host_simd/pairhmm_isa_kernels.hpp"

#if DUET_PAIRHMM_VECTOR_BITS == 256
#include <simde/x86/avx2.h>
#elif DUET_PAIRHMM_VECTOR_BITS == 512
#include <simde/x86/avx512.h>
#endif

namespace duet::simd::pairhmm::DUET_PAIRHMM_NAMESPACE {

namespace {

#if DUET_PAIRHMM_VECTOR_BITS == 256
using Floats = simde__m256;
using Ints = simde__m256i;
constexpr int W = 8;
constexpr int kStripRows = 3;  // rows per strip (see strip()): 16 registers allow 3
static_assert(W == kLanes);
inline Floats load(const float* p) { return simde_mm256_load_ps(p); }
inline void store(float* p, Floats v) { simde_mm256_store_ps(p, v); }
inline Floats zeros() { return simde_mm256_setzero_ps(); }
inline Floats add(Floats a, Floats b) { return simde_mm256_add_ps(a, b); }
inline Floats mul(Floats a, Floats b) { return simde_mm256_mul_ps(a, b); }
inline Ints load_ints(const std::int32_t* p) { return simde_mm256_loadu_si256(p); }
inline Ints broadcast(std::int32_t x) { return simde_mm256_set1_epi32(x); }
// Emission per lane: `match` where the base codes share a bit (equal bases, or N), else
// `mismatch`. (read & haplotype) == 0 gives all-ones lanes for mismatches, which pick
// the second operand of the blend.
inline Floats emission(Ints read, Ints haplotype, Floats match, Floats mismatch) {
  const Ints none = simde_mm256_cmpeq_epi32(simde_mm256_and_si256(read, haplotype), simde_mm256_setzero_si256());
  return simde_mm256_blendv_ps(match, mismatch, simde_mm256_castsi256_ps(none));
}
// x in lanes where column <= lane_columns, +0 elsewhere: (column > lane_columns) is
// all-ones where x must be cleared; andnot clears those bits.
inline Floats keep_columns(Floats x, Ints column, Ints lane_columns) {
  const Ints past = simde_mm256_cmpgt_epi32(column, lane_columns);
  return simde_mm256_andnot_ps(simde_mm256_castsi256_ps(past), x);
}
// Stores the lanes of `sums` whose read ends at `row` (lane_rows == row) into out.
inline void store_finished(float* out, Floats sums, Ints row, Ints lane_rows) {
  const Ints done = simde_mm256_cmpeq_epi32(row, lane_rows);
  simde_mm256_maskstore_ps(out, done, sums);
}
#elif DUET_PAIRHMM_VECTOR_BITS == 512
using Floats = simde__m512;
using Ints = simde__m512i;
constexpr int W = 16;
constexpr int kStripRows = 4;  // 32 registers
static_assert(W == kLanes);
inline Floats load(const float* p) { return simde_mm512_load_ps(p); }
inline void store(float* p, Floats v) { simde_mm512_store_ps(p, v); }
inline Floats zeros() { return simde_mm512_setzero_ps(); }
inline Floats add(Floats a, Floats b) { return simde_mm512_add_ps(a, b); }
inline Floats mul(Floats a, Floats b) { return simde_mm512_mul_ps(a, b); }
inline Ints load_ints(const std::int32_t* p) { return simde_mm512_loadu_si512(p); }
inline Ints broadcast(std::int32_t x) { return simde_mm512_set1_epi32(x); }
inline Floats emission(Ints read, Ints haplotype, Floats match, Floats mismatch) {
  const simde__mmask16 shared = simde_mm512_test_epi32_mask(read, haplotype);  // bit set: codes share a bit
  return simde_mm512_mask_blend_ps(shared, mismatch, match);
}
inline Floats keep_columns(Floats x, Ints column, Ints lane_columns) {
  const simde__mmask16 inside = simde_mm512_cmple_epi32_mask(column, lane_columns);
  return simde_mm512_maskz_mov_ps(inside, x);
}
inline void store_finished(float* out, Floats sums, Ints row, Ints lane_rows) {
  const simde__mmask16 done = simde_mm512_cmpeq_epi32_mask(row, lane_rows);
  simde_mm512_storeu_ps(out, simde_mm512_mask_mov_ps(simde_mm512_loadu_ps(out), done, sums));
}
#endif


// Rows r0 + 1 .. r0 + K over every column, K rows at a time ("a strip"): on entry M, X, Y
// hold row r0 (columns 0..C), on exit row r0 + K. Within a column the K cells are computed
// top to bottom, each from its diagonal and upper neighbours (the row above, in registers
// except for the strip's first row) and its left neighbour (the same row one column
// before, in registers). The K deletion recurrences along the rows are independent chains,
// which hides the latency of one column's multiply-add; the haplotype base of a column is
// read once for the K rows, and memory sees one row per strip.
template <int K>
void strip(const PairGroupView& g, float* M, float* X, float* Y, int r0) {
  Floats mm[K], gm[K], mi[K], md[K], ge[K], em[K], ex[K];
  Ints read_base[K];
  for (int i = 0; i < K; ++i) {
    const float* p = g.parameters + static_cast<std::ptrdiff_t>(r0 + i) * kParameters * W;
    mm[i] = load(p + kMatchToMatch * W);
    gm[i] = load(p + kIndelToMatch * W);
    mi[i] = load(p + kMatchToInsertion * W);
    md[i] = load(p + kMatchToDeletion * W);
    ge[i] = load(p + kGapExtension * W);
    em[i] = load(p + kEmissionMatch * W);
    ex[i] = load(p + kEmissionMismatch * W);
    read_base[i] = load_ints(g.read_bases + (r0 + i) * W);
  }
  // Each strip row's values at the previous column; column 0 of rows >= 1 is zero.
  Floats M_left[K], X_left[K], Y_left[K];
  for (int i = 0; i < K; ++i) M_left[i] = X_left[i] = Y_left[i] = zeros();
  // Row r0 at the previous column (column 0: zero, or the initial row when r0 == 0).
  Floats M_top_left = load(M), X_top_left = load(X), Y_top_left = load(Y);
  store(M, zeros());
  store(X, zeros());
  store(Y, zeros());
  for (int c = 1; c <= g.columns; ++c) {
    float* const m = M + c * W;
    float* const x = X + c * W;
    float* const y = Y + c * W;
    const Floats M_top = load(m), X_top = load(x), Y_top = load(y);
    const Ints haplotype_base = load_ints(g.haplotype_bases + (c - 1) * W);
    Floats M_diagonal = M_top_left, X_diagonal = X_top_left, Y_diagonal = Y_top_left;
    Floats M_up = M_top, X_up = X_top;
    for (int i = 0; i < K; ++i) {
      const Floats e = emission(read_base[i], haplotype_base, em[i], ex[i]);
      // The canonical order: ((M*mm + X*gm) + Y*gm) * e ; M*mi + X*ge ; M*md + Y*ge.
      const Floats M_new = mul(add(add(mul(M_diagonal, mm[i]), mul(X_diagonal, gm[i])), mul(Y_diagonal, gm[i])), e);
      const Floats X_new = add(mul(M_up, mi[i]), mul(X_up, ge[i]));
      const Floats Y_new = add(mul(M_left[i], md[i]), mul(Y_left[i], ge[i]));
      // The next row's diagonal is this row at the previous column; its upper neighbour
      // is this row at this column.
      M_diagonal = M_left[i];
      X_diagonal = X_left[i];
      Y_diagonal = Y_left[i];
      M_up = M_new;
      X_up = X_new;
      M_left[i] = M_new;
      X_left[i] = X_new;
      Y_left[i] = Y_new;
    }
    store(m, M_left[K - 1]);
    store(x, X_left[K - 1]);
    store(y, Y_left[K - 1]);
    M_top_left = M_top;
    X_top_left = X_top;
    Y_top_left = Y_top;
  }
}

// strip<k> for a run-time k in 1..K.
template <int K>
void strip_of(int k, const PairGroupView& g, float* M, float* X, float* Y, int r0) {
  if constexpr (K > 1) {
    if (k < K) return strip_of<K - 1>(k, g, M, X, Y, r0);
  }
  strip<K>(g, M, X, Y, r0);
}

}  // namespace

void forward_group(const PairGroupView& g) {
  const int C = g.columns;
  // One row of M, X and Y (columns 0..C), updated strip by strip.
  float* const M = g.work;
  float* const X = M + (C + 1) * W;
  float* const Y = X + (C + 1) * W;
  // Row 0: M = X = 0, Y = 2^120 / C of the lane's pair in every column.
  const Floats initial = load(g.initial_deletion);
  for (int c = 0; c <= C; ++c) {
    store(M + c * W, zeros());
    store(X + c * W, zeros());
    store(Y + c * W, initial);
  }
  const Ints lane_rows = load_ints(g.lane_rows);
  const Ints lane_columns = load_ints(g.lane_columns);

  int r0 = 0;
  while (r0 < g.rows) {
    // Strips end where some lane's read ends, so that its last row is in memory then.
    int k = 1;
    while (k < kStripRows && r0 + k < g.rows && !g.row_ends[r0 + k]) ++k;
    strip_of<kStripRows>(k, g, M, X, Y, r0);
    r0 += k;
    if (g.row_ends[r0]) {
      // Some lanes' reads end here: their sum over columns 1..C of (M + X), left to right,
      // with +0 added past each lane's own haplotype (which leaves the sum unchanged).
      Floats sum = zeros();
      for (int c = 1; c <= C; ++c) {
        sum = add(sum, keep_columns(add(load(M + c * W), load(X + c * W)), broadcast(c), lane_columns));
      }
      store_finished(g.sums, sum, broadcast(r0), lane_rows);
    }
  }
}

}  // namespace duet::simd::pairhmm::DUET_PAIRHMM_NAMESPACE
