// The Forward striped layout and its inverse; see striping.hpp.
#include "core/hmmsearch/striping.hpp"

#include <algorithm>

namespace duet {

int striped_segments(int M, int lanes) {
  return std::max(1, (M + lanes - 1) / lanes);
}

StripedForwardProfile stripe_forward_scores(const ForwardScores& fwd, int lanes) {
  StripedForwardProfile s;
  s.M = fwd.M;
  s.Kp = static_cast<int>(fwd.match.size());
  s.lanes = lanes;
  s.Q = striped_segments(fwd.M, lanes);
  s.e_loop = fwd.e_loop;
  s.e_move = fwd.e_move;
  const std::size_t row = striped_row_elements(s.Q, lanes);
  s.match.assign(row * static_cast<std::size_t>(s.Kp), 0.0f);  // padding: probability 0
  for (int x = 0; x < s.Kp; ++x) {
    stripe_row(fwd.match[x], s.M, s.Q, static_cast<std::size_t>(lanes),
               s.match.data() + row * static_cast<std::size_t>(x));
  }
  s.transitions.assign(row * (kVitPerQ + 1), 0.0f);
  stripe_transitions(fwd, s.Q, lanes, s.transitions.data());
  // Products of D->D along each lane, in node order.
  const float* dd = s.transitions.data() + static_cast<std::size_t>(kVitPerQ) * row;
  s.dd_prefix.assign(striped_row_elements(s.Q + 1, lanes), 1.0f);
  for (int q = 0; q < s.Q; ++q) {
    for (int lane = 0; lane < lanes; ++lane) {
      const std::size_t at = striped_row_elements(q, lanes) + static_cast<std::size_t>(lane);
      s.dd_prefix[at + static_cast<std::size_t>(lanes)] = s.dd_prefix[at] * dd[at];
    }
  }
  // And from each node to the lane's end, in reverse node order.
  s.dd_suffix.assign(row, 1.0f);
  s.dd_ones.assign(row, 1.0f);
  for (int lane = 0; lane < lanes; ++lane) {
    float product = 1.0f, ones = 0.0f;
    for (int q = s.Q - 1; q >= 0; --q) {
      const std::size_t at = striped_row_elements(q, lanes) + static_cast<std::size_t>(lane);
      product = dd[at] * product;
      ones = 1.0f + dd[at] * ones;
      s.dd_suffix[at] = product;
      s.dd_ones[at] = ones;
    }
  }
  return s;
}

ForwardScores unstripe_forward_scores(const StripedForwardProfile& s) {
  ForwardScores fwd;
  fwd.M = s.M;
  fwd.e_loop = s.e_loop;
  fwd.e_move = s.e_move;
  const std::size_t row = striped_row_elements(s.Q, s.lanes);
  fwd.match.assign(s.Kp, std::vector<float>(s.M + 1, 0.0f));
  for (int x = 0; x < s.Kp; ++x) {
    unstripe_row(s.match.data() + row * static_cast<std::size_t>(x), s.M, s.Q,
                 static_cast<std::size_t>(s.lanes), fwd.match[x]);
  }
  fwd.bm.assign(s.M + 1, 0.0f);
  fwd.mm = fwd.im = fwd.dm = fwd.md = fwd.mi = fwd.ii = fwd.dd = fwd.bm;
  unstripe_transitions(s.transitions.data(), s.M, s.Q, s.lanes, fwd);
  return fwd;
}

ForwardStripedView StripedForwardProfile::view() const {
  ForwardStripedView v;
  v.Q = Q;
  v.match = match.data();
  v.transitions = transitions.data();
  v.dd_prefix = dd_prefix.data();
  v.dd_suffix = dd_suffix.data();
  v.dd_ones = dd_ones.data();
  v.e_loop = e_loop;
  v.e_move = e_move;
  return v;
}

}  // namespace duet
