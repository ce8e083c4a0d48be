// The exact row-synchronous MSV kernel (the re-run of the targets whose fast-kernel best
// cell says the J state could matter; see hmm_gpu.cu), in one self-contained header that
// is compiled twice:
//   - by nvcc, included from hmm_gpu.cu: msv_exact_registers<C, 0> for models of up to
//     C * 32 nodes (a few static buckets of C, the model length read from the arguments
//     at run time), and msv_exact_rows, the row of M+1 cells in global memory, for longer
//     models;
//   - by NVRTC at run time (msv_exact_jit.cpp; CMake embeds this file's text into the
//     binary), with -DDUET_JIT_M=<M>: the extern "C" kernel duet_msv_exact_jit runs
//     msv_exact_registers<ceil(M/32), M>, the model length known when compiled.
// All compute the cells of msv_filter_reference, J state included, operation by
// operation: results are identical, bit for bit, whatever the instantiation.
// This file must include nothing (NVRTC has no standard headers) and must not depend on
// any other duet file; its text is part of the key of the disk cache of compiled kernels.
#pragma once

namespace duet::device::msv_exact {

#if defined(__CUDACC_RTC__)
using Int64 = long long;
#else
using Int64 = decltype(0L);  // std::int64_t on LP64 Linux, without <cstdint>
#endif
static_assert(sizeof(Int64) == 8, "64-bit offsets");
using Byte = unsigned char;

constexpr unsigned kAllLanes = 0xffffffffu;
constexpr int kBlockThreads = 256;
// Result codes (the fast MSV kernel leaves 0..255 and -1 for targets sent here).
constexpr int kResultExact = 1000;     // kResultExact + xJ
constexpr int kResultOverflow = 2000;  // the 8-bit score overflowed
// Longest model run by a run-time specialisation (its row in registers: 96 per lane).
constexpr int kJitMaxLength = 3072;

struct Args {
  const Byte* cost;  // [x][k], k = 0..M
  int M;
  const Byte* const* target_residues;  // per target: its first residue
  const Int64* offsets;
  const Byte* bjbm;
  int base, bias, tec;
  const int* list;
  const int* count;
  Byte* rows;  // msv_exact_rows: one row of M+1 per warp
  int* result;
};

// A list entry's target: its index, length, residues and N->B cost (bjbm).
struct ListTarget {
  int index, L;
  const Byte* dsq;
  int bjbm;
};
__device__ __forceinline__ ListTarget list_target(const Args& a, int item) {
  const int t = a.list[item];
  return {t, static_cast<int>(a.offsets[t + 1] - a.offsets[t]), a.target_residues[t], a.bjbm[t]};
}

// A row's end on the warp: xE, the best of the lanes' best cells; false where it reaches
// the 8-bit clamp (the score overflowed), else the J state and the next row's begin score.
__device__ __forceinline__ bool end_row(const Args& a, int row_best, int bjbm, int& xJ, int& xB) {
  const int xE = __reduce_max_sync(kAllLanes, static_cast<unsigned>(row_best));
  if (min(xE + a.bias, 255) == 255) return false;
  xJ = max(xJ, max(xE - a.tec, 0));
  xB = max(max(a.base, xJ) - bjbm, 0);
  return true;
}

// A warp per target, rows in order: lane l owns nodes l+1, l+33, ...; the diagonal
// predecessor comes from lane l-1 (or the previous chunk's lane 31) by shuffle. The same
// operations as msv_filter_reference, J state included. The row lives in `a.rows`.
__device__ __forceinline__ void msv_exact_rows(const Args& a) {
  const int lane = threadIdx.x % 32;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int warps = gridDim.x * blockDim.x / 32;
  const int count = *a.count;
  Byte* row = a.rows + static_cast<Int64>(warp) * (a.M + 1);
  for (int item = warp; item < count; item += warps) {
    const auto [target, L, dsq, bjbm] = list_target(a, item);
    for (int k = lane + 1; k <= a.M; k += 32) row[k] = 0;
    __syncwarp();
    int xJ = 0;
    int xB = max(a.base - bjbm, 0);
    bool overflow = false;
    for (int i = 0; i < L; ++i) {
      const Byte* cost = a.cost + static_cast<Int64>(dsq[i]) * (a.M + 1);
      int carry = 0;  // node 0
      int row_best = 0;
      for (int c = 0; c < a.M; c += 32) {
        const int k = c + lane + 1;
        const bool valid = k <= a.M;
        const int old = valid ? row[k] : 0;
        int diag = __shfl_up_sync(kAllLanes, old, 1);
        if (lane == 0) diag = carry;
        carry = __shfl_sync(kAllLanes, old, 31);
        if (valid) {
          int sv = max(diag, xB);
          sv = min(sv + a.bias, 255);
          sv = max(sv - int{cost[k]}, 0);
          row[k] = static_cast<Byte>(sv);
          row_best = max(row_best, sv);
        }
      }
      if (!end_row(a, row_best, bjbm, xJ, xB)) {
        overflow = true;
        break;
      }
    }
    __syncwarp();
    if (lane == 0) a.result[target] = overflow ? kResultOverflow : kResultExact + xJ;
  }
}

// The same cells with the row in registers (ceil(M/32) cells per lane, in kChunks
// registers: chunk c holds nodes c*32 + lane + 1) and the loop over the row's chunks
// unrolled. kM > 0: the model has kM nodes (kChunks = ceil(kM/32), a run-time
// specialisation); kM == 0: a.M nodes, at most kChunks * 32 (a static bucket of chunk
// counts, the chunks past the model's skipped). Up to kPrefetchChunks chunks, each lane
// loads the next row's costs while the current row is computed, so that the row's chain
// (shuffles, cells, the row's maximum, the J state) waits on no memory load.
constexpr int kPrefetchChunks = 48;
template <int kChunks, int kM>
__device__ __forceinline__ void msv_exact_registers(const Args& a) {
  static_assert(kChunks > 0 && (kM == 0 || (kM + 31) / 32 == kChunks), "chunks of the model");
  static_assert(kChunks * 32 <= kJitMaxLength, "rows in registers");
  constexpr bool kPrefetch = kChunks <= kPrefetchChunks;
  const int M = kM > 0 ? kM : a.M;
  const int chunks = kM > 0 ? kChunks : (M + 31) / 32;
  const int lane = threadIdx.x % 32;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int warps = gridDim.x * blockDim.x / 32;
  const int count = *a.count;
  const int source_lane = (lane + 31) & 31;  // lane l-1, lane 31 for lane 0
  const Byte* lane_costs = a.cost + lane + 1;
  // A lane's cell of chunk c is a node of the model (else it stays 0, as the generic
  // kernel's `valid ? row[k] : 0`).
  const auto valid = [&](int c) { return c < chunks && c * 32 + lane + 1 <= M; };
  const auto load_costs = [&](int residue, int(&out)[kChunks]) {
    const Byte* cost = lane_costs + static_cast<Int64>(residue) * (M + 1);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) out[c] = valid(c) ? int{cost[c * 32]} : 0;
  };
  for (int item = warp; item < count; item += warps) {
    const auto [target, L, dsq, bjbm] = list_target(a, item);
    int row[kChunks];
    int cost_now[kChunks];
    int cost_next[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c) row[c] = 0;
    if (kPrefetch && L > 0) load_costs(dsq[0], cost_next);
    int residue_after = L > 1 ? dsq[1] : 0;  // row i+1's residue, during row i
    int xJ = 0;
    int xB = max(a.base - bjbm, 0);
    bool overflow = false;
    for (int i = 0; i < L; ++i) {
      if constexpr (kPrefetch) {
#pragma unroll
        for (int c = 0; c < kChunks; ++c) cost_now[c] = cost_next[c];
        if (i + 1 < L) load_costs(residue_after, cost_next);
        residue_after = i + 2 < L ? dsq[i + 2] : 0;
      } else {
        load_costs(dsq[i], cost_now);
      }
      int row_best = 0;
      // The previous row's cell of lane 31 in chunk c-1 (lane 0's diagonal).
      int previous_chunk_last = 0;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        if (c < chunks) {  // the same for every lane: the shuffle's lanes all take part
          // Every lane gets lane l-1's old cell of this chunk; lane 0 gets lane 31's,
          // which is lane 0's diagonal of the next chunk.
          const int from_left = __shfl_sync(kAllLanes, row[c], source_lane);
          const int diag = lane == 0 ? previous_chunk_last : from_left;
          previous_chunk_last = from_left;
          if (valid(c)) {
            int sv = max(diag, xB);
            sv = min(sv + a.bias, 255);
            sv = max(sv - cost_now[c], 0);
            row[c] = sv;
            row_best = max(row_best, sv);
          }
        }
      }
      if (!end_row(a, row_best, bjbm, xJ, xB)) {
        overflow = true;
        break;
      }
    }
    if (lane == 0) a.result[target] = overflow ? kResultOverflow : kResultExact + xJ;
  }
}

}  // namespace duet::device::msv_exact

#if defined(DUET_JIT_M)
// The run-time specialisation's entry point (an unmangled name for cuModuleGetFunction).
extern "C" __global__ void __launch_bounds__(duet::device::msv_exact::kBlockThreads)
    duet_msv_exact_jit(duet::device::msv_exact::Args a) {
  duet::device::msv_exact::msv_exact_registers<(DUET_JIT_M + 31) / 32, DUET_JIT_M>(a);
}
#endif
