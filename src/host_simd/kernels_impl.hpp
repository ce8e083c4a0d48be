// The SIMD filter kernels, written once against the width-abstraction layer
// (vector_ops.hpp) and compiled once per ISA: kernels_sse41.cpp, kernels_avx2.cpp and
// kernels_avx512.cpp define DUET_SIMD_NAMESPACE and DUET_SIMD_VECTOR_BITS, include this
// file, and get their own copy in namespace duet::simd::<isa>. The contract is in
// simd_kernels.hpp; the striped order in isa_kernels.hpp. Each kernel follows the scalar
// reference of core/reference_kernels.cpp line by line where the result must be exact.
//
// Nothing here may instantiate inline code of the standard library (see isa_kernels.hpp):
// only integer_sequence, a type, is used from <utility>.

#include <cstddef>
#include <cstdint>
#include <utility>

#include "host_simd/isa_kernels.hpp"
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

// A vector with x in lane 0 and zero elsewhere (the fill of the shifts).
IntVector lane0_u8(std::uint8_t x) {
  alignas(64) std::uint8_t lanes[kLanesU8] = {};
  lanes[0] = x;
  return load(lanes);
}
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
// at -128: that is register 0 on rows where t = 0, and register Q - t on rows where
// t > Q - W. A sweep of W registers covers W striped vectors of every row; sweeps of
// kSsvRegisters registers cover the model.
// ============================================================================

constexpr int kSsvRegisters = DUET_SIMD_VECTOR_BITS == 512 ? 16 : 12;

template <int W>
IntVector ssv_sweep(const SsvStripedView& profile, const Residue* dsq, int L, int q0,
                    IntVector best) {
  const int Q = profile.Q;
  const std::size_t residue_bytes = vectors_to_bytes(profile.stride);
  const std::int8_t* steps = profile.step;
  const IntVector begin_lane0 = lane0_u8(0x80);
  IntVector v[W];
  for (int r = 0; r < W; ++r) v[r] = splat_u8(0x80);

  // One register on one row; Shifted is the register that wraps on this row (-1: none).
  const auto cell = [&]<int R, int Shifted>(const std::int8_t* step) {
    if constexpr (R == Shifted) v[R] = bit_or(shift_up_u8(v[R]), begin_lane0);
    v[R] = subs_i8(v[R], load(step + R * kVectorBytes));
    best = max_u8(best, v[R]);
  };
  const auto row = [&]<int Shifted>(int i, int t) {
    const std::int8_t* step = steps + dsq[i] * residue_bytes + vectors_to_bytes(t);
    [&]<int... R>(std::integer_sequence<int, R...>) {
      (cell.template operator()<R, Shifted>(step), ...);
    }
    (std::make_integer_sequence<int, W>{});
  };
  // Rows where register s = Q - t (1 <= s < W) wraps.
  const auto wrapping_row = [&](int s, int i, int t) {
    [&]<int... S>(std::integer_sequence<int, S...>) {
      ((s == S + 1 ? (row.template operator()<S + 1>(i, t), 0) : 0), ...);
    }
    (std::make_integer_sequence<int, W - 1>{});
  };

  int t = q0;
  int i = 0;
  while (i < L) {
    if (t == 0) {
      row.template operator()<0>(i, 0);
      ++i;
      t = Q > 1 ? 1 : 0;
    } else if (t <= Q - W) {
      // No register wraps until t passes Q - W.
      const int end = i + min_int(Q - W + 1 - t, L - i);
      for (; i < end; ++i, ++t) row.template operator()<-1>(i, t);
      if (t == Q) t = 0;
    } else {
      wrapping_row(Q - t, i, t);
      ++i;
      if (++t == Q) t = 0;
    }
  }
  return best;
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
  IntVector best = splat_u8(0x80);
  for (int q0 = 0; q0 < profile.Q; q0 += kSsvRegisters) {
    const int registers = min_int(kSsvRegisters, profile.Q - q0);
    best = sweeps[registers - 1](profile, dsq, L, q0, best);
  }
  return hmax_u8(best);
}

// ============================================================================
// MSV (msv_filter_reference): 8-bit unsigned offset scores, 0 = -infinity.
//   M(i,k) = max(M(i-1,k-1), B(i-1)) + bias - cost(k, x_i)   (saturating 0..255)
// The row is kept in memory; the value of M(i-1,k-1) for vector q is the previous row's
// vector q-1, and for q = 0 the previous row's last vector shifted one lane up (lane 0
// gets 0, node 0). E, J, B follow the reference exactly, once per row.
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
    int xE = hmax_u8(best);
    if (xE + profile.bias >= 255) return {true, 0};  // a cell could have saturated
    xE = max_int(xE - profile.tec, 0);
    xJ = max_int(xJ, xE);
    xB = max_int(max_int(profile.base, xJ) - bjbm, 0);
  }
  return {false, xJ};
}

