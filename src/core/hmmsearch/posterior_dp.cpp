// Domain definition's dynamic programming (posterior_dp.hpp).
#include "core/hmmsearch/posterior_dp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace duet {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kRescaleAbove = 1.0e4f;     // a row is rescaled when its E (B) passes this
constexpr float kOwnScalesAbove = 1.0e16f;  // Backward takes scales of its own past this

// Cells of a row: node k's M, D and I.
inline float& m_of(float* row, int k) {
  return row[3 * k];
}
inline float& d_of(float* row, int k) {
  return row[3 * k + 1];
}
inline float& i_of(float* row, int k) {
  return row[3 * k + 2];
}
inline float m_of(const float* row, int k) {
  return row[3 * k];
}
inline float d_of(const float* row, int k) {
  return row[3 * k + 1];
}
inline float i_of(const float* row, int k) {
  return row[3 * k + 2];
}

// The number of 4-lane vectors of HMMER's striped layout of M nodes.
inline int striped_vectors(int M) {
  return std::max(2, (M - 1) / 4 + 1);
}

void scale_row(float* row, int M, float factor) {
  for (int k = 0; k <= M; ++k) {
    m_of(row, k) *= factor;
    d_of(row, k) *= factor;
    i_of(row, k) *= factor;
  }
}

// The optimal-accuracy recursion's gate: a value reached through a transition of
// probability t, or 0 where t is 0 (HMMER's masked vector, not -infinity).
inline float gate(float t, float value) {
  return t > 0.0f ? value : 0.0f;
}
// The traceback's: -infinity where t is 0.
inline float reachable(float t, float value) {
  return t == 0.0f ? -kInf : value;
}

// esl_vec_FNorm: the float sum with Kahan's compensation, then each value divided by it.
template <int n>
void normalize(float (&p)[n]) {
  float sum = 0.0f, c = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float y = p[i] - c;
    const float t = sum + y;
    c = (t - sum) - y;
    sum = t;
  }
  if (sum != 0.0f) {
    for (int i = 0; i < n; ++i) p[i] /= sum;
  } else {
    for (int i = 0; i < n; ++i) p[i] = 1.0f / static_cast<float>(n);
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

}  // namespace

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
  M_ = M;
  L_ = L;
  full_ = full;
  const std::size_t rows = full ? static_cast<std::size_t>(L) + 1 : 2;
  cells_.assign(rows * 3 * static_cast<std::size_t>(M + 1), 0.0f);
  specials_.assign((static_cast<std::size_t>(L) + 1) * kSpecials, 0.0f);
  own_scales = false;
  total_scale = 0.0f;
}

