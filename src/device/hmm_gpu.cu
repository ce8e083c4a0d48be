// HmmGpuEngine (hmm_gpu.hpp): the MSV and Viterbi filter kernels for Hopper, the RAII
// wrappers of CUDA objects they use, and the two-slot batch pipeline (the Forward kernels
// are in hmm_forward_gpu.cu and hmm_canonical_gpu.cu). The contract and
// the designs are described in hmm_gpu.hpp; the kernels' arithmetic is commented here.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "device/by_length.hpp"
#include "device/cuda_buffers.cuh"
#include "device/hmm_canonical_gpu.cuh"
#include "device/hmm_forward_gpu.cuh"
#include "device/hmm_gpu.hpp"
#include "device/jit_sources.hpp"
#include "device/msv_exact_kernel.cuh"
#include "device/nvrtc_jit.hpp"
#include "device/target_order.hpp"

namespace duet::device {

namespace {

// ---------------------------------------------------------------- CUDA error checks, RAII

using detail::check;
using detail::check_launch;
using detail::DeviceBuffer;
using detail::PinnedBuffer;

class Stream {
 public:
  Stream() { check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Events wait with cudaEventBlockingSync: the waiting thread sleeps.
class Event {
 public:
  explicit Event(bool timing = true) {
    check(cudaEventCreateWithFlags(&e_,
                                   cudaEventBlockingSync | (timing ? 0u : cudaEventDisableTiming)),
          "cudaEventCreate");
  }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t s) { check(cudaEventRecord(e_, s), "cudaEventRecord"); }
  cudaEvent_t get() const { return e_; }
  float ms_since(const Event& start) const {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.e_, e_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

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

__host__ __device__ inline unsigned pack2(int v) {
  const unsigned h = static_cast<unsigned>(v) & 0xffffu;
  return h | (h << 16);
}
__device__ inline int clamp16(int v) {
  return min(max(v, -32768), 32767);
}

// ---------------------------------------------------------------- MSV, fast wavefront

struct MsvFastArgs {
  const uint4* profile;  // MsvDeviceLayout::words
  int profile_vec4;      // its size in 16-byte units
  int tiles;
  int pad_residue;                             // Kp: the layout's row of kMsvPadScore
  const std::uint8_t* const* target_residues;  // per target: its first residue
  const std::int64_t* offsets;                 // n + 1
  const int* order;                            // targets, longest first
  int n;
  const std::uint8_t* bjbm;  // per target: (tjb(L) + tbm) & 0xff
  int base, bias, tec;
  std::int16_t* boundary;  // 2 values per residue: tile boundary columns, ping-pong
  int* result;
  int* exact_list;
  int* exact_count;
};

// Values above this are clamped every 32 rows (see below); any cell above it has overflowed.
constexpr int kMsvClamp = 1024;

// One group of G threads per target, N nodes per thread. With the begin score xB held
// constant (HMMER's SSV shortcut; targets where the J state could matter are re-run by
// msv_exact_kernel), HMMER's unsigned byte cell
//     v' = max(min(max(v_diag, xB) + bias, 255) - cost, 0)
// is kept as u = v - xB and computed without its two clamps:
//     u' = max(u_diag, 0) + b = max(u_diag + b, b),   b = bias - cost
// i.e. one __viaddmax_s16x2 (DPX) per two cells, plus one __vimax3_s16x2 per four cells
// for the best cell. Why the result is HMMER's:
// - the final max(., 0): a negative v' only ever meets max(., xB) again (xB >= 0), and the
//   best cell starts at v = 0;
// - the min(., 255): when xB + bias < 255 it acts only on a cell whose predecessor reached
//   255 - bias, and the first such cell (rows in order) is computed from unclamped values,
//   so the best cell reaches 255 - bias exactly when HMMER's does (an overflow: the host
//   reports it; targets with xB + bias >= 255 are left to the exact kernel). To keep
//   16 bits from wrapping, cells are clamped to kMsvClamp every 32 rows (after the best
//   cell has seen them): u grows by at most 255 per row, so |u| stays under 16384;
// - rows outside the target (the wavefront's fill and drain, and the padding to whole G
//   steps) take the residue row of kMsvPadScore, as padding nodes do: such a cell is below
//   -xB (v < 0) and never raises the best cell, and it only feeds rows outside the target
//   or max(., 0).
template <int G, int N>
__global__ void __launch_bounds__(kMsvBlockThreads) msv_wavefront_kernel(MsvFastArgs a) {
  constexpr int H = N / 2;  // registers, two nodes each
  constexpr int Q = N / 8;  // 16-byte profile reads per row
  extern __shared__ uint4 shared_profile[];
  for (int i = threadIdx.x; i < a.profile_vec4; i += blockDim.x) shared_profile[i] = a.profile[i];
  __syncthreads();

  const int t = threadIdx.x % G;
  const int group = (blockIdx.x * blockDim.x + threadIdx.x) / G;
  const bool has_target = group < a.n;
  const int target = has_target ? a.order[group] : 0;
  const std::int64_t offset = has_target ? a.offsets[target] : 0;
  const int L = has_target ? static_cast<int>(a.offsets[target + 1] - offset) : 0;
  const std::uint8_t* dsq = a.target_residues[target];
  const int xB = has_target ? max(a.base - int{a.bjbm[target]}, 0) : 0;
  const unsigned pad = static_cast<unsigned>(a.pad_residue);
  const unsigned clamp2 = pack2(kMsvClamp);
  // Whole G-step blocks: the padding rows are harmless (see above).
  const int steps =
      (static_cast<int>(__reduce_max_sync(kAll, static_cast<unsigned>(L))) + 2 * G - 2) / G * G;
  const std::size_t residue_stride = static_cast<std::size_t>(a.tiles) * Q * G;

  unsigned best = pack2(-xB);  // v = 0
  std::int16_t* read_column = a.boundary + 2 * offset;
  std::int16_t* write_column = read_column + L;
  for (int tile = 0; tile < a.tiles; ++tile) {
    unsigned w[H];
#pragma unroll
    for (int j = 0; j < H; ++j) w[j] = 0;  // u = 0: v = xB, as good as any v <= xB
    // Last register (holding the strip's last node in its high half) at my two latest
    // rows: the next thread needs the older one (the diagonal predecessor).
    unsigned last_now = 0, last_before = 0;
    unsigned residue = pad;
    const bool writer = t == G - 1 && tile + 1 < a.tiles;
    const uint4* tile_profile = shared_profile + static_cast<std::size_t>(tile) * Q * G + t;
    // Thread 0's input of step s, (boundary cell of row s-1) << 16 | residue of row s, is
    // loaded by the group's G threads one step each, a whole G steps ahead of use:
    // global-memory latency stays off the wavefront's critical path.
    const auto load_input = [&](int s0) -> unsigned {
      const int row = s0 + t;
      const unsigned x = row < L ? unsigned{dsq[row]} : pad;
      const unsigned column = (tile > 0 && row >= 1 && row <= L)
                                  ? static_cast<std::uint16_t>(read_column[row - 1])
                                  : 0u;
      return column << 16 | x;
    };
    unsigned inputs_now = load_input(0), inputs_next = load_input(G);
    for (int s0 = 0; s0 < steps; s0 += G) {
#pragma unroll 8
      for (int u = 0; u < G; ++u) {
        // One shuffle brings my left neighbour's last node (its row before) in the high
        // half and its residue (my row's) in the low half; thread 0 takes the group's input.
        const unsigned from_left =
            __shfl_up_sync(kAll, (last_before & 0xffff0000u) | residue, 1, G);
        const unsigned from_row = __shfl_sync(kAll, inputs_now, u, G);
        const unsigned in = t == 0 ? from_row : from_left;
        residue = in & 0xffffu;
        const uint4* p = tile_profile + residue * residue_stride;
        unsigned b[H];
#pragma unroll
        for (int q = 0; q < Q; ++q) {
          const uint4 v = p[q * G];
          b[4 * q] = v.x;
          b[4 * q + 1] = v.y;
          b[4 * q + 2] = v.z;
          b[4 * q + 3] = v.w;
        }
        // Register 0's diagonal predecessors: (left neighbour's last node, my node H-1).
        const unsigned shifted0 = __byte_perm(in, w[H - 1], 0x5432);
#pragma unroll
        for (int j = H - 1; j >= 1; --j) w[j] = __viaddmax_s16x2(w[j - 1], b[j], b[j]);
        w[0] = __viaddmax_s16x2(shifted0, b[0], b[0]);
#pragma unroll
        for (int j = 0; j < H; j += 2) best = __vimax3_s16x2(best, w[j], w[j + 1]);
        last_before = last_now;
        last_now = w[H - 1];
        const int i = s0 + u - t;  // my row
        if (writer && static_cast<unsigned>(i) < static_cast<unsigned>(L))
          write_column[i] = static_cast<std::int16_t>(w[H - 1] >> 16);
      }
      inputs_now = inputs_next;
      inputs_next = load_input(s0 + 2 * G);
      if ((s0 & 31) + G >= 32) {  // every 32 rows
#pragma unroll
        for (int j = 0; j < H; ++j) w[j] = __vmins2(w[j], clamp2);
      }
    }
    __syncwarp();
    std::int16_t* swap = read_column;
    read_column = write_column;
    write_column = swap;
  }
  int c = max(static_cast<int>(static_cast<std::int16_t>(best & 0xffffu)),
              static_cast<int>(static_cast<std::int16_t>(best >> 16)));
#pragma unroll
  for (int d = G / 2; d >= 1; d /= 2) c = max(c, __shfl_xor_sync(kAll, c, d, G));
  if (t == 0 && has_target) {
    const int C = min(c + xB, 255);  // best cell as HMMER's byte (255: overflowed)
    if (C - a.tec > a.base || xB + a.bias >= 255) {
      // The J state could have been used: the begin score was not constant; or the begin
      // score alone reaches the 255 clamp (see above). Exact kernel.
      a.result[target] = -1;
      a.exact_list[atomicAdd(a.exact_count, 1)] = target;
    } else {
      a.result[target] = C;
    }
  }
}

// ---------------------------------------------------------------- MSV, exact rows

// The generic exact kernel (msv_exact_kernel.cuh): M from the arguments, the rows in
// global memory. The engine compiles run-time specialisations of the same code with
// NVRTC (nvrtc_jit.hpp) when GpuKernelChoice::jit asks.
using MsvExactArgs = msv_exact::Args;
__global__ void __launch_bounds__(kExactBlockThreads) msv_exact_kernel(MsvExactArgs a) {
  msv_exact::msv_exact_rows<0>(a);
}

// ---------------------------------------------------------------- Viterbi filter

struct ViterbiArgs {
  const std::int16_t* match;  // [x][k], k = 0..M
  const uint4* nodes;         // per node: bm mm im dm md mi ii dd_in (int16 each)
  int M;
  int base, e_loop, e_move, dd_bound;
  const std::uint8_t* const* target_residues;  // per target: its first residue
  const std::int64_t* offsets;
  const int* list;               // targets
  const std::int16_t* ncj_move;  // per list entry
  int count;
  const int* item_order;  // list entries, longest target first (warp strategy)
  int* next_item;         // work counter (warp strategy), zero at launch
  short4* rows;           // warp strategy: (M+1) per warp; thread strategy: see kernel
  int* result;            // per list entry: xC, or kViterbiOverflow
};

struct NodeScores {
  int bm, mm, im, dm, md, mi, ii, dd_in;
};
__device__ inline NodeScores unpack_node(uint4 q) {
  const auto lo = [](unsigned v) {
    return static_cast<int>(static_cast<std::int16_t>(v & 0xffffu));
  };
  const auto hi = [](unsigned v) { return static_cast<int>(static_cast<std::int16_t>(v >> 16)); };
  return {lo(q.x), hi(q.x), lo(q.y), hi(q.y), lo(q.z), hi(q.z), lo(q.w), hi(q.w)};
}

// A warp per target, rows in order (lane l owns nodes l+1, l+33, ...), the row of
// (M, I, D) in global memory (cached). The lazy-F rule of viterbi_filter_reference: the
// delete-delete chain is run on a row only when Dmax + dd_bound > xB. The chain
// D(k) = max(D(k), D(k-1) + dd(k-1)) with 16-bit saturation equals the unsaturated
// (max,+) recurrence because dd <= 0 and every D >= -32768, so it is a warp scan of the
// maps f_k(x) = max(a_k, x + b_k), carried from chunk to chunk.
__global__ void __launch_bounds__(kExactBlockThreads) viterbi_warp_kernel(ViterbiArgs a) {
  extern __shared__ short4 shared_rows[];
  const int lane = threadIdx.x % 32;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int warps = gridDim.x * blockDim.x / 32;
  // The row in shared memory when the launch gave some (a.rows == nullptr), else global.
  short4* row = a.rows == nullptr
                    ? shared_rows + static_cast<std::size_t>(threadIdx.x / 32) * (a.M + 1)
                    : a.rows + static_cast<std::size_t>(warp) * (a.M + 1);
  const short neg = static_cast<short>(kNeg16);
  (void)warps;
  // Warps take the next target from a counter, longest targets first: no warp is left
  // with a long tail of fixed work.
  for (;;) {
    int next = 0;
    if (lane == 0) next = atomicAdd(a.next_item, 1);
    next = __shfl_sync(kAll, next, 0);
    if (next >= a.count) break;
    const int item = a.item_order[next];
    const int target = a.list[item];
    const std::int64_t offset = a.offsets[target];
    const int L = static_cast<int>(a.offsets[target + 1] - offset);
    const std::uint8_t* dsq = a.target_residues[target];
    const int ncj = a.ncj_move[item];
    for (int k = lane + 1; k <= a.M; k += 32) row[k] = make_short4(neg, neg, neg, 0);
    __syncwarp();
    const int xN = a.base;
    int xB = static_cast<std::int16_t>(xN + ncj);
    int xJ = kNeg16, xC = kNeg16;
    bool overflow = false;
    for (int i = 0; i < L; ++i) {
      const std::int16_t* match = a.match + static_cast<std::size_t>(dsq[i]) * (a.M + 1);
      int carry_m = kNeg16, carry_i = kNeg16, carry_d = kNeg16, carry_md = kNeg16;
      int best_match = kNeg16, best_delete_entry = kNeg16;
      for (int c = 0; c < a.M; c += 32) {
        const int k = c + lane + 1;
        const bool valid = k <= a.M;
        const short4 old = valid ? row[k] : make_short4(neg, neg, neg, 0);
        const NodeScores n = unpack_node(valid ? a.nodes[k] : a.nodes[0]);
        int diag_m = __shfl_up_sync(kAll, static_cast<int>(old.x), 1);
        int diag_i = __shfl_up_sync(kAll, static_cast<int>(old.y), 1);
        int diag_d = __shfl_up_sync(kAll, static_cast<int>(old.z), 1);
        if (lane == 0) diag_m = carry_m, diag_i = carry_i, diag_d = carry_d;
        carry_m = __shfl_sync(kAll, static_cast<int>(old.x), 31);
        carry_i = __shfl_sync(kAll, static_cast<int>(old.y), 31);
        carry_d = __shfl_sync(kAll, static_cast<int>(old.z), 31);
        int sv = clamp16(xB + n.bm);
        sv = max(sv, clamp16(diag_m + n.mm));
        sv = max(sv, clamp16(diag_i + n.im));
        sv = max(sv, clamp16(diag_d + n.dm));
        sv = clamp16(sv + (valid ? int{match[k]} : 0));
        const int ins = max(clamp16(int{old.x} + n.mi), clamp16(int{old.y} + n.ii));
        const int md = clamp16(sv + n.md);  // M_k -> D_k+1
        int del = __shfl_up_sync(kAll, md, 1);
        if (lane == 0) del = carry_md;
        carry_md = __shfl_sync(kAll, md, 31);
        if (valid) {
          best_match = max(best_match, sv);
          best_delete_entry = max(best_delete_entry, md);
          row[k] = make_short4(static_cast<short>(sv), static_cast<short>(ins),
                               static_cast<short>(k == 1 ? kNeg16 : del), 0);
        }
      }
      const int xE = __reduce_max_sync(kAll, static_cast<unsigned>(best_match + 32768)) - 32768;
      if (xE >= 32767) {
        overflow = true;
        break;
      }
      xC = static_cast<std::int16_t>(max(xC, xE + a.e_move));
      xJ = static_cast<std::int16_t>(max(xJ, xE + a.e_loop));
      xB = static_cast<std::int16_t>(max(xJ + ncj, xN + ncj));
      const int d_max =
          __reduce_max_sync(kAll, static_cast<unsigned>(best_delete_entry + 32768)) - 32768;
      if (d_max + a.dd_bound > xB) {
        __syncwarp();
        int carry = kNeg16;  // D(0): none
        for (int c = 0; c < a.M; c += 32) {
          const int k = c + lane + 1;
          const bool valid = k <= a.M;
          int A = valid ? int{row[k].z} : kNeg16;
          int B = valid ? unpack_node(a.nodes[k]).dd_in : kNeg16;
#pragma unroll
          for (int d = 1; d < 32; d *= 2) {
            const int A_before = __shfl_up_sync(kAll, A, d);
            const int B_before = __shfl_up_sync(kAll, B, d);
            if (lane >= d) {
              A = max(A, A_before + B);
              B = max(B_before + B, -(1 << 24));  // keep sums far from int overflow
            }
          }
          const int D = max(A, carry + B);
          if (valid && k >= 2) row[k].z = static_cast<short>(D);
          carry = __shfl_sync(kAll, D, 31);
        }
      }
      __syncwarp();
    }
    __syncwarp();
    if (lane == 0) a.result[item] = overflow ? kViterbiOverflow : xC;
  }
}

// Strip kernel (GpuStrategy::warp_strip): a warp per target, lane l owning the S
// consecutive nodes l*S+1 .. l*S+S in registers (M, I, D in 32-bit ints), so a row is S
// sequential node updates per lane and one shuffle of the lane's last (M, I, D, M->D)
// to the next lane, instead of a shuffle chain per 32-node chunk. Nodes past M compute
// garbage that only flows to higher nodes past M and is left out of xE and Dmax. The
// lazy-F rule as viterbi_warp_kernel: when Dmax + dd_bound > xB, each lane composes its
// strip's (max,+) maps, one warp scan gives each lane the D entering its strip, and the
// lane finishes its strip sequentially (exact by the same argument: dd <= 0, D >= -32768).
template <int S>
__global__ void __launch_bounds__(kExactBlockThreads) viterbi_strip_kernel(ViterbiArgs a) {
  const int lane = threadIdx.x % 32;
  const int first = lane * S + 1;          // this lane's first node
  const int valid_nodes = a.M - lane * S;  // nodes j < valid_nodes are <= M
  for (;;) {
    int next = 0;
    if (lane == 0) next = atomicAdd(a.next_item, 1);
    next = __shfl_sync(kAll, next, 0);
    if (next >= a.count) break;
    const int item = a.item_order[next];
    const int target = a.list[item];
    const std::int64_t offset = a.offsets[target];
    const int L = static_cast<int>(a.offsets[target + 1] - offset);
    const std::uint8_t* dsq = a.target_residues[target];
    const int ncj = a.ncj_move[item];
    int mv[S], iv[S], dv[S];
#pragma unroll
    for (int j = 0; j < S; ++j) mv[j] = iv[j] = dv[j] = kNeg16;
    const int xN = a.base;
    int xB = static_cast<std::int16_t>(xN + ncj);
    int xJ = kNeg16, xC = kNeg16;
    bool overflow = false;
    for (int i = 0; i < L; ++i) {
      const std::int16_t* match = a.match + static_cast<std::size_t>(dsq[i]) * (a.M + 1);
      // Row i-1's values of node first-1 (the previous lane's last node).
      int diag_m = __shfl_up_sync(kAll, mv[S - 1], 1);
      int diag_i = __shfl_up_sync(kAll, iv[S - 1], 1);
      int diag_d = __shfl_up_sync(kAll, dv[S - 1], 1);
      if (lane == 0) diag_m = diag_i = diag_d = kNeg16;
      int best_match = kNeg16, best_delete_entry = kNeg16;
      int md_prev = kNeg16;  // M(i, k-1) + md(k-1), within the strip
#pragma unroll
      for (int j = 0; j < S; ++j) {
        const bool valid = j < valid_nodes;
        const NodeScores n = unpack_node(__ldg(a.nodes + (valid ? first + j : 0)));
        const int emit = valid ? int{__ldg(match + first + j)} : 0;
        int sv = clamp16(xB + n.bm);
        sv = max(sv, clamp16(diag_m + n.mm));
        sv = max(sv, clamp16(diag_i + n.im));
        sv = max(sv, clamp16(diag_d + n.dm));
        sv = clamp16(sv + emit);
        const int ins = max(clamp16(mv[j] + n.mi), clamp16(iv[j] + n.ii));
        const int md = clamp16(sv + n.md);
        diag_m = mv[j];
        diag_i = iv[j];
        diag_d = dv[j];
        mv[j] = sv;
        iv[j] = ins;
        dv[j] = md_prev;  // j = 0 is set from the previous lane below
        md_prev = md;
        if (valid) {
          best_match = max(best_match, sv);
          best_delete_entry = max(best_delete_entry, md);
        }
      }
      {
        const int from_left = __shfl_up_sync(kAll, md_prev, 1);
        dv[0] = lane == 0 ? kNeg16 : from_left;  // node 1 has no D
      }
      const int xE = __reduce_max_sync(kAll, static_cast<unsigned>(best_match + 32768)) - 32768;
      if (xE >= 32767) {
        overflow = true;
        break;
      }
      xC = static_cast<std::int16_t>(max(xC, xE + a.e_move));
      xJ = static_cast<std::int16_t>(max(xJ, xE + a.e_loop));
      xB = static_cast<std::int16_t>(max(xJ + ncj, xN + ncj));
      const int d_max =
          __reduce_max_sync(kAll, static_cast<unsigned>(best_delete_entry + 32768)) - 32768;
      if (d_max + a.dd_bound > xB) {
        // The strip's map x -> max(A, x + B), x the D entering node `first`.
        int A = kNeg16, B = 0;
#pragma unroll
        for (int j = 0; j < S; ++j) {
          const int dd = j < valid_nodes ? unpack_node(__ldg(a.nodes + first + j)).dd_in : kNeg16;
          A = max(dv[j], A + dd);
          B = max(B + dd, -(1 << 24));
        }
#pragma unroll
        for (int d = 1; d < 32; d *= 2) {
          const int A_before = __shfl_up_sync(kAll, A, d);
          const int B_before = __shfl_up_sync(kAll, B, d);
          if (lane >= d) {
            A = max(A, A_before + B);
            B = max(B_before + B, -(1 << 24));
          }
        }
        int carry = __shfl_up_sync(kAll, A, 1);  // D of the previous lane's last node
        if (lane == 0) carry = kNeg16;
#pragma unroll
        for (int j = 0; j < S; ++j) {
          const int dd = j < valid_nodes ? unpack_node(__ldg(a.nodes + first + j)).dd_in : kNeg16;
          dv[j] = max(dv[j], carry + dd);
          carry = dv[j];
        }
      }
    }
    if (lane == 0) a.result[item] = overflow ? kViterbiOverflow : xC;
  }
}

// Walters et al. (2009): one thread per target, the whole row in 32-bit registers and
// global memory, interleaved across threads so that neighbouring threads' accesses
// coalesce. Same arithmetic as viterbi_filter_reference, step for step.
__global__ void viterbi_thread_kernel(ViterbiArgs a) {
  const int thread = blockIdx.x * blockDim.x + threadIdx.x;
  const int threads = gridDim.x * blockDim.x;
  const short neg = static_cast<short>(kNeg16);
  // rows[k * threads + thread], k = 0..M+1.
  const auto at = [&](int k) -> short4& {
    return a.rows[static_cast<std::size_t>(k) * threads + thread];
  };
  for (int item = thread; item < a.count; item += threads) {
    const int target = a.list[item];
    const std::int64_t offset = a.offsets[target];
    const int L = static_cast<int>(a.offsets[target + 1] - offset);
    const std::uint8_t* dsq = a.target_residues[target];
    const int ncj = a.ncj_move[item];
    for (int k = 0; k <= a.M + 1; ++k) at(k) = make_short4(neg, neg, neg, 0);
    const int xN = a.base;
    int xB = static_cast<std::int16_t>(xN + ncj);
    int xJ = kNeg16, xC = kNeg16;
    bool overflow = false;
    for (int i = 0; i < L && !overflow; ++i) {
      const std::int16_t* match = a.match + static_cast<std::size_t>(dsq[i]) * (a.M + 1);
      int best_match = kNeg16, best_delete_entry = kNeg16;
      short4 diag = at(0);  // row i-1, node k-1
      int d_next = kNeg16;  // D(i, k) from M(i, k-1)
      for (int k = 1; k <= a.M; ++k) {
        const short4 old = at(k);
        const NodeScores n = unpack_node(a.nodes[k]);
        int sv = clamp16(xB + n.bm);
        sv = max(sv, clamp16(int{diag.x} + n.mm));
        sv = max(sv, clamp16(int{diag.y} + n.im));
        sv = max(sv, clamp16(int{diag.z} + n.dm));
        sv = clamp16(sv + match[k]);
        best_match = max(best_match, sv);
        const int md = clamp16(sv + n.md);
        best_delete_entry = max(best_delete_entry, md);
        const int ins = max(clamp16(int{old.x} + n.mi), clamp16(int{old.y} + n.ii));
        at(k) = make_short4(static_cast<short>(sv), static_cast<short>(ins),
                            static_cast<short>(d_next), 0);
        d_next = md;
        diag = old;
      }
      const int xE = best_match;
      if (xE >= 32767) {
        overflow = true;
        break;
      }
      xC = static_cast<std::int16_t>(max(xC, xE + a.e_move));
      xJ = static_cast<std::int16_t>(max(xJ, xE + a.e_loop));
      xB = static_cast<std::int16_t>(max(xJ + ncj, xN + ncj));
      if (best_delete_entry + a.dd_bound > xB) {
        int previous = at(1).z;
        for (int k = 2; k <= a.M; ++k) {
          short4 cell = at(k);
          const int d = max(int{cell.z}, clamp16(previous + unpack_node(a.nodes[k]).dd_in));
          cell.z = static_cast<short>(d);
          at(k) = cell;
          previous = d;
        }
      }
    }
    a.result[item] = overflow ? kViterbiOverflow : xC;
  }
}

// Nodes per lane of viterbi_strip_kernel for a model of M nodes: the smallest strip of
// 4, 8, 16 or 32 that covers the model, 0 past 1024 nodes (viterbi_warp_kernel then).
int viterbi_strip_width(int M) {
  static_assert(32 * 32 == kViterbiStripMaxLength);
  for (int s = 4; s <= 32; s *= 2) {
    if (32 * s >= M) return s;
  }
  return 0;
}

template <typename F>
void with_strip_kernel(int width, F&& f) {
  switch (width) {
    case 4:
      f(viterbi_strip_kernel<4>);
      break;
    case 8:
      f(viterbi_strip_kernel<8>);
      break;
    case 16:
      f(viterbi_strip_kernel<16>);
      break;
    default:
      f(viterbi_strip_kernel<32>);
      break;
  }
}

// ---------------------------------------------------------------- context setup

// cudaDeviceScheduleBlockingSync must be set before the device's primary context exists;
// done once per device per process.
void select_device(int device) {
  static std::mutex mutex;
  static std::vector<int> configured;
  std::lock_guard lock(mutex);
  check(cudaSetDevice(device), "cudaSetDevice");
  if (std::find(configured.begin(), configured.end(), device) != configured.end()) return;
  const cudaError_t status = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
  if (status == cudaErrorSetOnActiveProcess) {
    cudaGetLastError();  // context already active (created elsewhere): keep its flags
  } else {
    check(status, "cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync)");
  }
  configured.push_back(device);
}

}  // namespace

// ---------------------------------------------------------------- resident store

struct GpuResidentStore::Impl {
  // Device memory is taken in chunks of this size (or a block's size, if larger).
  static constexpr std::uint64_t kChunkBytes = std::uint64_t{256} << 20;
  // Bytes after each kept block, as after a batch's residues in the slot buffers.
  static constexpr std::uint64_t kPadding = 16;
  int device = 0;
  std::uint64_t budget = 0;  // 0: half the free memory, resolved at the first block
  mutable std::mutex mutex;  // guards everything below
  std::vector<void*> chunks;
  std::uint8_t* chunk_free = nullptr;
  std::uint64_t chunk_left = 0, allocated = 0, kept = 0;
  struct Entry {
    std::int64_t first_sequence = 0;
    std::size_t targets = 0;
    std::int64_t residues = 0;
    const std::uint8_t* data = nullptr;
    bool ready = false;  // its upload has completed (the uploading slot has synchronised)
  };
  std::unordered_map<std::int64_t, Entry> entries;  // by block index

  // Room for `bytes` on the device (the caller holds the mutex, the device is current);
  // nullptr when the budget is spent or the device has no more memory.
  std::uint8_t* take(std::uint64_t bytes) {
    if (budget == 0) {
      std::size_t free = 0, total = 0;
      check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
      budget = std::max<std::uint64_t>(free / 2, 1);
    }
    if (bytes > chunk_left) {
      if (allocated >= budget || bytes > budget - allocated) return nullptr;
      const std::uint64_t size = std::min(budget - allocated, std::max(bytes, kChunkBytes));
      void* chunk = nullptr;
      if (cudaMalloc(&chunk, size) != cudaSuccess) {
        cudaGetLastError();  // out of memory: keep what is kept, take no more
        budget = allocated;
        return nullptr;
      }
      chunks.push_back(chunk);
      chunk_free = static_cast<std::uint8_t*>(chunk);
      chunk_left = size;
      allocated += size;
    }
    std::uint8_t* at = chunk_free;
    chunk_free += bytes;
    chunk_left -= bytes;
    kept += bytes - kPadding;
    return at;
  }
};

GpuResidentStore::GpuResidentStore(int device, std::uint64_t budget_bytes)
    : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  impl_->budget = budget_bytes;
}

GpuResidentStore::~GpuResidentStore() {
  if (impl_->chunks.empty()) return;  // CUDA never touched
  cudaSetDevice(impl_->device);
  for (void* chunk : impl_->chunks) cudaFree(chunk);  // no throw from a destructor
}

int GpuResidentStore::device() const {
  return impl_->device;
}
std::uint64_t GpuResidentStore::budget_bytes() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->budget;
}
std::uint64_t GpuResidentStore::kept_bytes() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->kept;
}
std::size_t GpuResidentStore::kept_blocks() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->entries.size();
}

