// Striped layouts of the filter scores and their inverses; see striped_profiles.hpp.
#include "host_simd/hmmsearch/striped_profiles.hpp"

#include <algorithm>
#include <cstddef>

namespace duet::simd {

namespace {

// Element of node k = 1..M in the striped order (vector q = (k-1) % Q, lane (k-1) / Q).
std::size_t striped_element(int k, int Q, int lanes) {
  const int q = (k - 1) % Q;
  const int lane = (k - 1) / Q;
  return static_cast<std::size_t>(q) * static_cast<std::size_t>(lanes) +
         static_cast<std::size_t>(lane);
}

}  // namespace

// ---- MSV ----

StripedMsvProfile stripe_msv_scores(const MsvScores& msv, int lanes) {
  StripedMsvProfile s;
  s.M = msv.M;
  s.Kp = static_cast<int>(msv.cost.size());
  s.lanes = lanes;
  s.Q = striped_segments(msv.M, lanes);
  s.scale = msv.scale;
  s.base = msv.base;
  s.bias = msv.bias;
  s.tbm = msv.tbm;
  s.tec = msv.tec;
  const std::size_t row = striped_row_elements(s.Q, lanes);
  s.cost.assign(row * static_cast<std::size_t>(s.Kp), 255);  // padding: cost 255 keeps 0
  for (int x = 0; x < s.Kp; ++x) {
    stripe_row(msv.cost[x], s.M, s.Q, static_cast<std::size_t>(lanes),
               s.cost.data() + row * static_cast<std::size_t>(x));
  }
  return s;
}

MsvScores unstripe_msv_scores(const StripedMsvProfile& s) {
  MsvScores msv;
  msv.M = s.M;
  msv.scale = s.scale;
  msv.base = s.base;
  msv.bias = s.bias;
  msv.tbm = s.tbm;
  msv.tec = s.tec;
  const std::size_t row = striped_row_elements(s.Q, s.lanes);
  msv.cost.assign(s.Kp, std::vector<std::uint8_t>(s.M + 1, 255));
  for (int x = 0; x < s.Kp; ++x) {
    unstripe_row(s.cost.data() + row * static_cast<std::size_t>(x), s.M, s.Q,
                 static_cast<std::size_t>(s.lanes), msv.cost[x]);
  }
  return msv;
}

MsvStripedView StripedMsvProfile::view() const {
  MsvStripedView v;
  v.Q = Q;
  v.cost = cost.data();
  v.base = base;
  v.bias = bias;
  v.tbm = tbm;
  v.tec = tec;
  return v;
}

// ---- SSV ----

StripedSsvProfile stripe_ssv_steps(const MsvScores& msv, int lanes, int extension) {
  StripedSsvProfile s;
  s.M = msv.M;
  s.Kp = static_cast<int>(msv.cost.size());
  s.lanes = lanes;
  s.Q = striped_segments(msv.M, lanes);
  s.extension = extension;
  const std::size_t row = striped_row_elements(s.Q + extension, lanes);
  s.step.assign(row * static_cast<std::size_t>(s.Kp), 127);  // padding: the largest step down
  for (int x = 0; x < s.Kp; ++x) {
    std::int8_t* out = s.step.data() + row * static_cast<std::size_t>(x);
    for (int k = 1; k <= s.M; ++k) {
      const int step = std::min(int{msv.cost[x][k]} - int{msv.bias}, 127);
      out[striped_element(k, s.Q, lanes)] = static_cast<std::int8_t>(std::max(step, -128));
    }
    // Vectors Q .. Q + extension - 1 repeat vectors 0 .. extension - 1 (modulo Q).
    for (int p = s.Q; p < s.Q + extension; ++p) {
      std::copy_n(out + striped_row_elements(p % s.Q, lanes), lanes,
                  out + striped_row_elements(p, lanes));
    }
  }
  return s;
}

SsvStripedView StripedSsvProfile::view() const {
  SsvStripedView v;
  v.Q = Q;
  v.stride = Q + extension;
  v.step = step.data();
  return v;
}

// ---- Viterbi filter ----

StripedViterbiProfile stripe_viterbi_scores(const ViterbiScores& vit, int lanes) {
  StripedViterbiProfile s;
  s.M = vit.M;
  s.Kp = static_cast<int>(vit.match.size());
  s.lanes = lanes;
  s.Q = striped_segments(vit.M, lanes);
  s.scale = vit.scale;
  s.base = vit.base;
  s.e_loop = vit.e_loop;
  s.e_move = vit.e_move;
  s.dd_bound = vit.dd_bound;
  const std::size_t row = striped_row_elements(s.Q, lanes);
  s.match.assign(row * static_cast<std::size_t>(s.Kp), -32768);  // padding: -infinity
  for (int x = 0; x < s.Kp; ++x) {
    stripe_row(vit.match[x], s.M, s.Q, static_cast<std::size_t>(lanes),
               s.match.data() + row * static_cast<std::size_t>(x));
  }
  s.transitions.assign(row * (kVitPerQ + 1), -32768);
  stripe_transitions(vit, s.Q, lanes, s.transitions.data());
  return s;
}

ViterbiScores unstripe_viterbi_scores(const StripedViterbiProfile& s) {
  ViterbiScores vit;
  vit.M = s.M;
  vit.scale = s.scale;
  vit.base = s.base;
  vit.e_loop = s.e_loop;
  vit.e_move = s.e_move;
  vit.dd_bound = s.dd_bound;
  const std::size_t row = striped_row_elements(s.Q, s.lanes);
  vit.match.assign(s.Kp, std::vector<std::int16_t>(s.M + 1, -32768));
  for (int x = 0; x < s.Kp; ++x) {
    unstripe_row(s.match.data() + row * static_cast<std::size_t>(x), s.M, s.Q,
                 static_cast<std::size_t>(s.lanes), vit.match[x]);
  }
  vit.bm.assign(s.M + 1, -32768);
  vit.mm = vit.im = vit.dm = vit.md = vit.mi = vit.ii = vit.dd = vit.bm;
  unstripe_transitions(s.transitions.data(), s.M, s.Q, s.lanes, vit);
  return vit;
}

ViterbiStripedView StripedViterbiProfile::view() const {
  ViterbiStripedView v;
  v.Q = Q;
  v.match = match.data();
  v.transitions = transitions.data();
  v.base = base;
  v.e_loop = e_loop;
  v.e_move = e_move;
  v.dd_bound = dd_bound;
  return v;
}

}  // namespace duet::simd
