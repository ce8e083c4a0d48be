// The scalar reference of the scoring kernel (see papara_kernel.hpp): one cell at a time,
// column by column, in the lanes' wrapping arithmetic (16 bits for DNA, 32 for protein).
#include "core/papara/papara_kernel.hpp"

#include <algorithm>
#include <vector>

namespace duet::papara {

namespace {

// What differs between the alphabets: the score type, and how a profile cell reads.
struct Dna {
  using Score = std::int16_t;
  using Wide = std::uint16_t;  // the unsigned type a sum wraps in
  static std::uint32_t cell(const ProfileView& p, std::size_t at) { return p.cells[at]; }
  static bool flagged(std::uint32_t cell) { return (cell & kFlagBit) != 0; }
  static bool matches(std::uint32_t cell, std::uint8_t residue) {
    return (cell & kStateMask & residue) != 0;
  }
};

struct Protein {
  using Score = std::int32_t;
  using Wide = std::uint32_t;
  static std::uint32_t cell(const ProfileView& p, std::size_t at) { return p.protein_cells[at]; }
  static bool flagged(std::uint32_t cell) { return (cell & kProteinFlagBit) != 0; }
  static bool matches(std::uint32_t cell, std::uint8_t residue) {
    return (cell >> residue & 1) != 0;
  }
};

// a + b wrapped to the score's width, as a lane adds.
template <class A>
typename A::Score add(typename A::Score a, typename A::Score b) {
  using Wide = typename A::Wide;
  return static_cast<typename A::Score>(
      static_cast<Wide>(static_cast<Wide>(a) + static_cast<Wide>(b)));
}

template <class A>
typename A::Score score_one(std::span<const std::uint8_t> query, const ProfileView& p, int edge,
                            const Scoring& s, std::vector<typename A::Score>& h,
                            std::vector<typename A::Score>& l) {
  using Score = typename A::Score;
  const std::size_t m = query.size();
  const Score negative = kNegative;
  // Column j-1 of H and L over the rows; column -1 is H = 0, L = kNegative.
  h.assign(m, 0);
  l.assign(m, negative);
  Score best = negative;
  for (int j = 0; j < p.columns; ++j) {
    const std::uint32_t cell =
        A::cell(p, static_cast<std::size_t>(j) * static_cast<std::size_t>(p.edge_stride) +
                       static_cast<std::size_t>(edge));
    const bool flag = A::flagged(cell);
    const Score go = flag ? Score{0} : s.gap_open;
    const Score ge = flag ? Score{0} : s.gap_extend;
    const Score flag_score = flag ? s.match_cgap : Score{0};
    Score diag = 0;  // H(i-1, j-1): row -1 is 0
    Score up = 0;    // H(i-1, j)
    Score u = negative;
    for (std::size_t i = 0; i < m; ++i) {
      const Score inc = add<A>(A::matches(cell, query[i]) ? s.match : Score{0}, flag_score);
      const Score left = h[i];
      l[i] = std::max(add<A>(left, go), add<A>(l[i], ge));
      u = std::max(add<A>(up, s.gap_open), add<A>(u, s.gap_extend));
      const Score value = std::max({add<A>(diag, inc), l[i], u});
      diag = left;
      h[i] = value;
      up = value;
    }
    best = std::max(best, h[m - 1]);  // the last row
  }
  for (std::size_t i = 0; i < m; ++i) best = std::max(best, h[i]);  // the last column
  return best;
}

template <class A>
void score_edges(std::span<const std::uint8_t> query, const ProfileView& profiles, int first_edge,
                 int count, const Scoring& scoring, typename A::Score* out) {
  std::vector<typename A::Score> h, l;
  for (int k = 0; k < count; ++k)
    out[k] = score_one<A>(query, profiles, first_edge + k, scoring, h, l);
}

}  // namespace

void score_edges_scalar(std::span<const std::uint8_t> query, const ProfileView& profiles,
                        int first_edge, int count, const Scoring& scoring, std::int16_t* out) {
  score_edges<Dna>(query, profiles, first_edge, count, scoring, out);
}

void score_edges_protein_scalar(std::span<const std::uint8_t> query, const ProfileView& profiles,
                                int first_edge, int count, const Scoring& scoring,
                                std::int32_t* out) {
  score_edges<Protein>(query, profiles, first_edge, count, scoring, out);
}

}  // namespace duet::papara