// ---------------------------------------------------------------- engine

struct HmmGpuEngine::Impl {
  GpuResidentStore* resident = nullptr;
  int device = 0;
  std::string name;
  GpuStrategy strategy = GpuStrategy::warp_groups;
  int multiprocessors = 0;
  std::size_t shared_optin = 0;  // shared memory a block may use at most
  MsvScores msv;                 // copies of the scores the host needs to finish the scores
  ViterbiScores vit;
  ForwardScores fwd;  // the Forward parser's model, made on first use
  MsvDeviceLayout msv_layout;
  ViterbiDeviceLayout vit_layout;
  bool msv_fast_fits = true;   // the profile fits in shared memory
  bool msv_all_exact = false;  // every target through the exact kernel (see above)
  DeviceBuffer<std::int16_t> msv_words;
  DeviceBuffer<std::uint8_t> msv_costs;
  DeviceBuffer<std::int16_t> vit_match;
  DeviceBuffer<std::int16_t> vit_nodes;
  int exact_blocks = 0;
  int viterbi_warps_per_block = 0;  // > 0: Viterbi rows in shared memory
  int viterbi_resident_blocks = 0;  // blocks of viterbi_warp_kernel resident on the device
  int viterbi_strip = 0;            // warp_strip: nodes per lane (0: viterbi_warp_kernel)
  int viterbi_strip_blocks = 0;     // blocks of that strip kernel resident on the device
  // N or J -> B -> Mk (MSV, wrapped to 8 bits as msv_filter_reference does) and N/C/J move
  // (Viterbi) by target length.
  // (set_model sets them.)
  ByLength<std::uint8_t> bjbm{[](int) { return std::uint8_t{0}; }};
  ByLength<std::int16_t> ncj{[](int) { return std::int16_t{0}; }};
  std::unique_ptr<detail::ForwardGpu> forward;  // the Forward parser (hmm_forward_gpu.cu)
  std::unique_ptr<detail::CanonicalForwardGpu> canonical;  // hmm_canonical_gpu.cu
  GpuJitInfo jit;
  jit::JitFunction msv_exact_jit;  // the specialised exact MSV kernel, when jit.used
  int msv_exact_jit_blocks = 0;    // its grid: as many blocks as are resident at once

