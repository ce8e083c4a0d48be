// The canonical Forward (see forward_canonical.hpp): the 4-lane striped parser written
// with vectors of 4 floats. Every lane operation below corresponds to one vector
// instruction of host_simd/hmmsearch/kernels_impl.hpp's forward_parser in its SSE4.1 instance, in
// the same order; keep the two in step (the bit-for-bit test fails otherwise).
#include "core/hmmsearch/forward_canonical.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/hmmsearch/denormals.hpp"
#include "core/hmmsearch/lanes.hpp"

namespace duet {

namespace {

constexpr int n = kCanonicalForwardLanes;

using namespace lanes;

inline Lanes add(Lanes a, Lanes b) {
  return a + b;
}
inline Lanes mul(Lanes a, Lanes b) {
  return a * b;
}

}  // namespace

float forward_canonical(const ForwardStripedView& profile, const Residue* dsq, int L, float loop,
                        float move, float* rows, float* states) {
  const FlushDenormals flush_denormals;
  const int Q = profile.Q;
  const std::size_t row_elements = static_cast<std::size_t>(Q) * n;
  float* const mrow = rows;
  float* const irow = rows + row_elements;
  float* const drow = rows + 2 * row_elements;
  const float* const dd = profile.transitions + kVitPerQ * row_elements;
  const auto at = [](auto* base, int q) { return base + static_cast<std::size_t>(q) * n; };
  const Lanes zero = splat(0.0f);
  const Lanes lane_through = shift_up(load(at(profile.dd_prefix, Q)));
  for (int q = 0; q < Q; ++q) {
    store(at(mrow, q), zero);
    store(at(irow, q), zero);
    store(at(drow, q), zero);
  }
  float xN = 1.0f, xJ = 0.0f, xC = 0.0f;
  float xB = move;
  float total_scale = 0.0f;
  const auto record = [&](int i, float xE, float scale) {
    if (states != nullptr) put_parser_states(states, i, xE, xN, xJ, xB, xC, scale);
  };
  record(0, 0.0f, 1.0f);
  for (int i = 0; i < L; ++i) {
    const float* match = profile.match + dsq[i] * row_elements;
    const float* tsc = profile.transitions;
    const Lanes begin = splat(xB);
    Lanes sum = zero;        // M and D of the row (D as computed within lanes)
    Lanes delete_in = zero;  // D within the lane at vector q
    Lanes mpv = shift_up(load(at(mrow, Q - 1)));
    Lanes ipv = shift_up(load(at(irow, Q - 1)));
    Lanes dpv = shift_up(load(at(drow, Q - 1)));
    for (int q = 0; q < Q; ++q, tsc += kVitPerQ * n) {
      Lanes sv = mul(begin, load(tsc + kVitBM * n));
      sv = add(sv, mul(mpv, load(tsc + kVitMM * n)));
      sv = add(sv, mul(ipv, load(tsc + kVitIM * n)));
      sv = add(sv, mul(dpv, load(tsc + kVitDM * n)));
      sv = mul(sv, load(match + static_cast<std::size_t>(q) * n));
      sum = add(sum, add(sv, delete_in));
      mpv = load(at(mrow, q));
      ipv = load(at(irow, q));
      dpv = load(at(drow, q));
      store(at(mrow, q), sv);
      store(at(drow, q), delete_in);
      // Insert emissions have odds 1.
      store(at(irow, q), add(mul(mpv, load(tsc + kVitMI * n)), mul(ipv, load(tsc + kVitII * n))));
      delete_in = add(mul(sv, load(tsc + kVitMD * n)), mul(delete_in, load(at(dd, q))));
    }
    // D entering each lane's segment from the lane below (the inclusive scan
    // C[j] = X[j] + U[j] * C[j-1] in two steps), and what it adds to every D.
    Lanes carry = shift_up(delete_in);
    Lanes through = lane_through;
    carry = add(carry, mul(through, shift_up(carry)));
    through = mul(through, shift_up(through));
    carry = add(carry, mul(through, shift_up_two(carry)));
    for (int q = 0; q < Q; ++q) {
      const Lanes added = mul(carry, load(at(profile.dd_prefix, q)));
      store(at(drow, q), add(load(at(drow, q)), added));
      sum = add(sum, added);
    }
    const float xE = canonical_sum(sum);

    xN = xN * loop;
    xC = xC * loop + xE * profile.e_move;
    xJ = xJ * loop + xE * profile.e_loop;
    xB = xJ * move + xN * move;
    if (xE > 1.0e4f) {  // sparse rescaling, as the reference
      xN /= xE;
      xC /= xE;
      xJ /= xE;
      xB /= xE;
      const Lanes r = splat(static_cast<float>(1.0 / xE));
      for (int q = 0; q < Q; ++q) {
        store(at(mrow, q), mul(load(at(mrow, q)), r));
        store(at(drow, q), mul(load(at(drow, q)), r));
        store(at(irow, q), mul(load(at(irow, q)), r));
      }
      total_scale = canonical_forward_rescaled(total_scale, xE);
      record(i + 1, 1.0f, xE);
    } else {
      record(i + 1, xE, 1.0f);
    }
  }
  return canonical_forward_final(total_scale, xC * move);
}

float canonical_forward_rescaled(float total_scale, float xE) {
  return static_cast<float>(total_scale + std::log(static_cast<double>(xE)));
}

float canonical_forward_final(float total_scale, float c_move) {
  return static_cast<float>(total_scale + std::log(static_cast<double>(c_move)));
}

float canonical_forward_finish(const float* rescale_xe, int events, float c_move) {
  const FlushDenormals flush_denormals;
  float total_scale = 0.0f;
  for (int e = 0; e < events; ++e)
    total_scale = canonical_forward_rescaled(total_scale, rescale_xe[e]);
  return canonical_forward_final(total_scale, c_move);
}

float forward_canonical(const ForwardScores& fwd, const Residue* dsq, int L) {
  CanonicalForward canonical(fwd);
  return canonical.score(dsq, L);
}

CanonicalForward::CanonicalForward(const ForwardScores& fwd)
    : fwd_(fwd),
      striped_(stripe_forward_scores(fwd, kCanonicalForwardLanes)),
      rows_(3 * striped_row_elements(striped_.Q, kCanonicalForwardLanes)) {}

float CanonicalForward::score(const Residue* dsq, int L, float* states) {
  const ForwardScores::Length ncj = fwd_.ncj(L);
  return ncj.score(
      forward_canonical(striped_.view(), dsq, L, ncj.loop, ncj.move, rows_.data(), states));
}

}  // namespace duet
