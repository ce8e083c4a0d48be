// PaPaRa's scoring kernel (core/papara/papara_kernel.hpp) vectorised across edges: one
// lane per edge, W consecutive edges of the interleaved profile layout in a vector, one
// query at a time, every lane running the whole recurrence in the scalar's wrapping
// arithmetic, so each lane's score is exactly the scalar reference's. DNA: int16 lanes
// (score_edges_scalar); protein: int32 lanes, half as many (score_edges_protein_scalar).
// One template serves both: the lane types (DnaLanes, ProteinLanes) hold what differs.
//
// Order of work: profile columns outer, query rows inner, K columns at a time ("a strip").
// Memory holds H and L of the strip's left neighbour column, one vector per query row;
// within a strip a row's K cells are computed left to right from registers (U and H of
// the row above, L and H of the cell to the left), so the K columns' recurrences overlap
// and memory sees one load and one store of H and L per K cells. The score of a cell's
// diagonal step, inc(i, j), is read from a table built per strip: for each query residue
// s the query uses and each strip column, (A_j matches s ? match : 0) + (F_j ? match_cgap
// : 0).
//
// Compiled once per ISA by papara_sse41.cpp, papara_avx2.cpp and papara_avx512.cpp with
// DUET_PAPARA_NAMESPACE and DUET_PAPARA_VECTOR_BITS set (128, 256 or 512). Everything but
// score_block and score_block_protein has internal linkage, and no standard-library
// template is used: the object exports only its entry points.
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