  struct Slot {
    Stream stream;
    Event msv_start, msv_fast_done, msv_done, vit_start, vit_done, fwd_start, fwd_done;
    Event canonical_start, canonical_done;
    PinnedBuffer<std::uint8_t> residues, bjbm;
    PinnedBuffer<std::int64_t> offsets;
    PinnedBuffer<int> order, result, vit_list, vit_result, exact_count;
    PinnedBuffer<std::int16_t> ncj;
    PinnedBuffer<int> vit_order;
    DeviceBuffer<int> d_vit_order, d_vit_counter;
    DeviceBuffer<std::uint8_t> d_residues, d_bjbm;
    DeviceBuffer<std::int64_t> d_offsets;
    DeviceBuffer<int> d_order, d_result, d_exact_list, d_exact_count, d_vit_list, d_vit_result;
    DeviceBuffer<std::int16_t> d_boundary, d_ncj;
    DeviceBuffer<short4> d_vit_rows;
    DeviceBuffer<std::uint8_t> d_exact_rows;  // one per slot: the slots' streams run at once
    // Per target: where the kernels read its residues (the slot's device buffer or the
    // resident store), and where the host reads them (wait_canonical_forward).
    PinnedBuffer<const std::uint8_t*> target_residues;
    DeviceBuffer<const std::uint8_t*> d_target_residues;
    std::vector<const std::uint8_t*> host_residues;
    std::vector<const std::uint8_t*> stored;  // per target: its place in the store, or nullptr
    std::vector<char> served;                 // per target: read from the store as kept
    std::vector<std::int64_t> kept_blocks;    // blocks this slot's last submit put in the store
    bool kept_queued = false;                 // ... and their uploads were all queued
    int n = 0, vit_n = 0;
    std::vector<int> lengths;
    std::vector<std::int64_t> counts;  // order_longest_first's scratch
    std::vector<FilterScore> msv_scores, vit_scores;
    GpuKernelTimes times;
  };
  // Created once the device is selected: streams and events belong to the current device.
  std::unique_ptr<Slot> slots[kSlots];

