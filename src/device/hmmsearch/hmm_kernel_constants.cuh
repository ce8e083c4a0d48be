// The constants and small helpers shared by the hmmsearch MSV and Viterbi filter kernels.
// Part of hmm_gpu.cu's translation unit: included there only, inside its anonymous
// namespace, after cuda_raii.cuh and msv_exact_kernel.cuh.
#pragma once

// ---------------------------------------------------------------- shared constants

constexpr unsigned kAll = 0xffffffffu;
constexpr int kNeg16 = -32768;
constexpr int kMsvBlockThreads = 512;
constexpr int kExactBlockThreads = 256;
// Result codes of the MSV kernels: the fast kernel leaves the best cell C (0..255);
// the exact kernel writes kMsvExact + xJ or kMsvOverflow.
constexpr int kMsvExact = msv_exact::kResultExact;
constexpr int kMsvOverflow = msv_exact::kResultOverflow;
static_assert(kExactBlockThreads == msv_exact::kBlockThreads);
static_assert(kMsvExactJitMaxLength == msv_exact::kJitMaxLength);
constexpr int kViterbiOverflow = INT_MAX;
// Work counters of a slot's Viterbi filter launches (one per run of one kernel).
constexpr int kViterbiCounters = 8;

__host__ __device__ inline unsigned pack2(int v) {
  const unsigned h = static_cast<unsigned>(v) & 0xffffu;
  return h | (h << 16);
}
__device__ inline int clamp16(int v) {
  return min(max(v, -32768), 32767);
}
