// The terms of a search that depend on the target's length L, written once for every
// kernel (scalar references, CPU SIMD, GPU): the null model's length distribution, the
// bias filter's, and the N/C/J move and loop probabilities of the filters and Forward.
// The score systems (profile.hpp: MsvScores::tjb, ViterbiScores::ncj_move,
// ForwardScores::ncj) and null_score take them from here and nowhere else.
//
// Targets of any length 0 <= L <= 2^31 - 1. Below kDoubleLengthTerms every term is
// HMMER 3.3.2's float arithmetic, bit for bit; from it on, where that arithmetic loses
// the terms, they are computed in double (length_terms.cpp says why and how).
#pragma once

namespace duet {

// The first length whose terms are computed in double: 2^24, from where L + 1 is no
// longer a float.
inline constexpr int kDoubleLengthTerms = 1 << 24;

// The null model's P(N->N) = L / (L + 1) (p7_bg_SetLength's p1): the bias filter's
// background self-transition, a float in its float DP. From about 2^25 it rounds to 1 (the
// nearest float), so the background no longer switches to the biased state after the
// first residue; the length terms themselves are those of null_score.
float null_p1(int L);

// The null model's score of a target of L residues, L ln p1 + ln(1 - p1), in nats
// (p7_bg_NullOne).
float null_score(int L);

// The bias filter's score: the Forward score of its composition HMM (nats) plus the null
// model's length terms, as p7_bg_FilterScore adds them.
float bias_filter_with_length(float composition_nats, int L);

// ln(3 / (L + 3)): the N->B and J->B move of the MSV filter (multihit), in nats.
float msv_move_nats(int L);

// ln of the N, C and J move probability 3 / (L + 3) as the Viterbi filter takes it, in nats.
float viterbi_move_nats(int L);

// The N, C and J loop and move probabilities the Forward DP multiplies by. From
// kDoubleLengthTerms on, the loops are taken out of the DP (loop = 1) and their whole
// log-probability, L ln(1 - move), is loops_nats, which score() adds to the DP's score.
struct ForwardLength {
  float loop = 0, move = 0;
  float loops_nats = 0;  // 0 below kDoubleLengthTerms
  // The Forward score (nats) from the score of a DP run with these loop and move
  // probabilities. Below kDoubleLengthTerms, the DP's score itself.
  float score(float dp_nats) const { return loops_nats == 0.0f ? dp_nats : dp_nats + loops_nats; }
};
ForwardLength forward_length(int L);

}  // namespace duet