  // The blocks the slot's last submit put in the store are served from now on: the slot's
  // stream has been synchronised, their uploads are complete. Where that submit failed
  // before queuing them all, they are dropped from the store (their memory stays unused).
  void publish_kept(Slot& s) {
    if (s.kept_blocks.empty()) return;
    GpuResidentStore::Impl& r = *resident->impl_;
    std::lock_guard lock(r.mutex);
    for (std::int64_t index : s.kept_blocks) {
      if (s.kept_queued) {
        r.entries.at(index).ready = true;
      } else {
        r.entries.erase(index);
      }
    }
    s.kept_blocks.clear();
  }
};

HmmGpuEngine::HmmGpuEngine(int device, const SearchProfile& profile, GpuKernelChoice choice,
                           GpuResidentStore* resident)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (resident != nullptr && resident->device() != device) {
    throw std::invalid_argument("HmmGpuEngine: the resident store belongs to GPU " +
                                std::to_string(resident->device()) + ", not GPU " +
                                std::to_string(device));
  }
  m.resident = resident;
  m.device = device;
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0 || device >= count) {
    throw std::runtime_error("GPU " + std::to_string(device) + " does not exist (" +
                             std::to_string(count) + " CUDA devices)");
  }
  select_device(device);
  for (auto& slot : m.slots) slot = std::make_unique<Impl::Slot>();
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  m.name = prop.name;
  m.multiprocessors = prop.multiProcessorCount;
  m.shared_optin = static_cast<std::size_t>(prop.sharedMemPerBlockOptin);
  set_model(profile, choice);
}

