// Each query's best edge (SPEC.md §3.3: the highest score, ties to the lowest edge) and the
// runner-up's score, merged from any number of partial results in any order: the merge is
// commutative and associative, so the answer does not depend on how work was split.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/papara/papara_kernel.hpp"

namespace duet::papara {

struct Choice {
  std::int32_t edge = -1;              // -1: no edge scored yet
  std::int16_t score = kNegative;      // the best edge's score
  std::int16_t runner_up = kNegative;  // the best score of every other edge
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

// A Choice in one 64-bit word, merged lock-free by any thread.
class AtomicChoice {
 public:
  void merge_in(const Choice& c) {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t next = pack(merge(unpack(old), c));
      if (next == old || word_.compare_exchange_weak(old, next, std::memory_order_relaxed)) return;
    }
  }
  Choice get() const { return unpack(word_.load(std::memory_order_relaxed)); }

 private:
  static std::uint64_t pack(const Choice& c) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.edge)) << 32) |
           (static_cast<std::uint64_t>(static_cast<std::uint16_t>(c.score)) << 16) |
           static_cast<std::uint16_t>(c.runner_up);
  }
  static Choice unpack(std::uint64_t w) {
    return {static_cast<std::int32_t>(static_cast<std::uint32_t>(w >> 32)),
            static_cast<std::int16_t>(static_cast<std::uint16_t>(w >> 16)),
            static_cast<std::int16_t>(static_cast<std::uint16_t>(w))};
  }
  std::atomic<std::uint64_t> word_{pack(Choice{})};
};

// The choice among `count` scores of edges first_edge, first_edge + 1, ...
inline Choice choose(const std::int16_t* scores, int first_edge, int count) {
  Choice c;
  for (int k = 0; k < count; ++k) c = merge(c, Choice{first_edge + k, scores[k], kNegative});
  return c;
}

}  // namespace duet::papara