// The vector operations, per width: those of any lane size, then the DNA lanes (int16,
// profile bytes) and the protein lanes (int32, profile words). The 128-bit ones are
// commented; the wider ones compute the same (AVX-512 with mask registers).
#if DUET_PAPARA_VECTOR_BITS == 128
using Vector = simde__m128i;
inline Vector load(const Vector* p) {
  return simde_mm_load_si128(p);
}
inline void store(Vector* p, Vector v) {
  simde_mm_store_si128(p, v);
}
struct DnaLanes {
  static constexpr int W = 8;  // int16 lanes
  static Vector splat(std::int32_t x) { return simde_mm_set1_epi16(static_cast<std::int16_t>(x)); }
  // a + b, wrapping in 16 bits (PaPaRa's lanes do not saturate).
  static Vector add(Vector a, Vector b) { return simde_mm_add_epi16(a, b); }
  // The larger of a and b as signed 16-bit integers.
  static Vector max(Vector a, Vector b) { return simde_mm_max_epi16(a, b); }
  // W profile bytes (one column of W consecutive edges), sign-extended to 16 bits: the
  // kernel reads bits 0-4 only (SIMDe has no 512-bit zero extension).
  static Vector load_column(const std::uint8_t* p) {
    return simde_mm_cvtepi8_epi16(simde_mm_loadl_epi64(reinterpret_cast<const Vector*>(p)));
  }
  // `value` in the lanes where a and b share a bit, 0 elsewhere: (a & b) == 0 is all-ones
  // in the lanes to clear, and andnot clears them.
  static Vector where_shared(Vector a, Vector b, Vector value) {
    const Vector none = simde_mm_cmpeq_epi16(simde_mm_and_si128(a, b), simde_mm_setzero_si128());
    return simde_mm_andnot_si128(none, value);
  }
  // `value` in the lanes where a and b share no bit, 0 elsewhere.
  static Vector where_not_shared(Vector a, Vector b, Vector value) {
    const Vector none = simde_mm_cmpeq_epi16(simde_mm_and_si128(a, b), simde_mm_setzero_si128());
    return simde_mm_and_si128(none, value);
  }
  static void store_scores(std::int16_t* p, Vector v) {
    simde_mm_storeu_si128(reinterpret_cast<Vector*>(p), v);
  }
};
struct ProteinLanes {
  static constexpr int W = 4;  // int32 lanes
  static Vector splat(std::int32_t x) { return simde_mm_set1_epi32(x); }
  static Vector add(Vector a, Vector b) { return simde_mm_add_epi32(a, b); }
  static Vector max(Vector a, Vector b) { return simde_mm_max_epi32(a, b); }
  // W profile words, as they are.
  static Vector load_column(const std::uint32_t* p) {
    return simde_mm_loadu_si128(reinterpret_cast<const Vector*>(p));
  }
  static Vector where_shared(Vector a, Vector b, Vector value) {
    const Vector none = simde_mm_cmpeq_epi32(simde_mm_and_si128(a, b), simde_mm_setzero_si128());
    return simde_mm_andnot_si128(none, value);
  }
  static Vector where_not_shared(Vector a, Vector b, Vector value) {
    const Vector none = simde_mm_cmpeq_epi32(simde_mm_and_si128(a, b), simde_mm_setzero_si128());
    return simde_mm_and_si128(none, value);
  }
  static void store_scores(std::int32_t* p, Vector v) {
    simde_mm_storeu_si128(reinterpret_cast<Vector*>(p), v);
  }
};
#elif DUET_PAPARA_VECTOR_BITS == 256
using Vector = simde__m256i;
inline Vector load(const Vector* p) {
  return simde_mm256_load_si256(p);
}
inline void store(Vector* p, Vector v) {
  simde_mm256_store_si256(p, v);
}
struct DnaLanes {
  static constexpr int W = 16;
  static Vector splat(std::int32_t x) {
    return simde_mm256_set1_epi16(static_cast<std::int16_t>(x));
  }
  static Vector add(Vector a, Vector b) { return simde_mm256_add_epi16(a, b); }
  static Vector max(Vector a, Vector b) { return simde_mm256_max_epi16(a, b); }
  static Vector load_column(const std::uint8_t* p) {
    return simde_mm256_cvtepi8_epi16(
        simde_mm_loadu_si128(reinterpret_cast<const simde__m128i*>(p)));
  }
  static Vector where_shared(Vector a, Vector b, Vector value) {
    const Vector none =
        simde_mm256_cmpeq_epi16(simde_mm256_and_si256(a, b), simde_mm256_setzero_si256());
    return simde_mm256_andnot_si256(none, value);
  }
  static Vector where_not_shared(Vector a, Vector b, Vector value) {
    const Vector none =
        simde_mm256_cmpeq_epi16(simde_mm256_and_si256(a, b), simde_mm256_setzero_si256());
    return simde_mm256_and_si256(none, value);
  }
  static void store_scores(std::int16_t* p, Vector v) {
    simde_mm256_storeu_si256(reinterpret_cast<Vector*>(p), v);
  }
};
struct ProteinLanes {
  static constexpr int W = 8;
  static Vector splat(std::int32_t x) { return simde_mm256_set1_epi32(x); }
  static Vector add(Vector a, Vector b) { return simde_mm256_add_epi32(a, b); }
  static Vector max(Vector a, Vector b) { return simde_mm256_max_epi32(a, b); }
  static Vector load_column(const std::uint32_t* p) {
    return simde_mm256_loadu_si256(reinterpret_cast<const Vector*>(p));
  }
  static Vector where_shared(Vector a, Vector b, Vector value) {
    const Vector none =
        simde_mm256_cmpeq_epi32(simde_mm256_and_si256(a, b), simde_mm256_setzero_si256());
    return simde_mm256_andnot_si256(none, value);
  }
  static Vector where_not_shared(Vector a, Vector b, Vector value) {
    const Vector none =
        simde_mm256_cmpeq_epi32(simde_mm256_and_si256(a, b), simde_mm256_setzero_si256());
    return simde_mm256_and_si256(none, value);
  }
  static void store_scores(std::int32_t* p, Vector v) {
    simde_mm256_storeu_si256(reinterpret_cast<Vector*>(p), v);
  }
};
#elif DUET_PAPARA_VECTOR_BITS == 512
using Vector = simde__m512i;
inline Vector load(const Vector* p) {
  return simde_mm512_load_si512(p);
}
inline void store(Vector* p, Vector v) {
  simde_mm512_store_si512(p, v);
}
// The test instruction gives the lanes where a & b is nonzero as a mask; maskz_mov keeps
// `value` there and zeroes the rest, mask_mov(value, mask, 0) the reverse.
struct DnaLanes {
  static constexpr int W = 32;
  static Vector splat(std::int32_t x) {
    return simde_mm512_set1_epi16(static_cast<std::int16_t>(x));
  }
  static Vector add(Vector a, Vector b) { return simde_mm512_add_epi16(a, b); }
  static Vector max(Vector a, Vector b) { return simde_mm512_max_epi16(a, b); }
  static Vector load_column(const std::uint8_t* p) {
    return simde_mm512_cvtepi8_epi16(
        simde_mm256_loadu_si256(reinterpret_cast<const simde__m256i*>(p)));
  }
  static Vector where_shared(Vector a, Vector b, Vector value) {
    return simde_mm512_maskz_mov_epi16(simde_mm512_test_epi16_mask(a, b), value);
  }
  static Vector where_not_shared(Vector a, Vector b, Vector value) {
    return simde_mm512_mask_mov_epi16(value, simde_mm512_test_epi16_mask(a, b),
                                      simde_mm512_setzero_si512());
  }
  static void store_scores(std::int16_t* p, Vector v) { simde_mm512_storeu_si512(p, v); }
};
struct ProteinLanes {
  static constexpr int W = 16;
  static Vector splat(std::int32_t x) { return simde_mm512_set1_epi32(x); }
  static Vector add(Vector a, Vector b) { return simde_mm512_add_epi32(a, b); }
  static Vector max(Vector a, Vector b) { return simde_mm512_max_epi32(a, b); }
  static Vector load_column(const std::uint32_t* p) { return simde_mm512_loadu_si512(p); }
  static Vector where_shared(Vector a, Vector b, Vector value) {
    return simde_mm512_maskz_mov_epi32(simde_mm512_test_epi32_mask(a, b), value);
  }
  static Vector where_not_shared(Vector a, Vector b, Vector value) {
    return simde_mm512_mask_mov_epi32(value, simde_mm512_test_epi32_mask(a, b),
                                      simde_mm512_setzero_si512());
  }
  static void store_scores(std::int32_t* p, Vector v) { simde_mm512_storeu_si512(p, v); }
};
#endif