void HmmGpuEngine::set_model(const SearchProfile& profile, GpuKernelChoice choice) {
  Impl& m = *impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  // Both slots idle: their buffers and the profile's are free to be rewritten.
  for (auto& s : m.slots) {
    check(cudaStreamSynchronize(s->stream.get()), "cudaStreamSynchronize");
    m.publish_kept(*s);
  }
  m.strategy = choice.viterbi;
  const GpuKernelChoice resolved = resolve_kernel_choice(choice, profile.M);
  m.msv = profile.msv;
  m.vit = profile.viterbi;
  m.fwd = profile.forward;
  m.bjbm = ByLength<std::uint8_t>{
      [&m](int L) { return static_cast<std::uint8_t>((m.msv.tjb(L) + m.msv.tbm) & 0xff); }};
  m.ncj = ByLength<std::int16_t>{[&m](int L) { return m.vit.ncj_move(L); }};
  m.msv_layout = build_msv_device_layout(profile.msv, resolved.msv_group_threads,
                                         resolved.msv_nodes_per_thread);
  if (choice.msv_nodes_per_thread == 0 && resolved.msv_nodes_per_thread == 32 &&
      m.msv_layout.bytes() > m.shared_optin) {
    // Chosen, not asked for: 16 nodes per thread pad less and may fit in shared memory.
    m.msv_layout = build_msv_device_layout(profile.msv, resolved.msv_group_threads, 16);
  }
  m.vit_layout = build_viterbi_device_layout(profile.viterbi);
  // Shared memory: the whole profile (all residues, all tiles).
  m.msv_fast_fits = m.msv_layout.bytes() <= m.shared_optin;
  m.msv_all_exact = !m.msv_fast_fits || choice.msv_exact_only;
  // A kernel's dynamic shared memory limit is the device's, not the engine's: engines of
  // other models (other feeders) launch the same kernels at the same time. Each launch
  // asks for what its model needs, up to the device's opt-in limit.
  const int optin = static_cast<int>(m.shared_optin);
  if (m.msv_fast_fits) {
    for (const void* kernel : {reinterpret_cast<const void*>(msv_wavefront_kernel<8, 16>),
                               reinterpret_cast<const void*>(msv_wavefront_kernel<16, 16>),
                               reinterpret_cast<const void*>(msv_wavefront_kernel<32, 16>),
                               reinterpret_cast<const void*>(msv_wavefront_kernel<8, 32>),
                               reinterpret_cast<const void*>(msv_wavefront_kernel<16, 32>),
                               reinterpret_cast<const void*>(msv_wavefront_kernel<32, 32>)}) {
      check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin),
            "cudaFuncSetAttribute");
    }
  }
  const auto upload = [](auto& buffer, const auto& host) {
    buffer.reserve(host.size());
    check(cudaMemcpy(buffer.get(), host.data(), host.size() * sizeof(host[0]),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy profile");
  };
  upload(m.msv_words, m.msv_layout.words);
  upload(m.msv_costs, m.msv_layout.costs);
  upload(m.vit_match, m.vit_layout.match);
  upload(m.vit_nodes, m.vit_layout.nodes);
  m.exact_blocks = 2 * m.multiprocessors;
  m.jit = GpuJitInfo{};
  m.msv_exact_jit = jit::JitFunction{};
  m.msv_exact_jit_blocks = 0;
  if (choice.jit) {
    m.jit.asked = true;
    if (profile.M > kMsvExactJitMaxLength) {
      m.jit.failure = "models longer than " + std::to_string(kMsvExactJitMaxLength) +
                      " nodes run the static exact MSV kernel";
    } else {
      try {
        const std::string M = std::to_string(profile.M);
        m.msv_exact_jit = jit::get_function(
            {msv_exact_kernel_source(), "msv_exact_kernel.cuh", "duet_msv_exact_jit"},
            {"-DDUET_JIT_M=" + M}, "M" + M);
        // Its row is in registers, not in a buffer sized by the grid: the grid is every
        // block that fits on the device at once (more warps in flight than the static
        // kernel's 2 blocks per multiprocessor for short models).
        m.msv_exact_jit_blocks = std::max(
            m.exact_blocks,
            jit::max_active_blocks(m.msv_exact_jit, kExactBlockThreads, 0) * m.multiprocessors);
        m.jit.used = true;
        m.jit.origin = m.msv_exact_jit.origin;
        m.jit.seconds = m.msv_exact_jit.seconds;
      } catch (const std::exception& e) {
        m.jit.failure = e.what();
      }
    }
  }
  for (auto& s : m.slots) {
    s->d_exact_rows.reserve(static_cast<std::size_t>(m.exact_blocks) * (kExactBlockThreads / 32) *
                            (profile.M + 1));
  }
  // Viterbi rows in shared memory: as many warps per block (up to 8) as fit.
  const std::size_t row_bytes = static_cast<std::size_t>(profile.M + 1) * sizeof(short4);
  m.viterbi_warps_per_block =
      static_cast<int>(std::min<std::size_t>(8, m.shared_optin / row_bytes));
  if (m.viterbi_warps_per_block > 0) {
    check(cudaFuncSetAttribute(viterbi_warp_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               optin),
          "cudaFuncSetAttribute");
  }
  int per_sm = 0;
  const int vit_threads =
      m.viterbi_warps_per_block > 0 ? m.viterbi_warps_per_block * 32 : kExactBlockThreads;
  const std::size_t vit_shared =
      m.viterbi_warps_per_block > 0 ? m.viterbi_warps_per_block * row_bytes : 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, viterbi_warp_kernel, vit_threads,
                                                      vit_shared),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  m.viterbi_resident_blocks = std::max(1, per_sm) * m.multiprocessors;
  m.viterbi_strip = 0;
  m.viterbi_strip_blocks = 0;
  if (m.strategy == GpuStrategy::warp_strip) m.viterbi_strip = viterbi_strip_width(profile.M);
  if (m.viterbi_strip > 0) {
    int strip_per_sm = 0;
    with_strip_kernel(m.viterbi_strip, [&](auto kernel) {
      check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&strip_per_sm, kernel, kExactBlockThreads,
                                                          0),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    });
    m.viterbi_strip_blocks = std::max(1, strip_per_sm) * m.multiprocessors;
  }
  // The Forward parser is made on first use (submit_forward); the canonical Forward keeps
  // its slots' buffers and takes the new model.
  m.forward.reset();
  if (m.canonical) {
    m.canonical->set_model(profile.forward);
  } else {
    m.canonical = std::make_unique<detail::CanonicalForwardGpu>(profile.forward, m.multiprocessors,
                                                                m.shared_optin);
  }
}

