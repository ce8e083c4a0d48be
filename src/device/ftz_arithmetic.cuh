// Float products and sums as x86's SSE does them with flush to zero: PTX mul.rn.ftz and
// add.rn.ftz (round to nearest; a subnormal result or input becomes a zero of its sign),
// written as inline PTX so that no compiler flag can fuse them into a multiply-add or
// reorder them. Whether the GPU decides "subnormal" exactly where x86 does (for a product
// just below FLT_MIN that rounds up to it) is not documented; the pair-HMM kernels check
// it at run time (probe_ftz_arithmetic in pairhmm_gpu.cu) before relying on it.
#pragma once

namespace duet::device {

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

}  // namespace duet::device
