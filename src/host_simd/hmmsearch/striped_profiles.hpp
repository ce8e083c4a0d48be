// Striped (Farrar) layouts of a SearchProfile's filter scores, one named function per
// layout, built once per model and vector width, and the inverse of each for the
// round-trip tests. The order is described in core/hmmsearch/striped_layout.hpp. The layouts depend
// on the lane count only; every buffer is 64-byte aligned and every row is whole vectors,
// so one allocation scheme serves every ISA up to the widest (AVX-512).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/striping.hpp"
#include "host_simd/hmmsearch/isa_kernels.hpp"

namespace duet::simd {

// The aligned buffers, the row helpers and the Forward layout live in core (striping.hpp),
// shared with the canonical Forward.
using ::duet::AlignedBuffer;
using ::duet::kBufferAlignment;
using ::duet::stripe_forward_scores;
using ::duet::striped_segments;
using ::duet::StripedForwardProfile;
using ::duet::unstripe_forward_scores;

struct StripedMsvProfile {
  int M = 0, Kp = 0, lanes = 0, Q = 0;
  float scale = 0;
  std::uint8_t base = 0, bias = 0, tbm = 0, tec = 0;
  AlignedBuffer<std::uint8_t> cost;  // Kp * Q * lanes
  MsvStripedView view() const;
};
StripedMsvProfile stripe_msv_scores(const MsvScores& msv, int lanes);
MsvScores unstripe_msv_scores(const StripedMsvProfile& striped);

// SSV's signed steps min(cost - bias, 127), extended by `extension` vectors that repeat
// the first ones (127 in padding). The SSV kernel needs extension = ssv_registers - 1.
struct StripedSsvProfile {
  int M = 0, Kp = 0, lanes = 0, Q = 0, extension = 0;
  AlignedBuffer<std::int8_t> step;  // Kp * (Q + extension) * lanes
  SsvStripedView view() const;
};
StripedSsvProfile stripe_ssv_steps(const MsvScores& msv, int lanes, int extension);

struct StripedViterbiProfile {
  int M = 0, Kp = 0, lanes = 0, Q = 0;
  float scale = 0;
  std::int16_t base = 0, e_loop = 0, e_move = 0, dd_bound = 0;
  AlignedBuffer<std::int16_t> match;        // Kp * Q * lanes
  AlignedBuffer<std::int16_t> transitions;  // (kVitPerQ + 1) * Q * lanes
  ViterbiStripedView view() const;
};
StripedViterbiProfile stripe_viterbi_scores(const ViterbiScores& vit, int lanes);
ViterbiScores unstripe_viterbi_scores(const StripedViterbiProfile& striped);

}  // namespace duet::simd
