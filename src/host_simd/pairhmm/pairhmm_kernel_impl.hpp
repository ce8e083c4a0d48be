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

#include "host_simd/pairhmm/pairhmm_isa_kernels.hpp"

#if DUET_PAIRHMM_VECTOR_BITS == 256
#include <simde/x86/avx2.h>
#elif DUET_PAIRHMM_VECTOR_BITS == 512
#include <simde/x86/avx512.h>
#endif

namespace duet::simd::pairhmm::DUET_PAIRHMM_NAMESPACE {

namespace {

// Bit h set when base code `read` shares no bit with haplotype code h, for h = 0..15.
constexpr std::uint32_t mismatch_mask(std::int32_t read) {
  std::uint32_t mask = 0;
  for (std::int32_t h = 0; h < 16; ++h) mask |= ((read & h) == 0 ? 1u : 0u) << h;
  return mask;
}

#if DUET_PAIRHMM_VECTOR_BITS == 256
using Floats = simde__m256;
using Ints = simde__m256i;
constexpr int W = 8;
constexpr int kStripRows = 3;  // rows per strip (see strip()): 16 registers allow 3
static_assert(W == kLanes);
inline Floats load(const float* p) {
  return simde_mm256_load_ps(p);
}
inline void store(float* p, Floats v) {
  simde_mm256_store_ps(p, v);
}
inline Floats zeros() {
  return simde_mm256_setzero_ps();
}
inline Floats add(Floats a, Floats b) {
  return simde_mm256_add_ps(a, b);
}
inline Floats mul(Floats a, Floats b) {
  return simde_mm256_mul_ps(a, b);
}
inline Ints load_ints(const std::int32_t* p) {
  return simde_mm256_loadu_si256(p);
}
inline void store_ints(std::int32_t* p, Ints v) {
  simde_mm256_storeu_si256(p, v);
}
inline Ints broadcast(std::int32_t x) {
  return simde_mm256_set1_epi32(x);
}
// Emission per lane: `match` where the base codes share a bit (equal bases, or N), else
// `mismatch`, from keys made once per row and column: the read key has bit h set when the
// read base shares no bit with haplotype code h (0..15), the haplotype key is 31 - h, and
// the read key shifted left by it has its sign bit set for a mismatch, which picks the
// second operand of the blend.
inline Ints read_key(Ints read) {
  alignas(32) std::int32_t codes[W];
  simde_mm256_store_si256(reinterpret_cast<Ints*>(codes), read);
  for (std::int32_t& r : codes) r = static_cast<std::int32_t>(mismatch_mask(r));
  return simde_mm256_load_si256(reinterpret_cast<const Ints*>(codes));
}
inline Ints haplotype_key(Ints haplotype) {
  return simde_mm256_sub_epi32(simde_mm256_set1_epi32(31), haplotype);
}
inline Floats emission(Ints read_key, Ints haplotype_key, Floats match, Floats mismatch) {
  const Ints shifted = simde_mm256_sllv_epi32(read_key, haplotype_key);
  return simde_mm256_blendv_ps(match, mismatch, simde_mm256_castsi256_ps(shifted));
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
// The anti-diagonal kernel's lane moves, their index vectors made once (outside its
// loops): shift_in gives lane i - 1 of v in lane i and *first in lane 0; store_last_lane
// writes lane W - 1 of v to at[W - 1], nothing else.
struct LaneMoves {
  Ints up = simde_mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
  Ints last = simde_mm256_setr_epi32(0, 0, 0, 0, 0, 0, 0, -1);
  Floats shift_in(Floats v, const float* first) const {
    return simde_mm256_blend_ps(simde_mm256_permutevar8x32_ps(v, up),
                                simde_mm256_broadcast_ss(first), 0x01);
  }
  void store_last_lane(float* at, Floats v) const { simde_mm256_maskstore_ps(at, last, v); }
};
#elif DUET_PAIRHMM_VECTOR_BITS == 512
using Floats = simde__m512;
using Ints = simde__m512i;
constexpr int W = 16;
constexpr int kStripRows = 4;  // 32 registers
static_assert(W == kLanes);
inline Floats load(const float* p) {
  return simde_mm512_load_ps(p);
}
inline void store(float* p, Floats v) {
  simde_mm512_store_ps(p, v);
}
inline Floats zeros() {
  return simde_mm512_setzero_ps();
}
inline Floats add(Floats a, Floats b) {
  return simde_mm512_add_ps(a, b);
}
inline Floats mul(Floats a, Floats b) {
  return simde_mm512_mul_ps(a, b);
}
inline Ints load_ints(const std::int32_t* p) {
  return simde_mm512_loadu_si512(p);
}
inline void store_ints(std::int32_t* p, Ints v) {
  simde_mm512_storeu_si512(p, v);
}
inline Ints broadcast(std::int32_t x) {
  return simde_mm512_set1_epi32(x);
}
// The keys are the base codes: a test of their common bits gives the match mask.
inline Ints read_key(Ints read) {
  return read;
}
inline Ints haplotype_key(Ints haplotype) {
  return haplotype;
}
inline Floats emission(Ints read, Ints haplotype, Floats match, Floats mismatch) {
  const simde__mmask16 shared =
      simde_mm512_test_epi32_mask(read, haplotype);  // bit set: codes share a bit
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
struct LaneMoves {
  Ints up = simde_mm512_setr_epi32(16, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14);
  Ints last = simde_mm512_set1_epi32(15);
  Floats shift_in(Floats v, const float* first) const {
    return simde_mm512_permutex2var_ps(v, up, simde_mm512_set1_ps(*first));
  }
  void store_last_lane(float* at, Floats v) const {
    const Floats moved = simde_mm512_permutexvar_ps(last, v);
    simde_mm_store_ss(at + (W - 1), simde_mm512_castps512_ps128(moved));
  }
};
#endif

// Rows r0 + 1 .. r0 + K over every column, K rows at a time ("a strip"), column by column:
// on entry M, X, Y hold row r0 (columns 0..C), on exit row r0 + K. Within a column the K
// cells are computed top to bottom, each from its diagonal and upper neighbours (the row
// above, in registers except for the strip's first row) and its left neighbour (the same
// row one column before, in registers). The K deletion recurrences along the rows are
// independent chains, which hides the latency of one column's products and sums; the
// haplotype key of a column is read once for the K rows, and memory sees one row per strip.
template <int K>
void strip_plain(const PairGroupView& g, const std::int32_t* column_keys, float* M, float* X,
                 float* Y, int r0) {
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
    read_base[i] = read_key(load_ints(reinterpret_cast<const std::int32_t*>(p + kReadBase * W)));
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
    const Ints haplotype_base = load_ints(column_keys + (c - 1) * W);
    Floats M_diagonal = M_top_left, X_diagonal = X_top_left, Y_diagonal = Y_top_left;
    Floats M_up = M_top, X_up = X_top;
    for (int i = 0; i < K; ++i) {
      const Floats e = emission(read_base[i], haplotype_base, em[i], ex[i]);
      // The canonical order: ((M*mm + X*gm) + Y*gm) * e ; M*mi + X*ge ; M*md + Y*ge.
      const Floats M_new =
          mul(add(add(mul(M_diagonal, mm[i]), mul(X_diagonal, gm[i])), mul(Y_diagonal, gm[i])), e);
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

// The same strip, skewed (a study: on the Xeon of the development machine no faster than
// the plain strip): at step t the strip's row i
// computes column t - i, from values of the previous two steps only (its left neighbour:
// its own cell of step t - 1; its upper and diagonal neighbours: row i - 1's cells of
// steps t - 1 and t - 2), so the K cells of a step are independent and the next step can
// start before this one ends. Row i's cells of steps t < i + 1 are virtual columns
// c = t - i <= 0: from all-zero inputs the recurrence gives +0 (no product of +0 with the
// non-negative gap and emission parameters is -0, and -0 + +0 is +0), which is column 0
// of a row below row 0. Row 0 reads row r0 at columns up to C + K - 1 and the last row
// writes columns from 2 - K: M, X and Y have kPadColumns columns of padding each side.
template <int K>
struct Strip {
  // Row i's parameters and read key.
  Floats mm[K], gm[K], mi[K], md[K], ge[K], em[K], ex[K];
  Ints read[K];
  const std::int32_t* column_keys;
  float *M, *X, *Y;

  // Step t. Rows read their cells of step t - 1 from `last` and of step t - 2 from
  // `before`, and write their cells of step t over `before` (rows from the last up, so
  // that row i + 1 has read row i's cell before it is replaced). top_left: row r0 at
  // column t - 1; top: set to row r0 at column t.
  struct Cells {
    Floats M[K], X[K], Y[K];
  };
  struct Top {
    Floats M, X, Y;
  };
  inline void step(int t, const Top& top_left, Top& top, const Cells& last, Cells& before) const {
    top.M = load(M + t * W);
    top.X = load(X + t * W);
    top.Y = load(Y + t * W);
    for (int i = K - 1; i >= 0; --i) {
      const Floats M_diagonal = i == 0 ? top_left.M : before.M[i - 1];
      const Floats X_diagonal = i == 0 ? top_left.X : before.X[i - 1];
      const Floats Y_diagonal = i == 0 ? top_left.Y : before.Y[i - 1];
      const Floats M_up = i == 0 ? top.M : last.M[i - 1];
      const Floats X_up = i == 0 ? top.X : last.X[i - 1];
      const Floats e = emission(read[i], load_ints(column_keys + (t - i - 1) * W), em[i], ex[i]);
      // The canonical order: ((M*mm + X*gm) + Y*gm) * e ; M*mi + X*ge ; M*md + Y*ge.
      before.M[i] =
          mul(add(add(mul(M_diagonal, mm[i]), mul(X_diagonal, gm[i])), mul(Y_diagonal, gm[i])), e);
      before.X[i] = add(mul(M_up, mi[i]), mul(X_up, ge[i]));
      before.Y[i] = add(mul(last.M[i], md[i]), mul(last.Y[i], ge[i]));
    }
    // The last row's column t - K + 1 (a virtual column, +0, while t < K).
    const int c = t - K + 1;
    store(M + c * W, before.M[K - 1]);
    store(X + c * W, before.X[K - 1]);
    store(Y + c * W, before.Y[K - 1]);
  }
};

template <int K>
void strip_skewed(const PairGroupView& g, const std::int32_t* column_keys, float* M, float* X,
                  float* Y, int r0) {
  Strip<K> s;
  for (int i = 0; i < K; ++i) {
    const float* const q = g.parameters + static_cast<std::ptrdiff_t>(r0 + i) * kParameters * W;
    s.mm[i] = load(q + kMatchToMatch * W);
    s.gm[i] = load(q + kIndelToMatch * W);
    s.mi[i] = load(q + kMatchToInsertion * W);
    s.md[i] = load(q + kMatchToDeletion * W);
    s.ge[i] = load(q + kGapExtension * W);
    s.em[i] = load(q + kEmissionMatch * W);
    s.ex[i] = load(q + kEmissionMismatch * W);
    s.read[i] = read_key(load_ints(reinterpret_cast<const std::int32_t*>(q + kReadBase * W)));
  }
  s.column_keys = column_keys;
  s.M = M;
  s.X = X;
  s.Y = Y;
  // Cells of the steps before the first: zero.
  typename Strip<K>::Cells a, b;
  for (int i = 0; i < K; ++i) a.M[i] = a.X[i] = a.Y[i] = b.M[i] = b.X[i] = b.Y[i] = zeros();
  // Row r0 at column 0: the diagonal neighbour of row 0 at step 1.
  typename Strip<K>::Top top_a{load(M), load(X), load(Y)}, top_b;
  // Column 0 of rows >= 1 is zero (with K > 1, step K - 1 writes it again: virtual +0).
  store(M, zeros());
  store(X, zeros());
  store(Y, zeros());
  // Two steps per iteration, the two sets of cells swapping roles.
  const int steps = g.columns + K - 1;
  int t = 1;
  for (; t + 1 <= steps; t += 2) {
    s.step(t, top_a, top_b, a, b);
    s.step(t + 1, top_b, top_a, b, a);
  }
  if (t <= steps) s.step(t, top_a, top_b, a, b);
}

// strip<k> for a run-time k in 1..K.
template <bool kSkewed, int K>
void strip_of(int k, const PairGroupView& g, const std::int32_t* column_keys, float* M, float* X,
              float* Y, int r0) {
  if constexpr (K > 1) {
    if (k < K) return strip_of<kSkewed, K - 1>(k, g, column_keys, M, X, Y, r0);
  }
  if constexpr (kSkewed) {
    strip_skewed<K>(g, column_keys, M, X, Y, r0);
  } else {
    strip_plain<K>(g, column_keys, M, X, Y, r0);
  }
}

template <bool kSkewed>
void forward_group_of(const PairGroupView& g) {
  static_assert(kStripRows - 1 <= kPadColumns);
  const int C = g.columns;
  const int stride = C + 1 + 2 * kPadColumns;  // columns of one row, padding included
  // One row of M, X and Y (column c at [c * W], c from -kPadColumns to C + kPadColumns),
  // updated strip by strip, then the haplotype keys (column c's at [(c - 1)]).
  float* const M = g.work + kPadColumns * W;
  float* const X = M + stride * W;
  float* const Y = X + stride * W;
  std::int32_t* const keys =
      reinterpret_cast<std::int32_t*>(Y + (stride - kPadColumns) * W) + kPadColumns * W;
  for (int c = -kPadColumns; c < C + kPadColumns; ++c) {
    store_ints(keys + c * W, haplotype_key(c >= 0 && c < C ? load_ints(g.haplotype_bases + c * W)
                                                           : broadcast(0)));
  }
  // Row 0: M = X = 0, Y = 2^120 / C of the lane's pair in every column (0 in the padding).
  const Floats initial = load(g.initial_deletion);
  for (int c = -kPadColumns; c <= C + kPadColumns; ++c) {
    store(M + c * W, zeros());
    store(X + c * W, zeros());
    store(Y + c * W, c >= 0 && c <= C ? initial : zeros());
  }
  const Ints lane_rows = load_ints(g.lane_rows);
  const Ints lane_columns = load_ints(g.lane_columns);

  int r0 = 0;
  while (r0 < g.rows) {
    // Strips end where some lane's read ends, so that its last row is in memory then.
    int k = 1;
    while (k < kStripRows && r0 + k < g.rows && !g.row_ends[r0 + k]) ++k;
    strip_of<kSkewed, kStripRows>(k, g, keys, M, X, Y, r0);
    r0 += k;
    if (g.row_ends[r0]) {
      // Some lanes' reads end here: their sum over columns 1..C of (M + X), left to right,
      // with +0 added past each lane's own haplotype (which leaves the sum unchanged).
      Floats sum = zeros();
      for (int c = 1; c <= C; ++c) {
        sum = add(sum,
                  keep_columns(add(load(M + c * W), load(X + c * W)), broadcast(c), lane_columns));
      }
      store_finished(g.sums, sum, broadcast(r0), lane_rows);
    }
  }
}

}  // namespace

// The anti-diagonal (intra-pair) kernel: one pair, W consecutive read rows per strip, one
// row per lane; at step t lane i computes row r0 + 1 + i at column t - i, so a step is an
// anti-diagonal of the strip and its W cells are independent. A lane's upper neighbour is
// lane i - 1's cell of the step before (lane 0: the row above the strip, from the row
// buffer), its diagonal neighbour lane i - 1's cell two steps before (the upper vector of
// the step before), its left neighbour its own cell of the step before. Cells left of
// column 1 come out zero (every input is zero there), cells right of column C are never
// read by a cell inside. Lane W - 1 stores the strip's last row into the row buffer, W - 1
// columns behind lane 0's reads of it. The last strip stops when the lane of row R leaves
// column C, having summed M + X of its columns left to right.
float forward_pair_diagonal(const DiagonalPairView& p) {
  const int C = p.columns;
  // The row buffer (columns 0..C, then zeros to C + W - 1), W - 1 floats of room before
  // it for store_last_lane's addressing.
  const int stride = C + 2 * W;
  float* const BM = p.work + (W - 1);
  float* const BX = BM + stride;
  float* const BY = BX + stride;
  for (int c = -(W - 1); c < stride - (W - 1); ++c) {
    BM[c] = 0.0f;
    BX[c] = 0.0f;
    BY[c] = c >= 0 && c <= C ? p.initial_deletion : 0.0f;
  }
  const int strips = (p.rows + W - 1) / W;
  const int last_lane = (p.rows - 1) % W;  // the lane of row R in the last strip
  alignas(64) float lanes[W];
  float sum = 0.0f;
  const LaneMoves moves;
  for (int s = 0; s < strips; ++s) {
    const float* const q = p.parameters + static_cast<std::ptrdiff_t>(s) * W;
    const auto row = [&](int k) {
      return load(q + static_cast<std::ptrdiff_t>(k) * p.padded_rows);
    };
    const Floats mm = row(kMatchToMatch), gm = row(kIndelToMatch), mi = row(kMatchToInsertion),
                 md = row(kMatchToDeletion), ge = row(kGapExtension), em = row(kEmissionMatch),
                 ex = row(kEmissionMismatch);
    const Ints read_base =
        read_key(load_ints(reinterpret_cast<const std::int32_t*>(q) + kReadBase * p.padded_rows));
    const bool last = s == strips - 1;
    const int steps = last ? C + last_lane : C + W - 1;
    // The step before the first: no cells (zero), and the upper vector of step 0, whose
    // lane 0 (row r0 at column 0) is lane 0's diagonal at step 1.
    Floats M_before = zeros(), X_before = zeros(), Y_before = zeros();
    Floats M_up = moves.shift_in(zeros(), BM), X_up = moves.shift_in(zeros(), BX),
           Y_up = moves.shift_in(zeros(), BY);
    Floats S = zeros();
    for (int t = 1; t <= steps; ++t) {
      const Floats M_diagonal = M_up, X_diagonal = X_up, Y_diagonal = Y_up;
      M_up = moves.shift_in(M_before, BM + t);
      X_up = moves.shift_in(X_before, BX + t);
      Y_up = moves.shift_in(Y_before, BY + t);
      const Floats e = emission(read_base, haplotype_key(load_ints(p.haplotype + C - t)), em, ex);
      const Floats M_new =
          mul(add(add(mul(M_diagonal, mm), mul(X_diagonal, gm)), mul(Y_diagonal, gm)), e);
      const Floats X_new = add(mul(M_up, mi), mul(X_up, ge));
      const Floats Y_new = add(mul(M_before, md), mul(Y_before, ge));
      if (last) S = add(S, add(M_new, X_new));
      if (!last && t >= W) {  // lane W - 1 is at column t - W + 1 >= 1; the next strip reads it
        moves.store_last_lane(BM + t - 2 * (W - 1), M_new);
        moves.store_last_lane(BX + t - 2 * (W - 1), X_new);
        moves.store_last_lane(BY + t - 2 * (W - 1), Y_new);
      }
      M_before = M_new;
      X_before = X_new;
      Y_before = Y_new;
    }
    // Column 0 of rows >= 1 is zero.
    BM[0] = BX[0] = BY[0] = 0.0f;
    if (last) {
      store(lanes, S);
      sum = lanes[last_lane];
    }
  }
  return sum;
}

void forward_group(const PairGroupView& g) {
  forward_group_of<false>(g);
}
void forward_group_skewed(const PairGroupView& g) {
  forward_group_of<true>(g);
}

}  // namespace duet::simd::pairhmm::DUET_PAIRHMM_NAMESPACE
