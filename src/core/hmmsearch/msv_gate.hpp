// The MSV stage's score arithmetic and pass test in one place for the host and a GPU: the
// end of the MSV filter (an 8-bit best J value to nats), SSV's begin-score floor, the
// sequence score in bits, and MsvGate, which decides a (model, target) pair from the
// filter's 8-bit result with one float comparison. The functions are plain integer and
// IEEE float operations (no fused multiply-add where the device build forbids it:
// src/device/CMakeLists.txt), so a kernel that calls them decides every pair exactly as
// decide_after_msv (cascade.hpp) does on the host.
#pragma once

#include <cstdint>

#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/statistics.hpp"

#if defined(__CUDACC__)
#define DUET_MSV_GATE_HD __host__ __device__
#else
#define DUET_MSV_GATE_HD
#endif

namespace duet {

// The MSV score (nats) of a best J value xJ (offset units, MsvScores::base is zero) for a
// target whose N->B cost is tjb: C -> T with the -3 nats of the loops, as HMMER's
// p7_MSVFilter ends. Non-decreasing in xJ.
DUET_MSV_GATE_HD inline float msv_nats_of_xj(int xJ, int tjb, int base, float scale) {
  float score = static_cast<float>(xJ - tjb) - static_cast<float>(base);
  score /= scale;
  score -= 3.0f;
  return score;
}

// HMMER's SSV begin-score floor of the MSV score (msv_ssv_floor) as a J value: SSV's
// decision (ssv_decision) on a best diagonal cell of 128, the begin score, for a target
// whose N->B cost is tjb; kNoMsvFloor where SSV does not apply or gives no floor (its
// decision is "run MSV", or an overflow).
inline constexpr int kNoMsvFloor = -(1 << 20);
DUET_MSV_GATE_HD inline int msv_floor_xj(int tjb, int base, int tbm, int tec, int bias) {
  if (tjb + tbm + tec + bias >= 127) return kNoMsvFloor;  // SSV does not apply
  if (128 >= 255 - bias) return kNoMsvFloor;              // the cell could have saturated
  const int xE = base - tjb - tbm;  // the cell moved from the begin score's 128 to the score's
  if (xE >= 255 - bias) return kNoMsvFloor;  // an overflow: no floor
  const int xJ = xE - tec;
  return xJ > base ? kNoMsvFloor : xJ;  // above base: the J state could have been used
}

// The sequence score (bits) of an MSV score against a null score, both in nats.
DUET_MSV_GATE_HD inline float msv_sequence_bits(float msv_nats, float null_nats) {
  return (msv_nats - null_nats) / static_cast<float>(kLog2);
}

// One model's MSV pass test: its MSV byte constants and the smallest sequence score that
// passes the F1 threshold (msv_pass_bits in cascade.hpp, made on the host).
struct MsvGate {
  int base = 0, tbm = 0, tec = 0, bias = 0;
  float scale = 1;
  // Smallest float sequence score (bits) that decide_after_msv passes; +infinity where
  // none passes but an overflow, -infinity where every score passes.
  float min_bits = 0;
};

// The gate of a model's MSV scores with its pass bits (host side).
inline MsvGate msv_gate_of(const MsvScores& msv, float min_bits) {
  return {msv.base, msv.tbm, msv.tec, msv.bias, msv.scale, min_bits};
}

// Whether a target of N->B cost tjb and null score null_nats passes the model's MSV stage
// with best J value xJ (overflow: the filter saturated, which always passes): the floor,
// the score and the comparison of decide_after_msv, in its operations.
DUET_MSV_GATE_HD inline bool msv_gate_passes(const MsvGate& g, bool overflow, int xJ, int tjb,
                                             float null_nats) {
  if (overflow) return true;
  const int floor = msv_floor_xj(tjb, g.base, g.tbm, g.tec, g.bias);
  if (floor > xJ) xJ = floor;  // the score is non-decreasing in xJ: the floor of the scores
  return msv_sequence_bits(msv_nats_of_xj(xJ, tjb, g.base, g.scale), null_nats) >= g.min_bits;
}

}  // namespace duet