HmmGpuEngine::~HmmGpuEngine() {
  if (impl_) {
    cudaSetDevice(impl_->device);
    for (auto& s : impl_->slots) {
      if (s && cudaStreamSynchronize(s->stream.get()) == cudaSuccess) impl_->publish_kept(*s);
    }
  }
}

std::string HmmGpuEngine::device_name() const {
  return impl_->name;
}
int HmmGpuEngine::device() const {
  return impl_->device;
}
int HmmGpuEngine::viterbi_wave_targets() const {
  const Impl& m = *impl_;
  if (m.viterbi_strip > 0) return m.viterbi_strip_blocks * (kExactBlockThreads / 32);
  const int warps =
      m.viterbi_warps_per_block > 0 ? m.viterbi_warps_per_block : kExactBlockThreads / 32;
  return m.viterbi_resident_blocks * warps;
}
GpuKernelChoice HmmGpuEngine::kernel_choice() const {
  return {impl_->msv_layout.group_threads, impl_->strategy, impl_->msv_layout.nodes_per_thread,
          impl_->jit.used, impl_->msv_all_exact};
}
const GpuJitInfo& HmmGpuEngine::jit_info() const {
  return impl_->jit;
}

void HmmGpuEngine::submit_msv(int slot_index, const GpuTarget* targets, std::size_t count,
                              const ParallelFor& parallel, const GpuBlockSpan* blocks,
                              std::size_t block_count) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize");  // buffers free
  m.publish_kept(s);
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const auto started = Clock::now();
  const int n = static_cast<int>(count);
  s.n = n;
  s.lengths.resize(n);
  std::size_t residues = 0;
  for (int i = 0; i < n; ++i) {
    s.lengths[i] = targets[i].length;
    residues += static_cast<std::size_t>(targets[i].length);
  }
  s.residues.reserve(residues + 16);
  s.offsets.reserve(n + 1);
  s.order.reserve(n + 1);
  s.bjbm.reserve(n + 1);
  s.result.reserve(n + 1);
  s.exact_count.reserve(1);
  std::int64_t at = 0;
  for (int i = 0; i < n; ++i) {
    s.offsets[i] = at;
    at += targets[i].length;
    s.bjbm[i] = m.bjbm(targets[i].length);
  }
  s.offsets[n] = at;
  // The resident store: each whole block of the batch is served from it (kept earlier and
  // uploaded completely), or kept in it now (its upload goes to the store's memory), or,
  // when it does not fit, uploaded with the batch as without a store.
  s.stored.assign(n, nullptr);
  s.served.assign(n, 0);
  s.kept_queued = false;
  s.times.resident_residues = s.times.kept_residues = 0;
  if (m.resident != nullptr && block_count > 0) {
    GpuResidentStore::Impl& r = *m.resident->impl_;
    std::lock_guard lock(r.mutex);
    for (std::size_t b = 0; b < block_count; ++b) {
      const GpuBlockSpan& span = blocks[b];
      const std::size_t first = span.first_target, end = first + span.targets;
      if (end > count) throw std::invalid_argument("submit_msv: a block past the batch's targets");
      const std::int64_t block_residues = s.offsets[end] - s.offsets[first];
      const std::uint8_t* base = nullptr;
      bool served = false;
      const auto found = r.entries.find(span.index);
      if (found != r.entries.end()) {
        const GpuResidentStore::Impl::Entry& e = found->second;
        if (!e.ready || e.first_sequence != span.first_sequence || e.targets != span.targets ||
            e.residues != block_residues) {
          continue;  // another block of that index, or still uploading: the old way
        }
        base = e.data;
        served = true;
        s.times.resident_residues += block_residues;
      } else {
        std::uint8_t* room =
            r.take(static_cast<std::uint64_t>(block_residues) + GpuResidentStore::Impl::kPadding);
        if (room == nullptr) continue;  // does not fit: the old way
        r.entries.emplace(span.index,
                          GpuResidentStore::Impl::Entry{span.first_sequence, span.targets,
                                                        block_residues, room, false});
        s.kept_blocks.push_back(span.index);
        base = room;
        s.times.kept_residues += block_residues;
      }
      for (std::size_t i = first; i < end; ++i) {
        s.stored[i] = base + (s.offsets[i] - s.offsets[first]);
        s.served[i] = served;
      }
    }
  }
  s.times.uploaded_residues = static_cast<std::int64_t>(residues) - s.times.resident_residues;
  const auto copy = [&](std::size_t i) {
    if (targets[i].length > 0 && !s.served[i])
      std::memcpy(s.residues.get() + s.offsets[i], targets[i].residues, targets[i].length);
  };
  if (parallel) {
    parallel(static_cast<std::size_t>(n), 256, copy);
  } else {
    for (int i = 0; i < n; ++i) copy(static_cast<std::size_t>(i));
  }
  const auto copied = Clock::now();
  order_longest_first(
      n, s.order.get(), [&](int i) { return s.lengths[i]; }, s.counts);
  s.exact_count[0] = 0;
  if (m.msv_all_exact) {
    // The profile does not fit in shared memory, or the choice said so: every target takes
    // the exact kernel.
    std::copy(s.order.get(), s.order.get() + n, s.result.get());  // reused below as the list
    s.exact_count[0] = n;
  }

  s.d_residues.reserve(residues + 16);
  s.target_residues.reserve(n + 1);
  s.d_target_residues.reserve(n + 1);
  s.host_residues.resize(n);
  for (int i = 0; i < n; ++i) {
    s.target_residues[i] = s.stored[i] != nullptr ? s.stored[i] : s.d_residues.get() + s.offsets[i];
    s.host_residues[i] = s.served[i] ? targets[i].residues : s.residues.get() + s.offsets[i];
  }
  s.d_offsets.reserve(n + 1);
  s.d_order.reserve(n + 1);
  s.d_bjbm.reserve(n + 1);
  s.d_result.reserve(n + 1);
  s.d_exact_list.reserve(n + 1);
  s.d_exact_count.reserve(1);
  s.d_boundary.reserve(2 * residues + 16);
  cudaStream_t st = s.stream.get();
  // The residues not served from the store, in runs that are contiguous both in the pinned
  // buffer and where they go (the slot's buffer, or a block's place in the store).
  {
    std::int64_t run_from = 0, run_bytes = 0;
    std::uint8_t* run_to = nullptr;
    const auto flush = [&] {
      if (run_bytes > 0) {
        check(cudaMemcpyAsync(run_to, s.residues.get() + run_from,
                              static_cast<std::size_t>(run_bytes), cudaMemcpyHostToDevice, st),
              "H2D residues");
      }
      run_bytes = 0;
    };
    for (int i = 0; i < n; ++i) {
      if (s.served[i]) {
        flush();
        continue;
      }
      auto* to = const_cast<std::uint8_t*>(s.target_residues[i]);
      if (run_bytes == 0 || to != run_to + run_bytes || s.offsets[i] != run_from + run_bytes) {
        flush();
        run_from = s.offsets[i];
        run_to = to;
      }
      run_bytes += s.lengths[i];
    }
    flush();
    s.kept_queued = true;
  }
  check(cudaMemcpyAsync(s.d_target_residues.get(), s.target_residues.get(),
                        n * sizeof(const std::uint8_t*), cudaMemcpyHostToDevice, st),
        "H2D residue addresses");
  check(cudaMemcpyAsync(s.d_offsets.get(), s.offsets.get(), (n + 1) * sizeof(std::int64_t),
                        cudaMemcpyHostToDevice, st),
        "H2D offsets");
  check(
      cudaMemcpyAsync(s.d_order.get(), s.order.get(), n * sizeof(int), cudaMemcpyHostToDevice, st),
      "H2D order");
  check(cudaMemcpyAsync(s.d_bjbm.get(), s.bjbm.get(), n, cudaMemcpyHostToDevice, st), "H2D bjbm");
  check(cudaMemcpyAsync(s.d_exact_count.get(), s.exact_count.get(), sizeof(int),
                        cudaMemcpyHostToDevice, st),
        "H2D count");
  if (m.msv_all_exact) {
    check(cudaMemcpyAsync(s.d_exact_list.get(), s.result.get(), n * sizeof(int),
                          cudaMemcpyHostToDevice, st),
          "H2D list");
  }
  s.msv_start.record(st);  // kernel time only, after the uploads
  if (n > 0 && !m.msv_all_exact) {
    MsvFastArgs a{};
    a.profile = reinterpret_cast<const uint4*>(m.msv_words.get());
    a.profile_vec4 = static_cast<int>(m.msv_layout.bytes() / sizeof(uint4));
    a.tiles = m.msv_layout.tiles;
    a.pad_residue = m.msv_layout.Kp;
    a.target_residues = s.d_target_residues.get();
    a.offsets = s.d_offsets.get();
    a.order = s.d_order.get();
    a.n = n;
    a.bjbm = s.d_bjbm.get();
    a.base = m.msv.base;
    a.bias = m.msv.bias;
    a.tec = m.msv.tec;
    a.boundary = s.d_boundary.get();
    a.result = s.d_result.get();
    a.exact_list = s.d_exact_list.get();
    a.exact_count = s.d_exact_count.get();
    const int G = m.msv_layout.group_threads;
    const int groups_per_block = kMsvBlockThreads / G;
    const int blocks = (n + groups_per_block - 1) / groups_per_block;
    const std::size_t shared = m.msv_layout.bytes();
    const auto launch = [&](auto kernel) { kernel<<<blocks, kMsvBlockThreads, shared, st>>>(a); };
    if (m.msv_layout.nodes_per_thread == 16) {
      if (G == 8)
        launch(msv_wavefront_kernel<8, 16>);
      else if (G == 16)
        launch(msv_wavefront_kernel<16, 16>);
      else
        launch(msv_wavefront_kernel<32, 16>);
    } else {
      if (G == 8)
        launch(msv_wavefront_kernel<8, 32>);
      else if (G == 16)
        launch(msv_wavefront_kernel<16, 32>);
      else
        launch(msv_wavefront_kernel<32, 32>);
    }
    check_launch("msv_wavefront_kernel");
  }
  s.msv_fast_done.record(st);
  if (n > 0) {
    MsvExactArgs e{};
    e.cost = m.msv_costs.get();
    e.M = m.msv.M;
    e.target_residues = s.d_target_residues.get();
    e.offsets = s.d_offsets.get();
    e.bjbm = s.d_bjbm.get();
    e.base = m.msv.base;
    e.bias = m.msv.bias;
    e.tec = m.msv.tec;
    e.list = s.d_exact_list.get();
    e.count = s.d_exact_count.get();
    e.rows = s.d_exact_rows.get();
    e.result = s.d_result.get();
    if (m.jit.used) {
      jit::launch(m.msv_exact_jit, static_cast<unsigned>(m.msv_exact_jit_blocks),
                  kExactBlockThreads, 0, st, &e);
    } else {
      msv_exact_kernel<<<m.exact_blocks, kExactBlockThreads, 0, st>>>(e);
      check_launch("msv_exact_kernel");
    }
  }
  s.msv_done.record(st);
  check(cudaMemcpyAsync(s.result.get(), s.d_result.get(), n * sizeof(int), cudaMemcpyDeviceToHost,
                        st),
        "D2H result");
  check(cudaMemcpyAsync(s.exact_count.get(), s.d_exact_count.get(), sizeof(int),
                        cudaMemcpyDeviceToHost, st),
        "D2H count");
  s.times.submit_copy_s = seconds(copied - started);
  s.times.submit_rest_s = seconds(Clock::now() - copied);
}

