// The SIMD filter kernels, written once against the width-abstraction layer
// (vector_ops.hpp) and compiled once per ISA: kernels_sse41.cpp, kernels_avx2.cpp and
// kernels_avx512.cpp define DUET_SIMD_NAMESPACE and DUET_SIMD_VECTOR_BITS, include this
// file, and get their own copy in namespace duet::simd::<isa>. The contract is in
// simd_kernels.hpp; the striped order in isa_kernels.hpp. Each kernel follows the scalar
// reference of core/hmmsearch/reference_kernels.cpp line by line where the result must be exact.
//
// Nothing here may instantiate inline code of the standard library (see isa_kernels.hpp):
// only integer_sequence, a type, is used from <utility>.

#include <cstddef>
#include <cstdint>
#include <utility>

#include "host_simd/hmmsearch/isa_kernels.hpp"
#include "host_simd/vector_ops.hpp"

namespace duet::simd::DUET_SIMD_NAMESPACE {
namespace {

inline int min_int(int a, int b) {
  return a < b ? a : b;
}
inline int max_int(int a, int b) {
  return a > b ? a : b;
}

std::size_t vectors_to_bytes(int vectors) {
  return static_cast<std::size_t>(vectors) * kVectorBytes;
}

// A vector with x in lane 0 and zero elsewhere (the fill of the 16-bit shifts).
IntVector lane0_i16(std::int16_t x) {
  alignas(64) std::int16_t lanes[kLanesI16] = {};
  lanes[0] = x;
  return load(lanes);
}

// ============================================================================
// SSV: every diagonal of the DP matrix, without the J state (ssv_filter_reference).
//
// A cell is the cell up-left of it minus a signed step, saturating at -128 and 127; each
// diagonal starts at -128 (the begin score moved there). The result is the largest cell,
// compared as an unsigned byte, including the starting -128 (unsigned 128).
//
// Each vector register follows a set of diagonals down the whole target, so the DP row
// never touches memory. Register r of a sweep starting at vector q0 sits, at row i, in
// striped vector t + r where t = (q0 + i) mod Q; positions past Q - 1 read the step
// table's extension (copies of vectors 0, 1, ...). When a register moves from vector
// Q - 1 to vector 0 its diagonals move one lane up, so it is shifted and lane 0 restarts
// at -128. With W registers (W <= Q) every period of Q rows is: rows t = 1 .. Q - W where
// no register wraps; then rows t = Q - W + 1 .. Q - 1 where register Q - t wraps (W - 1,
// W - 2, .., 1); then row t = 0 where register 0 wraps. A sweep covers W striped vectors
// of every row. Sweeps of equal width, at most kSsvRegisters, cover the model; the last
// one starts at Q - W and may repeat diagonals, which changes no maximum.
// ============================================================================

constexpr int kSsvRegisters = DUET_SIMD_VECTOR_BITS == 512 ? 16 : 12;

// The registers stay in registers only if every lambda of a sweep is inlined into it,
// which GCC's size heuristics would otherwise refuse for the wider sweeps.
#define DUET_ALWAYS_INLINE __attribute__((always_inline))

template <int W>
IntVector ssv_sweep(const SsvStripedView& profile, const Residue* dsq, int L, int q0,
                    IntVector best) {
  const int Q = profile.Q;
  const std::size_t residue_bytes = vectors_to_bytes(profile.stride);
  const std::int8_t* steps = profile.step;
  const IntVector begin = splat_u8(0x80);
  IntVector v[W];
  for (int r = 0; r < W; ++r) v[r] = begin;
  IntVector best_odd = best;  // two maxima, so that the maxima of a row need not wait in line

  // One register on one row; Shifted is the register that wraps on this row (-1: none).
  const auto cell = [&]<int R, int Shifted>(const std::int8_t* step) DUET_ALWAYS_INLINE {
    if constexpr (R == Shifted) v[R] = shift_up_u8_fill(v[R], begin);
    v[R] = subs_i8(v[R], load(step + R * kVectorBytes));
    if constexpr (R % 2 == 0) {
      best = max_u8(best, v[R]);
    } else {
      best_odd = max_u8(best_odd, v[R]);
    }
  };
  const auto row = [&]<int Shifted>(int i, int t) DUET_ALWAYS_INLINE {
    const std::int8_t* step = steps + dsq[i] * residue_bytes + vectors_to_bytes(t);
    [&]<int... R>(std::integer_sequence<int, R...>) DUET_ALWAYS_INLINE {
      (cell.template operator()<R, Shifted>(step), ...);
    }
    (std::make_integer_sequence<int, W>{});
  };

  // Rows i .. end-1 at vectors t, t+1, ..: no register wraps.
  const auto plain_rows = [&](int& i, int& t, int end) DUET_ALWAYS_INLINE {
    for (; i + 1 < end; i += 2, t += 2) {  // two rows a turn: less loop overhead per row
      row.template operator()<-1>(i, t);
      row.template operator()<-1>(i + 1, t + 1);
    }
    if (i < end) row.template operator()<-1>(i++, t++);
  };
  // The wrapping rows, S = W - 1 down to 0 (at vectors Q - S, and 0 for S = 0); with
  // `checked`, each only while the target lasts.
  const auto wrapping_rows = [&]<bool checked>(int& i) DUET_ALWAYS_INLINE {
    [&]<int... S>(std::integer_sequence<int, S...>) DUET_ALWAYS_INLINE {
      ((!checked || i < L
            ? (row.template operator()<W - 1 - S>(i, W - 1 - S == 0 ? 0 : Q - (W - 1 - S)), ++i)
            : 0),
       ...);
    }
    (std::make_integer_sequence<int, W>{});
  };

  // The first row of a sweep may count as "no register wraps": every register still holds
  // -128 everywhere, which a wrap would leave unchanged. The first period runs from
  // t = q0; then whole periods of Q rows from t = 1, without length checks; then the rest.
  int t = q0;
  int i = 0;
  plain_rows(i, t, i + min_int(Q - W + 1 - t, L));
  if (i < L) wrapping_rows.template operator()<true>(i);
  while (L - i >= Q) {
    t = 1;
    plain_rows(i, t, i + Q - W);
    wrapping_rows.template operator()<false>(i);
  }
  if (i < L) {
    t = 1;
    plain_rows(i, t, i + min_int(Q - W, L - i));
    wrapping_rows.template operator()<true>(i);
  }
  return max_u8(best, best_odd);
}

using SsvSweep = IntVector (*)(const SsvStripedView&, const Residue*, int, int, IntVector);
// ssv_sweep<1> .. ssv_sweep<kSsvRegisters>, indexed by register count - 1.
template <int... W>
struct SsvSweeps {
  static constexpr SsvSweep table[sizeof...(W)] = {&ssv_sweep<W + 1>...};
};
template <int... W>
constexpr const SsvSweep* ssv_sweep_table(std::integer_sequence<int, W...>) {
  return SsvSweeps<W...>::table;
}

int ssv_max(const SsvStripedView& profile, const Residue* dsq, int L) {
  const SsvSweep* sweeps = ssv_sweep_table(std::make_integer_sequence<int, kSsvRegisters>{});
  // As few sweeps as the registers allow, all of one width (the last may overlap).
  const int Q = profile.Q;
  const int count = (Q + kSsvRegisters - 1) / kSsvRegisters;
  const int width = (Q + count - 1) / count;
  IntVector best = splat_u8(0x80);
  for (int s = 0; s < count; ++s) {
    best = sweeps[width - 1](profile, dsq, L, min_int(s * width, Q - width), best);
  }
  return hmax_u8(best);
}

// ============================================================================
// MSV (msv_filter_reference): 8-bit unsigned offset scores, 0 = -infinity.
//   M(i,k) = max(M(i-1,k-1), B(i-1)) + bias - cost(k, x_i)   (saturating 0..255)
// The row is kept in memory; the value of M(i-1,k-1) for vector q is the previous row's
// vector q-1, and for q = 0 the previous row's last vector shifted one lane up (lane 0
// gets 0, node 0).
//
// E, J, B follow the reference exactly, but a row's best cell xE is only extracted when
// the row can change something: an overflow (xE + bias >= 255), or xE - tec above
// max(base, xJ), which is what B depends on. In the other ("quiet") rows the reference
// may raise xJ, but not above base, so B is unchanged; xJ's final value is then recovered
// from the largest cell of all rows, kept in a vector.
// ============================================================================

MsvRaw msv_filter(const MsvStripedView& profile, const Residue* dsq, int L, int tjb,
                  std::uint8_t* row) {
  const int Q = profile.Q;
  const std::size_t residue_bytes = vectors_to_bytes(Q);
  const int bjbm = (tjb + profile.tbm) & 0xff;  // N/J -> B -> Mk, wrapped to 8 bits
  const IntVector bias = splat_u8(profile.bias);
  for (int q = 0; q < Q; ++q) store(row + vectors_to_bytes(q), zero_int());
  int xJ = 0;
  int xB = max_int(profile.base - bjbm, 0);
  IntVector all_rows = zero_int();  // the largest cell of every row so far
  // A row takes the exact path when some cell reaches `trigger` (always when it is 0).
  const auto trigger_of = [&](int xJ_now) {
    return min_int(255 - profile.bias, max_int(profile.base, xJ_now) + profile.tec + 1);
  };
  int trigger = trigger_of(xJ);
  IntVector quiet_up_to = splat_u8(static_cast<std::uint8_t>(max_int(trigger - 1, 0)));
  for (int i = 0; i < L; ++i) {
    const std::uint8_t* cost = profile.cost + dsq[i] * residue_bytes;
    const IntVector begin = splat_u8(static_cast<std::uint8_t>(xB));
    IntVector best = zero_int();
    IntVector diagonal = shift_up_u8(load(row + vectors_to_bytes(Q - 1)));
    for (int q = 0; q < Q; ++q) {
      IntVector sv = max_u8(diagonal, begin);
      sv = adds_u8(sv, bias);
      sv = subs_u8(sv, load(cost + vectors_to_bytes(q)));
      best = max_u8(best, sv);
      diagonal = load(row + vectors_to_bytes(q));
      store(row + vectors_to_bytes(q), sv);
    }
    all_rows = max_u8(all_rows, best);
    // Quiet: every cell below the trigger (cell - (trigger - 1) saturates to 0 everywhere).
    if (trigger > 0 && !any_nonzero(subs_u8(best, quiet_up_to))) continue;
    int xE = hmax_u8(best);
    if (xE + profile.bias >= 255) return {true, 0};  // a cell could have saturated
    xE = max_int(xE - profile.tec, 0);
    xJ = max_int(xJ, xE);
    xB = max_int(max_int(profile.base, xJ) - bjbm, 0);
    trigger = trigger_of(xJ);
    quiet_up_to = splat_u8(static_cast<std::uint8_t>(max_int(trigger - 1, 0)));
  }
  xJ = max_int(xJ, max_int(hmax_u8(all_rows) - profile.tec, 0));
  return {false, xJ};
}

// ============================================================================
// Viterbi filter (viterbi_filter_reference): 16-bit signed saturating scores.
// Rows M, I, D in memory; the previous row's node k-1 comes, as in MSV, from vector q-1 or
// from the last vector shifted up (lane 0: -32768). D(i,k) first gets only M->D (held one
// vector late in `delete_next`); D->D chains are added afterwards ("lazy F") only when the
// reference's test says they can matter, by passes over the row that carry the last
// vector's D->D values one lane up, until a pass improves nothing.
//
// As in MSV, a row's best cell is only extracted when the row can change B (or
// overflows); C, which only ever takes maxima, comes from the largest cell of all rows
// at the end. The lazy-F test Dmax + dd_bound > xB is a vector comparison.
// ============================================================================

ViterbiRaw viterbi_filter(const ViterbiStripedView& profile, const Residue* dsq, int L,
                          int ncj_move, std::int16_t* rows) {
  const int Q = profile.Q;
  constexpr int n = kLanesI16;
  const std::size_t row_elements = static_cast<std::size_t>(Q) * n;
  std::int16_t* const mrow = rows;
  std::int16_t* const irow = rows + row_elements;
  std::int16_t* const drow = rows + 2 * row_elements;
  const std::int16_t* const dd = profile.transitions + kVitPerQ * row_elements;
  const IntVector neg = splat_i16(-32768);
  const IntVector neg_lane0 = lane0_i16(-32768);
  const auto shift_in_neg = [&](IntVector v) { return bit_or(shift_up_i16(v), neg_lane0); };
  const auto at = [](std::int16_t* base, int q) { return base + static_cast<std::size_t>(q) * n; };
  for (int q = 0; q < Q; ++q) {
    store(at(mrow, q), neg);
    store(at(irow, q), neg);
    store(at(drow, q), neg);
  }
  const std::int16_t xN = profile.base;
  std::int16_t xB = static_cast<std::int16_t>(xN + ncj_move);
  std::int16_t xJ = -32768;
  IntVector all_rows = neg;  // the largest cell of every row so far
  // A row takes the exact path when some cell exceeds this: an overflow, or xE + tEJ above
  // max(xJ, xN), which is what B depends on.
  const auto quiet_threshold = [&](int xJ_now) {
    return static_cast<std::int16_t>(min_int(32766, max_int(xJ_now, xN) - profile.e_loop));
  };
  IntVector quiet_up_to = splat_i16(quiet_threshold(xJ));
  for (int i = 0; i < L; ++i) {
    const std::int16_t* match = profile.match + dsq[i] * row_elements;
    const std::int16_t* tsc = profile.transitions;
    const IntVector begin = splat_i16(xB);
    IntVector best = neg;         // max over k of M(i,k): E
    IntVector best_delete = neg;  // max over k of M(i,k) + tMD(k): the reference's Dmax
    IntVector delete_next = neg;  // M->D into the next vector, stored one step late
    IntVector mpv = shift_in_neg(load(at(mrow, Q - 1)));
    IntVector ipv = shift_in_neg(load(at(irow, Q - 1)));
    IntVector dpv = shift_in_neg(load(at(drow, Q - 1)));
    for (int q = 0; q < Q; ++q, tsc += kVitPerQ * n) {
      IntVector sv = adds_i16(begin, load(tsc + kVitBM * n));
      sv = max_i16(sv, adds_i16(mpv, load(tsc + kVitMM * n)));
      sv = max_i16(sv, adds_i16(ipv, load(tsc + kVitIM * n)));
      sv = max_i16(sv, adds_i16(dpv, load(tsc + kVitDM * n)));
      sv = adds_i16(sv, load(match + static_cast<std::size_t>(q) * n));
      best = max_i16(best, sv);
      // The previous row's node k, read before this row overwrites it.
      mpv = load(at(mrow, q));
      ipv = load(at(irow, q));
      dpv = load(at(drow, q));
      store(at(mrow, q), sv);
      store(at(drow, q), delete_next);
      delete_next = adds_i16(sv, load(tsc + kVitMD * n));
      best_delete = max_i16(best_delete, delete_next);
      store(at(irow, q),
            max_i16(adds_i16(mpv, load(tsc + kVitMI * n)), adds_i16(ipv, load(tsc + kVitII * n))));
    }
    all_rows = max_i16(all_rows, best);
    if (any_gt_i16(best, quiet_up_to)) {
      const std::int16_t xE = static_cast<std::int16_t>(hmax_i16(best));
      if (xE >= 32767) return {true, 0};
      xJ = static_cast<std::int16_t>(max_int(int{xJ}, xE + profile.e_loop));
      xB = static_cast<std::int16_t>(max_int(xJ + ncj_move, xN + ncj_move));
      quiet_up_to = splat_i16(quiet_threshold(xJ));
    }
    // Lazy F when Dmax + dd_bound > xB: some M->D entry above xB - dd_bound.
    const int delete_threshold = xB - profile.dd_bound;
    const bool lazy_f =
        delete_threshold < -32768 ||
        (delete_threshold < 32767 &&
         any_gt_i16(best_delete, splat_i16(static_cast<std::int16_t>(delete_threshold))));
    if (lazy_f) {
      // One full pass: every segment's D->D chain, fed by the last vector's M->D.
      IntVector carry = shift_in_neg(delete_next);
      for (int q = 0; q < Q; ++q) {
        const IntVector d = max_i16(carry, load(at(drow, q)));
        store(at(drow, q), d);
        carry = adds_i16(d, load(dd + static_cast<std::size_t>(q) * n));
      }
      // Carry chains across segment boundaries until nothing improves.
      for (;;) {
        carry = shift_in_neg(carry);
        int q = 0;
        for (; q < Q; ++q) {
          IntVector d = load(at(drow, q));
          if (!any_gt_i16(carry, d)) break;
          d = max_i16(carry, d);
          store(at(drow, q), d);
          carry = adds_i16(d, load(dd + static_cast<std::size_t>(q) * n));
        }
        if (q < Q) break;
      }
    } else {
      store(at(drow, 0), shift_in_neg(delete_next));
    }
  }
  // C only takes maxima of E + tEC over the rows (the reference's xC starts at -32768).
  const int xC = max_int(-32768, hmax_i16(all_rows) + profile.e_move);
  return {false, xC};
}

// ============================================================================
// Forward parser (forward_parser_reference): probability-space floats.
// The same row scheme as the Viterbi filter, with sums for maxima. D->D chains are
// linear, so they need no repeated passes: while the row is computed, each lane's
// segment gets its D values as if nothing entered it at vector 0 ("within"); the value
// leaving each lane's segment is then carried across the lanes by a prefix scan in
// log2(lanes) steps (C[j] = out[j-1] + T[j-1] * C[j-1], T a lane's D->D product); and one
// pass adds C[j] * (D->D product up to vector q) to every D. Sums run in another order
// than the reference, and denormals are flushed to zero, so the score matches it to a
// tolerance only (simd_kernels.hpp). The SSE4.1 instance (4 lanes) defines the canonical
// Forward: core/hmmsearch/forward_canonical.cpp and forward_canonical_packed below repeat it
// operation by operation, and must change with it.
// ============================================================================

// Denormal results flushed to zero and denormal inputs read as zero while the parser
// runs, as HMMER runs its vector code (impl_Init); the caller's mode comes back after.
class FlushDenormals {
 public:
  FlushDenormals() : saved_(simde_mm_getcsr()) { simde_mm_setcsr(saved_ | 0x8040u); }
  ~FlushDenormals() { simde_mm_setcsr(saved_); }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  std::uint32_t saved_;
};

// What enters each lane's segment at vector 0 through D->D, from what leaves each
// segment (`out`) and each lane's D->D product (`through`): an inclusive scan of
// C[j] = X[j] + U[j] * C[j-1] with X = out and U = through moved one lane up.
template <int step = 1>
FloatVector carry_into_lanes(FloatVector x, FloatVector u) {
  if constexpr (step >= kLanesF32) {
    return x;
  } else {
    x = add_f(x, mul_f(u, shift_up_f_by<step>(x)));
    u = mul_f(u, shift_up_f_by<step>(u));
    return carry_into_lanes<2 * step>(x, u);
  }
}

float forward_parser(const ForwardStripedView& profile, const Residue* dsq, int L, float loop,
                     float move, float* rows) {
  const FlushDenormals flush_denormals;
  const int Q = profile.Q;
  constexpr int n = kLanesF32;
  const std::size_t row_elements = static_cast<std::size_t>(Q) * n;
  float* const mrow = rows;
  float* const irow = rows + row_elements;
  float* const drow = rows + 2 * row_elements;
  const float* const dd = profile.transitions + kVitPerQ * row_elements;
  const auto at = [](auto* base, int q) { return base + static_cast<std::size_t>(q) * n; };
  const FloatVector lane_through = shift_up_f(load_f(at(profile.dd_prefix, Q)));
  for (int q = 0; q < Q; ++q) {
    store_f(at(mrow, q), zero_f());
    store_f(at(irow, q), zero_f());
    store_f(at(drow, q), zero_f());
  }
  float xN = 1.0f, xJ = 0.0f, xC = 0.0f;
  float xB = move;
  float total_scale = 0.0f;
  for (int i = 0; i < L; ++i) {
    const float* match = profile.match + dsq[i] * row_elements;
    const float* tsc = profile.transitions;
    const FloatVector begin = splat_f(xB);
    FloatVector sum = zero_f();        // M and D of the row (D as computed within lanes)
    FloatVector delete_in = zero_f();  // D within the lane at vector q
    FloatVector mpv = shift_up_f(load_f(at(mrow, Q - 1)));
    FloatVector ipv = shift_up_f(load_f(at(irow, Q - 1)));
    FloatVector dpv = shift_up_f(load_f(at(drow, Q - 1)));
    for (int q = 0; q < Q; ++q, tsc += kVitPerQ * n) {
      FloatVector sv = mul_f(begin, load_f(tsc + kVitBM * n));
      sv = add_f(sv, mul_f(mpv, load_f(tsc + kVitMM * n)));
      sv = add_f(sv, mul_f(ipv, load_f(tsc + kVitIM * n)));
      sv = add_f(sv, mul_f(dpv, load_f(tsc + kVitDM * n)));
      sv = mul_f(sv, load_f(match + static_cast<std::size_t>(q) * n));
      sum = add_f(sum, add_f(sv, delete_in));
      mpv = load_f(at(mrow, q));
      ipv = load_f(at(irow, q));
      dpv = load_f(at(drow, q));
      store_f(at(mrow, q), sv);
      store_f(at(drow, q), delete_in);
      // Insert emissions have odds 1.
      store_f(at(irow, q),
              add_f(mul_f(mpv, load_f(tsc + kVitMI * n)), mul_f(ipv, load_f(tsc + kVitII * n))));
      delete_in = add_f(mul_f(sv, load_f(tsc + kVitMD * n)), mul_f(delete_in, load_f(at(dd, q))));
    }
    // D entering each lane's segment from the lane below, and what it adds to every D.
    const FloatVector carry = carry_into_lanes(shift_up_f(delete_in), lane_through);
    for (int q = 0; q < Q; ++q) {
      const FloatVector added = mul_f(carry, load_f(at(profile.dd_prefix, q)));
      store_f(at(drow, q), add_f(load_f(at(drow, q)), added));
      sum = add_f(sum, added);
    }
    const float xE = hsum_f(sum);

    xN = xN * loop;
    xC = xC * loop + xE * profile.e_move;
    xJ = xJ * loop + xE * profile.e_loop;
    xB = xJ * move + xN * move;
    if (xE > 1.0e4f) {  // sparse rescaling, as the reference
      xN /= xE;
      xC /= xE;
      xJ /= xE;
      xB /= xE;
      const FloatVector r = splat_f(static_cast<float>(1.0 / xE));
      for (int q = 0; q < Q; ++q) {
        store_f(at(mrow, q), mul_f(load_f(at(mrow, q)), r));
        store_f(at(drow, q), mul_f(load_f(at(drow, q)), r));
        store_f(at(irow, q), mul_f(load_f(at(irow, q)), r));
      }
      total_scale = static_cast<float>(total_scale + __builtin_log(static_cast<double>(xE)));
    }
  }
  return static_cast<float>(total_scale + __builtin_log(static_cast<double>(xC * move)));
}

// ============================================================================
// The canonical Forward of several targets at once (core/hmmsearch/forward_canonical.hpp).
// The 4-lane striped parser above in its SSE4.1 instance, run for kGroupsF32 targets
// side by side: each 128-bit group of the vector holds one target's 4 lanes, so that
// every lane does forward_canonical's float operations in its order. The profile is the
// 4-lane one (Q = ceil(M / 4)): a transition vector is the same for every group (one
// 128-bit vector broadcast), the match odds come from each target's own residue (one
// 128-bit load per group), "one lane up" moves within each group, and the row's E sum,
// the N/C/J/B states and the sparse rescaling are each group's own. DP rows are
// interleaved: element (q, group g, lane j) at q * kLanesF32 + 4 * g + j.
// A group whose target ends takes the next target (its rows zeroed), or idles on zero
// rows with begin probability 0 (every value of the group stays +0) once none is left.
// ============================================================================

constexpr int kCanonicalLanes = kCanonicalForwardLanes;

struct CanonicalSlot {
  int target = -1;  // index into the targets; -1: idle
  int i = 0;        // next row
  int L = 0;
  const Residue* dsq = nullptr;
  float* states = nullptr;
  float loop = 0, move = 0;
  float xN = 0, xJ = 0, xC = 0, xB = 0;
  float total_scale = 0;
};

float canonical_final(float total_scale, float c_move) {
  return static_cast<float>(total_scale + __builtin_log(static_cast<double>(c_move)));
}

void forward_canonical_packed(const ForwardStripedView& profile, const CanonicalTarget* targets,
                              int count, float* scores, float* rows, std::int64_t* rescaled_rows) {
  const FlushDenormals flush_denormals;
  constexpr int n = kLanesF32;
  constexpr int groups = kGroupsF32;
  constexpr int lanes = kCanonicalLanes;
  const int Q = profile.Q;
  const std::size_t row_elements = static_cast<std::size_t>(Q) * n;
  const std::size_t profile_row = static_cast<std::size_t>(Q) * lanes;  // one 4-lane row
  float* const mrow = rows;
  float* const irow = rows + row_elements;
  float* const drow = rows + 2 * row_elements;
  const float* const dd = profile.transitions + kVitPerQ * profile_row;
  const auto at = [](auto* base, int q) { return base + static_cast<std::size_t>(q) * n; };
  const auto at4 = [](auto* base, int q) { return base + static_cast<std::size_t>(q) * lanes; };
  const FloatVector lane_through =
      shift_up_in_groups_f<1>(broadcast_group_f(at4(profile.dd_prefix, Q)));
  std::int64_t rescaled = 0;

  // Group g's 4 lanes of every vector of the three rows set to +0.
  const auto clear_group = [&](int g) {
    const simde__m128 zero = simde_mm_setzero_ps();
    for (int q = 0; q < Q; ++q) {
      simde_mm_store_ps(at(mrow, q) + lanes * g, zero);
      simde_mm_store_ps(at(irow, q) + lanes * g, zero);
      simde_mm_store_ps(at(drow, q) + lanes * g, zero);
    }
  };
  // The next target with residues into slot s (an empty one gets its score at once:
  // forward_canonical's for L = 0), or idle.
  int next = 0;
  const auto fill = [&](CanonicalSlot& slot) {
    slot.target = -1;
    while (next < count) {
      const CanonicalTarget& t = targets[next];
      if (t.L > 0) {
        slot.target = next++;
        slot.i = 0;
        slot.L = t.L;
        slot.dsq = t.dsq;
        slot.loop = t.loop;
        slot.move = t.move;
        slot.xN = 1.0f;
        slot.xJ = 0.0f;
        slot.xC = 0.0f;
        slot.xB = t.move;
        slot.total_scale = 0.0f;
        slot.states = t.states;
        if (slot.states != nullptr)
          put_parser_states(slot.states, 0, 0.0f, slot.xN, slot.xJ, slot.xB, slot.xC, 1.0f);
        return;
      }
      scores[next] = canonical_final(0.0f, 0.0f * t.move);
      if (t.states != nullptr) put_parser_states(t.states, 0, 0.0f, 1.0f, 0.0f, t.move, 0.0f, 1.0f);
      ++next;
    }
  };

  for (int q = 0; q < Q; ++q) {
    store_f(at(mrow, q), zero_f());
    store_f(at(irow, q), zero_f());
    store_f(at(drow, q), zero_f());
  }
  CanonicalSlot slots[groups];
  int active = 0;
  for (CanonicalSlot& slot : slots) {
    fill(slot);
    if (slot.target >= 0) ++active;
  }
  while (active > 0) {
    // This row of every group: the target's residue, its B probability (idle: residue 0
    // and B = 0).
    const float* match[groups];
    alignas(64) float begin_of[groups];
    for (int g = 0; g < groups; ++g) {
      const CanonicalSlot& slot = slots[g];
      const bool busy = slot.target >= 0;
      match[g] = profile.match + (busy ? slot.dsq[slot.i] : 0) * profile_row;
      begin_of[g] = busy ? slot.xB : 0.0f;
    }
    const float* tsc = profile.transitions;
    const FloatVector begin = splat_groups_f(begin_of);
    FloatVector sum = zero_f();        // M and D of the row (D as computed within lanes)
    FloatVector delete_in = zero_f();  // D within the lane at vector q
    FloatVector mpv = shift_up_in_groups_f<1>(load_f(at(mrow, Q - 1)));
    FloatVector ipv = shift_up_in_groups_f<1>(load_f(at(irow, Q - 1)));
    FloatVector dpv = shift_up_in_groups_f<1>(load_f(at(drow, Q - 1)));
    for (int q = 0; q < Q; ++q, tsc += kVitPerQ * lanes) {
      const float* match_q[groups];
      for (int g = 0; g < groups; ++g) match_q[g] = at4(match[g], q);
      FloatVector sv = mul_f(begin, broadcast_group_f(tsc + kVitBM * lanes));
      sv = add_f(sv, mul_f(mpv, broadcast_group_f(tsc + kVitMM * lanes)));
      sv = add_f(sv, mul_f(ipv, broadcast_group_f(tsc + kVitIM * lanes)));
      sv = add_f(sv, mul_f(dpv, broadcast_group_f(tsc + kVitDM * lanes)));
      sv = mul_f(sv, load_groups_f(match_q));
      sum = add_f(sum, add_f(sv, delete_in));
      mpv = load_f(at(mrow, q));
      ipv = load_f(at(irow, q));
      dpv = load_f(at(drow, q));
      store_f(at(mrow, q), sv);
      store_f(at(drow, q), delete_in);
      // Insert emissions have odds 1.
      store_f(at(irow, q), add_f(mul_f(mpv, broadcast_group_f(tsc + kVitMI * lanes)),
                                 mul_f(ipv, broadcast_group_f(tsc + kVitII * lanes))));
      delete_in = add_f(mul_f(sv, broadcast_group_f(tsc + kVitMD * lanes)),
                        mul_f(delete_in, broadcast_group_f(at4(dd, q))));
    }
    // D entering each lane's segment from the lane below, within each group (the scan of
    // forward_parser in 4 lanes: two steps), and what it adds to every D.
    FloatVector carry = shift_up_in_groups_f<1>(delete_in);
    FloatVector through = lane_through;
    carry = add_f(carry, mul_f(through, shift_up_in_groups_f<1>(carry)));
    through = mul_f(through, shift_up_in_groups_f<1>(through));
    carry = add_f(carry, mul_f(through, shift_up_in_groups_f<2>(carry)));
    for (int q = 0; q < Q; ++q) {
      const FloatVector added = mul_f(carry, broadcast_group_f(at4(profile.dd_prefix, q)));
      store_f(at(drow, q), add_f(load_f(at(drow, q)), added));
      sum = add_f(sum, added);
    }
    alignas(64) float sums[n];
    store_f(sums, hsum_groups_f(sum));

    for (int g = 0; g < groups; ++g) {
      CanonicalSlot& slot = slots[g];
      if (slot.target < 0) continue;
      const float xE = sums[lanes * g];
      const float loop = slot.loop;
      const float move = slot.move;
      slot.xN = slot.xN * loop;
      slot.xC = slot.xC * loop + xE * profile.e_move;
      slot.xJ = slot.xJ * loop + xE * profile.e_loop;
      slot.xB = slot.xJ * move + slot.xN * move;
      float row_e = xE, row_scale = 1.0f;  // the row's parser states
      if (xE > 1.0e4f) {                   // sparse rescaling of this group, as the reference
        row_e = 1.0f;
        row_scale = xE;
        ++rescaled;
        slot.xN /= xE;
        slot.xC /= xE;
        slot.xJ /= xE;
        slot.xB /= xE;
        const simde__m128 r = simde_mm_set1_ps(static_cast<float>(1.0 / xE));
        for (int q = 0; q < Q; ++q) {
          float* const m = at(mrow, q) + lanes * g;
          float* const d = at(drow, q) + lanes * g;
          float* const in = at(irow, q) + lanes * g;
          simde_mm_store_ps(m, simde_mm_mul_ps(simde_mm_load_ps(m), r));
          simde_mm_store_ps(d, simde_mm_mul_ps(simde_mm_load_ps(d), r));
          simde_mm_store_ps(in, simde_mm_mul_ps(simde_mm_load_ps(in), r));
        }
        slot.total_scale =
            static_cast<float>(slot.total_scale + __builtin_log(static_cast<double>(xE)));
      }
      if (slot.states != nullptr) {
        put_parser_states(slot.states, slot.i + 1, row_e, slot.xN, slot.xJ, slot.xB, slot.xC,
                          row_scale);
      }
      if (++slot.i < slot.L) continue;
      scores[slot.target] = canonical_final(slot.total_scale, slot.xC * move);
      clear_group(g);
      fill(slot);
      if (slot.target < 0) --active;
    }
  }
  if (rescaled_rows != nullptr) *rescaled_rows += rescaled;
}

// ============================================================================
// Domain definition's whole-target Backward parser for several targets at once
// (core/hmmsearch/posterior_dp.cpp's backward_dp on a parser matrix, multihit, in the
// canonical order: DeletePaths::scan), as
// forward_canonical_packed runs the canonical Forward: each 128-bit group holds one
// target's 4 lanes and does backward_dp's float operations in its order; transitions are
// broadcast, match odds loaded per group; the special states, the rescaling and the last
// row (row 0: B and N only, summed in its own order) are each group's own. Rows run from
// each target's L down to 0; two DP rows (the next row and this one) alternate.
// ============================================================================

struct BackwardSlot {
  const BackwardTarget* t = nullptr;  // null: idle
  int i = 0;                          // the row this step computes (L .. 1)
  float xN = 0, xJ = 0, xC = 0, xB = 0, xE = 0;
  bool own_scales = false;
};

void backward_parser_packed(const ForwardStripedView& profile, const BackwardTarget* targets,
                            int count, float* rows) {
  const FlushDenormals flush_denormals;
  constexpr int n = kLanesF32;
  constexpr int groups = kGroupsF32;
  constexpr int lanes = kCanonicalLanes;
  const int Q = profile.Q;
  const std::size_t row_elements = static_cast<std::size_t>(Q) * n;
  const std::size_t profile_row = static_cast<std::size_t>(Q) * lanes;
  const float* const dd = profile.transitions + kVitPerQ * profile_row;
  const auto at = [](auto* base, int q) { return base + static_cast<std::size_t>(q) * n; };
  const auto at4 = [](auto* base, int q) { return base + static_cast<std::size_t>(q) * lanes; };
  const auto tsc = [&](int q, int which) {
    return broadcast_group_f(
        profile.transitions +
        (static_cast<std::size_t>(q) * kVitPerQ + static_cast<std::size_t>(which)) * lanes);
  };
  float* buffers[2] = {rows, rows + 3 * row_elements};  // each: M, D, I rows
  for (float* b : buffers)
    for (std::size_t j = 0; j < 3 * row_elements; j += n) store_f(b + j, zero_f());
  int cur_buffer = 0;

  int next = 0;
  const auto fill = [&](BackwardSlot& slot) {
    slot = BackwardSlot{};
    while (next < count) {
      const BackwardTarget& t = targets[next++];
      if (t.L <= 0) continue;
      slot.t = &t;
      slot.i = t.L;
      return;
    }
  };
  BackwardSlot slots[groups];
  int active = 0;
  for (BackwardSlot& slot : slots) {
    fill(slot);
    if (slot.t != nullptr) ++active;
  }
  while (active > 0) {
    float* const curm = buffers[cur_buffer];
    float* const curd = curm + row_elements;
    float* const curi = curm + 2 * row_elements;
    const float* const nextm = buffers[1 - cur_buffer];
    const float* const nexti = nextm + 2 * row_elements;
    // Residue i + 1 of each group (row L, and an idle group: residue 0 against zero rows).
    const float* match[groups];
    for (int g = 0; g < groups; ++g) {
      const BackwardSlot& slot = slots[g];
      const bool emits = slot.t != nullptr && slot.i < slot.t->L;
      match[g] = profile.match + (emits ? slot.t->dsq[slot.i] : 0) * profile_row;
    }
    const auto match_at = [&](int q) {
      const float* p[groups];
      for (int g = 0; g < groups; ++g) p[g] = at4(match[g], q);
      return load_groups_f(p);
    };
    // 1: B collected; I complete; M and D without their paths to D and E (D's in-lane
    // D->D included).
    FloatVector tmm = shift_down_in_groups_f<1>(tsc(0, kVitMM));
    FloatVector tim = shift_down_in_groups_f<1>(tsc(0, kVitIM));
    FloatVector tdm = shift_down_in_groups_f<1>(tsc(0, kVitDM));
    FloatVector mpv = shift_down_in_groups_f<1>(mul_f(load_f(at(nextm, 0)), match_at(0)));
    FloatVector xBv = zero_f();
    FloatVector din = zero_f();
    for (int q = Q - 1; q >= 0; --q) {
      const FloatVector ipv = load_f(at(nexti, q));
      store_f(at(curi, q), add_f(mul_f(ipv, tsc(q, kVitII)), mul_f(mpv, tim)));
      din = add_f(mul_f(mpv, tdm), mul_f(din, broadcast_group_f(at4(dd, q))));
      store_f(at(curd, q), din);
      const FloatVector mcv = add_f(mul_f(ipv, tsc(q, kVitMI)), mul_f(mpv, tmm));
      mpv = mul_f(load_f(at(nextm, q)), match_at(q));
      store_f(at(curm, q), mcv);
      tdm = tsc(q, kVitDM);
      tim = tsc(q, kVitIM);
      tmm = tsc(q, kVitMM);
      xBv = add_f(xBv, mul_f(mpv, tsc(q, kVitBM)));
    }
    // 2: each group's special states.
    alignas(64) float xb_lanes[n];
    alignas(64) float xe_of[groups];
    store_f(xb_lanes, xBv);
    for (int g = 0; g < groups; ++g) {
      BackwardSlot& slot = slots[g];
      xe_of[g] = 0.0f;
      if (slot.t == nullptr) continue;
      const float loop = slot.t->loop, move = slot.t->move;
      if (slot.i == slot.t->L) {  // row L: C's move to T
        slot.xC = move;
        slot.xJ = slot.xB = slot.xN = 0.0f;
        slot.xE = slot.xC * profile.e_move;
      } else {
        const float* x = xb_lanes + lanes * g;
        slot.xB = (x[0] + x[1]) + (x[2] + x[3]);
        slot.xC = slot.xC * loop;
        slot.xJ = slot.xB * move + slot.xJ * loop;
        slot.xN = slot.xB * move + slot.xN * loop;
        slot.xE = slot.xC * profile.e_move + slot.xJ * profile.e_loop;
      }
      xe_of[g] = slot.xE;
    }
    // 3: M and D to E, the D->D paths (the scan across lanes), and M->D.
    const FloatVector xEv = splat_groups_f(xe_of);
    FloatVector carry = shift_down_in_groups_f<1>(
        add_f(load_f(at(curd, 0)), mul_f(xEv, broadcast_group_f(at4(profile.dd_ones, 0)))));
    FloatVector through = shift_down_in_groups_f<1>(broadcast_group_f(at4(profile.dd_suffix, 0)));
    carry = add_f(carry, mul_f(through, shift_down_in_groups_f<1>(carry)));
    through = mul_f(through, shift_down_in_groups_f<1>(through));
    carry = add_f(carry, mul_f(through, shift_down_in_groups_f<2>(carry)));
    FloatVector dnext = carry;
    for (int q = Q - 1; q >= 0; --q) {
      const FloatVector d =
          add_f(add_f(load_f(at(curd, q)), mul_f(xEv, broadcast_group_f(at4(profile.dd_ones, q)))),
                mul_f(carry, broadcast_group_f(at4(profile.dd_suffix, q))));
      store_f(at(curd, q), d);
      store_f(at(curm, q), add_f(add_f(load_f(at(curm, q)), xEv), mul_f(dnext, tsc(q, kVitMD))));
      dnext = d;
    }
    // 4: each group's rescaling and states; a group past row 1 ends its target with row 0.
    for (int g = 0; g < groups; ++g) {
      BackwardSlot& slot = slots[g];
      if (slot.t == nullptr) continue;
      const BackwardTarget& t = *slot.t;
      const float forward_scale =
          t.forward_states[static_cast<std::size_t>(slot.i) * kParserStates + kParserScale];
      float scale = forward_scale;
      if (slot.i < t.L) {
        if (slot.xB > kBackwardOwnScalesAbove) slot.own_scales = true;
        if (slot.own_scales) scale = slot.xB > kParserRescaleAbove ? slot.xB : 1.0f;
      }
      if (scale > 1.0f) {
        slot.xE /= scale;
        slot.xN /= scale;
        slot.xJ /= scale;
        slot.xB /= scale;
        slot.xC /= scale;
        const simde__m128 r = simde_mm_set1_ps(static_cast<float>(1.0 / scale));
        for (float* row : {curm, curd, curi}) {
          for (int q = 0; q < Q; ++q) {
            float* const v = at(row, q) + lanes * g;
            simde_mm_store_ps(v, simde_mm_mul_ps(simde_mm_load_ps(v), r));
          }
        }
      }
      put_parser_states(t.states, slot.i, slot.xE, slot.xN, slot.xJ, slot.xB, slot.xC, scale);
      if (slot.i > 1) {
        --slot.i;
        continue;
      }
      // Row 0: B from row 1 (the vectors in increasing order), and N.
      const float* first = profile.match + t.dsq[0] * profile_row;
      simde__m128 sum = simde_mm_setzero_ps();
      for (int q = 0; q < Q; ++q) {
        const simde__m128 m = simde_mm_mul_ps(simde_mm_load_ps(at(curm, q) + lanes * g),
                                              simde_mm_load_ps(at4(first, q)));
        sum = simde_mm_add_ps(
            sum,
            simde_mm_mul_ps(
                m, simde_mm_load_ps(profile.transitions +
                                    (static_cast<std::size_t>(q) * kVitPerQ + kVitBM) * lanes)));
      }
      alignas(16) float x[4];
      simde_mm_store_ps(x, sum);
      const float xB = (x[0] + x[1]) + (x[2] + x[3]);
      const float xN = xB * t.move + slot.xN * t.loop;
      put_parser_states(t.states, 0, 0.0f, xN, 0.0f, xB, 0.0f, 1.0f);
      *t.own_scales = slot.own_scales;
      // The group's next target starts from zero rows: this row is its next row.
      const simde__m128 zero = simde_mm_setzero_ps();
      for (float* row : {curm, curd, curi})
        for (int q = 0; q < Q; ++q) simde_mm_store_ps(at(row, q) + lanes * g, zero);
      fill(slot);
      if (slot.t == nullptr) --active;
    }
    cur_buffer = 1 - cur_buffer;
  }
}

}  // namespace

const IsaKernels& isa_kernels() {
  static constexpr IsaKernels kernels{kVectorBytes,
                                      kSsvRegisters,
                                      &ssv_max,
                                      &msv_filter,
                                      &viterbi_filter,
                                      &forward_parser,
                                      &forward_canonical_packed,
                                      &backward_parser_packed};
  return kernels;
}

}  // namespace duet::simd::DUET_SIMD_NAMESPACE
