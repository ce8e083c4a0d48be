// PaPaRa's scoring kernel (core/papara/papara_kernel.hpp) vectorised across edges: one
// int16 lane per edge, W consecutive edges of the interleaved profile layout in a vector,
// one query at a time, every lane running the whole recurrence in wrapping 16-bit
// arithmetic, so each lane's score is exactly score_edges_scalar's.
//
// Order of work: profile columns outer, query rows inner, K columns at a time ("a strip").
// Memory holds H and L of the strip's left neighbour column, one vector per query row;
// within a strip a row's K cells are computed left to right from registers (U and H of
// the row above, L and H of the cell to the left), so the K columns' recurrences overlap
// and memory sees one load and one store of H and L per K cells. The score of a cell's
// diagonal step, inc(i, j), is read from a table built per strip: for each query state
// s the query uses and each strip column, (A_j & s ? match : 0) + (F_j ? match_cgap : 0).
//
// Compiled once per ISA by papara_sse41.cpp, papara_avx2.cpp and papara_avx512.cpp with
// DUET_PAPARA_NAMESPACE and DUET_PAPARA_VECTOR_BITS set (128, 256 or 512). Everything but
// score_block has internal linkage, and no standard-library template is used: the object
// exports only its entry point.
#pragma once

#include <cstddef>
#include <cstdint>

#include "host_simd/papara/papara_isa_kernels.hpp"

#if DUET_PAPARA_VECTOR_BITS == 128
#include <simde/x86/sse4.1.h>
#elif DUET_PAPARA_VECTOR_BITS == 256
#include <simde/x86/avx2.h>
#elif DUET_PAPARA_VECTOR_BITS == 512
#include <simde/x86/avx512.h>
#endif

