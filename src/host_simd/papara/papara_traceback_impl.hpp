// PaPaRa's traceback DP (SPEC.md §3.4; the scalar reference is duet::papara::traceback in
// core/papara/papara_alignment.cpp) vectorised across queries: one int32 lane per query, W
// queries at once, each lane against its own edge's profile. Every lane runs the scalar's
// recurrence and tie rules exactly and records the same four choices per cell (H from U,
// H from L, L extends, U extends) as bits, so that a scalar walk back (papara_simd.cpp)
// gives each query the scalar's Trace.
//
// Order of work: as in the scoring kernel (papara_kernel_impl.hpp), profile columns outer,
// query rows inner, K columns at a time ("a strip"); memory holds H and L of the strip's
// left neighbour column, one vector per row. Rows past a lane's query (the group is padded
// to its longest query) hold residue 0 and are computed like any other; a row depends only
// on the rows above it, so they never change a lane's own cells. The last row of a lane is
// its own (length - 1): the strip's row loop stops at each distinct last row of the group
// and keeps those lanes' H of the strip's columns, for the end cell's search along the last
// row.
//
// Compiled once per ISA by papara_sse41.cpp, papara_avx2.cpp and papara_avx512.cpp with
// DUET_PAPARA_NAMESPACE and DUET_PAPARA_VECTOR_BITS set, after papara_kernel_impl.hpp.
// Everything but traceback_group has internal linkage, and no standard-library template is
// used: the object exports only its entry points.
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
namespace traceback {

using duet::papara::ProfileView;
using duet::papara::Scoring;

// The vector operations on int32 lanes, per width. The 128-bit ones are commented; the
// 256-bit ones compute the same. AVX-512 holds lane predicates in mask registers; the
// narrower widths hold them as vectors of all-ones or zero lanes.
#if DUET_PAPARA_VECTOR_BITS == 128
using Vector = simde__m128i;
using Mask = simde__m128i;
using ChoiceWord = std::uint8_t;  // a choice's W lane bits (see traceback_choice_word_bytes)
constexpr int W = 4;              // int32 lanes
inline Vector load(const Vector* p) {
  return simde_mm_load_si128(p);
}
inline void store(Vector* p, Vector v) {
  simde_mm_store_si128(p, v);
}
inline Vector splat(std::int32_t x) {
  return simde_mm_set1_epi32(x);
}
inline Vector add(Vector a, Vector b) {
  return simde_mm_add_epi32(a, b);
}
// The larger of a and b as signed 32-bit integers.
inline Vector max(Vector a, Vector b) {
  return simde_mm_max_epi32(a, b);
}
// The lanes where a > b (signed).
inline Mask greater(Vector a, Vector b) {
  return simde_mm_cmpgt_epi32(a, b);
}
// The lanes where a == b.
inline Mask equal(Vector a, Vector b) {
  return simde_mm_cmpeq_epi32(a, b);
}
// The lanes of b that are not in a: ~a & b.
inline Mask and_not(Mask a, Mask b) {
  return simde_mm_andnot_si128(a, b);
}
// H from L (see strip): L > d, where H is not from U.
inline Mask from_l_choice(Vector l, Vector d, Vector /*u*/, Mask from_u) {
  return and_not(from_u, greater(l, d));
}
// The lanes in both a and b.
inline Mask both(Mask a, Mask b) {
  return simde_mm_and_si128(a, b);
}
inline Vector bit_and(Vector a, Vector b) {
  return simde_mm_and_si128(a, b);
}
// b in the lanes of `mask`, a elsewhere (blendv picks by each byte's top bit; mask lanes are
// all-ones or zero).
inline Vector blend(Mask mask, Vector a, Vector b) {
  return simde_mm_blendv_epi8(a, b, mask);
}
// `value` in the lanes where a and b share no bit, 0 elsewhere.
inline Vector where_not_shared(Vector a, Vector b, Vector value) {
  return simde_mm_and_si128(
      simde_mm_cmpeq_epi32(simde_mm_and_si128(a, b), simde_mm_setzero_si128()), value);
}
// `value` in the lanes where a and b share a bit, 0 elsewhere.
inline Vector where_shared(Vector a, Vector b, Vector value) {
  return simde_mm_andnot_si128(
      simde_mm_cmpeq_epi32(simde_mm_and_si128(a, b), simde_mm_setzero_si128()), value);
}
// t + value in the lanes where a and b share a bit, t elsewhere.
inline Vector add_where_shared(Vector t, Vector a, Vector b, Vector value) {
  return add(t, where_shared(a, b, value));
}
// The lane predicates as bits: bit k is lane k (movemask takes each 32-bit lane's sign).
inline ChoiceWord bits(Mask m) {
  return static_cast<ChoiceWord>(simde_mm_movemask_ps(simde_mm_castsi128_ps(m)));
}
#elif DUET_PAPARA_VECTOR_BITS == 256
using Vector = simde__m256i;
using Mask = simde__m256i;
using ChoiceWord = std::uint8_t;
constexpr int W = 8;
inline Vector load(const Vector* p) {
  return simde_mm256_load_si256(p);
}
inline void store(Vector* p, Vector v) {
  simde_mm256_store_si256(p, v);
}
inline Vector splat(std::int32_t x) {
  return simde_mm256_set1_epi32(x);
}
inline Vector add(Vector a, Vector b) {
  return simde_mm256_add_epi32(a, b);
}
inline Vector max(Vector a, Vector b) {
  return simde_mm256_max_epi32(a, b);
}
inline Mask greater(Vector a, Vector b) {
  return simde_mm256_cmpgt_epi32(a, b);
}
inline Mask equal(Vector a, Vector b) {
  return simde_mm256_cmpeq_epi32(a, b);
}
inline Mask and_not(Mask a, Mask b) {
  return simde_mm256_andnot_si256(a, b);
}
inline Mask from_l_choice(Vector l, Vector d, Vector /*u*/, Mask from_u) {
  return and_not(from_u, greater(l, d));
}
inline Mask both(Mask a, Mask b) {
  return simde_mm256_and_si256(a, b);
}
inline Vector bit_and(Vector a, Vector b) {
  return simde_mm256_and_si256(a, b);
}
inline Vector blend(Mask mask, Vector a, Vector b) {
  return simde_mm256_blendv_epi8(a, b, mask);
}
inline Vector where_not_shared(Vector a, Vector b, Vector value) {
  return simde_mm256_and_si256(
      simde_mm256_cmpeq_epi32(simde_mm256_and_si256(a, b), simde_mm256_setzero_si256()), value);
}
inline Vector where_shared(Vector a, Vector b, Vector value) {
  return simde_mm256_andnot_si256(
      simde_mm256_cmpeq_epi32(simde_mm256_and_si256(a, b), simde_mm256_setzero_si256()), value);
}
inline Vector add_where_shared(Vector t, Vector a, Vector b, Vector value) {
  return add(t, where_shared(a, b, value));
}
inline ChoiceWord bits(Mask m) {
  return static_cast<ChoiceWord>(simde_mm256_movemask_ps(simde_mm256_castsi256_ps(m)));
}
#elif DUET_PAPARA_VECTOR_BITS == 512
using Vector = simde__m512i;
using Mask = simde__mmask16;  // bit k: lane k
using ChoiceWord = std::uint16_t;
constexpr int W = 16;
inline Vector load(const Vector* p) {
  return simde_mm512_load_si512(p);
}
inline void store(Vector* p, Vector v) {
  simde_mm512_store_si512(p, v);
}
inline Vector splat(std::int32_t x) {
  return simde_mm512_set1_epi32(x);
}
inline Vector add(Vector a, Vector b) {
  return simde_mm512_add_epi32(a, b);
}
inline Vector max(Vector a, Vector b) {
  return simde_mm512_max_epi32(a, b);
}
inline Mask greater(Vector a, Vector b) {
  return simde_mm512_cmpgt_epi32_mask(a, b);
}
inline Mask equal(Vector a, Vector b) {
  return simde_mm512_cmpeq_epi32_mask(a, b);
}
// H from L: L > d where L >= U (given L > d, L >= U is "not from U"), the second compare
// masked by the first, so that no mask travels through a general register to be negated.
inline Mask from_l_choice(Vector l, Vector d, Vector u, Mask /*from_u*/) {
  return simde_mm512_mask_cmpgt_epi32_mask(simde_mm512_cmpge_epi32_mask(l, u), l, d);
}
inline Mask both(Mask a, Mask b) {
  return static_cast<Mask>(a & b);
}
inline Vector bit_and(Vector a, Vector b) {
  return simde_mm512_and_si512(a, b);
}
inline Vector blend(Mask mask, Vector a, Vector b) {
  return simde_mm512_mask_blend_epi32(mask, a, b);
}
// The test instruction gives the lanes where a & b is nonzero as a mask.
inline Vector where_not_shared(Vector a, Vector b, Vector value) {
  return simde_mm512_mask_mov_epi32(value, simde_mm512_test_epi32_mask(a, b),
                                    simde_mm512_setzero_si512());
}
inline Vector where_shared(Vector a, Vector b, Vector value) {
  return simde_mm512_maskz_mov_epi32(simde_mm512_test_epi32_mask(a, b), value);
}
// One masked add: t + value where the test is true.
inline Vector add_where_shared(Vector t, Vector a, Vector b, Vector value) {
  return simde_mm512_mask_add_epi32(t, simde_mm512_test_epi32_mask(a, b), t, value);
}
inline ChoiceWord bits(Mask m) {
  return m;
}
#endif
// Columns per strip (see papara_kernel_impl.hpp's K): a row's H and L go through memory
// once per K cells. The fastest of 1 to 4 at every width (bench/papara_kernel_bench's
// tracebacks), though by little: the cells' own work bounds the loop.
constexpr int K = 4;
static_assert(W == kTracebackLanes);
static_assert(sizeof(ChoiceWord) == traceback_choice_word_bytes(W));
static_assert(sizeof(Vector) <= kVectorBytes);

// The scoring scheme as vectors.
struct Scheme {
  Vector gap_open, gap_extend, match, match_cgap, flag_bit, state_mask;
};

// A group's constant inputs and its running end-cell search along the last rows. Cell: the
// profiles' cell (DNA bytes, protein words).
template <class Cell>
struct Group {
  const Cell* cells;                 // the profiles' column 0
  std::ptrdiff_t stride;             // cells from a column to the next
  const std::int32_t* edges;         // [W] each lane's edge
  const Vector* residues;            // [rows] each lane's residue of the row, 0 past its end
  int rows;                          // the longest query
  const int* stops;                  // the distinct last rows (length - 1) of the lanes, ascending
  int stop_count;                    // (the last is rows - 1)
  Vector last_row;                   // each lane's last row
  ChoiceWord* choices;               // choice b of cell (i, j): choices[(4 * j + b) * rows + i]
  Vector row_best, row_best_column;  // first maximum of H along each lane's last row so far
};

// Columns j .. j + C - 1 of the group (a strip of C <= K columns). On entry H[i] and L[i]
// hold H(i, j - 1) and L(i, j - 1) of each row i; on exit H(i, j + C - 1) and L(i, j + C - 1).
// Records every cell's choices, and updates the search along the last rows.
template <class Cell, int C>
void strip(Group<Cell>& g, int j, const Scheme& scheme, Vector* H, Vector* L) {
  // Per column: each lane's profile cell (lane k reads its own edge's), the state set, the
  // gap scores (free where F_j) and the flag's score.
  Vector state[C], go[C], ge[C], flag_score[C];
  ChoiceWord* column_choices[C];
#pragma GCC unroll 8
  for (int k = 0; k < C; ++k) {
    const Cell* column = g.cells + static_cast<std::ptrdiff_t>(j + k) * g.stride;
    alignas(kVectorBytes) std::int32_t lane_cells[W];
    for (int lane = 0; lane < W; ++lane)
      lane_cells[lane] = static_cast<std::int32_t>(column[g.edges[lane]]);
    const Vector cells = load(reinterpret_cast<const Vector*>(lane_cells));
    state[k] = bit_and(cells, scheme.state_mask);
    go[k] = where_not_shared(cells, scheme.flag_bit, scheme.gap_open);
    ge[k] = where_not_shared(cells, scheme.flag_bit, scheme.gap_extend);
    flag_score[k] = where_shared(cells, scheme.flag_bit, scheme.match_cgap);
    column_choices[k] = g.choices + static_cast<std::ptrdiff_t>(j + k) * 4 * g.rows;
  }
  // Row i - 1 of each strip column: H and U (row -1: both 0, SPEC.md §3.4).
  Vector up[C], u[C], last[C];
#pragma GCC unroll 8
  for (int k = 0; k < C; ++k) {
    up[k] = splat(0);
    u[k] = splat(0);
    last[k] = splat(0);
  }
  Vector diagonal_next = splat(0);  // H(i - 1, j - 1): row -1 is 0
  int i = 0;
  for (int s = 0; s < g.stop_count; ++s) {
    const int stop = g.stops[s];
    for (; i <= stop; ++i) {
      const Vector query = load(g.residues + i);
      Vector left = load(H + i);  // H(i, j - 1)
      Vector l = load(L + i);     // L(i, j - 1)
      Vector diagonal = diagonal_next;
      diagonal_next = left;
      // Unrolled, so that the strip's vectors stay in registers.
#pragma GCC unroll 8
      for (int k = 0; k < C; ++k) {
        // L and U take their extension only where it is strictly greater than the opening.
        const Vector l_open = add(left, go[k]), l_extend = add(l, ge[k]);
        const Mask l_extends = greater(l_extend, l_open);
        l = max(l_open, l_extend);
        const Vector u_open = add(up[k], scheme.gap_open), u_extend = add(u[k], scheme.gap_extend);
        const Mask u_extends = greater(u_extend, u_open);
        u[k] = max(u_open, u_extend);
        const Vector d =
            add_where_shared(add(diagonal, flag_score[k]), state[k], query, scheme.match);
        // The scalar's rule: U if U > L and U > diagonal; else L if L >= U and L > diagonal;
        // else the diagonal. U > L and U > d is U > max(L, d); given not U, L >= U and L > d
        // is L > d. H is the maximum of the three either way.
        const Vector l_or_d = max(l, d);
        const Mask from_u = greater(u[k], l_or_d);
        const Mask from_l = from_l_choice(l, d, u[k], from_u);
        // Four planes per column: the stores go from mask registers to memory as they are,
        // where one word per cell would cost shifts and ors to assemble.
        ChoiceWord* const cell = column_choices[k] + i;
        cell[0] = bits(from_u);
        cell[g.rows] = bits(from_l);
        cell[2 * g.rows] = bits(l_extends);
        cell[3 * g.rows] = bits(u_extends);
        const Vector h = max(l_or_d, u[k]);
        diagonal = up[k];  // the next column's diagonal: H(i - 1, j + k)
        up[k] = h;
        left = h;
      }
      store(H + i, left);
      store(L + i, l);
    }
    // Row `stop` is the last row of some lanes: keep their H of the strip's columns.
    const Mask ends_here = equal(g.last_row, splat(stop));
#pragma GCC unroll 8
    for (int k = 0; k < C; ++k) last[k] = blend(ends_here, last[k], up[k]);
  }
  // The first maximum along each lane's last row: later columns only where strictly greater.
#pragma GCC unroll 8
  for (int k = 0; k < C; ++k) {
    const Mask better = greater(last[k], g.row_best);
    g.row_best = max(g.row_best, last[k]);
    g.row_best_column = blend(better, g.row_best_column, splat(j + k));
  }
}

// `cells`: the profiles' cells, with `flag_bit` and `state_mask` their gap flag and state
// set.
template <class Cell>
void run_group(const TracebackGroupView& group, const ProfileView& profiles, const Cell* cells,
               std::uint32_t flag_bit, std::uint32_t state_mask, const Scoring& scoring,
               TracebackEnd* ends, void* work) {
  const Scheme scheme{splat(scoring.gap_open),
                      splat(scoring.gap_extend),
                      splat(scoring.match),
                      splat(scoring.match_cgap),
                      splat(static_cast<std::int32_t>(flag_bit)),
                      splat(static_cast<std::int32_t>(state_mask))};
  const int rows = group.rows, n = profiles.columns;
  Vector* const H = static_cast<Vector*>(work);
  Vector* const L = H + rows;
  // The distinct last rows of the lanes, ascending (W is small: insertion into a sorted list).
  int stops[W];
  int stop_count = 0;
  for (int lane = 0; lane < W; ++lane) {
    const int stop = group.lengths[lane] - 1;
    int at = 0;
    while (at < stop_count && stops[at] < stop) ++at;
    if (at < stop_count && stops[at] == stop) continue;
    for (int k = stop_count; k > at; --k) stops[k] = stops[k - 1];
    stops[at] = stop;
    ++stop_count;
  }
  alignas(kVectorBytes) std::int32_t lane_values[W];
  for (int lane = 0; lane < W; ++lane) lane_values[lane] = group.lengths[lane] - 1;
  Group<Cell> g{cells,
                profiles.edge_stride,
                group.edges,
                reinterpret_cast<const Vector*>(group.residues),
                rows,
                stops,
                stop_count,
                load(reinterpret_cast<const Vector*>(lane_values)),
                reinterpret_cast<ChoiceWord*>(group.choices),
                splat(INT32_MIN),
                splat(0)};
  for (int i = 0; i < rows; ++i) {  // column -1: H = 0, L = kNegative
    store(H + i, splat(0));
    store(L + i, splat(duet::papara::kNegative));
  }
  int j = 0;
  for (; j + K <= n; j += K) strip<Cell, K>(g, j, scheme, H, L);
  for (; j < n; ++j) strip<Cell, 1>(g, j, scheme, H, L);
  // The first maximum down the last column, rows 0 .. length - 2 of each lane.
  Vector column_best = splat(INT32_MIN), column_best_row = splat(0);
  for (int i = 0; i + 1 < rows; ++i) {
    const Vector row = splat(i);
    const Vector h = load(H + i);
    const Mask better = both(greater(g.last_row, row), greater(h, column_best));
    column_best = blend(better, column_best, h);
    column_best_row = blend(better, column_best_row, row);
  }
  alignas(kVectorBytes) std::int32_t row_best[W], row_best_column[W], best[W], best_row[W];
  store(reinterpret_cast<Vector*>(row_best), g.row_best);
  store(reinterpret_cast<Vector*>(row_best_column), g.row_best_column);
  store(reinterpret_cast<Vector*>(best), column_best);
  store(reinterpret_cast<Vector*>(best_row), column_best_row);
  // The last column's rows come first: the last row wins only where strictly greater.
  for (int lane = 0; lane < W; ++lane) {
    if (row_best[lane] > best[lane]) {
      ends[lane] = {row_best[lane], lane_values[lane], row_best_column[lane]};
    } else {
      ends[lane] = {best[lane], best_row[lane], n - 1};
    }
  }
}

}  // namespace traceback
}  // namespace

void traceback_group(const TracebackGroupView& group, const duet::papara::ProfileView& profiles,
                     const duet::papara::Scoring& scoring, TracebackEnd* ends, void* work) {
  if (profiles.protein_cells != nullptr) {
    traceback::run_group(group, profiles, profiles.protein_cells, duet::papara::kProteinFlagBit,
                         duet::papara::kProteinStateMask, scoring, ends, work);
  } else {
    traceback::run_group(group, profiles, profiles.cells, std::uint32_t{duet::papara::kFlagBit},
                         std::uint32_t{duet::papara::kStateMask}, scoring, ends, work);
  }
}

}  // namespace duet::simd::papara::DUET_PAPARA_NAMESPACE
