// The length terms (see length_terms.hpp).
//
// Below 2^24 residues: HMMER 3.3.2's arithmetic, operation by operation (p7_bg.c,
// modelconfig.c, p7_oprofile.c), so that every length HMMER accepts (up to 100,000) gives
// HMMER's bits, and so do the longer ones up to 2^24 - 1.
//
// Why 2^24. HMMER computes these terms in float from float(L) and float(L + 1), ...
// (L + 3). Every integer up to 2^24 is a float, and for L <= 2^24 - 1 the null model's
// p1 = L / (L + 1) = 1 - 1 / (L + 1) stays at or below 1 - 2^-24, the float just below 1:
// ln(1 - p1) is finite. At L = 2^24, L + 1 rounds to L, p1 to exactly 1, and the null score
// to ln(0): a score of +infinity and an E-value of 0 for any target; past it float(L + 1)
// is one of its neighbours and p1 jumps between 1 and the floats below. The Forward DP
// fails at the same scale: it multiplies C (and N, J) by loop = 1 - 3 / (L + 3) once per
// residue, and from 2^24 on 3 / (L + 3) is at most 3 float spacings below 1, so each
// product's rounding takes a large share of the decay (the loops' L ln(loop), about -3
// nats, comes out wrong by a tenth of a nat at 2^24 and by more than a nat at 5 x 10^7),
// and from about 10^8 loop rounds to 1 itself.
//
// From 2^24: the terms in double, rounded once to float where a kernel needs a float.
// The Forward DP gets loop = 1, which every float multiplies exactly, and the loops'
// log-probability L ln(1 - move) is added to its score (ForwardLength::score). That
// charges the loop to the residues the model itself emits too; for a path through m
// such residues the score is low by m * 3 / (L + 3) nats (under 2e-4 nats for a domain of
// 1,000 residues at 2^24). The filters' move costs are rounded to their integer units as
// before, and the null score is its closed form L ln(L / (L + 1)) - ln(L + 1).
#include "core/hmmsearch/length_terms.hpp"

#include <cmath>
#include <vector>

namespace duet {

namespace {

bool double_terms(int L) {
  return L >= kDoubleLengthTerms;
}

// 3 / (L + 3) for long targets, in double.
double move_probability_double(int L) {
  return 3.0 / (static_cast<double>(L) + 3.0);
}

// HMMER's float p(move) of the N, C, J states (multihit: nj = 1).
float move_probability_float(int L) {
  const float nj = 1.0f;
  return (2.0f + nj) / (static_cast<float>(L) + 2.0f + nj);
}

}  // namespace

float null_p1(int L) {
  if (double_terms(L))
    return static_cast<float>(static_cast<double>(L) / (static_cast<double>(L) + 1.0));
  return static_cast<float>(L) / static_cast<float>(L + 1);
}

namespace {

float compute_null_score(int L) {
  if (double_terms(L)) {
    const auto l = static_cast<double>(L);
    return static_cast<float>(-l * std::log1p(1.0 / l) - std::log(l + 1.0));
  }
  const float p1 = null_p1(L);
  return static_cast<float>(static_cast<float>(L) * std::log(static_cast<double>(p1)) +
                            std::log(1.0 - p1));
}

float compute_msv_move_nats(int L) {
  if (double_terms(L)) return static_cast<float>(std::log(move_probability_double(L)));
  return std::log(3.0f / static_cast<float>(L + 3));
}

// The two terms every (model, target) pair's MSV decision asks for, for the lengths most
// targets have, computed once per process by the functions above (so the same floats):
// a many-model search asks for them once per model and target.
constexpr int kTabledLengths = 1 << 16;
struct LengthTable {
  std::vector<float> null_score, msv_move;
  LengthTable() : null_score(kTabledLengths), msv_move(kTabledLengths) {
    for (int L = 0; L < kTabledLengths; ++L) {
      null_score[static_cast<std::size_t>(L)] = compute_null_score(L);
      msv_move[static_cast<std::size_t>(L)] = compute_msv_move_nats(L);
    }
  }
};
const LengthTable& length_table() {
  static const LengthTable table;
  return table;
}

}  // namespace

float null_score(int L) {
  if (L >= 0 && L < kTabledLengths) return length_table().null_score[static_cast<std::size_t>(L)];
  return compute_null_score(L);
}

float msv_move_nats(int L) {
  if (L >= 0 && L < kTabledLengths) return length_table().msv_move[static_cast<std::size_t>(L)];
  return compute_msv_move_nats(L);
}

float bias_filter_with_length(float composition_nats, int L) {
  if (double_terms(L)) return composition_nats + null_score(L);
  const float p1 = null_p1(L);
  const float score = composition_nats + static_cast<float>(L) * std::log(p1);
  return score + std::log(static_cast<float>(1.0 - p1));
}

float viterbi_move_nats(int L) {
  if (double_terms(L)) return static_cast<float>(std::log(move_probability_double(L)));
  return std::log(move_probability_float(L));
}

ForwardLength forward_length(int L) {
  ForwardLength f;
  if (double_terms(L)) {
    const double move = move_probability_double(L);
    f.loop = 1.0f;
    f.move = static_cast<float>(move);
    f.loops_nats = static_cast<float>(static_cast<double>(L) * std::log1p(-move));
    return f;
  }
  f.move = move_probability_float(L);
  f.loop = 1.0f - f.move;
  return f;
}

}  // namespace duet
