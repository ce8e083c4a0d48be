// The building blocks of the inter-pair pair-HMM Forward kernel, per ISA: the vector type
// and its operations (loads, stores, emissions from base-code keys, lane masks), and the
// group driver (forward_group_with), which runs a group strip by strip with the strip
// given as a template argument. pairhmm_kernel_impl.hpp gives it the production strip;
// bench/pairhmm_study gives it a study strip. Everything here has internal linkage, so
// that an ISA object exports only the entry points its includer defines.
//
// Included with DUET_PAIRHMM_NAMESPACE and DUET_PAIRHMM_VECTOR_BITS set (256 or 512), by
// a file that CMake compiles with that ISA's flags. The 256-bit operations are commented
// here; the 512-bit ones compute the same with mask registers.
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
#endif

// Strips::strip<k> for a run-time k in 1..K.
template <class Strips, int K>
void strip_of(int k, const PairGroupView& g, const std::int32_t* column_keys, float* M, float* X,
              float* Y, int r0) {
  if constexpr (K > 1) {
    if (k < K) return strip_of<Strips, K - 1>(k, g, column_keys, M, X, Y, r0);
  }
  Strips::template strip<K>(g, column_keys, M, X, Y, r0);
}

// A group, strip by strip. Strips::strip<K>(g, column_keys, M, X, Y, r0) computes rows
// r0 + 1 .. r0 + K over every column: on entry M, X, Y hold row r0 (columns 0..C), on exit
// row r0 + K; it may read and write up to kPadColumns columns past either end, which hold
// zeros (M, X, Y) and the key of base code 0 (column_keys).
template <class Strips>
void forward_group_with(const PairGroupView& g) {
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
    strip_of<Strips, kStripRows>(k, g, keys, M, X, Y, r0);
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

}  // namespace duet::simd::pairhmm::DUET_PAIRHMM_NAMESPACE
