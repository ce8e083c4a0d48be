// Vectors of 4 floats as GCC's and Clang's vector extension, for the 4-lane striped DPs
// written once for every ISA (the canonical Forward, domain definition's DPs): + and * act
// lane by lane with the IEEE float operations of scalar code (contraction stays off
// project-wide: no FMA), and the compiler keeps the 4 lanes in one SSE register.
#pragma once

#include <cstring>

namespace duet::lanes {

using Lanes = float __attribute__((vector_size(16)));

inline Lanes load(const float* p) {
  Lanes r;
  std::memcpy(&r, p, sizeof r);
  return r;
}
inline void store(float* p, Lanes a) {
  std::memcpy(p, &a, sizeof a);
}
inline Lanes splat(float x) {
  return Lanes{x, x, x, x};
}
// Lane j takes lane j - 1; lane 0 takes `fill` (the vector byte shift; HMMER's right shift).
inline Lanes shift_up(Lanes a, float fill = 0.0f) {
  return __builtin_shufflevector(a, splat(fill), 4, 0, 1, 2);
}
// Lane j takes lane j - 2; lanes 0 and 1 take +0.
inline Lanes shift_up_two(Lanes a) {
  return __builtin_shufflevector(a, Lanes{}, 4, 5, 0, 1);
}
// Lane j takes lane j + 1; lane 3 takes +0 (HMMER's left shift).
inline Lanes shift_down(Lanes a) {
  return __builtin_shufflevector(a, Lanes{}, 1, 2, 3, 4);
}
// Lane j takes lane j + 2; lanes 2 and 3 take +0.
inline Lanes shift_down_two(Lanes a) {
  return __builtin_shufflevector(a, Lanes{}, 2, 3, 4, 5);
}
// The canonical Forward's horizontal sum, as its 128-bit kernels add:
// (lane0 + lane2) + (lane1 + lane3).
inline float canonical_sum(Lanes a) {
  const float low = a[0] + a[2];
  const float high = a[1] + a[3];
  return low + high;
}

}  // namespace duet::lanes