// ============================================================================
// Viterbi filter (viterbi_filter_reference): 16-bit signed saturating scores.
// Rows M, I, D in memory; the previous row's node k-1 comes, as in MSV, from vector q-1 or
// from the last vector shifted up (lane 0: -32768). D(i,k) first gets only M->D (held one
// vector late in `delete_next`); D->D chains are added afterwards ("lazy F") only when the
// reference's test says they can matter, by passes over the row that carry the last
// vector's D->D values one lane up, until a pass improves nothing.
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
  std::int16_t xJ = -32768, xC = -32768;
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
    const std::int16_t xE = static_cast<std::int16_t>(hmax_i16(best));
    if (xE >= 32767) return {true, 0};
    xC = static_cast<std::int16_t>(max_int(int{xC}, xE + profile.e_move));
    xJ = static_cast<std::int16_t>(max_int(int{xJ}, xE + profile.e_loop));
    xB = static_cast<std::int16_t>(max_int(xJ + ncj_move, xN + ncj_move));

    if (hmax_i16(best_delete) + profile.dd_bound > xB) {
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
  return {false, xC};
}

// ============================================================================
// Forward parser (forward_parser_reference): probability-space floats.
// The same row scheme as the Viterbi filter with sums for maxima. D->D: one full pass,
// then passes carrying the remaining D->D mass one lane further, at most lanes - 1 of
// them, until a pass changes no D. Sums run in another order than the reference, so the
// score matches it to a tolerance only (simd_kernels.hpp).
// ============================================================================

float forward_parser(const ForwardStripedView& profile, const Residue* dsq, int L, float loop,
                     float move, float* rows) {
  const int Q = profile.Q;
  constexpr int n = kLanesF32;
  const std::size_t row_elements = static_cast<std::size_t>(Q) * n;
  float* const mrow = rows;
  float* const irow = rows + row_elements;
  float* const drow = rows + 2 * row_elements;
  const float* const dd = profile.transitions + kVitPerQ * row_elements;
  const auto at = [](float* base, int q) { return base + static_cast<std::size_t>(q) * n; };
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
    FloatVector sum = zero_f();
    FloatVector delete_next = zero_f();
    FloatVector mpv = shift_up_f(load_f(at(mrow, Q - 1)));
    FloatVector ipv = shift_up_f(load_f(at(irow, Q - 1)));
    FloatVector dpv = shift_up_f(load_f(at(drow, Q - 1)));
    for (int q = 0; q < Q; ++q, tsc += kVitPerQ * n) {
      FloatVector sv = mul_f(begin, load_f(tsc + kVitBM * n));
      sv = add_f(sv, mul_f(mpv, load_f(tsc + kVitMM * n)));
      sv = add_f(sv, mul_f(ipv, load_f(tsc + kVitIM * n)));
      sv = add_f(sv, mul_f(dpv, load_f(tsc + kVitDM * n)));
      sv = mul_f(sv, load_f(match + static_cast<std::size_t>(q) * n));
      sum = add_f(sum, sv);
      mpv = load_f(at(mrow, q));
      ipv = load_f(at(irow, q));
      dpv = load_f(at(drow, q));
      store_f(at(mrow, q), sv);
      store_f(at(drow, q), delete_next);
      delete_next = mul_f(sv, load_f(tsc + kVitMD * n));
      // Insert emissions have odds 1.
      store_f(at(irow, q),
              add_f(mul_f(mpv, load_f(tsc + kVitMI * n)), mul_f(ipv, load_f(tsc + kVitII * n))));
    }
    // D->D: the first pass extends every D; later passes carry only what crosses a lane.
    FloatVector carry = shift_up_f(delete_next);
    for (int q = 0; q < Q; ++q) {
      const FloatVector d = add_f(carry, load_f(at(drow, q)));
      store_f(at(drow, q), d);
      carry = mul_f(d, load_f(dd + static_cast<std::size_t>(q) * n));
    }
    for (int pass = 1; pass < n; ++pass) {
      carry = shift_up_f(carry);
      bool changed = false;
      for (int q = 0; q < Q; ++q) {
        const FloatVector old = load_f(at(drow, q));
        const FloatVector d = add_f(carry, old);
        changed = changed || any_gt_f(d, old);
        store_f(at(drow, q), d);
        carry = mul_f(carry, load_f(dd + static_cast<std::size_t>(q) * n));
      }
      if (!changed) break;
    }
    for (int q = 0; q < Q; ++q) sum = add_f(sum, load_f(at(drow, q)));  // local exits from D
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

}  // namespace

const IsaKernels& isa_kernels() {
  static constexpr IsaKernels kernels{kVectorBytes, kSsvRegisters,   &ssv_max,
                                      &msv_filter,  &viterbi_filter, &forward_parser};
  return kernels;
}

}  // namespace duet::simd::DUET_SIMD_NAMESPACE