float forward_dp(const ForwardScores& s, const SpecialMoves& mv, const Residue* dsq, int L,
                 DpMatrix& mx) {
  const int M = s.M;
  mx.reset(M, L, mx.full());
  mx.x(0, DpMatrix::kE) = 0.0f;
  mx.x(0, DpMatrix::kN) = 1.0f;
  mx.x(0, DpMatrix::kJ) = 0.0f;
  mx.x(0, DpMatrix::kB) = mv.n_move;
  mx.x(0, DpMatrix::kC) = 0.0f;
  mx.x(0, DpMatrix::kScale) = 1.0f;
  float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xB = mv.n_move;
  float total_scale = 0.0f;
  for (int i = 1; i <= L; ++i) {
    const float* prev = mx.row(i - 1);
    float* cur = mx.row(i);
    const std::vector<float>& e = s.match[dsq[i - 1]];
    m_of(cur, 0) = d_of(cur, 0) = i_of(cur, 0) = 0.0f;
    for (int k = 1; k <= M; ++k) {
      float sv = xB * s.bm[k];
      sv = sv + m_of(prev, k - 1) * s.mm[k];
      sv = sv + i_of(prev, k - 1) * s.im[k];
      sv = sv + d_of(prev, k - 1) * s.dm[k];
      m_of(cur, k) = sv * e[k];
      i_of(cur, k) = m_of(prev, k) * s.mi[k] + i_of(prev, k) * s.ii[k];
      d_of(cur, k) = k > 1 ? m_of(cur, k - 1) * s.md[k - 1] + d_of(cur, k - 1) * s.dd[k - 1] : 0.0f;
    }
    float xE = 0.0f;
    for (int k = 1; k <= M; ++k) xE += m_of(cur, k) + d_of(cur, k);
    xN = xN * mv.n_loop;
    xC = xC * mv.c_loop + xE * mv.e_move;
    xJ = xJ * mv.j_loop + xE * mv.e_loop;
    xB = xJ * mv.j_move + xN * mv.n_move;
    float scale = 1.0f;
    if (xE > kRescaleAbove) {
      xN /= xE;
      xC /= xE;
      xJ /= xE;
      xB /= xE;
      scale_row(cur, M, static_cast<float>(1.0 / xE));
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

float backward_dp(const ForwardScores& s, const SpecialMoves& mv, const Residue* dsq, int L,
                  const DpMatrix& fwd, DpMatrix& bck) {
  const int M = s.M;
  bck.reset(M, L, bck.full());
  float total_scale = 0.0f;
  // Row L: only the exits (M and D to E, D chains) and C's move to T.
  float xC = mv.c_move;
  float xE = xC * mv.e_move;
  float xJ = 0.0f, xB = 0.0f, xN = 0.0f;
  {
    float* cur = bck.row(L);
    d_of(cur, M) = xE;
    m_of(cur, M) = xE;
    i_of(cur, M) = 0.0f;
    for (int k = M - 1; k >= 1; --k) {
      d_of(cur, k) = xE + d_of(cur, k + 1) * s.dd[k];
      m_of(cur, k) = xE + d_of(cur, k + 1) * s.md[k];
      i_of(cur, k) = 0.0f;
    }
    m_of(cur, 0) = d_of(cur, 0) = i_of(cur, 0) = 0.0f;
    const float scale = fwd.x(L, DpMatrix::kScale);
    if (scale > 1.0f) {
      xE /= scale;
      xN /= scale;
      xC /= scale;
      xJ /= scale;
      xB /= scale;
      scale_row(cur, M, static_cast<float>(1.0 / scale));
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
    const float* next = bck.row(i + 1);
    float* cur = bck.row(i);
    const std::vector<float>& e = s.match[dsq[i]];  // residue i + 1
    xB = 0.0f;
    for (int k = 1; k <= M; ++k) xB += (m_of(next, k) * e[k]) * s.bm[k];
    xC = xC * mv.c_loop;
    xJ = xB * mv.j_move + xJ * mv.j_loop;
    xN = xB * mv.n_move + xN * mv.n_loop;
    xE = xC * mv.e_move + xJ * mv.e_loop;
    for (int k = M; k >= 1; --k) {
      const float m_next = k < M ? m_of(next, k + 1) * e[k + 1] : 0.0f;
      const float d_next = k < M ? d_of(cur, k + 1) : 0.0f;
      i_of(cur, k) = k < M ? i_of(next, k) * s.ii[k] + m_next * s.im[k + 1] : 0.0f;
      d_of(cur, k) = (k < M ? m_next * s.dm[k + 1] : 0.0f) + xE + d_next * s.dd[k];
      m_of(cur, k) =
          i_of(next, k) * s.mi[k] + (k < M ? m_next * s.mm[k + 1] : 0.0f) + xE + d_next * s.md[k];
    }
    m_of(cur, 0) = d_of(cur, 0) = i_of(cur, 0) = 0.0f;
    if (xB > kOwnScalesAbove) bck.own_scales = true;
    const float scale =
        bck.own_scales ? (xB > kRescaleAbove ? xB : 1.0f) : fwd.x(i, DpMatrix::kScale);
    bck.x(i, DpMatrix::kScale) = scale;
    if (scale > 1.0f) {
      xE /= scale;
      xN /= scale;
      xJ /= scale;
      xB /= scale;
      xC /= scale;
      scale_row(cur, M, static_cast<float>(1.0 / scale));
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
    const float* next = bck.row(1);
    const std::vector<float>& e = s.match[dsq[0]];
    xB = 0.0f;
    for (int k = 1; k <= M; ++k) xB += (m_of(next, k) * e[k]) * s.bm[k];
    xN = xB * mv.n_move + xN * mv.n_loop;
  }
  float* row0 = bck.row(0);
  for (int k = 0; k <= M; ++k) m_of(row0, k) = d_of(row0, k) = i_of(row0, k) = 0.0f;
  bck.x(0, DpMatrix::kB) = xB;
  bck.x(0, DpMatrix::kC) = 0.0f;
  bck.x(0, DpMatrix::kJ) = 0.0f;
  bck.x(0, DpMatrix::kN) = xN;
  bck.x(0, DpMatrix::kE) = 0.0f;
  bck.x(0, DpMatrix::kScale) = 1.0f;
  bck.total_scale = total_scale;
  return static_cast<float>(total_scale + std::log(static_cast<double>(xN)));
}

bool decode_posteriors(const SpecialMoves& mv, const DpMatrix& fwd, const DpMatrix& bck,
                       DpMatrix& pp) {
  const int M = fwd.M(), L = fwd.L();
  if (&pp != &bck) pp.reset(M, L, true);
  float scale_product = 1.0f / bck.x(0, DpMatrix::kN);
  for (int i = 1; i <= L; ++i) {
    const float* f = fwd.row(i);
    const float* b = bck.row(i);
    float* p = pp.row(i);
    const float row_factor = scale_product * fwd.x(i, DpMatrix::kScale);
    for (int k = 1; k <= M; ++k) {
      m_of(p, k) = (m_of(f, k) * m_of(b, k)) * row_factor;
      d_of(p, k) = 0.0f;
      i_of(p, k) = (i_of(f, k) * i_of(b, k)) * row_factor;
    }
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

float optimal_accuracy(const ForwardScores& s, const SpecialMoves& mv, const DpMatrix& pp,
                       DpMatrix& oa) {
  const int M = pp.M(), L = pp.L();
  oa.reset(M, L, true);
  float* row0 = oa.row(0);
  for (int k = 0; k <= M; ++k) m_of(row0, k) = d_of(row0, k) = i_of(row0, k) = -kInf;
  oa.x(0, DpMatrix::kE) = -kInf;
  oa.x(0, DpMatrix::kN) = 0.0f;
  oa.x(0, DpMatrix::kJ) = -kInf;
  oa.x(0, DpMatrix::kB) = 0.0f;
  oa.x(0, DpMatrix::kC) = -kInf;
  for (int i = 1; i <= L; ++i) {
    const float* prev = oa.row(i - 1);
    float* cur = oa.row(i);
    const float* p = pp.row(i);
    const float xB = oa.x(i - 1, DpMatrix::kB);
    m_of(cur, 0) = d_of(cur, 0) = i_of(cur, 0) = -kInf;
    float xE = -kInf;
    for (int k = 1; k <= M; ++k) {
      // Node k - 1 = 0 is shifted in as -infinity.
      const float mp = k > 1 ? m_of(prev, k - 1) : -kInf;
      const float ip = k > 1 ? i_of(prev, k - 1) : -kInf;
      const float dp = k > 1 ? d_of(prev, k - 1) : -kInf;
      float sv = gate(s.bm[k], xB);
      sv = std::max(sv, gate(s.mm[k], mp));
      sv = std::max(sv, gate(s.im[k], ip));
      sv = std::max(sv, gate(s.dm[k], dp));
      m_of(cur, k) = sv + m_of(p, k);
      xE = std::max(xE, m_of(cur, k));
      i_of(cur, k) =
          std::max(gate(s.mi[k], m_of(prev, k)), gate(s.ii[k], i_of(prev, k))) + i_of(p, k);
      d_of(cur, k) =
          k > 1 ? std::max(gate(s.md[k - 1], m_of(cur, k - 1)), gate(s.dd[k - 1], d_of(cur, k - 1)))
                : -kInf;
    }
    // The padding of the last vector holds 0 in M (gated entries plus a zero posterior).
    if (M < 4 * striped_vectors(M)) xE = std::max(xE, 0.0f);
    for (int k = 1; k <= M; ++k) xE = std::max(xE, d_of(cur, k));
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
  const int Q = striped_vectors(M);
  Trace tr;
  int i = oa.L(), k = 0;
  append(tr, TraceState::T, k, i);
  append(tr, TraceState::C, k, i);
  TraceState s0 = TraceState::C;
  while (s0 != TraceState::S) {
    TraceState s1 = TraceState::S;
    switch (s0) {
      case TraceState::M: {
        const float* prev = oa.row(i - 1);
        // Ties go to the first of M, I, D, B.
        const float path[4] = {
            reachable(s.mm[k], k > 1 ? m_of(prev, k - 1) : 0.0f),
            reachable(s.im[k], k > 1 ? i_of(prev, k - 1) : 0.0f),
            reachable(s.dm[k], k > 1 ? d_of(prev, k - 1) : 0.0f),
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
        const float* cur = oa.row(i);
        const float from_m = k > 1 ? reachable(s.md[k - 1], m_of(cur, k - 1)) : -kInf;
        const float from_d = k > 1 ? reachable(s.dd[k - 1], d_of(cur, k - 1)) : -kInf;
        s1 = from_m >= from_d ? TraceState::M : TraceState::D;
        --k;
        break;
      }
      case TraceState::I: {
        const float* prev = oa.row(i - 1);
        const float from_m = reachable(s.mi[k], m_of(prev, k));
        const float from_i = reachable(s.ii[k], i_of(prev, k));
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
        const float* cur = oa.row(i);
        float best = -kInf;
        TraceState state = TraceState::M;
        int best_k = 1;
        for (int q = 0; q < Q; ++q) {
          for (int r = 0; r < 4; ++r) {
            const int kk = r * Q + q + 1;
            const float v = kk <= M ? m_of(cur, kk) : 0.0f;
            if (v >= best) {
              best = v;
              state = TraceState::M;
              best_k = kk;
            }
          }
          for (int r = 0; r < 4; ++r) {
            const int kk = r * Q + q + 1;
            const float v = kk <= M ? d_of(cur, kk) : 0.0f;
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
    float post = 0.0f;
    if (s1 == TraceState::M) post = m_of(pp.row(i), k);
    if (s1 == TraceState::I) post = i_of(pp.row(i), k);
    if (s1 == s0 && s1 == TraceState::N) post = pp.x(i, DpMatrix::kN);
    if (s1 == s0 && s1 == TraceState::C) post = pp.x(i, DpMatrix::kC);
    if (s1 == s0 && s1 == TraceState::J) post = pp.x(i, DpMatrix::kJ);
    append(tr, s1, k, i, post);
    if ((s1 == TraceState::N || s1 == TraceState::J || s1 == TraceState::C) && s1 == s0) --i;
    s0 = s1;
  }
  std::reverse(tr.begin(), tr.end());
  return tr;
}

Trace stochastic_trace(HmmerRandom& random, const ForwardScores& s, const SpecialMoves& mv,
                       const Residue* dsq, const DpMatrix& fwd) {
  (void)dsq;
  const int M = fwd.M();
  const int Q = striped_vectors(M);
  Trace tr;
  int i = fwd.L(), k = 0;
  append(tr, TraceState::T, k, i);
  append(tr, TraceState::C, k, i);
  TraceState s0 = TraceState::C;
  while (s0 != TraceState::S) {
    TraceState s1 = TraceState::S;
    switch (s0) {
      case TraceState::M: {
        const float* prev = fwd.row(i - 1);
        float path[4] = {
            fwd.x(i - 1, DpMatrix::kB) * s.bm[k],
            (k > 1 ? m_of(prev, k - 1) : 0.0f) * s.mm[k],
            (k > 1 ? i_of(prev, k - 1) : 0.0f) * s.im[k],
            (k > 1 ? d_of(prev, k - 1) : 0.0f) * s.dm[k],
        };
        normalize(path);
        const TraceState state[4] = {TraceState::B, TraceState::M, TraceState::I, TraceState::D};
        s1 = state[random.choose(path, 4)];
        --k;
        --i;
        break;
      }
      case TraceState::D: {
        const float* cur = fwd.row(i);
        float path[2] = {k > 1 ? m_of(cur, k - 1) * s.md[k - 1] : 0.0f,
                         k > 1 ? d_of(cur, k - 1) * s.dd[k - 1] : 0.0f};
        normalize(path);
        const TraceState state[2] = {TraceState::M, TraceState::D};
        s1 = state[random.choose(path, 2)];
        --k;
        break;
      }
      case TraceState::I: {
        const float* prev = fwd.row(i - 1);
        float path[2] = {m_of(prev, k) * s.mi[k], i_of(prev, k) * s.ii[k]};
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
        const float* cur = fwd.row(i);
        const float norm = static_cast<float>(1.0 / fwd.x(i, DpMatrix::kE));
        const double roll = random.uniform();
        double sum = 0.0;
        bool found = false;
        for (int pass = 0; pass < 2 && !found; ++pass) {  // HMMER loops until found
          for (int q = 0; q < Q && !found; ++q) {
            for (int r = 0; r < 4 && !found; ++r) {
              const int kk = r * Q + q + 1;
              if (kk > M) continue;
              sum += m_of(cur, kk) * norm;
              if (roll < sum) {
                s1 = TraceState::M;
                k = kk;
                found = true;
              }
            }
            for (int r = 0; r < 4 && !found; ++r) {
              const int kk = r * Q + q + 1;
              if (kk > M) continue;
              sum += d_of(cur, kk) * norm;
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
    append(tr, s1, k, i);
    if ((s1 == TraceState::N || s1 == TraceState::J || s1 == TraceState::C) && s1 == s0) --i;
    s0 = s1;
  }
  std::reverse(tr.begin(), tr.end());
  return tr;
}

}  // namespace duet
