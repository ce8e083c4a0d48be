// The study kernels (see pairhmm_study.hpp): the skewed strip, run by the production
// group driver, and the anti-diagonal kernel. Both compute the canonical float recurrence
// of core/pairhmm/pairhmm_model.hpp in its order of operations, as the production kernel does.
//
// Compiled once per ISA by pairhmm_study_avx2.cpp and pairhmm_study_avx512.cpp with
// DUET_PAIRHMM_NAMESPACE and DUET_PAIRHMM_VECTOR_BITS set (256 or 512), on the vector
// operations of src/host_simd/pairhmm/pairhmm_kernel_ops.hpp.
#pragma once

#include <cstdint>

#include "host_simd/pairhmm/pairhmm_kernel_ops.hpp"
#include "pairhmm_study/pairhmm_study_isa_kernels.hpp"

namespace duet::simd::pairhmm::DUET_PAIRHMM_NAMESPACE {

namespace {

#if DUET_PAIRHMM_VECTOR_BITS == 256
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

// The strip of src/host_simd/pairhmm/pairhmm_kernel_impl.hpp (strip_plain), skewed: at
// step t the strip's row i computes column t - i, from values of the previous two steps
// only (its left neighbour: its own cell of step t - 1; its upper and diagonal neighbours:
// row i - 1's cells of steps t - 1 and t - 2), so the K cells of a step are independent
// and the next step can start before this one ends. Row i's cells of steps t < i + 1 are
// virtual columns c = t - i <= 0: from all-zero inputs the recurrence gives +0 (no product
// of +0 with the non-negative gap and emission parameters is -0, and -0 + +0 is +0), which
// is column 0 of a row below row 0. Row 0 reads row r0 at columns up to C + K - 1 and the
// last row writes columns from 2 - K: M, X and Y have kPadColumns columns of padding each
// side.
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

// The skewed strip, for forward_group_with.
struct SkewedStrips {
  template <int K>
  static void strip(const PairGroupView& g, const std::int32_t* column_keys, float* M, float* X,
                    float* Y, int r0) {
    strip_skewed<K>(g, column_keys, M, X, Y, r0);
  }
};

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

void forward_group_skewed(const PairGroupView& g) {
  forward_group_with<SkewedStrips>(g);
}

}  // namespace duet::simd::pairhmm::DUET_PAIRHMM_NAMESPACE
