// Scalar reference kernels; see reference_kernels.hpp for the contract.
#include "core/hmmsearch/reference_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/hmmsearch/msv_gate.hpp"

namespace duet {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Unsigned 8-bit saturating arithmetic, as SSE's adds_epu8 / subs_epu8.
inline int add_u8(int a, int b) {
  return std::min(a + b, 255);
}
inline int sub_u8(int a, int b) {
  return std::max(a - b, 0);
}
// Signed 16-bit saturating addition, as SSE's adds_epi16.
inline int add_i16(int a, int b) {
  return std::clamp(a + b, -32768, 32767);
}

}  // namespace

FilterScore msv_filter_reference(const MsvScores& msv, const Residue* dsq, int L) {
  const int M = msv.M;
  // Offset unsigned arithmetic: 0 is -infinity, `base` is a score of zero.
  const int tjb = msv.tjb(L);
  const int tjbm = tjb + msv.tbm;  // N or J -> B -> Mk, wrapped to 8 bits as HMMER's set1_epi8 does
  const int bjbm = tjbm & 0xff;
  std::vector<int> previous(M + 1, 0), current(M + 1, 0);
  int xJ = 0;
  int xB = sub_u8(msv.base, bjbm);
  for (int i = 0; i < L; ++i) {
    const std::vector<std::uint8_t>& cost = msv.cost[dsq[i]];
    int xE = 0;
    current[0] = 0;
    for (int k = 1; k <= M; ++k) {
      // M(i,k) = max(M(i-1,k-1), B(i-1)) + bias - cost(k, x_i), saturating at 0 and 255.
      int sv = std::max(previous[k - 1], xB);
      sv = add_u8(sv, msv.bias);
      sv = sub_u8(sv, cost[k]);
      current[k] = sv;
      xE = std::max(xE, sv);
    }
    // A cell that reaches 255 - bias could have saturated: the target passes.
    if (add_u8(xE, msv.bias) == 255) return {kInf, true};
    xE = sub_u8(xE, msv.tec);
    xJ = std::max(xJ, xE);
    xB = sub_u8(std::max(int{msv.base}, xJ), bjbm);
    std::swap(previous, current);
  }
  // C -> T, with the -3 nats that stand in for the NN, CC, JJ loops.
  return {msv_nats_of_xj(xJ, tjb, msv.base, msv.scale), false};
}

bool ssv_decision(const MsvScores& msv, int tjb, int xE, FilterScore& result) {
  if (xE >= 255 - msv.bias) {
    result = {kInf, true};
    return msv.base - tjb - msv.tbm >= 128;  // otherwise MSV itself might not overflow
  }
  xE += msv.base - tjb - msv.tbm;
  xE -= 128;
  if (xE >= 255 - msv.bias) {
    result = {kInf, true};
    return true;
  }
  const int xJ = xE - msv.tec;
  if (xJ > msv.base) return false;  // the J state could have been used
  result = {msv_nats_of_xj(xJ, tjb, msv.base, msv.scale), false};
  return true;
}

bool ssv_filter_reference(const MsvScores& msv, const Residue* dsq, int L, FilterScore& result) {
  // HMMER's SSV filter (ssvfilter.c) runs every diagonal in signed 8-bit saturating
  // arithmetic, started at -128 (the begin score moved there), subtracting
  // min(cost - bias, 127) per cell, and keeps the best cell as an *unsigned* byte: a
  // diagonal that climbs past signed -1 looks small, which is why a best value within
  // `bias` of 255 is treated as a possible overflow.
  const int M = msv.M;
  const int tjb = msv.tjb(L);
  if (tjb + msv.tbm + msv.tec + msv.bias >= 127) return false;
  const auto as_unsigned = [](int s) { return s < 0 ? s + 256 : s; };
  int xE = as_unsigned(-128);
  std::vector<int> previous(M + 1, -128), current(M + 1, -128);
  for (int i = 0; i < L; ++i) {
    const std::vector<std::uint8_t>& cost = msv.cost[dsq[i]];
    for (int k = 1; k <= M; ++k) {
      const int step = std::min(int{cost[k]} - msv.bias, 127);
      const int s = std::clamp(previous[k - 1] - step, -128, 127);
      current[k] = s;
      xE = std::max(xE, as_unsigned(s));
    }
    std::swap(previous, current);
  }
  return ssv_decision(msv, tjb, xE, result);
}

bool msv_ssv_floor(const MsvScores& msv, int L, float& floor_nats) {
  // SSV's best cell when no diagonal rises: the begin score, 128 as an unsigned byte.
  const int tjb = msv.tjb(L);
  const int xJ = msv_floor_xj(tjb, msv.base, msv.tbm, msv.tec, msv.bias);
  if (xJ == kNoMsvFloor) return false;
  floor_nats = msv_nats_of_xj(xJ, tjb, msv.base, msv.scale);
  return true;
}

