// IEEE float operations as SSE does them under MXCSR FTZ and DAZ (round to nearest;
// subnormal inputs and results flushed to sign-preserving zero), written as inline PTX so
// that no fused multiply-add can appear whatever the compiler's flags. That the device's
// flush decides "tiny" as x86 does (after rounding, with an unbounded exponent) is what
// device::pairhmm::probe_ftz_arithmetic checks on a device (pairhmm_gpu.hpp).
#pragma once

namespace duet::device::detail {

__device__ __forceinline__ float mul_ftz(float a, float b) {
  float r;
  asm("mul.rn.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float add_ftz(float a, float b) {
  float r;
  asm("add.rn.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float div_ftz(float a, float b) {
  float r;
  asm("div.rn.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

}  // namespace duet::device::detail