const std::vector<FilterScore>& HmmGpuEngine::wait_msv(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize msv");
  m.publish_kept(s);
  s.times.msv_ms = s.msv_fast_done.ms_since(s.msv_start);
  s.times.msv_exact_ms = s.msv_done.ms_since(s.msv_fast_done);
  s.times.msv_exact_targets = s.exact_count[0];
  s.msv_scores.resize(s.n);
  const int bias = m.msv.bias, tec = m.msv.tec;
  for (int i = 0; i < s.n; ++i) {
    const int code = s.result[i];
    int xJ = 0;
    if (code == kMsvOverflow || (code >= 0 && code < kMsvExact && code >= 255 - bias)) {
      s.msv_scores[i] = {std::numeric_limits<float>::infinity(), true};
      continue;
    }
    if (code >= kMsvExact) {
      xJ = code - kMsvExact;
    } else if (code >= 0) {
      xJ = std::max(code - tec, 0);
    } else {
      throw std::logic_error("MSV kernel left a target without a score");
    }
    // As msv_filter_reference finishes: C -> T with the -3 nats of the loops.
    const int tjb = m.msv.tjb(s.lengths[i]);
    float score = static_cast<float>(xJ - tjb) - static_cast<float>(m.msv.base);
    score /= m.msv.scale;
    score -= 3.0f;
    s.msv_scores[i] = {score, false};
  }
  return s.msv_scores;
}