// What the alphabets add to their lanes: the profile's cell and score types, the gap flag,
// the bits of a residue's state set, and a residue's row of the strip's table (at most
// kMaxStripStates rows).
struct Dna : DnaLanes {
  using Cell = std::uint8_t;
  using Score = std::int16_t;
  static constexpr std::uint32_t kFlag = duet::papara::kFlagBit;
  // A residue is a state set 1..15: its own bits, its own row (bits above the four never
  // match a profile state, so residue & 15 scores alike).
  static int row(std::uint8_t residue) { return residue & 15; }
  static std::int32_t state_bits(int row) { return row; }
};
struct Protein : ProteinLanes {
  using Cell = std::uint32_t;
  using Score = std::int32_t;
  static constexpr std::uint32_t kFlag = duet::papara::kProteinFlagBit;
  // A residue is an amino acid 0..19: bit r of a state set (& 31 keeps a bad residue inside
  // the table).
  static int row(std::uint8_t residue) { return residue & 31; }
  static std::int32_t state_bits(int row) { return static_cast<std::int32_t>(1u << row); }
};

// Columns per strip, the fastest of 1 to 8 at every width (bench/papara_kernel_bench):
// fewer leave the chains of U down a column exposed, more spill registers.
constexpr int K = 3;
static_assert(DnaLanes::W == kLanes);
static_assert(ProteinLanes::W == kProteinLanes);
static_assert(K <= kMaxStripColumns);
static_assert(sizeof(Vector) <= kVectorBytes);

// The scoring scheme as vectors.
struct Scheme {
  Vector gap_open, gap_extend, match, match_cgap, negative, flag_bit;
  template <class A>
  static Scheme of(const Scoring& s) {
    return {A::splat(s.gap_open),
            A::splat(s.gap_extend),
            A::splat(s.match),
            A::splat(s.match_cgap),
            A::splat(duet::papara::kNegative),
            A::splat(A::kFlag)};
  }
};