FilterScore viterbi_filter_reference(const ViterbiScores& vit, const Residue* dsq, int L) {
  const int M = vit.M;
  const int neg = -32768;
  const int ncj_move = vit.ncj_move(L);
  // Rows of M, I, D for nodes 0..M+1; node 0 and M+1 stay -infinity.
  std::vector<int> mp(M + 2, neg), ip(M + 2, neg), dp(M + 2, neg);
  std::vector<int> mc(M + 2, neg), ic(M + 2, neg), dc(M + 2, neg);
  // Special states; N, C, J loops are zero (the -3 nats approximation, as HMMER).
  std::int16_t xN = vit.base;
  std::int16_t xB = static_cast<std::int16_t>(xN + ncj_move);
  std::int16_t xJ = neg, xC = neg, xE = neg;
  for (int i = 0; i < L; ++i) {
    const std::vector<std::int16_t>& match = vit.match[dsq[i]];
    int best_match = neg;
    int best_delete_entry = neg;  // max over k of M(i,k) + tMD(k): HMMER's Dmax
    for (int k = 1; k <= M; ++k) {
      int sv = add_i16(xB, vit.bm[k]);
      sv = std::max(sv, add_i16(mp[k - 1], vit.mm[k]));
      sv = std::max(sv, add_i16(ip[k - 1], vit.im[k]));
      sv = std::max(sv, add_i16(dp[k - 1], vit.dm[k]));
      sv = add_i16(sv, match[k]);
      mc[k] = sv;
      best_match = std::max(best_match, sv);
      // M->D only for now; D->D paths are added below when they can matter.
      const int md = add_i16(sv, vit.md[k]);
      dc[k + 1 <= M ? k + 1 : M + 1] = md;
      best_delete_entry = std::max(best_delete_entry, md);
      ic[k] = std::max(add_i16(mp[k], vit.mi[k]), add_i16(ip[k], vit.ii[k]));
    }
    dc[1] = neg;
    xE = static_cast<std::int16_t>(best_match);
    if (xE >= 32767) return {kInf, true};
    xC = static_cast<std::int16_t>(std::max(int{xC}, xE + vit.e_move));
    xJ = static_cast<std::int16_t>(std::max(int{xJ}, xE + vit.e_loop));
    xB = static_cast<std::int16_t>(std::max(xJ + ncj_move, xN + ncj_move));
    // Lazy F: D->D chains only matter if some D(i,k) plus the best D->D->M detour can
    // beat B->M on the next row (HMMER's test, kept because it decides the result).
    if (best_delete_entry + vit.dd_bound > xB) {
      for (int k = 2; k <= M; ++k) dc[k] = std::max(dc[k], add_i16(dc[k - 1], vit.dd[k - 1]));
    }
    std::swap(mp, mc);
    std::swap(ip, ic);
    std::swap(dp, dc);
  }
  if (xC <= neg) return {-kInf, false};
  float score =
      static_cast<float>(xC) + static_cast<float>(ncj_move) - static_cast<float>(vit.base);
  score /= vit.scale;
  score -= 3.0f;
  return {score, false};
}

float forward_parser_reference(const ForwardScores& fwd, const Residue* dsq, int L) {
  const int M = fwd.M;
  const auto ncj = fwd.ncj(L);
  std::vector<float> mp(M + 1, 0.0f), ip(M + 1, 0.0f), dp(M + 1, 0.0f);
  std::vector<float> mc(M + 1, 0.0f), ic(M + 1, 0.0f), dc(M + 1, 0.0f);
  float xN = 1.0f, xJ = 0.0f, xC = 0.0f;
  float xB = ncj.move;
  float total_scale = 0.0f;  // sum of log(rescaling factors), nats
  for (int i = 0; i < L; ++i) {
    const std::vector<float>& match = fwd.match[dsq[i]];
    float xE = 0.0f;
    dc[0] = 0.0f;
    for (int k = 1; k <= M; ++k) {
      float sv = xB * fwd.bm[k];
      sv = sv + mp[k - 1] * fwd.mm[k];
      sv = sv + ip[k - 1] * fwd.im[k];
      sv = sv + dp[k - 1] * fwd.dm[k];
      mc[k] = sv * match[k];
      ic[k] = mp[k] * fwd.mi[k] + ip[k] * fwd.ii[k];  // insert emissions have odds 1
      dc[k] = k > 1 ? mc[k - 1] * fwd.md[k - 1] + dc[k - 1] * fwd.dd[k - 1] : 0.0f;
    }
    for (int k = 1; k <= M; ++k) xE += mc[k] + dc[k];  // local: M and D both reach E
    xN = xN * ncj.loop;
    xC = xC * ncj.loop + xE * fwd.e_move;
    xJ = xJ * ncj.loop + xE * fwd.e_loop;
    xB = xJ * ncj.move + xN * ncj.move;
    // Sparse rescaling keeps values in float range.
    if (xE > 1.0e4f) {
      xN /= xE;
      xC /= xE;
      xJ /= xE;
      xB /= xE;
      const float r = static_cast<float>(1.0 / xE);
      for (int k = 1; k <= M; ++k) {
        mc[k] *= r;
        dc[k] *= r;
        ic[k] *= r;
      }
      total_scale = static_cast<float>(total_scale + std::log(static_cast<double>(xE)));
    }
    std::swap(mp, mc);
    std::swap(ip, ic);
    std::swap(dp, dc);
  }
  return ncj.score(static_cast<float>(total_scale + std::log(static_cast<double>(xC * ncj.move))));
}

