// The search profile: an HMM configured as hmmsearch 3.3.2 configures it (local
// multihit, null model, bias-filter composition model), and the three integer/float
// score systems of HMMER's filters, built once per model in one place:
//   - MSV:      8-bit costs, 1/3-bit units, biased (HMMER's mf_conversion)
//   - Viterbi:  16-bit scores, 1/500-bit units, base 12000 (vf_conversion)
//   - Forward:  probability-space floats (fb_conversion)
// Layouts here are plain arrays indexed by node k = 1..M; SIMD and GPU kernels derive
// their striped layouts from these (src/host_simd, src/device).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/alphabet.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/length_terms.hpp"

namespace duet {

// HMMER's null model: background residue frequencies (BLOSUM62 for amino, uniform DNA).
struct Background {
  const Alphabet* alphabet = nullptr;
  std::vector<float> frequencies;  // K values
  static Background for_alphabet(const Alphabet& alphabet);
};

// Float log-odds profile (HMMER's P7_PROFILE, local multihit). Transition indices
// follow HMMER's profile order.
enum ProfileTransition { kPMM = 0, kPIM, kPDM, kPBM, kPMD, kPMI, kPII, kPDD, kProfileTransitions };

struct Profile {
  int M = 0;
  const Alphabet* alphabet = nullptr;
  // tsc[k][t], k = 0..M; BM is stored off by one: tsc[k-1][kPBM] is the entry into M_k.
  std::vector<std::array<float, kProfileTransitions>> tsc;
  // match_score[x][k], x = 0..Kp-1, k = 0..M (k = 0 is -inf).
  std::vector<std::vector<float>> match_score;
  float e_move = 0, e_loop = 0;  // E->C, E->J
  float nj = 1.0f;               // expected J uses (multihit)
  float max_emission_score = 0;  // max over real residues of match/insert scores (>= 0)
};

Profile configure_profile(const HmmModel& hmm, const Background& bg);

// --- MSV filter scores (8-bit, unsigned costs) ---
struct MsvScores {
  int M = 0;
  float scale = 0;          // units per nat (3 / ln 2)
  std::uint8_t base = 190;  // offset: 0 is -infinity, base is score 0
  std::uint8_t bias = 0;    // emission bias so that costs are unsigned
  std::uint8_t tbm = 0;     // constant B->Mk cost
  std::uint8_t tec = 0;     // constant E->C = E->J cost
  // cost[x][k], k = 1..M at index k (index 0 unused, 255); biased costs.
  std::vector<std::vector<std::uint8_t>> cost;
  std::uint8_t tjb(int L) const;  // N->B = J->B cost for target length L
};

// --- Viterbi filter scores (16-bit signed) ---
struct ViterbiScores {
  int M = 0;
  float scale = 0;  // units per nat (500 / ln 2)
  std::int16_t base = 12000;
  // match[x][k], k = 1..M at index k.
  std::vector<std::vector<std::int16_t>> match;
  // Into M_k, indexed by k = 1..M: from B, and from M/I/D of node k-1.
  std::vector<std::int16_t> bm, mm, im, dm;
  // Out of node k, indexed by k = 1..M (-32768 at k = M): M_k->D_k+1, M_k->I_k, I_k->I_k,
  // D_k->D_k+1.
  std::vector<std::int16_t> md, mi, ii, dd;
  std::int16_t e_loop = 0, e_move = 0;  // E->J, E->C
  std::int16_t dd_bound = -32768;       // bound of the lazy-F test (HMMER's ddbound_w)
  std::int16_t ncj_move(int L) const;   // N->B, C->T, J->B for target length L
};

// --- Forward scores (probability space) ---
struct ForwardScores {
  int M = 0;
  std::vector<std::vector<float>> match;  // odds ratios match[x][k], k = 1..M
  std::vector<float> bm, mm, im, dm;      // into M_k, k = 1..M
  std::vector<float> md, mi, ii, dd;      // out of node k, k = 1..M (0 at k = M)
  float e_loop = 0, e_move = 0;
  // The N, C, J loop and move probabilities for target length L (forward_length): a DP
  // run with them gives its score to Length::score, which finishes the Forward score.
  using Length = ForwardLength;
  Length ncj(int L) const;
};

// --- The bias filter's two-state composition HMM (HMMER's bg->fhmm) ---
struct BiasFilterModel {
  // emission odds odds[x][state], x = 0..Kp-1 (gap, '*' and '~' are 1.0)
  std::vector<std::array<float, 2>> odds;
  float t10 = 0, t11 = 0;  // state 1 (biased) transitions; state 0's depend on L
  float pi0 = 0.999f, pi1 = 0.001f;
};

struct SearchProfile {
  std::string name, accession, description;
  int M = 0;
  // The model's consensus residue per node, 1..M at [1..M] (HMMER's: the file's CONS
  // column, else the most probable residue, upper case where its probability is at least
  // 0.5 for amino acids, 0.9 for DNA).
  std::string consensus;
  std::string reference, structure;  // the model's RF and CS lines (HmmModel), or empty
  const Alphabet* alphabet = nullptr;
  float msv_mu = 0, msv_lambda = 0, viterbi_mu = 0, viterbi_lambda = 0;
  float forward_tau = 0, forward_lambda = 0;
  MsvScores msv;
  ViterbiScores viterbi;
  ForwardScores forward;
  BiasFilterModel bias;
};

SearchProfile build_search_profile(const HmmModel& hmm, const Background& bg);

}  // namespace duet