// Columns j .. j + C - 1 of one query's matrix (a strip of C <= K columns) for W edges:
// `column` points at column j's cell of the group's first edge. On entry H[i] and L[i]
// hold H(i, j - 1) and L(i, j - 1) of each row i; on exit H(i, j + C - 1) and L(i, j + C - 1).
// `used` has bit s set for each table row s the query uses; `table` is the scratch of the
// strip's match scores. Returns max(best, H(m - 1, j .. j + C - 1)).
template <class A, int C>
Vector strip(const typename A::Cell* column, std::ptrdiff_t stride, const std::uint8_t* query,
             int m, std::uint32_t used, const Scheme& scheme, Vector* H, Vector* L, Vector* table,
             Vector best) {
  // Per column: the gap scores (free where F_j) and inc(s, j) for each residue s of the
  // query, at table[s * C + k].
  Vector go[C], ge[C];
#pragma GCC unroll 8
  for (int k = 0; k < C; ++k) {
    const Vector cells = A::load_column(column + k * stride);
    go[k] = A::where_not_shared(cells, scheme.flag_bit, scheme.gap_open);
    ge[k] = A::where_not_shared(cells, scheme.flag_bit, scheme.gap_extend);
    const Vector flag_score = A::where_shared(cells, scheme.flag_bit, scheme.match_cgap);
    for (std::uint32_t rows = used; rows != 0; rows &= rows - 1) {
      const int s = __builtin_ctz(rows);
      store(table + s * C + k,
            A::add(flag_score, A::where_shared(cells, A::splat(A::state_bits(s)), scheme.match)));
    }
  }
  // Row i - 1 of each strip column: H (row -1: 0) and U (row -1: kNegative).
  Vector up[C], u[C];
#pragma GCC unroll 8
  for (int k = 0; k < C; ++k) {
    up[k] = A::splat(0);
    u[k] = scheme.negative;
  }
  Vector diagonal_next = A::splat(0);  // H(i - 1, j - 1): row -1 is 0
  for (int i = 0; i < m; ++i) {
    const Vector* inc = table + A::row(query[i]) * C;
    Vector left = load(H + i);  // H(i, j - 1)
    Vector l = load(L + i);     // L(i, j - 1)
    Vector diagonal = diagonal_next;
    diagonal_next = left;
    // Unrolled, so that the strip's vectors stay in registers (GCC's -O2 would not).
#pragma GCC unroll 8
    for (int k = 0; k < C; ++k) {
      l = A::max(A::add(left, go[k]), A::add(l, ge[k]));
      u[k] = A::max(A::add(up[k], scheme.gap_open), A::add(u[k], scheme.gap_extend));
      const Vector h = A::max(A::max(A::add(diagonal, load(inc + k)), u[k]), l);
      diagonal = up[k];  // the next column's diagonal: H(i - 1, j + k)
      up[k] = h;
      left = h;
    }
    store(H + i, left);
    store(L + i, l);
  }
#pragma GCC unroll 8
  for (int k = 0; k < C; ++k) best = A::max(best, up[k]);  // row m - 1
  return best;
}

// One query against the W edges whose column-0 cells start at `cells`: each lane's score.
template <class A>
Vector score_group(const std::uint8_t* query, int m, const typename A::Cell* cells, int columns,
                   std::ptrdiff_t stride, const Scheme& scheme, Vector* H, Vector* L,
                   Vector* table) {
  std::uint32_t used = 0;
  for (int i = 0; i < m; ++i) used |= 1u << A::row(query[i]);
  for (int i = 0; i < m; ++i) {  // column -1
    store(H + i, A::splat(0));
    store(L + i, scheme.negative);
  }
  Vector best = scheme.negative;
  int j = 0;
  for (; j + K <= columns; j += K)
    best = strip<A, K>(cells + j * stride, stride, query, m, used, scheme, H, L, table, best);
  for (; j < columns; ++j)
    best = strip<A, 1>(cells + j * stride, stride, query, m, used, scheme, H, L, table, best);
  for (int i = 0; i < m; ++i) best = A::max(best, load(H + i));  // column n - 1
  return best;
}

template <class A>
void score_block_of(const QueryBlockView& block, const ProfileView& profiles,
                    const typename A::Cell* profile_cells, int first_edge, int count,
                    const Scoring& scoring, typename A::Score* out, void* work) {
  constexpr int W = A::W;
  const Scheme scheme = Scheme::of<A>(scoring);
  Vector* const table = static_cast<Vector*>(work);
  Vector* const H = table + kMaxStripStates * kMaxStripColumns;
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
      alignas(kVectorBytes) typename A::Score scores[W];
      A::store_scores(scores, score_group<A>(block.residues + begin, m, profile_cells + start,
                                             profiles.columns, stride, scheme, H, L, table));
      typename A::Score* const row = out + static_cast<std::ptrdiff_t>(q) * count + first;
      for (int k = 0; k < lanes; ++k) row[k] = scores[skip + k];
    }
  }
}

}  // namespace

void score_block(const QueryBlockView& block, const ProfileView& profiles, int first_edge,
                 int count, const Scoring& scoring, std::int16_t* out, void* work) {
  score_block_of<Dna>(block, profiles, profiles.cells, first_edge, count, scoring, out, work);
}

void score_block_protein(const QueryBlockView& block, const ProfileView& profiles, int first_edge,
                         int count, const Scoring& scoring, std::int32_t* out, void* work) {
  score_block_of<Protein>(block, profiles, profiles.protein_cells, first_edge, count, scoring, out,
                          work);
}

}  // namespace duet::simd::papara::DUET_PAPARA_NAMESPACE
