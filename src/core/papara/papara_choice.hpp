// Each query's best edge (SPEC.md §3.3: the highest score, ties to the lowest edge) and the
// runner-up's score, merged from any number of partial results in any order: the merge is
// commutative and associative, so the answer does not depend on how work was split.
#pragma once

#include <cstdint>

#include "core/papara/papara_kernel.hpp"

namespace duet::papara {

// Scores are int32: DNA's int16 scores widened, protein's as they are.
struct Choice {
  std::int32_t edge = -1;              // -1: no edge scored yet
  std::int32_t score = kNegative;      // the best edge's score
  std::int32_t runner_up = kNegative;  // the best score of every other edge
};

// `a` and `b` merged.
inline Choice merge(const Choice& a, const Choice& b) {
  if (b.edge < 0) return a;
  if (a.edge < 0) return b;
  const bool a_wins = a.score > b.score || (a.score == b.score && a.edge < b.edge);
  const Choice& win = a_wins ? a : b;
  const Choice& lose = a_wins ? b : a;
  Choice c = win;
  if (lose.score > c.runner_up) c.runner_up = lose.score;
  return c;
}

// The choice among `count` scores (int16 or int32) of edges first_edge, first_edge + 1, ...
template <class Score>
Choice choose(const Score* scores, int first_edge, int count) {
  Choice c;
  for (int k = 0; k < count; ++k) c = merge(c, Choice{first_edge + k, scores[k], kNegative});
  return c;
}

}  // namespace duet::papara
