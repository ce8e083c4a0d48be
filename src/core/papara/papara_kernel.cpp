// The scalar reference of the scoring kernel (see papara_kernel.hpp): one cell at a time,
// column by column, in 16-bit wrapping arithmetic.
#include "core/papara/papara_kernel.hpp"

#include <algorithm>
#include <vector>

namespace duet::papara {

namespace {

// a + b wrapped to 16 bits, as an int16 lane adds.
inline std::int16_t add16(std::int16_t a, std::int16_t b) {
  return static_cast<std::int16_t>(static_cast<std::uint16_t>(a) + static_cast<std::uint16_t>(b));
}

std::int16_t score_one(std::span<const std::uint8_t> query, const ProfileView& p, int edge,
                       const Scoring& s, std::vector<std::int16_t>& h,
                       std::vector<std::int16_t>& l) {
  const std::size_t m = query.size();
  // Column j-1 of H and L over the rows; column -1 is H = 0, L = kNegative.
  h.assign(m, 0);
  l.assign(m, kNegative);
  std::int16_t best = kNegative;
  for (int j = 0; j < p.columns; ++j) {
    const std::uint8_t cell =
        p.cells[static_cast<std::size_t>(j) * static_cast<std::size_t>(p.edge_stride) +
                static_cast<std::size_t>(edge)];
    const std::uint8_t state = cell & kStateMask;
    const bool flag = (cell & kFlagBit) != 0;
    const std::int16_t go = flag ? std::int16_t{0} : s.gap_open;
    const std::int16_t ge = flag ? std::int16_t{0} : s.gap_extend;
    const std::int16_t flag_score = flag ? s.match_cgap : std::int16_t{0};
    std::int16_t diag = 0;  // H(i-1, j-1): row -1 is 0
    std::int16_t up = 0;    // H(i-1, j)
    std::int16_t u = kNegative;
    for (std::size_t i = 0; i < m; ++i) {
      const std::int16_t inc =
          add16((state & query[i]) != 0 ? s.match : std::int16_t{0}, flag_score);
      const std::int16_t left = h[i];
      l[i] = std::max(add16(left, go), add16(l[i], ge));
      u = std::max(add16(up, s.gap_open), add16(u, s.gap_extend));
      const std::int16_t value = std::max({add16(diag, inc), l[i], u});
      diag = left;
      h[i] = value;
      up = value;
    }
    best = std::max(best, h[m - 1]);  // the last row
  }
  for (std::size_t i = 0; i < m; ++i) best = std::max(best, h[i]);  // the last column
  return best;
}

}  // namespace

void score_edges_scalar(std::span<const std::uint8_t> query, const ProfileView& profiles,
                        int first_edge, int count, const Scoring& scoring, std::int16_t* out) {
  std::vector<std::int16_t> h, l;
  for (int k = 0; k < count; ++k)
    out[k] = score_one(query, profiles, first_edge + k, scoring, h, l);
}

}  // namespace duet::papara
