// The inter-pair pair-HMM Forward kernel: W pairs at once, one per float lane, each lane
// computing exactly the canonical float recurrence of core/pairhmm/pairhmm_model.hpp (same order
// of operations, no fused multiply-add: the build turns contraction off), so its sums are
// bit for bit those of pairhmm::forward_sum<float>.
//
// Compiled once per ISA by pairhmm_avx2.cpp and pairhmm_avx512.cpp with
// DUET_PAIRHMM_NAMESPACE and DUET_PAIRHMM_VECTOR_BITS set (256 or 512); the vector
// operations and the group driver are in pairhmm_kernel_ops.hpp.
#pragma once

#include <cstdint>

#include "host_simd/pairhmm/pairhmm_isa_kernels.hpp"
#include "host_simd/pairhmm/pairhmm_kernel_ops.hpp"

namespace duet::simd::pairhmm::DUET_PAIRHMM_NAMESPACE {

namespace {

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

// The strip, for forward_group_with.
struct PlainStrips {
  template <int K>
  static void strip(const PairGroupView& g, const std::int32_t* column_keys, float* M, float* X,
                    float* Y, int r0) {
    strip_plain<K>(g, column_keys, M, X, Y, r0);
  }
};

}  // namespace

void forward_group(const PairGroupView& g) {
  forward_group_with<PlainStrips>(g);
}

}  // namespace duet::simd::pairhmm::DUET_PAIRHMM_NAMESPACE
