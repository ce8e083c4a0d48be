// The bias filter's composition score of the pairs that passed a gated MSV launch, on the
// device. Part of hmm_gpu.cu's translation unit: included there only, inside its anonymous
// namespace.
//
// The host's bias_composition_score is a Forward pass of a two-state composition HMM: per
// residue a few float multiplies and adds, a division by the row's largest value and the
// natural logarithm of that value, taken in double and rounded to float. The kernel runs
// the same float operations in the same order, each an intrinsic rounded to nearest that the
// compiler neither fuses nor reorders (subnormals are kept: the kernels are built without
// flush to zero). The logarithm is the one step whose device and host results may differ: both are
// within about one double unit in the last place of the true value, so their float roundings agree
// unless the double lies close to the midpoint between two floats. Where it does (the margin takes
// at most about 1 in 10^7 rows; none of 4 x 10^8 in a run measured on an H100), or a value is not
// finite, the kernel gives up on the pair and the host computes its score.
#pragma once

// Residue codes of the composition HMM's table (Alphabet::Kp is at most 29).
constexpr int kBiasMaxCodes = 32;

// One model's composition HMM (BiasFilterModel).
struct BiasDeviceModel {
  float odds[kBiasMaxCodes][2];
  float pi0, pi1, t10, t11;
};

// std::max(a, b) as the host computes it (a NaN in `a` is kept).
__device__ __forceinline__ float max_as_host(float a, float b) {
  return a < b ? b : a;
}

// ln(x) rounded to float as the host rounds its double logarithm, into `out`; false where
// the device cannot be sure of that rounding (see above) or the logarithm is not finite.
__device__ __forceinline__ bool log_as_host(float x, float& out) {
  const double d = log(static_cast<double>(x));
  if (!isfinite(d)) return false;
  out = __double2float_rn(d);
  // The float roundings' boundaries beside `out`: midpoints to its neighbours, exact in
  // double. A margin of at least 16 double units in the last place of d.
  const double f = out;
  const double below = (f + static_cast<double>(nextafterf(out, -INFINITY))) * 0.5;
  const double above = (f + static_cast<double>(nextafterf(out, INFINITY))) * 0.5;
  const double margin = fabs(d) * 0x1p-48;
  return d - below > margin && above - d > margin;
}

// The composition score (nats) of a target of L > 0 residues with null model p1 `p1`
// (null_p1(L)), as bias_composition_score computes it, or NaN where the host must compute
// it.
__device__ float bias_composition(const BiasDeviceModel& b, const std::uint8_t* dsq, int L,
                                  float p1) {
  const float give_up = __int_as_float(0x7fc00000);  // a quiet NaN
  const float t00 = p1, t01 = __fsub_rn(1.0f, p1);
  float s0 = __fmul_rn(b.odds[dsq[0]][0], b.pi0);
  float s1 = __fmul_rn(b.odds[dsq[0]][1], b.pi1);
  float top = max_as_host(max_as_host(s0, s1), 0.0f);
  s0 = __fdiv_rn(s0, top);
  s1 = __fdiv_rn(s1, top);
  float log_top = 0;
  if (!log_as_host(top, log_top)) return give_up;
  float score = __fadd_rn(0.0f, log_top);
  for (int i = 1; i < L; ++i) {
    const std::uint8_t x = dsq[i];
    const float n0 = __fmul_rn(__fadd_rn(__fadd_rn(0.0f, __fmul_rn(s0, t00)), __fmul_rn(s1, b.t10)),
                               b.odds[x][0]);
    const float n1 = __fmul_rn(__fadd_rn(__fadd_rn(0.0f, __fmul_rn(s0, t01)), __fmul_rn(s1, b.t11)),
                               b.odds[x][1]);
    top = max_as_host(max_as_host(n0, n1), 0.0f);
    s0 = __fdiv_rn(n0, top);
    s1 = __fdiv_rn(n1, top);
    if (!log_as_host(top, log_top)) return give_up;
    score = __fadd_rn(score, log_top);
  }
  const float end = __fadd_rn(__fadd_rn(0.0f, __fmul_rn(s0, 1.0f)), __fmul_rn(s1, 1.0f));
  if (!log_as_host(end, log_top)) return give_up;
  return __fadd_rn(score, log_top);
}

struct BiasArgs {
  int4* passes;  // (model, target, MSV code, composition score's bits: written here)
  const unsigned long long* count;
  const BiasDeviceModel* models;               // per model of the launch
  const std::uint8_t* const* target_residues;  // per target
  const std::int64_t* offsets;                 // n + 1
  const float* p1;                             // per target: null_p1 of its length
};
// A thread per pass (grid-stride), after msv_gate_kernel on the same stream.
__global__ void bias_composition_kernel(BiasArgs a) {
  const auto count = static_cast<std::int64_t>(*a.count);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < count;
       j += stride) {
    int4 p = a.passes[j];
    const int L = static_cast<int>(a.offsets[p.y + 1] - a.offsets[p.y]);
    p.w = __float_as_int(bias_composition(a.models[p.x], a.target_residues[p.y], L, a.p1[p.y]));
    a.passes[j] = p;
  }
}
