// Profile configuration and the filters' score systems, reproducing HMMER 3.3.2's
// arithmetic (modelconfig.c, p7_bg.c, p7_oprofile.c) operation by operation: where HMMER
// calls the double-precision log() on a float, so do we, because the 8- and 16-bit
// filters round these values and a one-ulp difference can change a rounded score.
#include "core/hmmsearch/profile.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/hmmsearch/denormals.hpp"

namespace duet {

namespace {

constexpr double kLn2 = 0.69314718055994529;  // Easel's eslCONST_LOG2
constexpr float kInf = std::numeric_limits<float>::infinity();

// log() of C on a float argument: promote, take the double log, round back to float.
float c_log(double x) {
  return static_cast<float>(std::log(x));
}

// HMMER's unbiased_byteify(): a score in nats to an unsigned 8-bit cost.
std::uint8_t unbiased_byteify(float scale, float score) {
  const float cost = -1.0f * std::round(scale * score);
  if (cost > 255.0f) return 255;
  return static_cast<std::uint8_t>(static_cast<int>(cost) & 0xff);  // wraps as HMMER's cast does
}

// HMMER's biased_byteify(): cost plus the emission bias, saturated at 255.
std::uint8_t biased_byteify(float scale, std::uint8_t bias, float score) {
  const float cost = -1.0f * std::round(scale * score);
  if (cost > static_cast<float>(255 - bias)) return 255;
  return static_cast<std::uint8_t>((static_cast<int>(cost) + bias) & 0xff);
}

// HMMER's wordify(): a score in nats to a saturated 16-bit score.
std::int16_t wordify(float scale, float score) {
  const float s = std::round(scale * score);
  if (s >= 32767.0f) return 32767;
  if (s <= -32768.0f) return -32768;
  return static_cast<std::int16_t>(s);
}

}  // namespace

Background Background::for_alphabet(const Alphabet& alphabet) {
  Background bg;
  bg.alphabet = &alphabet;
  if (alphabet.type() == AlphabetType::amino) {
    // The amino acid background HMMER uses (p7_AminoFrequencies).
    bg.frequencies = {0.0787945f, 0.0151600f, 0.0535222f, 0.0668298f, 0.0397062f,
                      0.0695071f, 0.0229198f, 0.0590092f, 0.0594422f, 0.0963728f,
                      0.0237718f, 0.0414386f, 0.0482904f, 0.0395639f, 0.0540978f,
                      0.0683364f, 0.0540687f, 0.0673417f, 0.0114135f, 0.0304133f};
  } else {
    bg.frequencies.assign(alphabet.K(), 1.0f / static_cast<float>(alphabet.K()));
  }
  return bg;
}

Profile configure_profile(const HmmModel& hmm, const Background& bg) {
  const Alphabet& abc = *hmm.alphabet;
  const int M = hmm.M;
  const int K = abc.K();
  const int Kp = abc.Kp();
  Profile gm;
  gm.M = M;
  gm.alphabet = &abc;
  std::array<float, kProfileTransitions> impossible;
  impossible.fill(-kInf);
  gm.tsc.assign(M + 1, impossible);

  // Local entry: occ[k] / sum_i occ[i] (M - i + 1).
  std::vector<float> occ(M + 1, 0.0f);
  occ[1] = hmm.t[0][kMI] + hmm.t[0][kMM];
  for (int k = 2; k <= M; ++k) {
    occ[k] = static_cast<float>(occ[k - 1] * (hmm.t[k - 1][kMM] + hmm.t[k - 1][kMI]) +
                                (1.0 - occ[k - 1]) * hmm.t[k - 1][kDM]);
  }
  float Z = 0.0f;
  for (int k = 1; k <= M; ++k) Z += occ[k] * static_cast<float>(M - k + 1);
  for (int k = 1; k <= M; ++k) gm.tsc[k - 1][kPBM] = c_log(occ[k] / Z);

  // Multihit E state.
  gm.e_move = static_cast<float>(-kLn2);
  gm.e_loop = static_cast<float>(-kLn2);
  gm.nj = 1.0f;

  for (int k = 1; k < M; ++k) {
    auto& tp = gm.tsc[k];
    tp[kPMM] = c_log(hmm.t[k][kMM]);
    tp[kPMI] = c_log(hmm.t[k][kMI]);
    tp[kPMD] = c_log(hmm.t[k][kMD]);
    tp[kPIM] = c_log(hmm.t[k][kIM]);
    tp[kPII] = c_log(hmm.t[k][kII]);
    tp[kPDM] = c_log(hmm.t[k][kDM]);
    tp[kPDD] = c_log(hmm.t[k][kDD]);
  }

  // Match emissions: log-odds of canonical residues; degenerate codes take the
  // background-weighted mean of their members' scores (Easel's FExpectScVec).
  gm.match_score.assign(Kp, std::vector<float>(M + 1, -kInf));
  std::vector<float> sc(Kp);
  for (int k = 1; k <= M; ++k) {
    for (int x = 0; x < Kp; ++x) sc[x] = -kInf;
    for (int x = 0; x < K; ++x) {
      sc[x] =
          static_cast<float>(std::log(static_cast<double>(hmm.match[k][x]) / bg.frequencies[x]));
    }
    for (int x = K + 1; x <= Kp - 3; ++x) {
      float result = 0.0f, denom = 0.0f;
      for (int y = 0; y < K; ++y) {
        if (abc.includes(x, y)) {
          result += sc[y] * bg.frequencies[y];
          denom += bg.frequencies[y];
        }
      }
      sc[x] = result / denom;
    }
    for (int x = 0; x < Kp; ++x) gm.match_score[x][k] = sc[x];
  }
  // Insert emissions score 0 (HMMER's choice); the largest emission score counts them.
  float max_score = 0.0f;
  for (int x = 0; x < K; ++x)
    for (int k = 1; k <= M; ++k) max_score = std::max(max_score, gm.match_score[x][k]);
  gm.max_emission_score = max_score;
  return gm;
}

std::uint8_t MsvScores::tjb(int L) const {
  return unbiased_byteify(scale, msv_move_nats(L));
}

std::int16_t ViterbiScores::ncj_move(int L) const {
  return wordify(scale, viterbi_move_nats(L));
}

ForwardScores::Length ForwardScores::ncj(int L) const {
  return forward_length(L);
}

namespace {

// Fills the per-node transition arrays of a filter's score system: into M_k from node
// k-1 (bm, mm, im, dm) and out of node k (md, mi, ii, dd; impossible at k = M), each
// value converted by `convert(node, transition)`.
template <typename T, typename Convert>
void fill_node_transitions(int M, T impossible, Convert convert, std::vector<T>& bm,
                           std::vector<T>& mm, std::vector<T>& im, std::vector<T>& dm,
                           std::vector<T>& md, std::vector<T>& mi, std::vector<T>& ii,
                           std::vector<T>& dd) {
  for (auto* v : {&bm, &mm, &im, &dm, &md, &mi, &ii, &dd}) v->assign(M + 1, impossible);
  for (int k = 1; k <= M; ++k) {
    bm[k] = convert(k - 1, kPBM);
    mm[k] = convert(k - 1, kPMM);
    im[k] = convert(k - 1, kPIM);
    dm[k] = convert(k - 1, kPDM);
    if (k < M) {
      md[k] = convert(k, kPMD);
      mi[k] = convert(k, kPMI);
      ii[k] = convert(k, kPII);
      dd[k] = convert(k, kPDD);
    }
  }
}

MsvScores msv_scores(const Profile& gm) {
  const int M = gm.M;
  const int Kp = gm.alphabet->Kp();
  MsvScores om;
  om.M = M;
  om.scale = static_cast<float>(3.0 / kLn2);
  om.base = 190;
  om.bias = unbiased_byteify(om.scale, -1.0f * gm.max_emission_score);
  om.cost.assign(Kp, std::vector<std::uint8_t>(M + 1, 255));
  for (int x = 0; x < Kp; ++x)
    for (int k = 1; k <= M; ++k)
      om.cost[x][k] = biased_byteify(om.scale, om.bias, gm.match_score[x][k]);
  om.tbm = unbiased_byteify(om.scale,
                            std::log(2.0f / (static_cast<float>(M) * static_cast<float>(M + 1))));
  om.tec = unbiased_byteify(om.scale, std::log(0.5f));
  return om;
}

ViterbiScores viterbi_scores(const Profile& gm) {
  const int M = gm.M;
  const int Kp = gm.alphabet->Kp();
  ViterbiScores om;
  om.M = M;
  om.scale = static_cast<float>(500.0 / kLn2);
  om.base = 12000;
  om.match.assign(Kp, std::vector<std::int16_t>(M + 1, -32768));
  for (int x = 0; x < Kp; ++x)
    for (int k = 1; k <= M; ++k) om.match[x][k] = wordify(om.scale, gm.match_score[x][k]);
  const auto w = [&](int k, int t) { return wordify(om.scale, gm.tsc[k][t]); };
  // HMMER caps every transition but D->D at 0, and I->I at -1 (never a free loop).
  const auto capped = [&](int k, int t) -> std::int16_t {
    const std::int16_t cap = t == kPII ? -1 : 0;
    return t == kPDD ? w(k, t) : std::min<std::int16_t>(w(k, t), cap);
  };
  fill_node_transitions<std::int16_t>(M, -32768, capped, om.bm, om.mm, om.im, om.dm, om.md, om.mi,
                                      om.ii, om.dd);
  om.e_loop = wordify(om.scale, gm.e_loop);
  om.e_move = wordify(om.scale, gm.e_move);
  // Bound for skipping D->D paths: max_k tDD(k) + tDM(k+1) - tBM(k+1), k = 2..M-2.
  int bound = -32768;
  for (int k = 2; k < M - 1; ++k) {
    const int d = int{w(k, kPDD)} + int{w(k + 1, kPDM)} - int{w(k + 1, kPBM)};
    bound = std::max(bound, d);
  }
  om.dd_bound = static_cast<std::int16_t>(bound);
  return om;
}

namespace {

// e^x as HMMER turns its profile's log scores into the Forward's probabilities (Easel's
// SSE exponential, esl_sse_expf): 2^k e^f with k = floor(x / log 2 + 1/2), f = x - k log 2
// in two float steps, e^f from a degree-6 polynomial in float operations, 2^k built as a
// float's exponent field; 0 at or below -88.376, infinity above 88.376. Not the C library's
// expf, which differs from it in the last bit for some x: with it, duet's Forward differed
// from HMMER's (the local entry of MADE1's node 41, 0.000313624187 against 0.000313624216).
// In HMMER's denormal mode (the caller's FlushDenormals), as HMMER runs it.
float hmmer_expf(float x) {
  constexpr float kMaxLog = 88.3762626647949f;
  constexpr float kMinLog = -88.3762626647949f;
  if (std::isnan(x)) return x;
  if (x > kMaxLog) return std::numeric_limits<float>::infinity();
  if (x <= kMinLog) return 0.0f;
  float fx = x * static_cast<float>(1.44269504088896341) + 0.5f;
  float floor_fx = static_cast<float>(static_cast<int>(fx));  // truncated, then one less
  if (floor_fx > fx) floor_fx = floor_fx - 1.0f;              // where that rounded up
  fx = floor_fx;
  const int k = static_cast<int>(fx);
  const float high = fx * 0.693359375f;
  const float low = fx * -2.12194440e-4f;
  float f = x - high;
  f = f - low;
  const float f2 = f * f;
  float y = 1.9875691500E-4f;
  for (const float c :
       {1.3981999507E-3f, 8.3334519073E-3f, 4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f}) {
    y = y * f;
    y = y + c;
  }
  y = y * f2;
  y = y + f;
  y = y + 1.0f;
  const std::uint32_t exponent = static_cast<std::uint32_t>(k + 127) << 23;
  float two_k = 0.0f;
  std::memcpy(&two_k, &exponent, sizeof two_k);
  return y * two_k;
}

}  // namespace

ForwardScores forward_scores(const Profile& gm) {
  const FlushDenormals flush_denormals;
  const int M = gm.M;
  const int Kp = gm.alphabet->Kp();
  ForwardScores om;
  om.M = M;
  om.match.assign(Kp, std::vector<float>(M + 1, 0.0f));
  for (int x = 0; x < Kp; ++x)
    for (int k = 1; k <= M; ++k) om.match[x][k] = hmmer_expf(gm.match_score[x][k]);
  const auto p = [&](int k, int t) { return hmmer_expf(gm.tsc[k][t]); };
  fill_node_transitions<float>(M, 0.0f, p, om.bm, om.mm, om.im, om.dm, om.md, om.mi, om.ii, om.dd);
  om.e_loop = std::exp(gm.e_loop);
  om.e_move = std::exp(gm.e_move);
  return om;
}

// The two-state HMM of the bias filter (p7_bg_SetFilter + esl_hmm_Configure).
BiasFilterModel bias_filter_model(const HmmModel& hmm, const Background& bg) {
  const Alphabet& abc = *hmm.alphabet;
  const int K = abc.K();
  const int Kp = abc.Kp();
  BiasFilterModel f;
  const float L1 = static_cast<float>(static_cast<float>(hmm.M) / 8.0);
  f.t10 = 1.0f / (L1 + 1.0f);
  f.t11 = L1 / (L1 + 1.0f);
  f.pi0 = 0.999f;
  f.pi1 = 0.001f;
  std::vector<float> compo = hmm.composition;
  if (compo.empty()) compo.assign(K, 0.0f);  // HMMER leaves an absent COMPO unset
  const std::vector<float>* e[2] = {&bg.frequencies, &compo};
  f.odds.assign(Kp, {1.0f, 1.0f});
  for (int x = 0; x < K; ++x)
    for (int s = 0; s < 2; ++s) f.odds[x][s] = (*e[s])[x] / bg.frequencies[x];
  for (int x = K + 1; x <= Kp - 3; ++x) {
    for (int s = 0; s < 2; ++s) {
      float sum = 0.0f, denom = 0.0f;
      for (int y = 0; y < K; ++y) {
        if (abc.includes(x, y)) {
          sum += (*e[s])[y];
          denom += bg.frequencies[y];
        }
      }
      f.odds[x][s] = denom > 0.0f ? sum / denom : 0.0f;
    }
  }
  return f;
}

std::string consensus_line(const HmmModel& hmm) {
  // The file's CONS column where it has one (letters at every node; '-' where CONS is no).
  const bool from_file =
      static_cast<int>(hmm.consensus.size()) > hmm.M &&
      std::all_of(hmm.consensus.begin() + 1, hmm.consensus.begin() + hmm.M + 1,
                  [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
  if (from_file) return hmm.consensus.substr(0, static_cast<std::size_t>(hmm.M) + 1);
  const Alphabet& abc = *hmm.alphabet;
  const float threshold = abc.type() == AlphabetType::amino ? 0.5f : 0.9f;
  std::string line(static_cast<std::size_t>(hmm.M) + 1, ' ');
  for (int k = 1; k <= hmm.M; ++k) {
    const std::vector<float>& p = hmm.match[k];
    int best = 0;
    for (int x = 1; x < abc.K(); ++x)
      if (p[x] > p[best]) best = x;
    const char c = abc.symbol(static_cast<Residue>(best));
    line[k] = p[best] >= threshold ? static_cast<char>(std::toupper(c))
                                   : static_cast<char>(std::tolower(c));
  }
  return line;
}

}  // namespace

SearchProfile build_search_profile(const HmmModel& hmm, const Background& bg) {
  const Profile gm = configure_profile(hmm, bg);
  SearchProfile sp;
  sp.name = hmm.name;
  sp.accession = hmm.accession;
  sp.description = hmm.description;
  sp.M = hmm.M;
  sp.alphabet = hmm.alphabet;
  sp.consensus = consensus_line(hmm);
  sp.reference = hmm.reference;
  sp.structure = hmm.structure;
  sp.msv_mu = hmm.msv_mu;
  sp.msv_lambda = hmm.msv_lambda;
  sp.viterbi_mu = hmm.viterbi_mu;
  sp.viterbi_lambda = hmm.viterbi_lambda;
  sp.forward_tau = hmm.forward_tau;
  sp.forward_lambda = hmm.forward_lambda;
  sp.msv = msv_scores(gm);
  sp.viterbi = viterbi_scores(gm);
  sp.forward = forward_scores(gm);
  sp.bias = bias_filter_model(hmm, bg);
  return sp;
}

}  // namespace duet