void HmmGpuEngine::submit_viterbi(int slot_index, const int* which, std::size_t count) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  const int n = static_cast<int>(count);
  s.vit_n = n;
  s.vit_list.reserve(n + 1);
  s.vit_result.reserve(n + 1);
  s.ncj.reserve(n + 1);
  s.vit_order.reserve(n + 1);
  for (int i = 0; i < n; ++i) {
    s.vit_list[i] = which[i];
    s.ncj[i] = m.ncj(s.lengths[which[i]]);
  }
  order_longest_first(
      n, s.vit_order.get(), [&](int i) { return s.lengths[which[i]]; }, s.counts);
  s.d_vit_order.reserve(n + 1);
  s.d_vit_counter.reserve(1);
  s.d_vit_list.reserve(n + 1);
  s.d_vit_result.reserve(n + 1);
  s.d_ncj.reserve(n + 1);
  cudaStream_t st = s.stream.get();
  if (n > 0) {
    check(cudaMemcpyAsync(s.d_vit_list.get(), s.vit_list.get(), n * sizeof(int),
                          cudaMemcpyHostToDevice, st),
          "H2D list");
    check(cudaMemcpyAsync(s.d_ncj.get(), s.ncj.get(), n * sizeof(std::int16_t),
                          cudaMemcpyHostToDevice, st),
          "H2D ncj");
    check(cudaMemcpyAsync(s.d_vit_order.get(), s.vit_order.get(), n * sizeof(int),
                          cudaMemcpyHostToDevice, st),
          "H2D order");
    check(cudaMemsetAsync(s.d_vit_counter.get(), 0, sizeof(int), st), "cudaMemsetAsync");
  }
  s.vit_start.record(st);
  if (n > 0) {
    ViterbiArgs a{};
    a.match = m.vit_match.get();
    a.nodes = reinterpret_cast<const uint4*>(m.vit_nodes.get());
    a.M = m.vit.M;
    a.base = m.vit.base;
    a.e_loop = m.vit.e_loop;
    a.e_move = m.vit.e_move;
    a.dd_bound = m.vit.dd_bound;
    a.target_residues = s.d_target_residues.get();
    a.offsets = s.d_offsets.get();
    a.list = s.d_vit_list.get();
    a.ncj_move = s.d_ncj.get();
    a.count = n;
    a.item_order = s.d_vit_order.get();
    a.next_item = s.d_vit_counter.get();
    a.result = s.d_vit_result.get();
    if (m.viterbi_strip > 0) {
      constexpr int per_block = kExactBlockThreads / 32;
      const int blocks = std::min(m.viterbi_strip_blocks, (n + per_block - 1) / per_block);
      a.rows = nullptr;
      with_strip_kernel(m.viterbi_strip,
                        [&](auto kernel) { kernel<<<blocks, kExactBlockThreads, 0, st>>>(a); });
      check_launch("viterbi_strip_kernel");
    } else if (m.strategy != GpuStrategy::thread_per_target) {
      const std::size_t row_bytes = static_cast<std::size_t>(m.vit.M + 1) * sizeof(short4);
      if (m.viterbi_warps_per_block > 0) {
        const int per_block = m.viterbi_warps_per_block;
        const int blocks = std::min(m.viterbi_resident_blocks, (n + per_block - 1) / per_block);
        a.rows = nullptr;
        viterbi_warp_kernel<<<blocks, per_block * 32, per_block * row_bytes, st>>>(a);
      } else {
        const int blocks = std::min(m.viterbi_resident_blocks,
                                    (n * 32 + kExactBlockThreads - 1) / kExactBlockThreads);
        s.d_vit_rows.reserve(static_cast<std::size_t>(blocks) * (kExactBlockThreads / 32) *
                             (m.vit.M + 1));
        a.rows = s.d_vit_rows.get();
        viterbi_warp_kernel<<<blocks, kExactBlockThreads, 0, st>>>(a);
      }
      check_launch("viterbi_warp_kernel");
    } else {
      constexpr int threads = 128;
      const int blocks = std::min(std::max(1, 16384 / threads), (n + threads - 1) / threads);
      s.d_vit_rows.reserve(static_cast<std::size_t>(blocks) * threads * (m.vit.M + 2));
      a.rows = s.d_vit_rows.get();
      viterbi_thread_kernel<<<blocks, threads, 0, st>>>(a);
      check_launch("viterbi_thread_kernel");
    }
  }
  s.vit_done.record(st);
  if (n > 0) {
    check(cudaMemcpyAsync(s.vit_result.get(), s.d_vit_result.get(), n * sizeof(int),
                          cudaMemcpyDeviceToHost, st),
          "D2H viterbi");
  }
}

const std::vector<FilterScore>& HmmGpuEngine::wait_viterbi(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize viterbi");
  s.times.viterbi_ms = s.vit_done.ms_since(s.vit_start);
  s.vit_scores.resize(s.vit_n);
  for (int i = 0; i < s.vit_n; ++i) {
    const int code = s.vit_result[i];
    if (code == kViterbiOverflow) {
      s.vit_scores[i] = {std::numeric_limits<float>::infinity(), true};
    } else if (code <= kNeg16) {
      s.vit_scores[i] = {-std::numeric_limits<float>::infinity(), false};
    } else {
      // As viterbi_filter_reference finishes.
      const int ncj = s.ncj[i];
      float score =
          static_cast<float>(code) + static_cast<float>(ncj) - static_cast<float>(m.vit.base);
      score /= m.vit.scale;
      score -= 3.0f;
      s.vit_scores[i] = {score, false};
    }
  }
  return s.vit_scores;
}

void HmmGpuEngine::submit_forward(int slot_index, const int* which, std::size_t count) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  if (!m.forward)
    m.forward = std::make_unique<detail::ForwardGpu>(m.fwd, m.multiprocessors, m.shared_optin);
  m.forward->submit(slot_index, s.stream.get(), s.d_target_residues.get(), s.d_offsets.get(),
                    s.lengths, which, static_cast<int>(count), s.fwd_start.get(), s.fwd_done.get());
}

const std::vector<float>& HmmGpuEngine::wait_forward(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize forward");
  s.times.forward_ms = s.fwd_done.ms_since(s.fwd_start);
  return m.forward->scores(slot_index);
}

void HmmGpuEngine::submit_canonical_forward(int slot_index, const int* which, std::size_t count) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  m.canonical->submit(slot_index, s.stream.get(), s.d_target_residues.get(), s.d_offsets.get(),
                      s.lengths, which, static_cast<int>(count), s.canonical_start.get(),
                      s.canonical_done.get());
}

const std::vector<float>& HmmGpuEngine::wait_canonical_forward(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize canonical forward");
  s.times.canonical_ms = s.canonical_done.ms_since(s.canonical_start);
  const std::vector<float>& scores =
      m.canonical->scores(slot_index, s.host_residues.data(), s.lengths);
  s.times.canonical_cpu_targets = m.canonical->cpu_targets(slot_index);
  return scores;
}

GpuKernelTimes HmmGpuEngine::kernel_times(int slot) const {
  return impl_->slots[slot]->times;
}

std::vector<FilterScore> HmmGpuEngine::msv(const std::vector<GpuTarget>& targets) {
  submit_msv(0, targets.data(), targets.size());
  return wait_msv(0);
}

std::vector<FilterScore> HmmGpuEngine::viterbi(const std::vector<GpuTarget>& targets) {
  submit_msv(0, targets.data(), targets.size());
  wait_msv(0);
  std::vector<int> all(targets.size());
  std::iota(all.begin(), all.end(), 0);
  submit_viterbi(0, all.data(), all.size());
  return wait_viterbi(0);
}

std::vector<float> HmmGpuEngine::forward(const std::vector<GpuTarget>& targets) {
  submit_msv(0, targets.data(), targets.size());
  wait_msv(0);
  std::vector<int> all(targets.size());
  std::iota(all.begin(), all.end(), 0);
  submit_forward(0, all.data(), all.size());
  return wait_forward(0);
}

std::vector<float> HmmGpuEngine::canonical_forward(const std::vector<GpuTarget>& targets) {
  submit_msv(0, targets.data(), targets.size());
  wait_msv(0);
  std::vector<int> all(targets.size());
  std::iota(all.begin(), all.end(), 0);
  submit_canonical_forward(0, all.data(), all.size());
  return wait_canonical_forward(0);
}

}  // namespace duet::device