namespace duet::simd::papara::DUET_PAPARA_NAMESPACE {

namespace {

using duet::papara::ProfileView;
using duet::papara::Scoring;

// The vector operations, per width. The 128-bit ones are commented; the wider ones compute
// the same (AVX-512 with mask registers).
#if DUET_PAPARA_VECTOR_BITS == 128
using Vector = simde__m128i;
constexpr int W = 8;  // int16 lanes
inline Vector load(const Vector* p) {
  return simde_mm_load_si128(p);
}
inline void store(Vector* p, Vector v) {
  simde_mm_store_si128(p, v);
}
inline Vector splat(std::int16_t x) {
  return simde_mm_set1_epi16(x);
}
// a + b, wrapping in 16 bits (PaPaRa's lanes do not saturate).
inline Vector add(Vector a, Vector b) {
  return simde_mm_add_epi16(a, b);
}
// The larger of a and b as signed 16-bit integers.
inline Vector max(Vector a, Vector b) {
  return simde_mm_max_epi16(a, b);
}
// W profile bytes (one column of W consecutive edges), sign-extended to 16 bits: the
// kernel reads bits 0-4 only (SIMDe has no 512-bit zero extension).
inline Vector load_column(const std::uint8_t* p) {
  return simde_mm_cvtepi8_epi16(simde_mm_loadl_epi64(reinterpret_cast<const Vector*>(p)));
}
// `value` in the lanes where a and b share a bit, 0 elsewhere: (a & b) == 0 is all-ones in
// the lanes to clear, and andnot clears them.
inline Vector where_shared(Vector a, Vector b, Vector value) {
  const Vector none = simde_mm_cmpeq_epi16(simde_mm_and_si128(a, b), simde_mm_setzero_si128());
  return simde_mm_andnot_si128(none, value);
}
// `value` in the lanes where a and b share no bit, 0 elsewhere.
inline Vector where_not_shared(Vector a, Vector b, Vector value) {
  const Vector none = simde_mm_cmpeq_epi16(simde_mm_and_si128(a, b), simde_mm_setzero_si128());
  return simde_mm_and_si128(none, value);
}
inline void store_scores(std::int16_t* p, Vector v) {
  simde_mm_storeu_si128(reinterpret_cast<Vector*>(p), v);
}
#elif DUET_PAPARA_VECTOR_BITS == 256
using Vector = simde__m256i;
constexpr int W = 16;
inline Vector load(const Vector* p) {
  return simde_mm256_load_si256(p);
}
inline void store(Vector* p, Vector v) {
  simde_mm256_store_si256(p, v);
}
inline Vector splat(std::int16_t x) {
  return simde_mm256_set1_epi16(x);
}
inline Vector add(Vector a, Vector b) {
  return simde_mm256_add_epi16(a, b);
}
inline Vector max(Vector a, Vector b) {
  return simde_mm256_max_epi16(a, b);
}
inline Vector load_column(const std::uint8_t* p) {
  return simde_mm256_cvtepi8_epi16(simde_mm_loadu_si128(reinterpret_cast<const simde__m128i*>(p)));
}
inline Vector where_shared(Vector a, Vector b, Vector value) {
  const Vector none =
      simde_mm256_cmpeq_epi16(simde_mm256_and_si256(a, b), simde_mm256_setzero_si256());
  return simde_mm256_andnot_si256(none, value);
}
inline Vector where_not_shared(Vector a, Vector b, Vector value) {
  const Vector none =
      simde_mm256_cmpeq_epi16(simde_mm256_and_si256(a, b), simde_mm256_setzero_si256());
  return simde_mm256_and_si256(none, value);
}
inline void store_scores(std::int16_t* p, Vector v) {
  simde_mm256_storeu_si256(reinterpret_cast<Vector*>(p), v);
}
#elif DUET_PAPARA_VECTOR_BITS == 512
using Vector = simde__m512i;
constexpr int W = 32;
inline Vector load(const Vector* p) {
  return simde_mm512_load_si512(p);
}
inline void store(Vector* p, Vector v) {
  simde_mm512_store_si512(p, v);
}
inline Vector splat(std::int16_t x) {
  return simde_mm512_set1_epi16(x);
}
inline Vector add(Vector a, Vector b) {
  return simde_mm512_add_epi16(a, b);
}
inline Vector max(Vector a, Vector b) {
  return simde_mm512_max_epi16(a, b);
}
inline Vector load_column(const std::uint8_t* p) {
  return simde_mm512_cvtepi8_epi16(
      simde_mm256_loadu_si256(reinterpret_cast<const simde__m256i*>(p)));
}
// The test instruction gives the lanes where a & b is nonzero as a mask; maskz_mov keeps
// `value` there and zeroes the rest, mask_mov(value, mask, 0) the reverse.
inline Vector where_shared(Vector a, Vector b, Vector value) {
  return simde_mm512_maskz_mov_epi16(simde_mm512_test_epi16_mask(a, b), value);
}
inline Vector where_not_shared(Vector a, Vector b, Vector value) {
  return simde_mm512_mask_mov_epi16(value, simde_mm512_test_epi16_mask(a, b),
                                    simde_mm512_setzero_si512());
}
inline void store_scores(std::int16_t* p, Vector v) {
  simde_mm512_storeu_si512(p, v);
}
#endif
// Columns per strip, the fastest of 1 to 8 at every width (bench/papara_kernel_bench):
// fewer leave the chains of U down a column exposed, more spill registers.
constexpr int K = 3;
static_assert(W == kLanes);
static_assert(K <= kMaxStripColumns);
static_assert(sizeof(Vector) <= kVectorBytes);

// The scoring scheme as vectors.
struct Scheme {
  Vector gap_open, gap_extend, match, match_cgap, negative, flag_bit;
};

// Columns j .. j + C - 1 of one query's matrix (a strip of C <= K columns) for W edges:
// `column` points at column j's byte of the group's first edge. On entry H[i] and L[i]
// hold H(i, j - 1) and L(i, j - 1) of each row i; on exit H(i, j + C - 1) and L(i, j + C - 1).
// `used` has bit s set for each state s (0..15) of the query; `table` is the scratch of the
// strip's match scores. Returns max(best, H(m - 1, j .. j + C - 1)).
template <int C>
Vector strip(const std::uint8_t* column, std::ptrdiff_t stride, const std::uint8_t* query, int m,
             unsigned used, const Scheme& scheme, Vector* H, Vector* L, Vector* table,
             Vector best) {
  // Per column: the gap scores (free where F_j) and inc(s, j) for each state s of the
  // query, at table[s * C + k].
  Vector go[C], ge[C];
#pragma GCC unroll 8
  for (int k = 0; k < C; ++k) {
    const Vector cells = load_column(column + k * stride);
    go[k] = where_not_shared(cells, scheme.flag_bit, scheme.gap_open);
    ge[k] = where_not_shared(cells, scheme.flag_bit, scheme.gap_extend);
    const Vector flag_score = where_shared(cells, scheme.flag_bit, scheme.match_cgap);
    for (unsigned states = used; states != 0; states &= states - 1) {
      const int s = __builtin_ctz(states);
      store(
          table + s * C + k,
          add(flag_score, where_shared(cells, splat(static_cast<std::int16_t>(s)), scheme.match)));
    }
  }
  // Row i - 1 of each strip column: H (row -1: 0) and U (row -1: kNegative).
  Vector up[C], u[C];
#pragma GCC unroll 8
  for (int k = 0; k < C; ++k) {
    up[k] = splat(0);
    u[k] = scheme.negative;
  }
  Vector diagonal_next = splat(0);  // H(i - 1, j - 1): row -1 is 0
  for (int i = 0; i < m; ++i) {
    // Bits above the state's four never match a profile state, so state & 15 scores alike.
    const Vector* inc = table + (query[i] & 15) * C;
    Vector left = load(H + i);  // H(i, j - 1)
    Vector l = load(L + i);     // L(i, j - 1)
    Vector diagonal = diagonal_next;
    diagonal_next = left;
    // Unrolled, so that the strip's vectors stay in registers (GCC's -O2 would not).
#pragma GCC unroll 8
    for (int k = 0; k < C; ++k) {
      l = max(add(left, go[k]), add(l, ge[k]));
      u[k] = max(add(up[k], scheme.gap_open), add(u[k], scheme.gap_extend));
      const Vector h = max(max(add(diagonal, load(inc + k)), u[k]), l);
      diagonal = up[k];  // the next column's diagonal: H(i - 1, j + k)
      up[k] = h;
      left = h;
    }
    store(H + i, left);
    store(L + i, l);
  }
#pragma GCC unroll 8
  for (int k = 0; k < C; ++k) best = max(best, up[k]);  // row m - 1
  return best;
}

// One query against the W edges whose column-0 bytes start at `cells`: each lane's score.
Vector score_group(const std::uint8_t* query, int m, const std::uint8_t* cells, int columns,
                   std::ptrdiff_t stride, const Scheme& scheme, Vector* H, Vector* L,
                   Vector* table) {
  unsigned used = 0;
  for (int i = 0; i < m; ++i) used |= 1u << (query[i] & 15);
  for (int i = 0; i < m; ++i) {  // column -1
    store(H + i, splat(0));
    store(L + i, scheme.negative);
  }
  Vector best = scheme.negative;
  int j = 0;
  for (; j + K <= columns; j += K)
    best = strip<K>(cells + j * stride, stride, query, m, used, scheme, H, L, table, best);
  for (; j < columns; ++j)
    best = strip<1>(cells + j * stride, stride, query, m, used, scheme, H, L, table, best);
  for (int i = 0; i < m; ++i) best = max(best, load(H + i));  // column n - 1
  return best;
}

}  // namespace

void score_block(const QueryBlockView& block, const ProfileView& profiles, int first_edge,
                 int count, const Scoring& scoring, std::int16_t* out, void* work) {
  const Scheme scheme{splat(scoring.gap_open),        splat(scoring.gap_extend),
                      splat(scoring.match),           splat(scoring.match_cgap),
                      splat(duet::papara::kNegative), splat(duet::papara::kFlagBit)};
  Vector* const table = static_cast<Vector*>(work);
  Vector* const H = table + 16 * kMaxStripColumns;
  Vector* const L = H + block.longest;
  const std::ptrdiff_t stride = profiles.edge_stride;
  // Groups of W edges, edge groups outer so that a group's profile stays in cache for
  // every query. A group reaching past the layout (edge_stride, a multiple of 64 >= W)
  // starts earlier instead, and only its own edges' lanes are kept.
  for (int first = 0; first < count; first += W) {
    const int edge = first_edge + first;
    const int start = edge + W <= profiles.edge_stride ? edge : profiles.edge_stride - W;
    const int skip = edge - start;
    const int lanes = count - first < W ? count - first : W;
    for (int q = 0; q < block.queries; ++q) {
      const std::int64_t begin = block.offsets[q];
      const int m = static_cast<int>(block.offsets[q + 1] - begin);
      alignas(kVectorBytes) std::int16_t scores[W];
      store_scores(scores, score_group(block.residues + begin, m, profiles.cells + start,
                                       profiles.columns, stride, scheme, H, L, table));
      std::int16_t* const row = out + static_cast<std::ptrdiff_t>(q) * count + first;
      for (int k = 0; k < lanes; ++k) row[k] = scores[skip + k];
    }
  }
}

}  // namespace duet::simd::papara::DUET_PAPARA_NAMESPACE