namespace {

// The bias filter (p7_bg_FilterScore) of K targets of lengths >= 1, interleaved row by row
// (each target's operations in the same order as with K = 1), their composition scores
// into out. State 0 is the background, state 1 the model's composition; both end with
// p = 1.
template <int K>
void bias_filter_interleaved(const BiasFilterModel& bias, const Residue* const* dsq, const int* L,
                             float* out) {
  float p1[K], t00[K], t01[K], s0[K], s1[K], log_score[K];
  int longest = 0;
  for (int k = 0; k < K; ++k) {
    p1[k] = null_p1(L[k]);
    t00[k] = p1[k];
    t01[k] = 1.0f - p1[k];
    log_score[k] = 0.0f;
    s0[k] = bias.odds[dsq[k][0]][0] * bias.pi0;
    s1[k] = bias.odds[dsq[k][0]][1] * bias.pi1;
    const float top = std::max(std::max(s0[k], s1[k]), 0.0f);
    s0[k] /= top;
    s1[k] /= top;
    log_score[k] += static_cast<float>(std::log(static_cast<double>(top)));
    longest = std::max(longest, L[k]);
  }
  for (int i = 1; i < longest; ++i) {
    for (int k = 0; k < K; ++k) {
      if (i >= L[k]) continue;
      float n0 = 0.0f;
      n0 += s0[k] * t00[k];
      n0 += s1[k] * bias.t10;
      float n1 = 0.0f;
      n1 += s0[k] * t01[k];
      n1 += s1[k] * bias.t11;
      n0 *= bias.odds[dsq[k][i]][0];
      n1 *= bias.odds[dsq[k][i]][1];
      const float top = std::max(std::max(n0, n1), 0.0f);
      s0[k] = n0 / top;
      s1[k] = n1 / top;
      log_score[k] += static_cast<float>(std::log(static_cast<double>(top)));
    }
  }
  for (int k = 0; k < K; ++k) {
    float end = 0.0f;
    end += s0[k] * 1.0f;
    end += s1[k] * 1.0f;
    log_score[k] += static_cast<float>(std::log(static_cast<double>(end)));
    out[k] = log_score[k];
  }
}

}  // namespace

float bias_composition_score(const BiasFilterModel& bias, const Residue* dsq, int L) {
  float score = 0;
  bias_filter_interleaved<1>(bias, &dsq, &L, &score);
  return score;
}

float bias_filter_score(const BiasFilterModel& bias, const Residue* dsq, int L) {
  if (L == 0) return static_cast<float>(std::log(0.0));
  return bias_filter_with_length(bias_composition_score(bias, dsq, L), L);
}

void bias_filter_scores(const BiasFilterModel& bias, const Residue* const* dsq, const int* L,
                        std::size_t n, float* out) {
  // Four at a time (two to eight gave the same speed on a Xeon), the empty ones and the
  // rest one by one.
  constexpr int kInterleaved = 4;
  const Residue* group_dsq[kInterleaved];
  int group_L[kInterleaved];
  std::size_t group_at[kInterleaved];
  float group_out[kInterleaved];
  int filled = 0;
  for (std::size_t j = 0; j < n; ++j) {
    if (L[j] == 0) {
      out[j] = bias_filter_score(bias, dsq[j], 0);
      continue;
    }
    group_dsq[filled] = dsq[j];
    group_L[filled] = L[j];
    group_at[filled] = j;
    if (++filled < kInterleaved) continue;
    bias_filter_interleaved<kInterleaved>(bias, group_dsq, group_L, group_out);
    for (int k = 0; k < kInterleaved; ++k)
      out[group_at[k]] = bias_filter_with_length(group_out[k], group_L[k]);
    filled = 0;
  }
  for (int k = 0; k < filled; ++k)
    out[group_at[k]] = bias_filter_score(bias, group_dsq[k], group_L[k]);
}

}  // namespace duet
