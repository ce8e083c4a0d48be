// Domain definition's dynamic programming (posterior_dp.hpp). The recursions follow
// HMMER 3.3.2's SSE code (impl_sse/fwdback.c, decoding.c, optacc.c) vector for vector on
// 4-lane vectors of the compiler's vector extension; the D->D paths of the Forward and of
// the Backward either in HMMER's repeated passes or in the canonical Forward's scan
// (forward_canonical.cpp: within each lane, then across the lanes; DeletePaths in
// posterior_dp.hpp), and the optimal-accuracy DP in the same scan with max, which gives
// the passes' values exactly.
// The tracebacks are scalar and read the striped rows through DpMatrix::at.
#include "core/hmmsearch/posterior_dp.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/hmmsearch/denormals.hpp"
#include "core/hmmsearch/lanes.hpp"

namespace duet {

namespace {

constexpr int n = kDpLanes;
constexpr float kInf = std::numeric_limits<float>::infinity();

using namespace lanes;
using Mask = int __attribute__((vector_size(16)));

// HMMER's horizontal sum (two shuffled adds): (a0 + a1) + (a2 + a3).
inline float horizontal_sum(Lanes a) {
  return (a[0] + a[1]) + (a[2] + a[3]);
}
inline float horizontal_max(Lanes a) {
  return std::max(std::max(a[0], a[1]), std::max(a[2], a[3]));
}
inline Lanes max(Lanes a, Lanes b) {
  return a > b ? a : b;
}
// The optimal-accuracy recursion's gate: x where the transition is possible (`open`: all
// bits set where t > 0), else 0 (HMMER's masked vector, not -infinity).
inline Lanes gate(Mask open, Lanes x) {
  Mask bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits &= open;
  Lanes out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
// Lane j takes lane j - 1; lane 0 is open.
inline Mask mask_up(Mask a) {
  return __builtin_shufflevector(a, Mask{-1, -1, -1, -1}, 4, 0, 1, 2);
}
// Lane j takes lane j - 2; lanes 0 and 1 take `fill`.
inline Lanes shift_up_two(Lanes a, float fill) {
  return __builtin_shufflevector(a, splat(fill), 4, 5, 0, 1);
}
inline Mask load_mask(const std::int32_t* p) {
  Mask r;
  std::memcpy(&r, p, sizeof r);
  return r;
}

// The striped profile's vectors: transition t of vector q, D->D of vector q, match odds
// of residue x at vector q.
struct View {
  explicit View(const DpProfile& p)
      : Q(p.striped.Q),
        transitions(p.striped.transitions.data()),
        dd(p.striped.transitions.data() + static_cast<std::size_t>(kVitPerQ) * Q * n),
        dd_prefix(p.striped.dd_prefix.data()),
        dd_suffix(p.striped.dd_suffix.data()),
        dd_ones(p.striped.dd_ones.data()),
        opens(p.open.data()),
        dd_open_through(p.dd_open_through.data()),
        match(p.striped.match.data()) {}
  Lanes t(int q, int which) const { return load(transitions + (q * kVitPerQ + which) * n); }
  Lanes d_to_d(int q) const { return load(dd + q * n); }
  Mask open(int q, int which) const { return load_mask(opens + (q * kVitPerQ + which) * n); }
  Mask d_to_d_open(int q) const { return load_mask(opens + (kVitPerQ * Q + q) * n); }
  const float* odds(Residue x) const { return match + static_cast<std::size_t>(x) * Q * n; }
  int Q;
  const float* transitions;
  const float* dd;
  const float* dd_prefix;
  const float* dd_suffix;
  const float* dd_ones;
  const std::int32_t* opens;
  const std::int32_t* dd_open_through;
  const float* match;
};

// Row access by vector.
inline Lanes at(const float* row, int q) {
  return load(row + q * n);
}
inline void put(float* row, int q, Lanes v) {
  store(row + q * n, v);
}

// A Backward row's paths through E and D, once its M hold their paths into the next row
// (from M and I of row i+1) and its D the in-lane part of theirs (to M(i+1,k+1), then
// D->D within each lane's segment of nodes: see backward_dp): every M and D adds E, the
// D->D recursion D(k) = X(k) + t(k) D(k+1) is completed, and M(k) adds M->D(k) D(k+1).
// As the canonical Forward's D (mirrored): within each lane's segment first, then the
// value entering each segment from the next lane (an inclusive scan over the 4 lanes)
// times the product of D->D from each node to its segment's end. E's share of the
// in-lane recursion is E times the recursion of 1 (StripedForwardProfile::dd_ones).
void backward_exits_and_deletes(const View& v, DpRow cur, Lanes xEv) {
  const int Q = v.Q;
  // Lane r's carry: the final D at vector 0 of lane r + 1.
  Lanes carry = shift_down(at(cur.d, 0) + xEv * at(v.dd_ones, 0));
  Lanes through = shift_down(at(v.dd_suffix, 0));
  carry = carry + through * shift_down(carry);
  through = through * shift_down(through);
  carry = carry + through * shift_down_two(carry);
  Lanes next = carry;  // D(k + 1) of vector Q - 1's nodes
  for (int q = Q - 1; q >= 0; --q) {
    const Lanes d = (at(cur.d, q) + xEv * at(v.dd_ones, q)) + carry * at(v.dd_suffix, q);
    put(cur.d, q, d);
    put(cur.m, q, (at(cur.m, q) + xEv) + next * v.t(q, kVitMD));
    next = d;
  }
}

// The end of HMMER's Backward row (impl_sse/fwdback.c, backward_engine), once a first pass
// over the row left `dcv`, the D->D terms leaving its vector 0: three more passes carrying
// only those terms across the lanes, then M->D.
void backward_last_passes_and_md(const View& v, DpRow cur, Lanes dcv) {
  const int Q = v.Q;
  for (int pass = 1; pass < 4; ++pass) {
    dcv = shift_down(dcv);
    for (int q = Q - 1; q >= 0; --q) {
      dcv = dcv * v.d_to_d(q);
      put(cur.d, q, at(cur.d, q) + dcv);
    }
  }
  dcv = shift_down(at(cur.d, 0));
  for (int q = Q - 1; q >= 0; --q) {
    put(cur.m, q, at(cur.m, q) + dcv * v.t(q, kVitMD));
    dcv = at(cur.d, q);
  }
}

// HMMER's Backward for a row below L: M and D to E and one step of the D->D paths over the
// row (D(k) adds t(k) D(k+1) from the D already updated, and E), then the other passes and
// M->D. The row's D hold their paths to M(i+1,k+1) alone.
void backward_exits_and_deletes_in_passes(const View& v, DpRow cur, Lanes xEv) {
  Lanes dpv = shift_down(at(cur.d, 0) + xEv);
  Lanes dcv = splat(0.0f);
  for (int q = v.Q - 1; q >= 0; --q) {
    dcv = dpv * v.d_to_d(q);
    const Lanes d = at(cur.d, q) + (dcv + xEv);
    put(cur.d, q, d);
    dpv = d;
    put(cur.m, q, at(cur.m, q) + xEv);
  }
  backward_last_passes_and_md(v, cur, dcv);
}

// HMMER's Backward for row L: every M and D starts at E, I at 0; a first D->D pass from each
// D, then the other passes and M->D.
void backward_last_row_in_passes(const View& v, DpRow cur, Lanes xEv) {
  const int Q = v.Q;
  for (int q = 0; q < Q; ++q) {
    put(cur.m, q, xEv);
    put(cur.d, q, xEv);
    put(cur.i, q, splat(0.0f));
  }
  Lanes dpv = shift_down(at(cur.d, Q - 1));
  Lanes dcv = splat(0.0f);
  for (int q = Q - 1; q >= 0; --q) {
    dcv = dpv * v.d_to_d(q);
    const Lanes d = at(cur.d, q) + dcv;
    put(cur.d, q, d);
    dpv = d;
  }
  backward_last_passes_and_md(v, cur, dcv);
}

// A Forward row's M at vector q: B, and M, I and D of the row before (`mpv`, `ipv`, `dpv`,
// already shifted to this vector's nodes), into it, times the match odds; in HMMER's order.
inline Lanes match_cell(const View& v, int q, Lanes begin, Lanes mpv, Lanes ipv, Lanes dpv,
                        const float* match) {
  Lanes sv = begin * v.t(q, kVitBM);
  sv = sv + mpv * v.t(q, kVitMM);
  sv = sv + ipv * v.t(q, kVitIM);
  sv = sv + dpv * v.t(q, kVitDM);
  return sv * at(match, q);
}

// HMMER's Forward (forward_engine) for one row: M, I, and each vector's D holding the M->D
// paths of the vector before it; the D->D paths in passes over the row (all four for models
// of fewer than 100 nodes; for larger ones until a pass changes no D); E the sum of the
// row's M, then D, lane by lane, then across the lanes.
float forward_row_in_passes(const View& v, int M, DpRow prev, DpRow cur, const float* match,
                            float xB) {
  const int Q = v.Q;
  const Lanes begin = splat(xB);
  Lanes xEv = splat(0.0f), dcv = splat(0.0f);
  Lanes mpv = shift_up(at(prev.m, Q - 1));
  Lanes dpv = shift_up(at(prev.d, Q - 1));
  Lanes ipv = shift_up(at(prev.i, Q - 1));
  for (int q = 0; q < Q; ++q) {
    const Lanes sv = match_cell(v, q, begin, mpv, ipv, dpv, match);
    xEv = xEv + sv;
    mpv = at(prev.m, q);
    dpv = at(prev.d, q);
    ipv = at(prev.i, q);
    put(cur.m, q, sv);
    put(cur.d, q, dcv);
    dcv = sv * v.t(q, kVitMD);
    put(cur.i, q, mpv * v.t(q, kVitMI) + ipv * v.t(q, kVitII));  // insert odds are 1
  }
  dcv = shift_up(dcv);
  for (int q = 0; q < Q; ++q) {
    const Lanes d = dcv + at(cur.d, q);
    put(cur.d, q, d);
    dcv = d * v.d_to_d(q);
  }
  const bool until_unchanged = M >= 100;
  for (int pass = 1; pass < 4; ++pass) {
    dcv = shift_up(dcv);
    Mask changed{};
    for (int q = 0; q < Q; ++q) {
      const Lanes before = at(cur.d, q);
      const Lanes d = dcv + before;
      changed |= d > before;
      put(cur.d, q, d);
      dcv = dcv * v.d_to_d(q);
    }
    if (until_unchanged && (changed[0] | changed[1] | changed[2] | changed[3]) == 0) break;
  }
  for (int q = 0; q < Q; ++q) xEv = at(cur.d, q) + xEv;
  return horizontal_sum(xEv);
}

void scale_row(DpRow row, std::size_t width, float factor) {
  for (std::size_t j = 0; j < width; ++j) row.m[j] *= factor;
  for (std::size_t j = 0; j < width; ++j) row.d[j] *= factor;
  for (std::size_t j = 0; j < width; ++j) row.i[j] *= factor;
}

// HMMER's number of 4-lane vectors for M nodes (at least 2): the order its tracebacks
// visit the exits in.
inline int hmmer_vectors(int M) {
  return std::max(2, (M - 1) / 4 + 1);
}

// The traceback's choice: -infinity where the transition is impossible.
inline float reachable(float t, float value) {
  return t == 0.0f ? -kInf : value;
}

// esl_vec_FNorm: the float sum with Kahan's compensation, then each value divided by it.
template <int count>
void normalize(float (&p)[count]) {
  float sum = 0.0f, c = 0.0f;
  for (int i = 0; i < count; ++i) {
    const float y = p[i] - c;
    const float t = sum + y;
    c = (t - sum) - y;
    sum = t;
  }
  if (sum != 0.0f) {
    for (int i = 0; i < count; ++i) p[i] /= sum;
  } else {
    for (int i = 0; i < count; ++i) p[i] = 1.0f / static_cast<float>(count);
  }
}

// Appends a state as p7_trace_Append records it, to a trace built from its end.
void append(Trace& reversed, TraceState s, int k, int i, float pp = 0.0f) {
  TraceStep step{s, 0, 0, pp};
  switch (s) {
    case TraceState::N:
    case TraceState::C:
    case TraceState::J:
      step.i = (!reversed.empty() && reversed.back().state == s) ? i : 0;
      break;
    case TraceState::D:
      step.k = k;
      break;
    case TraceState::M:
    case TraceState::I:
      step.k = k;
      step.i = i;
      break;
    default:
      break;
  }
  reversed.push_back(step);
}

// The walk both tracebacks share, from T back to S as p7_OATrace and p7_StochasticTrace
// walk: `choose(s0, k, i)` picks the state before s0 and moves k and i as HMMER does (M:
// both back one; D: k; I: i; E: sets k to the exit node); `posterior(s1, s0, k, i)` the
// probability recorded on the step. N, C and J emit when they follow themselves. The path
// goes into `tr`, whose memory is reused.
template <class Choose, class Posterior>
void trace_back(int L, Choose&& choose, Posterior&& posterior, Trace& tr) {
  tr.clear();
  int i = L, k = 0;
  append(tr, TraceState::T, k, i);
  append(tr, TraceState::C, k, i);
  TraceState s0 = TraceState::C;
  while (s0 != TraceState::S) {
    const TraceState s1 = choose(s0, k, i);
    append(tr, s1, k, i, posterior(s1, s0, k, i));
    if ((s1 == TraceState::N || s1 == TraceState::J || s1 == TraceState::C) && s1 == s0) --i;
    s0 = s1;
  }
  std::reverse(tr.begin(), tr.end());
}

}  // namespace

DpProfile::DpProfile(const ForwardScores& forward)
    : scores(forward), striped(stripe_forward_scores(forward, kDpLanes)) {
  const int Q = striped.Q;
  const float* dd = striped.transitions.data() + static_cast<std::size_t>(kVitPerQ) * Q * n;
  const float* t = striped.transitions.data();
  open.resize(striped.transitions.size());
  for (std::size_t j = 0; j < open.size(); ++j) open[j] = t[j] > 0.0f ? -1 : 0;
  dd_open_through.assign(static_cast<std::size_t>(Q + 1) * n, -1);
  for (int q = 0; q < Q; ++q)
    for (int lane = 0; lane < n; ++lane)
      dd_open_through[static_cast<std::size_t>(q + 1) * n + lane] =
          dd_open_through[static_cast<std::size_t>(q) * n + lane] &
          (dd[q * n + lane] > 0.0f ? -1 : 0);
  Kp = static_cast<int>(forward.match.size());
  match_by_node.assign(static_cast<std::size_t>(forward.M + 1) * Kp, 0.0f);
  for (int x = 0; x < Kp; ++x)
    for (int k = 1; k <= forward.M; ++k)
      match_by_node[static_cast<std::size_t>(k) * Kp + x] = forward.match[x][k];
}

SpecialMoves SpecialMoves::multihit(const ForwardScores& scores, int L) {
  SpecialMoves m;
  const float move = 3.0f / (static_cast<float>(L) + 3.0f);
  m.n_move = m.c_move = m.j_move = move;
  m.n_loop = m.c_loop = m.j_loop = 1.0f - move;
  m.e_move = scores.e_move;
  m.e_loop = scores.e_loop;
  return m;
}

SpecialMoves SpecialMoves::unihit(int L) {
  SpecialMoves m;
  const float move = 2.0f / (static_cast<float>(L) + 2.0f);
  m.n_move = m.c_move = m.j_move = move;
  m.n_loop = m.c_loop = m.j_loop = 1.0f - move;
  m.e_move = 1.0f;
  m.e_loop = 0.0f;
  return m;
}

void DpMatrix::reset(int M, int L, bool full) {
  if (M != M_ || node_at_.empty()) {
    const int Q = striped_segments(M, kDpLanes);
    node_at_.assign(static_cast<std::size_t>(M) + 1, 0);
    for (int k = 1; k <= M; ++k)
      node_at_[static_cast<std::size_t>(k)] =
          static_cast<std::uint32_t>(((k - 1) % Q) * kDpLanes + (k - 1) / Q);
  }
  M_ = M;
  Q_ = striped_segments(M, kDpLanes);
  L_ = L;
  full_ = full;
  const std::size_t rows = full ? static_cast<std::size_t>(L) + 1 : 2;
  const std::size_t cells = rows * 3 * width();
  cells_.make_room(cells);
  const std::size_t specials = (static_cast<std::size_t>(L) + 1) * kSpecials;
  if (specials_.size() < specials) specials_.resize(specials);
  own_scales = false;
  total_scale = 0.0f;
}

void DpMatrix::set_parser_states(const float* states) {
  static_assert(kSpecials == kParserStates && kE == 0 && kN == 1 && kJ == 2 && kB == 3 && kC == 4 &&
                kScale == kParserScale);
  std::copy(states, states + (static_cast<std::size_t>(L_) + 1) * kSpecials, specials_.begin());
  total_scale = 0.0f;
  for (int i = 1; i <= L_; ++i)
    if (x(i, kScale) != 1.0f) total_scale = canonical_forward_rescaled(total_scale, x(i, kScale));
}

namespace {

template <DeletePaths paths>
float forward_dp_in(const DpProfile& profile, const SpecialMoves& mv, const Residue* dsq, int L,
                    DpMatrix& mx) {
  const FlushDenormals flush_denormals;
  const View v(profile);
  const int Q = v.Q;
  mx.reset(profile.scores.M, L, mx.full());
  const std::size_t width = mx.width();
  {
    const auto row0 = mx.row(0);
    std::fill(row0.m, row0.m + width, 0.0f);
    std::fill(row0.d, row0.d + width, 0.0f);
    std::fill(row0.i, row0.i + width, 0.0f);
  }
  mx.x(0, DpMatrix::kE) = 0.0f;
  mx.x(0, DpMatrix::kN) = 1.0f;
  mx.x(0, DpMatrix::kJ) = 0.0f;
  mx.x(0, DpMatrix::kB) = mv.n_move;
  mx.x(0, DpMatrix::kC) = 0.0f;
  mx.x(0, DpMatrix::kScale) = 1.0f;
  const Lanes zero = splat(0.0f);
  const Lanes lane_through = shift_up(at(v.dd_prefix, Q));
  float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xB = mv.n_move;
  float total_scale = 0.0f;
  for (int i = 1; i <= L; ++i) {
    const auto prev = mx.row(i - 1);
    const auto cur = mx.row(i);
    const float* match = v.odds(dsq[i - 1]);
    float xE = 0.0f;
    if constexpr (paths == DeletePaths::passes) {
      xE = forward_row_in_passes(v, profile.scores.M, prev, cur, match, xB);
    } else {
      const Lanes begin = splat(xB);
      Lanes sum = zero;        // M and D of the row (D as computed within lanes)
      Lanes delete_in = zero;  // D within the lane at vector q
      Lanes mpv = shift_up(at(prev.m, Q - 1));
      Lanes ipv = shift_up(at(prev.i, Q - 1));
      Lanes dpv = shift_up(at(prev.d, Q - 1));
      for (int q = 0; q < Q; ++q) {
        const Lanes sv = match_cell(v, q, begin, mpv, ipv, dpv, match);
        sum = sum + (sv + delete_in);
        mpv = at(prev.m, q);
        ipv = at(prev.i, q);
        dpv = at(prev.d, q);
        put(cur.m, q, sv);
        put(cur.d, q, delete_in);
        put(cur.i, q, mpv * v.t(q, kVitMI) + ipv * v.t(q, kVitII));  // insert odds are 1
        delete_in = sv * v.t(q, kVitMD) + delete_in * v.d_to_d(q);
      }
      // D entering each lane's segment from the lane below (the inclusive scan
      // C[j] = X[j] + U[j] * C[j-1] in two steps), and what it adds to every D.
      Lanes carry = shift_up(delete_in);
      Lanes through = lane_through;
      carry = carry + through * shift_up(carry);
      through = through * shift_up(through);
      carry = carry + through * __builtin_shufflevector(carry, Lanes{}, 4, 5, 0, 1);
      for (int q = 0; q < Q; ++q) {
        const Lanes added = carry * at(v.dd_prefix, q);
        put(cur.d, q, at(cur.d, q) + added);
        sum = sum + added;
      }
      xE = canonical_sum(sum);
    }
    xN = xN * mv.n_loop;
    xC = xC * mv.c_loop + xE * mv.e_move;
    xJ = xJ * mv.j_loop + xE * mv.e_loop;
    xB = xJ * mv.j_move + xN * mv.n_move;
    float scale = 1.0f;
    if (xE > kParserRescaleAbove) {
      xN /= xE;
      xC /= xE;
      xJ /= xE;
      xB /= xE;
      scale_row(cur, width, static_cast<float>(1.0 / xE));
      scale = xE;
      total_scale = static_cast<float>(total_scale + std::log(static_cast<double>(xE)));
      xE = 1.0f;
    }
    mx.x(i, DpMatrix::kE) = xE;
    mx.x(i, DpMatrix::kN) = xN;
    mx.x(i, DpMatrix::kJ) = xJ;
    mx.x(i, DpMatrix::kB) = xB;
    mx.x(i, DpMatrix::kC) = xC;
    mx.x(i, DpMatrix::kScale) = scale;
  }
  mx.total_scale = total_scale;
  return static_cast<float>(total_scale + std::log(static_cast<double>(xC * mv.c_move)));
}

template <DeletePaths paths>
float backward_dp_in(const DpProfile& profile, const SpecialMoves& mv, const Residue* dsq, int L,
                     const DpMatrix& fwd, DpMatrix& bck) {
  const FlushDenormals flush_denormals;
  const View v(profile);
  const int Q = v.Q;
  bck.reset(profile.scores.M, L, bck.full());
  const std::size_t width = bck.width();
  const Lanes zero = splat(0.0f);
  float total_scale = 0.0f;
  // Row L: the exits (M and D to E), the D->D and M->D paths, and C's move to T.
  float xC = mv.c_move;
  float xE = xC * mv.e_move;
  float xJ = 0.0f, xB = 0.0f, xN = 0.0f;
  {
    const auto cur = bck.row(L);
    if constexpr (paths == DeletePaths::passes) {
      backward_last_row_in_passes(v, cur, splat(xE));
    } else {
      for (int q = 0; q < Q; ++q) {
        put(cur.m, q, zero);
        put(cur.d, q, zero);
        put(cur.i, q, zero);
      }
      backward_exits_and_deletes(v, cur, splat(xE));
    }
    const float scale = fwd.x(L, DpMatrix::kScale);
    if (scale > 1.0f) {
      xE /= scale;
      xN /= scale;
      xC /= scale;
      xJ /= scale;
      xB /= scale;
      scale_row(cur, width, static_cast<float>(1.0 / scale));
    }
    bck.x(L, DpMatrix::kScale) = scale;
    total_scale = static_cast<float>(std::log(static_cast<double>(scale)));
    bck.x(L, DpMatrix::kE) = xE;
    bck.x(L, DpMatrix::kN) = xN;
    bck.x(L, DpMatrix::kJ) = xJ;
    bck.x(L, DpMatrix::kB) = xB;
    bck.x(L, DpMatrix::kC) = xC;
  }
  for (int i = L - 1; i >= 1; --i) {
    const auto next = bck.row(i + 1);
    const auto cur = bck.row(i);
    const float* match = v.odds(dsq[i]);  // residue i + 1
    // 1: B(i) collected; I(i,k) complete, M and D without their paths to D and E.
    Lanes tmm = shift_down(v.t(0, kVitMM));
    Lanes tim = shift_down(v.t(0, kVitIM));
    Lanes tdm = shift_down(v.t(0, kVitDM));
    Lanes mpv = shift_down(at(next.m, 0) * at(match, 0));  // M(i+1, k+1) e(k+1)
    Lanes xBv = zero;
    // D(i,k): to M(i+1,k+1), and in the scan's order D->D within the lane.
    Lanes din = zero;
    for (int q = Q - 1; q >= 0; --q) {
      const Lanes ipv = at(next.i, q);
      put(cur.i, q, ipv * v.t(q, kVitII) + mpv * tim);
      if constexpr (paths == DeletePaths::scan) {
        din = mpv * tdm + din * v.d_to_d(q);
      } else {
        din = mpv * tdm;
      }
      put(cur.d, q, din);
      const Lanes mcv = ipv * v.t(q, kVitMI) + mpv * tmm;
      mpv = at(next.m, q) * at(match, q);
      put(cur.m, q, mcv);
      tdm = v.t(q, kVitDM);
      tim = v.t(q, kVitIM);
      tmm = v.t(q, kVitMM);
      xBv = xBv + mpv * v.t(q, kVitBM);
    }
    // 2: the special states.
    xB = horizontal_sum(xBv);
    xC = xC * mv.c_loop;
    xJ = xB * mv.j_move + xJ * mv.j_loop;
    xN = xB * mv.n_move + xN * mv.n_loop;
    xE = xC * mv.e_move + xJ * mv.e_loop;
    // 3: M and D to E, the D->D paths, and M->D.
    if constexpr (paths == DeletePaths::passes) {
      backward_exits_and_deletes_in_passes(v, cur, splat(xE));
    } else {
      backward_exits_and_deletes(v, cur, splat(xE));
    }
    if (xB > kBackwardOwnScalesAbove) bck.own_scales = true;
    const float scale =
        bck.own_scales ? (xB > kParserRescaleAbove ? xB : 1.0f) : fwd.x(i, DpMatrix::kScale);
    bck.x(i, DpMatrix::kScale) = scale;
    if (scale > 1.0f) {
      xE /= scale;
      xN /= scale;
      xJ /= scale;
      xB /= scale;
      xC /= scale;
      scale_row(cur, width, static_cast<float>(1.0 / scale));
      total_scale = static_cast<float>(total_scale + std::log(static_cast<double>(scale)));
    }
    bck.x(i, DpMatrix::kE) = xE;
    bck.x(i, DpMatrix::kN) = xN;
    bck.x(i, DpMatrix::kJ) = xJ;
    bck.x(i, DpMatrix::kB) = xB;
    bck.x(i, DpMatrix::kC) = xC;
  }
  // Row 0: only N and B.
  if (L > 0) {
    const auto next = bck.row(1);
    const float* match = v.odds(dsq[0]);
    Lanes xBv = zero;
    for (int q = 0; q < Q; ++q) xBv = xBv + (at(next.m, q) * at(match, q)) * v.t(q, kVitBM);
    xB = horizontal_sum(xBv);
    xN = xB * mv.n_move + xN * mv.n_loop;
  }
  const auto row0 = bck.row(0);
  std::fill(row0.m, row0.m + width, 0.0f);
  std::fill(row0.d, row0.d + width, 0.0f);
  std::fill(row0.i, row0.i + width, 0.0f);
  bck.x(0, DpMatrix::kB) = xB;
  bck.x(0, DpMatrix::kC) = 0.0f;
  bck.x(0, DpMatrix::kJ) = 0.0f;
  bck.x(0, DpMatrix::kN) = xN;
  bck.x(0, DpMatrix::kE) = 0.0f;
  bck.x(0, DpMatrix::kScale) = 1.0f;
  bck.total_scale = total_scale;
  return static_cast<float>(total_scale + std::log(static_cast<double>(xN)));
}

}  // namespace

float forward_dp(const DpProfile& profile, const SpecialMoves& mv, const Residue* dsq, int L,
                 DpMatrix& mx, DeletePaths paths) {
  return paths == DeletePaths::passes ? forward_dp_in<DeletePaths::passes>(profile, mv, dsq, L, mx)
                                      : forward_dp_in<DeletePaths::scan>(profile, mv, dsq, L, mx);
}

float backward_dp(const DpProfile& profile, const SpecialMoves& mv, const Residue* dsq, int L,
                  const DpMatrix& fwd, DpMatrix& bck, DeletePaths paths) {
  return paths == DeletePaths::passes
             ? backward_dp_in<DeletePaths::passes>(profile, mv, dsq, L, fwd, bck)
             : backward_dp_in<DeletePaths::scan>(profile, mv, dsq, L, fwd, bck);
}

void backward_parser_states(const DpProfile& profile, const Residue* dsq, int L,
                            const float* forward_states, float* states, bool& own_scales) {
  thread_local DpMatrix fwd, bck;
  fwd.reset(profile.scores.M, L, false);
  fwd.set_parser_states(forward_states);
  bck.reset(profile.scores.M, L, false);
  backward_dp(profile, SpecialMoves::multihit(profile.scores, L), dsq, L, fwd, bck,
              DeletePaths::scan);
  for (int i = 0; i <= L; ++i)
    for (int x = 0; x < kParserStates; ++x)
      states[static_cast<std::size_t>(i) * kParserStates + x] =
          bck.x(i, static_cast<DpMatrix::Special>(x));
  own_scales = bck.own_scales;
}

bool decode_posteriors(const SpecialMoves& mv, const DpMatrix& fwd, const DpMatrix& bck,
                       DpMatrix& pp) {
  const FlushDenormals flush_denormals;
  const int M = fwd.M(), L = fwd.L();
  if (&pp != &bck) pp.reset(M, L, true);
  const std::size_t width = fwd.width();
  float scale_product = 1.0f / bck.x(0, DpMatrix::kN);
  for (int i = 1; i <= L; ++i) {
    const auto f = fwd.row(i);
    const auto b = bck.row(i);
    const auto p = pp.row(i);
    const float row_factor = scale_product * fwd.x(i, DpMatrix::kScale);
    for (std::size_t j = 0; j < width; ++j) p.m[j] = (f.m[j] * b.m[j]) * row_factor;
    for (std::size_t j = 0; j < width; ++j) p.d[j] = 0.0f;
    for (std::size_t j = 0; j < width; ++j) p.i[j] = (f.i[j] * b.i[j]) * row_factor;
    pp.x(i, DpMatrix::kE) = 0.0f;
    pp.x(i, DpMatrix::kN) =
        fwd.x(i - 1, DpMatrix::kN) * bck.x(i, DpMatrix::kN) * mv.n_loop * scale_product;
    pp.x(i, DpMatrix::kJ) =
        fwd.x(i - 1, DpMatrix::kJ) * bck.x(i, DpMatrix::kJ) * mv.j_loop * scale_product;
    pp.x(i, DpMatrix::kC) =
        fwd.x(i - 1, DpMatrix::kC) * bck.x(i, DpMatrix::kC) * mv.c_loop * scale_product;
    pp.x(i, DpMatrix::kB) = 0.0f;
    if (bck.own_scales) scale_product *= fwd.x(i, DpMatrix::kScale) / bck.x(i, DpMatrix::kScale);
  }
  return !std::isinf(scale_product);
}

bool decode_domain_boundaries(const SpecialMoves& mv, const DpMatrix& fwd, const DpMatrix& bck,
                              std::vector<float>& btot, std::vector<float>& etot,
                              std::vector<float>& mocc) {
  const int L = fwd.L();
  btot.assign(static_cast<std::size_t>(L) + 1, 0.0f);
  etot.assign(static_cast<std::size_t>(L) + 1, 0.0f);
  mocc.assign(static_cast<std::size_t>(L) + 1, 0.0f);
  float scale_product = 1.0f / bck.x(0, DpMatrix::kN);
  for (int i = 1; i <= L; ++i) {
    btot[i] = btot[i - 1] + (fwd.x(i - 1, DpMatrix::kB) * bck.x(i - 1, DpMatrix::kB) *
                             fwd.x(i - 1, DpMatrix::kScale) * scale_product);
    if (bck.own_scales)
      scale_product *= fwd.x(i - 1, DpMatrix::kScale) / bck.x(i - 1, DpMatrix::kScale);
    etot[i] = etot[i - 1] + (fwd.x(i, DpMatrix::kE) * bck.x(i, DpMatrix::kE) *
                             fwd.x(i, DpMatrix::kScale) * scale_product);
    float njc = fwd.x(i - 1, DpMatrix::kN) * bck.x(i, DpMatrix::kN) * mv.n_loop * scale_product;
    njc += fwd.x(i - 1, DpMatrix::kJ) * bck.x(i, DpMatrix::kJ) * mv.j_loop * scale_product;
    njc += fwd.x(i - 1, DpMatrix::kC) * bck.x(i, DpMatrix::kC) * mv.c_loop * scale_product;
    mocc[i] = 1.0f - njc;
  }
  return !std::isinf(scale_product);
}

float optimal_accuracy(const DpProfile& profile, const SpecialMoves& mv, const DpMatrix& pp,
                       DpMatrix& oa) {
  const FlushDenormals flush_denormals;
  const View v(profile);
  const int Q = v.Q;
  const int L = pp.L();
  oa.reset(pp.M(), L, true);
  const std::size_t width = oa.width();
  const Lanes minus_inf = splat(-kInf);
  {
    const auto row0 = oa.row(0);
    std::fill(row0.m, row0.m + width, -kInf);
    std::fill(row0.d, row0.d + width, -kInf);
    std::fill(row0.i, row0.i + width, -kInf);
  }
  oa.x(0, DpMatrix::kE) = -kInf;
  oa.x(0, DpMatrix::kN) = 0.0f;
  oa.x(0, DpMatrix::kJ) = -kInf;
  oa.x(0, DpMatrix::kB) = 0.0f;
  oa.x(0, DpMatrix::kC) = -kInf;
  for (int i = 1; i <= L; ++i) {
    const auto prev = oa.row(i - 1);
    const auto cur = oa.row(i);
    const auto p = pp.row(i);
    Lanes dcv = minus_inf;
    Lanes xEv = minus_inf;
    const Lanes xBv = splat(oa.x(i - 1, DpMatrix::kB));
    Lanes mpv = shift_up(at(prev.m, Q - 1), -kInf);
    Lanes dpv = shift_up(at(prev.d, Q - 1), -kInf);
    Lanes ipv = shift_up(at(prev.i, Q - 1), -kInf);
    for (int q = 0; q < Q; ++q) {
      Lanes sv = gate(v.open(q, kVitBM), xBv);
      sv = max(sv, gate(v.open(q, kVitMM), mpv));
      sv = max(sv, gate(v.open(q, kVitIM), ipv));
      sv = max(sv, gate(v.open(q, kVitDM), dpv));
      sv = sv + at(p.m, q);
      xEv = max(xEv, sv);
      mpv = at(prev.m, q);
      dpv = at(prev.d, q);
      ipv = at(prev.i, q);
      put(cur.m, q, sv);
      put(cur.d, q, dcv);
      dcv = gate(v.open(q, kVitMD), sv);
      const Lanes in = max(gate(v.open(q, kVitMI), mpv), gate(v.open(q, kVitII), ipv));
      put(cur.i, q, in + at(p.i, q));
    }
    // D->D: within each lane's segment, then what enters each segment from the lane below
    // (HMMER's three more passes, as one scan over the 4 lanes; max is exact, so the
    // values are the passes' own), gated through the segment's D->D up to each node.
    // The in-lane recursion d(q) = max(dcv, D(q)), dcv = gate(open(q), d(q)) is a chain
    // through every vector; it is taken two vectors a step, with the gate distributed over
    // the max (exact: the gate keeps a value or makes it 0), so that the chain is one gate
    // and one max per two vectors.
    dcv = shift_up(dcv, -kInf);
    {
      int q = 0;
      for (; q + 1 < Q; q += 2) {
        const Mask open0 = v.d_to_d_open(q), open1 = v.d_to_d_open(q + 1);
        const Lanes d0 = at(cur.d, q);
        const Lanes into1 = max(gate(open0, d0), at(cur.d, q + 1));  // d(q + 1) but for dcv
        put(cur.d, q, max(dcv, d0));
        put(cur.d, q + 1, max(gate(open0, dcv), into1));
        dcv = max(gate(open1 & open0, dcv), gate(open1, into1));
      }
      if (q < Q) {  // an odd Q's last vector
        const Lanes d = max(dcv, at(cur.d, q));
        put(cur.d, q, d);
        dcv = gate(v.d_to_d_open(q), d);
      }
    }
    Lanes carry = shift_up(dcv, -kInf);  // lane r: from lane r - 1's last node
    Mask through = mask_up(load_mask(v.dd_open_through + Q * n));
    carry = max(carry, gate(through, shift_up(carry, -kInf)));
    through = through & mask_up(through);
    carry = max(carry, gate(through, shift_up_two(carry, -kInf)));
    Lanes xEv_odd = minus_inf;  // E's maximum over odd vectors: two chains, not one
    for (int q = 0; q < Q; ++q) {
      const Lanes d = max(gate(load_mask(v.dd_open_through + q * n), carry), at(cur.d, q));
      put(cur.d, q, d);
      if (q & 1)
        xEv_odd = max(xEv_odd, d);
      else
        xEv = max(xEv, d);
    }
    const float xE = horizontal_max(max(xEv, xEv_odd));
    oa.x(i, DpMatrix::kE) = xE;
    float t1 = mv.j_loop == 0.0f ? 0.0f : oa.x(i - 1, DpMatrix::kJ) + pp.x(i, DpMatrix::kJ);
    float t2 = mv.e_loop == 0.0f ? 0.0f : xE;
    oa.x(i, DpMatrix::kJ) = std::max(t1, t2);
    t1 = mv.c_loop == 0.0f ? 0.0f : oa.x(i - 1, DpMatrix::kC) + pp.x(i, DpMatrix::kC);
    t2 = mv.e_move == 0.0f ? 0.0f : xE;
    oa.x(i, DpMatrix::kC) = std::max(t1, t2);
    oa.x(i, DpMatrix::kN) =
        mv.n_loop == 0.0f ? 0.0f : oa.x(i - 1, DpMatrix::kN) + pp.x(i, DpMatrix::kN);
    t1 = mv.n_move == 0.0f ? 0.0f : oa.x(i, DpMatrix::kN);
    t2 = mv.j_move == 0.0f ? 0.0f : oa.x(i, DpMatrix::kJ);
    oa.x(i, DpMatrix::kB) = std::max(t1, t2);
  }
  return oa.x(L, DpMatrix::kC);
}

Trace optimal_accuracy_trace(const ForwardScores& s, const SpecialMoves& mv, const DpMatrix& pp,
                             const DpMatrix& oa) {
  const int M = oa.M();
  const int Q = hmmer_vectors(M);
  const auto choose = [&](TraceState s0, int& k, int& i) {
    TraceState s1 = TraceState::S;
    switch (s0) {
      case TraceState::M: {
        const auto prev = oa.row(i - 1);
        // Ties go to the first of M, I, D, B.
        const float path[4] = {
            reachable(s.mm[k], k > 1 ? prev.m[oa.at(k - 1)] : 0.0f),
            reachable(s.im[k], k > 1 ? prev.i[oa.at(k - 1)] : 0.0f),
            reachable(s.dm[k], k > 1 ? prev.d[oa.at(k - 1)] : 0.0f),
            reachable(s.bm[k], oa.x(i - 1, DpMatrix::kB)),
        };
        const TraceState state[4] = {TraceState::M, TraceState::I, TraceState::D, TraceState::B};
        int best = 0;
        for (int j = 1; j < 4; ++j)
          if (path[j] > path[best]) best = j;
        s1 = state[best];
        --k;
        --i;
        break;
      }
      case TraceState::D: {
        const auto cur = oa.row(i);
        const float from_m = k > 1 ? reachable(s.md[k - 1], cur.m[oa.at(k - 1)]) : -kInf;
        const float from_d = k > 1 ? reachable(s.dd[k - 1], cur.d[oa.at(k - 1)]) : -kInf;
        s1 = from_m >= from_d ? TraceState::M : TraceState::D;
        --k;
        break;
      }
      case TraceState::I: {
        const auto prev = oa.row(i - 1);
        const float from_m = reachable(s.mi[k], prev.m[oa.at(k)]);
        const float from_i = reachable(s.ii[k], prev.i[oa.at(k)]);
        s1 = from_m >= from_i ? TraceState::M : TraceState::I;
        --i;
        break;
      }
      case TraceState::N:
        s1 = i == 0 ? TraceState::S : TraceState::N;
        break;
      case TraceState::C: {
        const float stay = reachable(mv.c_loop, oa.x(i - 1, DpMatrix::kC) + pp.x(i, DpMatrix::kC));
        const float exit = reachable(mv.e_move, oa.x(i, DpMatrix::kE));
        s1 = stay > exit ? TraceState::C : TraceState::E;
        break;
      }
      case TraceState::J: {
        const float stay = reachable(mv.j_loop, oa.x(i - 1, DpMatrix::kJ) + pp.x(i, DpMatrix::kJ));
        const float exit = reachable(mv.e_loop, oa.x(i, DpMatrix::kE));
        s1 = stay > exit ? TraceState::J : TraceState::E;
        break;
      }
      case TraceState::E: {
        // The striped scan: M wins ties with >=, D needs >.
        const auto cur = oa.row(i);
        float best = -kInf;
        TraceState state = TraceState::M;
        int best_k = 1;
        for (int q = 0; q < Q; ++q) {
          for (int r = 0; r < 4; ++r) {
            const int kk = r * Q + q + 1;
            if (kk > M) continue;  // padding (0 in HMMER's matrix; it never wins there)
            const float v = cur.m[oa.at(kk)];
            if (v >= best) {
              best = v;
              state = TraceState::M;
              best_k = kk;
            }
          }
          for (int r = 0; r < 4; ++r) {
            const int kk = r * Q + q + 1;
            if (kk > M) continue;
            const float v = cur.d[oa.at(kk)];
            if (v > best) {
              best = v;
              state = TraceState::D;
              best_k = kk;
            }
          }
        }
        s1 = state;
        k = best_k;
        break;
      }
      case TraceState::B: {
        const float n = reachable(mv.n_move, oa.x(i, DpMatrix::kN));
        const float j = reachable(mv.j_move, oa.x(i, DpMatrix::kJ));
        s1 = n > j ? TraceState::N : TraceState::J;
        break;
      }
      default:
        s1 = TraceState::S;
        break;
    }
    return s1;
  };
  const auto posterior = [&](TraceState s1, TraceState s0, int k, int i) {
    if (s1 == TraceState::M) return pp.row(i).m[pp.at(k)];
    if (s1 == TraceState::I) return pp.row(i).i[pp.at(k)];
    if (s1 == s0 && s1 == TraceState::N) return pp.x(i, DpMatrix::kN);
    if (s1 == s0 && s1 == TraceState::C) return pp.x(i, DpMatrix::kC);
    if (s1 == s0 && s1 == TraceState::J) return pp.x(i, DpMatrix::kJ);
    return 0.0f;
  };
  Trace tr;
  trace_back(oa.L(), choose, posterior, tr);
  return tr;
}

void stochastic_trace(HmmerRandom& random, const ForwardScores& s, const SpecialMoves& mv,
                      const DpMatrix& fwd, Trace& trace) {
  const int M = fwd.M();
  const int Q = hmmer_vectors(M);
  const auto choose = [&](TraceState s0, int& k, int& i) {
    TraceState s1 = TraceState::S;
    switch (s0) {
      case TraceState::M: {
        const auto prev = fwd.row(i - 1);
        float path[4] = {
            fwd.x(i - 1, DpMatrix::kB) * s.bm[k],
            (k > 1 ? prev.m[fwd.at(k - 1)] : 0.0f) * s.mm[k],
            (k > 1 ? prev.i[fwd.at(k - 1)] : 0.0f) * s.im[k],
            (k > 1 ? prev.d[fwd.at(k - 1)] : 0.0f) * s.dm[k],
        };
        normalize(path);
        const TraceState state[4] = {TraceState::B, TraceState::M, TraceState::I, TraceState::D};
        s1 = state[random.choose(path, 4)];
        --k;
        --i;
        break;
      }
      case TraceState::D: {
        const auto cur = fwd.row(i);
        float path[2] = {k > 1 ? cur.m[fwd.at(k - 1)] * s.md[k - 1] : 0.0f,
                         k > 1 ? cur.d[fwd.at(k - 1)] * s.dd[k - 1] : 0.0f};
        normalize(path);
        const TraceState state[2] = {TraceState::M, TraceState::D};
        s1 = state[random.choose(path, 2)];
        --k;
        break;
      }
      case TraceState::I: {
        const auto prev = fwd.row(i - 1);
        float path[2] = {prev.m[fwd.at(k)] * s.mi[k], prev.i[fwd.at(k)] * s.ii[k]};
        normalize(path);
        const TraceState state[2] = {TraceState::M, TraceState::I};
        s1 = state[random.choose(path, 2)];
        --i;
        break;
      }
      case TraceState::N:
        s1 = i == 0 ? TraceState::S : TraceState::N;
        break;
      case TraceState::C: {
        float path[2] = {fwd.x(i - 1, DpMatrix::kC) * mv.c_loop,
                         fwd.x(i, DpMatrix::kE) * mv.e_move * fwd.x(i, DpMatrix::kScale)};
        normalize(path);
        const TraceState state[2] = {TraceState::C, TraceState::E};
        s1 = state[random.choose(path, 2)];
        break;
      }
      case TraceState::J: {
        float path[2] = {fwd.x(i - 1, DpMatrix::kJ) * mv.j_loop,
                         fwd.x(i, DpMatrix::kE) * mv.e_loop * fwd.x(i, DpMatrix::kScale)};
        normalize(path);
        const TraceState state[2] = {TraceState::J, TraceState::E};
        s1 = state[random.choose(path, 2)];
        break;
      }
      case TraceState::E: {
        // The exit node, drawn over M and D cells in the striped order, normalised by E.
        const auto cur = fwd.row(i);
        const float norm = static_cast<float>(1.0 / fwd.x(i, DpMatrix::kE));
        const double roll = random.uniform();
        double sum = 0.0;
        bool found = false;
        for (int pass = 0; pass < 2 && !found; ++pass) {  // HMMER loops until found
          for (int q = 0; q < Q && !found; ++q) {
            for (int r = 0; r < 4 && !found; ++r) {
              const int kk = r * Q + q + 1;
              if (kk > M) continue;
              sum += cur.m[fwd.at(kk)] * norm;
              if (roll < sum) {
                s1 = TraceState::M;
                k = kk;
                found = true;
              }
            }
            for (int r = 0; r < 4 && !found; ++r) {
              const int kk = r * Q + q + 1;
              if (kk > M) continue;
              sum += cur.d[fwd.at(kk)] * norm;
              if (roll < sum) {
                s1 = TraceState::D;
                k = kk;
                found = true;
              }
            }
          }
        }
        if (!found) {  // rounding left the sum below the draw twice: the last M
          s1 = TraceState::M;
          k = M;
        }
        break;
      }
      case TraceState::B: {
        float path[2] = {fwd.x(i, DpMatrix::kN) * mv.n_move, fwd.x(i, DpMatrix::kJ) * mv.j_move};
        normalize(path);
        const TraceState state[2] = {TraceState::N, TraceState::J};
        s1 = state[random.choose(path, 2)];
        break;
      }
      default:
        s1 = TraceState::S;
        break;
    }
    return s1;
  };
  const auto no_posterior = [](TraceState, TraceState, int, int) { return 0.0f; };
  trace_back(fwd.L(), choose, no_posterior, trace);
}

}  // namespace duet
