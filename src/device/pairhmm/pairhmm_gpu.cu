// The pair-HMM GPU kernels and their host side (see pairhmm_gpu.hpp).
//
// Exactness, two arithmetics:
// - ieee (every kernel): products and sums use __fmul_rn / __fadd_rn (never fused, IEEE
//   with gradual underflow since the build keeps -ftz=false); a result at or below FLT_MIN
//   in magnitude is then recomputed exactly in double and flushed as x86's FTZ does (tiny
//   when below FLT_MIN * (1 - 2^-25)), which reproduces the canonical arithmetic bit for bit;
// - ftz (intra_ftz_kernel): the GPU's own mul.rn.ftz / add.rn.ftz, used only where a probe
//   (ftz_matches_canonical, pairhmm_gpu_layout.cpp) found them equal to the canonical
//   operations on operands on both sides of x86's rule.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "device/cuda_raii.cuh"
#include "device/ftz_arithmetic.cuh"
#include "device/pairhmm/pairhmm_gpu.hpp"
#include "device/pairhmm/pairhmm_shapes.hpp"

namespace duet::device::pairhmm {

namespace {

using detail::check;

struct DevicePairs {
  const float* parameters;
  const std::uint8_t* read_bases;
  const std::uint8_t* haplotype_bases;
  const std::int32_t* rows;
  const std::int32_t* columns;
  const std::int64_t* row_offset;
  const std::int64_t* column_offset;
  const std::int64_t* scratch_offset;
  const float* initial_deletion;
  float* scratch;  // 3 * (columns + 1) floats per pair, from 3 * scratch_offset
  float* sums;
  int pairs;
};

__device__ __forceinline__ float flush_exact(double exact) {
  const double tiny = 0x1p-126 * (1.0 - 0x1p-25);
  return fabs(exact) < tiny ? copysignf(0.0f, static_cast<float>(exact)) : __double2float_rn(exact);
}
__device__ __forceinline__ float mul(float a, float b) {
  const float r = __fmul_rn(a, b);
  return (r != 0.0f && fabsf(r) <= FLT_MIN)
             ? flush_exact(static_cast<double>(a) * static_cast<double>(b))
             : r;
}
__device__ __forceinline__ float add(float a, float b) {
  const float r = __fadd_rn(a, b);
  return (r != 0.0f && fabsf(r) <= FLT_MIN)
             ? flush_exact(static_cast<double>(a) + static_cast<double>(b))
             : r;
}

// One thread per pair, row by row over a row buffer in global memory.
__global__ void inter_task_kernel(DevicePairs d) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= d.pairs) return;
  const int R = d.rows[p], C = d.columns[p];
  float* const M = d.scratch + 3 * d.scratch_offset[p];
  float* const X = M + (C + 1);
  float* const Y = X + (C + 1);
  const float initial = d.initial_deletion[p];
  for (int c = 0; c <= C; ++c) {
    M[c] = 0.0f;
    X[c] = 0.0f;
    Y[c] = initial;
  }
  const std::uint8_t* hap = d.haplotype_bases + d.column_offset[p];
  float sum = 0.0f;
  for (int r = 1; r <= R; ++r) {
    const float* q = d.parameters + 7 * (d.row_offset[p] + r - 1);
    const float mm = q[0], gm = q[1], mi = q[2], md = q[3], ge = q[4], em = q[5], ex = q[6];
    const std::uint8_t read_base = d.read_bases[d.row_offset[p] + r - 1];
    float M_diagonal = M[0], X_diagonal = X[0], Y_diagonal = Y[0];
    float M_left = 0.0f, Y_left = 0.0f;
    M[0] = X[0] = Y[0] = 0.0f;
    for (int c = 1; c <= C; ++c) {
      const float M_up = M[c], X_up = X[c], Y_up = Y[c];
      const float e = (read_base & hap[c - 1]) ? em : ex;
      const float M_new =
          mul(add(add(mul(M_diagonal, mm), mul(X_diagonal, gm)), mul(Y_diagonal, gm)), e);
      const float X_new = add(mul(M_up, mi), mul(X_up, ge));
      const float Y_new = add(mul(M_left, md), mul(Y_left, ge));
      M[c] = M_new;
      X[c] = X_new;
      Y[c] = Y_new;
      M_diagonal = M_up;
      X_diagonal = X_up;
      Y_diagonal = Y_up;
      M_left = M_new;
      Y_left = Y_new;
      if (r == R) sum = add(sum, add(M_new, X_new));
    }
  }
  d.sums[p] = sum;
}

// A lane's pair (G lanes per pair, 32 / G pairs per warp; a lane of the warp's last group
// may have none): its sizes, its three scratch rows and where its read's rows start.
template <int G>
struct LanePair {
  int p, lane;
  bool has_pair;
  int R, C;
  float *M, *X, *Y;
  std::int64_t row_offset;
  __device__ __forceinline__ LanePair(const DevicePairs& d, int thread)
      : p(thread / G),
        lane(static_cast<int>(threadIdx.x % G)),
        has_pair(p < d.pairs),
        R(has_pair ? d.rows[p] : 0),
        C(has_pair ? d.columns[p] : 0),
        M(has_pair ? d.scratch + 3 * d.scratch_offset[p] : nullptr),
        X(has_pair ? M + (C + 1) : nullptr),
        Y(has_pair ? X + (C + 1) : nullptr),
        row_offset(has_pair ? d.row_offset[p] : 0) {}
};

// A lane's part in a strip of G K rows starting at 0-based row `strip` of its pair's R rows:
// whether the pair has rows there, whether a later strip reads this one's last row (which
// the lane last_lane holds, at its row last_j), whether this lane adds the sum (the strip
// holds row R), and whether it has rows of its own.
template <int G, int K>
struct LaneStrip {
  bool has_strip, stores;
  int last_lane, last_j;
  bool holds_sum, has_rows;
  __device__ __forceinline__ LaneStrip(int strip, int R, int lane)
      : has_strip(strip < R),
        stores(strip + G * K < R),
        last_lane(has_strip ? (min(G * K, R - strip) - 1) / K : -1),
        last_j(has_strip ? (min(G * K, R - strip) - 1) % K : -1),
        holds_sum(lane == last_lane && !stores),
        has_rows(lane <= last_lane) {}
};

// The lane of row R holds the pair's sum; lane 0 writes it. Every lane of the warp calls it.
template <int G, int K>
__device__ __forceinline__ void write_sum(const DevicePairs& d, int p, bool has_pair, int R,
                                          int lane, float sum) {
  sum = __shfl_sync(0xffffffffu, sum, R > 0 ? ((R - 1) % (G * K)) / K : 0, G);
  if (lane == 0 && has_pair) d.sums[p] = sum;
}

// The parameters and bases of a lane's K rows, from 0-based row `first` of the read. Rows
// beyond the read get zeros: they compute zeros. Rows before it (negative; only
// intra_ftz_kernel has them) are pad rows that hand row 0 down unchanged: no transition to
// a match or an insertion (M and X stay zero) and a gap extension of 1, so that a pad row
// whose left value starts at K / C keeps Y = K / C in every column.
template <int K>
__device__ __forceinline__ void load_lane_rows(const DevicePairs& d, std::int64_t row_offset,
                                               int first, int R, float (&mm)[K], float (&gm)[K],
                                               float (&mi)[K], float (&md)[K], float (&ge)[K],
                                               float (&em)[K], float (&ex)[K],
                                               unsigned (&read_base)[K]) {
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const int r = first + j;
    mm[j] = gm[j] = mi[j] = md[j] = ge[j] = em[j] = ex[j] = 0.0f;
    read_base[j] = 0;
    if (r < 0) ge[j] = 1.0f;
    if (r >= 0 && r < R) {
      const float* q = d.parameters + 7 * (row_offset + r);
      mm[j] = q[0], gm[j] = q[1], mi[j] = q[2], md[j] = q[3], ge[j] = q[4], em[j] = q[5],
      ex[j] = q[6];
      read_base[j] = d.read_bases[row_offset + r];
    }
  }
}

// The end of a step: this step's values of the lane's last row go to the lane below (its
// up at its next column, its diagonal one step later), with the haplotype base; lane 0,
// whose row above is the row buffer, moves its up to its diagonal when it computed. Every
// lane of the warp calls it.
template <int G>
__device__ __forceinline__ void hand_down(float M_last_row, float X_last_row, float Y_last_row,
                                          int lane, bool active, float& M_diagonal,
                                          float& X_diagonal, float& Y_diagonal, float& M_up,
                                          float& X_up, float& Y_up, unsigned& base) {
  constexpr unsigned kAll = 0xffffffffu;
  const float M_from_above = __shfl_up_sync(kAll, M_last_row, 1, G);
  const float X_from_above = __shfl_up_sync(kAll, X_last_row, 1, G);
  const float Y_from_above = __shfl_up_sync(kAll, Y_last_row, 1, G);
  const unsigned base_from_above = __shfl_up_sync(kAll, base, 1, G);
  if (lane > 0) {
    M_diagonal = M_up;
    X_diagonal = X_up;
    Y_diagonal = Y_up;
    M_up = M_from_above;
    X_up = X_from_above;
    Y_up = Y_from_above;
    base = base_from_above;
  } else if (active) {
    M_diagonal = M_up;
    X_diagonal = X_up;
    Y_diagonal = Y_up;
  }
}

// After a row of a lane computed its cell of this step: the row below takes this row's
// previous values as its diagonal and the new ones as its up; the new ones become the
// row's left.
__device__ __forceinline__ void next_row(float M_new, float X_new, float Y_new, float& M_left,
                                         float& X_left, float& Y_left, float& Md, float& Xd,
                                         float& Yd, float& Mu, float& Xu) {
  Md = M_left;
  Xd = X_left;
  Yd = Y_left;
  Mu = M_new;
  Xu = X_new;
  M_left = M_new;
  X_left = X_new;
  Y_left = Y_new;
}

// One warp per pair. Strips of 32 rows: lane t owns row strip_start + t and at step s
// computes its column c = s - t + 1, so a step is an anti-diagonal of the strip. The row
// above (lane t - 1) hands over its values of the previous step by a shuffle; lane 0 reads
// the row above the strip from the pair's row buffer, which lane 31 writes for the next
// strip. The lane owning the read's last row accumulates the sum column by column, in the
// canonical order. Every product and sum is checked for a tiny result (the first intra-task
// kernel, kept for comparison: intra_checked).
__global__ void intra_checked_kernel(DevicePairs d) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= d.pairs) return;
  const int p = warp;
  const int R = d.rows[p], C = d.columns[p];
  float* const M = d.scratch + 3 * d.scratch_offset[p];
  float* const X = M + (C + 1);
  float* const Y = X + (C + 1);
  const float initial = d.initial_deletion[p];
  for (int c = lane; c <= C; c += 32) {
    M[c] = 0.0f;
    X[c] = 0.0f;
    Y[c] = initial;
  }
  __syncwarp();
  const std::uint8_t* hap = d.haplotype_bases + d.column_offset[p];
  float sum = 0.0f;
  for (int strip = 0; strip < R; strip += 32) {
    const int r = strip + lane + 1;  // this lane's row (1-based); beyond R: idle
    const bool active_row = r <= R;
    float mm = 0, gm = 0, mi = 0, md = 0, ge = 0, em = 0, ex = 0;
    std::uint8_t read_base = 0;
    if (active_row) {
      const float* q = d.parameters + 7 * (d.row_offset[p] + r - 1);
      mm = q[0], gm = q[1], mi = q[2], md = q[3], ge = q[4], em = q[5], ex = q[6];
      read_base = d.read_bases[d.row_offset[p] + r - 1];
    }
    const int last_lane = min(31, R - strip - 1);
    // Row above at the previous column (diagonal) and at this column (up); own left.
    float M_diagonal = 0, X_diagonal = 0, Y_diagonal = 0, M_up = 0, X_up = 0, Y_up = 0;
    float M_left = 0, X_left = 0, Y_left = 0;
    if (lane == 0) {
      M_diagonal = M[0];
      X_diagonal = X[0];
      Y_diagonal = Y[0];
    }
    __syncwarp();
    if (lane == last_lane) M[0] = X[0] = Y[0] = 0.0f;  // column 0 of rows >= 1
    for (int step = 0; step < C + 31; ++step) {
      const int c = step - lane + 1;
      const bool active = active_row && c >= 1 && c <= C;
      if (lane == 0 && active) {
        M_up = M[c];
        X_up = X[c];
        Y_up = Y[c];
      }
      float M_new = 0, X_new = 0, Y_new = 0;
      if (active) {
        const float e = (read_base & hap[c - 1]) ? em : ex;
        M_new = mul(add(add(mul(M_diagonal, mm), mul(X_diagonal, gm)), mul(Y_diagonal, gm)), e);
        X_new = add(mul(M_up, mi), mul(X_up, ge));
        Y_new = add(mul(M_left, md), mul(Y_left, ge));
        M_left = M_new;
        X_left = X_new;
        Y_left = Y_new;
        if (r == R) sum = add(sum, add(M_new, X_new));
        if (lane == last_lane) {
          M[c] = M_new;
          X[c] = X_new;
          Y[c] = Y_new;
        }
      }
      // Hand this step's values to the row below: its up at its next column, and its
      // diagonal one step later.
      unsigned unused_base = 0;  // this kernel reads the haplotype base per lane
      hand_down<32>(M_left, X_left, Y_left, lane, active, M_diagonal, X_diagonal, Y_diagonal, M_up,
                    X_up, Y_up, unused_base);
    }
    __syncwarp();
  }
  // The lane of row R holds the sum.
  const int owner = (R - 1) % 32;
  sum = __shfl_sync(0xffffffffu, sum, owner);
  if (lane == 0) d.sums[p] = sum;
}

// The intra-task kernel: the warp and strip scheme of intra_checked_kernel, with the
// per-operation tiny checks replaced by one warp vote per step.
//
// Why that is exact: every stored value (and every input: K / C, zeros, parameters) is
// zero or at least FLT_MIN, and all values are non-negative, so a sum of them is zero or at
// least FLT_MIN: sums never need a check (add() would return the IEEE sum). Only products
// can be tiny. Let pmin be the pair's smallest parameter (all seven of every row) and
// T = 4 FLT_MIN / pmin^2. When every input of a cell (diagonal, up, left) is zero or at
// least T, every product of the cell is zero or at least 4 FLT_MIN / pmin (the emission
// product: at least 4 FLT_MIN (1 - 2^-24)), so plain IEEE arithmetic gives the canonical
// result. A lane flags a step whose outputs (or, lane 0, the values read from the row
// buffer) are nonzero and below T; the warp votes, and the next two steps (the flagged
// values are used as up and left at the next step and as diagonal at the one after) run
// the checked products. With K rows per lane, a row's up comes from the row above in the
// same step, before any vote: a lane whose earlier row flagged in this step computes its
// remaining rows with checked products (a lane-local branch). "Almost never" is not
// measured: how often the checked path runs on real data is unknown.
__device__ __forceinline__ bool below(float v, unsigned safe_bits_minus_one) {
  // v >= 0: nonzero and below T, as one unsigned compare on the bit patterns.
  return __float_as_uint(v) - 1u < safe_bits_minus_one;
}

// G lanes per pair (32 / G pairs per warp), each lane owning K consecutive rows: a strip
// is G * K rows, and at each step a lane computes its K cells of one column, top to bottom
// (a row's up is the row above's new value, its diagonal the row above's previous one); only
// the lane's first row takes its up and diagonal from the lane above (shuffle) or, lane 0,
// from the row buffer. The haplotype base travels down the lanes with the values. K rows
// per lane share the per-step work (vote, shuffles, loads, loop) among K cells; small G
// wastes fewer lanes on the last strip and on each strip's G - 1 ramp steps. Rows beyond
// the read get zero parameters, so they compute zeros and never raise the flag. The warp's
// loops run to the longest of its groups, idle lanes masked, so that every lane takes part
// in the shuffles and the vote.
template <int G, int K>
__global__ void intra_task_kernel(DevicePairs d) {
  constexpr unsigned kAll = 0xffffffffu;
  constexpr int kStrip = G * K;
  const int thread = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if ((thread / 32) * (32 / G) >= d.pairs) return;  // the whole warp has no pair
  const auto [p, lane, has_pair, R, C, M, X, Y, row_offset] = LanePair<G>(d, thread);
  if (has_pair) {
    const float initial = d.initial_deletion[p];
    for (int c = lane; c <= C; c += G) {
      M[c] = 0.0f;
      X[c] = 0.0f;
      Y[c] = initial;
    }
  }
  // The threshold T of the pair.
  float pmin = 1.0f;
  for (int r = lane; r < R; r += G) {
    const float* q = d.parameters + 7 * (row_offset + r);
    for (int k = 0; k < 7; ++k) pmin = fminf(pmin, q[k]);
  }
  for (int offset = G / 2; offset > 0; offset /= 2) {
    pmin = fminf(pmin, __shfl_xor_sync(kAll, pmin, offset, G));
  }
  const double threshold =
      4.0 * static_cast<double>(FLT_MIN) / (static_cast<double>(pmin) * static_cast<double>(pmin));
  const unsigned safe = (!(pmin > 0.0f) || threshold >= static_cast<double>(FLT_MAX))
                            ? 0x7f800000u - 1u
                            : __float_as_uint(__double2float_ru(threshold)) - 1u;
  __syncwarp();
  const std::uint8_t* hap = has_pair ? d.haplotype_bases + d.column_offset[p] : nullptr;
  float sum = 0.0f;
  const int max_rows = static_cast<int>(__reduce_max_sync(kAll, static_cast<unsigned>(R)));
  for (int strip = 0; strip < max_rows; strip += kStrip) {
    const auto [has_strip, stores, last_lane, last_j, holds_sum, has_rows] =
        LaneStrip<G, K>(strip, R, lane);
    float mm[K], gm[K], mi[K], md[K], ge[K], em[K], ex[K];
    unsigned read_base[K];
    load_lane_rows<K>(d, row_offset, strip + lane * K, R, mm, gm, mi, md, ge, em, ex, read_base);
    float M_left[K], X_left[K], Y_left[K];
#pragma unroll
    for (int j = 0; j < K; ++j) M_left[j] = X_left[j] = Y_left[j] = 0.0f;
    float M_diagonal = 0, X_diagonal = 0, Y_diagonal = 0, M_up = 0, X_up = 0, Y_up = 0;
    unsigned base = 0;  // the haplotype base of this step's column
    if (lane == 0 && has_strip) {
      M_diagonal = M[0];
      X_diagonal = X[0];
      Y_diagonal = Y[0];
    }
    bool flagged = below(M_diagonal, safe) || below(X_diagonal, safe) || below(Y_diagonal, safe);
    bool pending_before = __any_sync(kAll, flagged);
    flagged = false;
    __syncwarp();
    if (lane == last_lane) M[0] = X[0] = Y[0] = 0.0f;  // column 0 of rows >= 1
    // Steps beyond last_lane's last column compute nothing.
    const int steps = static_cast<int>(
        __reduce_max_sync(kAll, static_cast<unsigned>(has_strip ? C + last_lane : 0)));
    for (int step = 0; step < steps; ++step) {
      const int c = step - lane + 1;
      const bool active = has_rows && c >= 1 && c <= C;
      if (lane == 0 && active) {
        M_up = M[c];
        X_up = X[c];
        Y_up = Y[c];
        base = hap[c - 1];
        flagged = flagged || below(M_up, safe) || below(X_up, safe) || below(Y_up, safe);
      }
      const bool pending = __any_sync(kAll, flagged);
      const bool checked = pending || pending_before;
      pending_before = pending;
      flagged = false;
      if (active) {
        float Md = M_diagonal, Xd = X_diagonal, Yd = Y_diagonal, Mu = M_up, Xu = X_up;
        float M_last = 0, X_last = 0, Y_last = 0;
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const float e = (read_base[j] & base) ? em[j] : ex[j];
          float M_new, X_new, Y_new;
          // A row's up is the row above's output of this same step, which the vote has not
          // seen: once a row of the lane flags, the rows below it take checked products.
          if (checked || flagged) {
            M_new = mul(__fadd_rn(__fadd_rn(mul(Md, mm[j]), mul(Xd, gm[j])), mul(Yd, gm[j])), e);
            X_new = __fadd_rn(mul(Mu, mi[j]), mul(Xu, ge[j]));
            Y_new = __fadd_rn(mul(M_left[j], md[j]), mul(Y_left[j], ge[j]));
          } else {
            M_new = __fmul_rn(__fadd_rn(__fadd_rn(__fmul_rn(Md, mm[j]), __fmul_rn(Xd, gm[j])),
                                        __fmul_rn(Yd, gm[j])),
                              e);
            X_new = __fadd_rn(__fmul_rn(Mu, mi[j]), __fmul_rn(Xu, ge[j]));
            Y_new = __fadd_rn(__fmul_rn(M_left[j], md[j]), __fmul_rn(Y_left[j], ge[j]));
          }
          flagged = flagged || below(M_new, safe) || below(X_new, safe) || below(Y_new, safe);
          next_row(M_new, X_new, Y_new, M_left[j], X_left[j], Y_left[j], Md, Xd, Yd, Mu, Xu);
          // The strip's last row (last_j) keeps its values for the row buffer and the sum.
          if (j == last_j) {
            M_last = M_new;
            X_last = X_new;
            Y_last = Y_new;
          }
        }
        if (lane == last_lane) {
          M[c] = M_last;
          X[c] = X_last;
          Y[c] = Y_last;
          if (holds_sum) sum = __fadd_rn(sum, __fadd_rn(M_last, X_last));
        }
      }
      hand_down<G>(M_left[K - 1], X_left[K - 1], Y_left[K - 1], lane, active, M_diagonal,
                   X_diagonal, Y_diagonal, M_up, X_up, Y_up, base);
    }
    __syncwarp();
  }
  write_sum<G, K>(d, p, has_pair, R, lane, sum);
}

// The intra-task kernel in the GPU's own flush-to-zero arithmetic (mul_ftz, add_ftz), used
// where probe_ftz_arithmetic finds it equal to the canonical one: no vote, no threshold, no
// checked products. The same lanes, rows per lane and strips as intra_task_kernel, and:
// - the first strip reads no row buffer (the row above it is row 0: M = X = 0, Y = K / C in
//   every column) and the pair's scratch is never initialised; the last strip of a pair
//   stores nothing (no strip reads it);
// - lane 0 loads the row above and the haplotype base one column ahead of use (loading the
//   bases 16 at a time, 16 columns ahead, was measured slower: bench/RESULTS.md);
// - later strips start from a zero diagonal (column 0 of rows >= 1 is zero), so the row
//   buffer holds columns 1..C only;
// - the read's rows are shifted down by (K - R % K) % K pad rows (load_lane_rows), so that
//   row R is the last row of its lane: the row the buffer and the sum take is always a
//   lane's row K - 1, and no row of the step has to test whether it is that row. The pad
//   rows replace the rows beyond R that a lane of the last strip would compute otherwise:
//   the strips and steps are the same;
// - a step has no branch that its lanes take apart other than `active` (the ramps): lane
//   0's loads, the last lane's stores and the sum are predicated;
// - the step loop is unrolled twice where that measured faster on the H100 (10s.in x64,
//   2026-11-27, bench/RESULTS.md: 8x4 605 -> 722 GCUPS, 16x4 545 -> 717); with fewer lanes
//   per pair, or 8 rows per lane, it was slower (8x8 732 -> 723, 4x4 340 -> 285).
__host__ __device__ constexpr int ftz_step_unroll(int G, int K) {
  return (G >= 16 || (G == 8 && K == 4)) ? 2 : 1;
}

template <int G, int K>
__global__ void intra_ftz_kernel(DevicePairs d) {
  constexpr unsigned kAll = 0xffffffffu;
  constexpr int kStrip = G * K;
  const int thread = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if ((thread / 32) * (32 / G) >= d.pairs) return;  // the whole warp has no pair
  const auto [p, lane, has_pair, R, C, M, X, Y, row_offset] = LanePair<G>(d, thread);
  const int pad = (K - R % K) % K;
  const int rows = R + pad;  // the read's rows after the pad rows
  const float initial = has_pair ? d.initial_deletion[p] : 0.0f;
  const std::uint8_t* hap = has_pair ? d.haplotype_bases + d.column_offset[p] : nullptr;
  float sum = 0.0f;
  const int max_rows = static_cast<int>(__reduce_max_sync(kAll, static_cast<unsigned>(rows)));
  for (int strip = 0; strip < max_rows; strip += kStrip) {
    const bool first = strip == 0;
    const auto [has_strip, stores, last_lane, last_j, holds_sum, has_rows] =
        LaneStrip<G, K>(strip, rows, lane);
    float mm[K], gm[K], mi[K], md[K], ge[K], em[K], ex[K];
    unsigned read_base[K];
    const int first_row = strip + lane * K - pad;  // negative: pad rows first
    load_lane_rows<K>(d, row_offset, first_row, R, mm, gm, mi, md, ge, em, ex, read_base);
    float M_left[K], X_left[K], Y_left[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
      M_left[j] = X_left[j] = 0.0f;
      Y_left[j] = first_row + j < 0 ? initial : 0.0f;  // column 0: row 0's for a pad row
    }
    // The row above at column 0 (the diagonal of column 1): row 0's in the first strip.
    const bool top = lane == 0;
    float M_diagonal = 0, X_diagonal = 0, Y_diagonal = (top && first) ? initial : 0.0f;
    // The row above and the haplotype base at this step's column (lane 0: column 1, from
    // row 0 or the row buffer; the other lanes take theirs from the lane above).
    float M_up = 0, X_up = 0, Y_up = (top && first) ? initial : 0.0f;
    unsigned base = 0;
    // Lane 0: the same at its next column, loaded one step ahead of use.
    float M_next = 0, X_next = 0, Y_next = first ? initial : 0.0f;
    unsigned base_next = 0;
    if (top && has_strip) {
      if (!first) {
        M_up = M[1];
        X_up = X[1];
        Y_up = Y[1];
        if (C > 1) {
          M_next = M[2];
          X_next = X[2];
          Y_next = Y[2];
        }
      }
      base = hap[0];
      if (C > 1) base_next = hap[1];
    }
    // Steps beyond last_lane's last column compute nothing.
    const int steps = static_cast<int>(
        __reduce_max_sync(kAll, static_cast<unsigned>(has_strip ? C + last_lane : 0)));
    constexpr int kStepUnroll = ftz_step_unroll(G, K);
#pragma unroll kStepUnroll
    for (int step = 0; step < steps; ++step) {
      const int c = step - lane + 1;
      const bool active = has_rows && c >= 1 && c <= C;
      if (active) {
        float Md = M_diagonal, Xd = X_diagonal, Yd = Y_diagonal, Mu = M_up, Xu = X_up;
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const float e = (read_base[j] & base) ? em[j] : ex[j];
          const float M_new = mul_ftz(
              add_ftz(add_ftz(mul_ftz(Md, mm[j]), mul_ftz(Xd, gm[j])), mul_ftz(Yd, gm[j])), e);
          const float X_new = add_ftz(mul_ftz(Mu, mi[j]), mul_ftz(Xu, ge[j]));
          const float Y_new = add_ftz(mul_ftz(M_left[j], md[j]), mul_ftz(Y_left[j], ge[j]));
          next_row(M_new, X_new, Y_new, M_left[j], X_left[j], Y_left[j], Md, Xd, Yd, Mu, Xu);
        }
      }
      // The last lane's row K - 1 is the strip's last row: the row buffer's, or the sum's.
      const bool last = active && lane == last_lane;
      if (last && stores) {
        M[c] = M_left[K - 1];
        X[c] = X_left[K - 1];
        Y[c] = Y_left[K - 1];
      }
      const float sum_next = add_ftz(sum, add_ftz(M_left[K - 1], X_left[K - 1]));
      sum = (last && holds_sum) ? sum_next : sum;
      // This step's last row goes to the lane below: its up at its next column, and its
      // diagonal one step later. Lane 0 takes the row above from what it loaded instead
      // (its values past column C are never used, so it moves them unconditionally).
      const float M_above = __shfl_up_sync(kAll, M_left[K - 1], 1, G);
      const float X_above = __shfl_up_sync(kAll, X_left[K - 1], 1, G);
      const float Y_above = __shfl_up_sync(kAll, Y_left[K - 1], 1, G);
      const unsigned base_above = __shfl_up_sync(kAll, base, 1, G);
      M_diagonal = M_up;
      X_diagonal = X_up;
      Y_diagonal = Y_up;
      M_up = top ? M_next : M_above;
      X_up = top ? X_next : X_above;
      Y_up = top ? Y_next : Y_above;
      base = top ? base_next : base_above;
      if (top && has_rows && c + 2 <= C) {  // lane 0's column after next
        if (!first) {
          M_next = M[c + 2];
          X_next = X[c + 2];
          Y_next = Y[c + 2];
        }
        base_next = hap[c + 1];
      }
    }
    __syncwarp();
  }
  write_sum<G, K>(d, p, has_pair, rows, lane, sum);
}

// Each row's seven parameters from its quality word (expand_row, pairhmm_gpu.hpp).
__global__ void expand_rows_kernel(const std::uint32_t* qualities, const float* tables,
                                   float* parameters, std::size_t rows) {
  const std::size_t r = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < rows) expand_row(qualities[r], tables, parameters + 7 * r);
}

// Runs the GPU's flush-to-zero product and sum on operand pairs (the probe).
__global__ void ftz_probe_kernel(const float* a, const float* b, float* products, float* sums,
                                 int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  products[i] = mul_ftz(a[i], b[i]);
  sums[i] = add_ftz(a[i], b[i]);
}

// Launches the G x K kernel of the arithmetic (kFtz: intra_ftz_kernel) when the shape is
// G x K.
template <int G, int K, bool kFtz = false>
bool launch_if(IntraShape shape, unsigned pairs, cudaStream_t s, const DevicePairs& d) {
  if (shape.lanes != G || shape.rows_per_lane != K) return false;
  constexpr unsigned kThreads = 128;
  const unsigned blocks = (pairs * G + kThreads - 1) / kThreads;
  if constexpr (kFtz) {
    intra_ftz_kernel<G, K><<<blocks, kThreads, 0, s>>>(d);
  } else {
    intra_task_kernel<G, K><<<blocks, kThreads, 0, s>>>(d);
  }
  return true;
}
template <int G, int K>
bool launch_ftz_if(IntraShape shape, unsigned pairs, cudaStream_t s, const DevicePairs& d) {
  return launch_if<G, K, true>(shape, pairs, s, d);
}

[[noreturn]] void not_compiled(IntraShape shape, const char* arithmetic) {
  throw std::invalid_argument("pair-HMM intra-task shape " + std::to_string(shape.lanes) + "x" +
                              std::to_string(shape.rows_per_lane) + " is not compiled for " +
                              arithmetic + " arithmetic");
}

void launch_intra_ftz(IntraShape shape, unsigned pairs, cudaStream_t s, const DevicePairs& d) {
  const bool launched =
      launch_ftz_if<32, 1>(shape, pairs, s, d) || launch_ftz_if<16, 1>(shape, pairs, s, d) ||
      launch_ftz_if<8, 1>(shape, pairs, s, d) || launch_ftz_if<32, 2>(shape, pairs, s, d) ||
      launch_ftz_if<16, 2>(shape, pairs, s, d) || launch_ftz_if<8, 2>(shape, pairs, s, d) ||
      launch_ftz_if<4, 2>(shape, pairs, s, d) || launch_ftz_if<32, 4>(shape, pairs, s, d) ||
      launch_ftz_if<16, 4>(shape, pairs, s, d) || launch_ftz_if<8, 4>(shape, pairs, s, d) ||
      launch_ftz_if<4, 4>(shape, pairs, s, d) || launch_ftz_if<8, 8>(shape, pairs, s, d);
  if (!launched) not_compiled(shape, "ftz");
}

void launch_intra(IntraShape shape, unsigned pairs, cudaStream_t s, const DevicePairs& d) {
  const bool launched =
      launch_if<32, 1>(shape, pairs, s, d) || launch_if<16, 1>(shape, pairs, s, d) ||
      launch_if<8, 1>(shape, pairs, s, d) || launch_if<16, 2>(shape, pairs, s, d) ||
      launch_if<8, 2>(shape, pairs, s, d) || launch_if<4, 2>(shape, pairs, s, d) ||
      launch_if<8, 4>(shape, pairs, s, d) || launch_if<4, 4>(shape, pairs, s, d);
  if (!launched) not_compiled(shape, "ieee");
}

// Where each array of a batch lies in one allocation (host pinned and device alike), every
// array aligned to 256 bytes.
struct Section {
  std::size_t at = 0, bytes = 0;
};
struct Arena {
  std::size_t bytes = 0;
  template <class T>
  Section add(std::size_t n) {
    const Section section{bytes, n * sizeof(T)};
    bytes += (section.bytes + 255) / 256 * 256;
    return section;
  }
};
template <class T>
T* at(char* base, const Section& section) {
  return reinterpret_cast<T*>(base + section.at);
}

}  // namespace

// One slot: a stream, its events, and the buffers kept between batches (grown as needed):
// the pinned host copy of what is staged (the inputs in, the sums out) and the device
// arena (inputs, sums and the kernels' scratch rows). A slot holds one batch from submit to
// finish, so that batches on different slots overlap.
struct Slot {
  detail::Stream stream;
  detail::Event start, kernel_start, kernel_end, end;
  detail::PinnedBuffer<char> host;
  detail::DeviceBuffer<char> buffers;
  bool busy = false;
  std::size_t pairs = 0, sums_at = 0;  // of the batch in flight: sums in the pinned buffer
  double staging = 0, choice = 0;      // host seconds spent staging it, choosing its shape
};

struct PairhmmGpu::State {
  int device = 0;
  int sms = kMeasuredSms;  // the device's, for the shape choice
  std::vector<std::unique_ptr<Slot>> slots;
};

namespace {
// Waits for every slot's work, then frees what the slots hold.
void release(std::vector<std::unique_ptr<Slot>>& slots) {
  for (const auto& s : slots) cudaStreamSynchronize(s->stream.get());
  slots.clear();
}
}  // namespace

PairhmmGpu::PairhmmGpu(int device, int slots) : state_(new State) {
  state_->device = device;
  ftz_costs_ = measured_shape_costs(Arithmetic::ftz);
  ieee_costs_ = measured_shape_costs(Arithmetic::ieee);
  try {
    if (slots < 1) throw std::invalid_argument("PairhmmGpu: at least one slot");
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaDeviceGetAttribute(&state_->sms, cudaDevAttrMultiProcessorCount, device),
          "cudaDeviceGetAttribute");
    for (int i = 0; i < slots; ++i) state_->slots.push_back(std::make_unique<Slot>());
  } catch (...) {
    release(state_->slots);
    delete state_;
    throw;
  }
}

PairhmmGpu::~PairhmmGpu() {
  cudaSetDevice(state_->device);
  release(state_->slots);
  delete state_;
}

void PairhmmGpu::set_shape_costs(Arithmetic arithmetic, std::vector<ShapeCost> costs) {
  if (arithmetic != Arithmetic::ftz && arithmetic != Arithmetic::ieee)
    throw std::invalid_argument("PairhmmGpu::set_shape_costs: ftz or ieee");
  if (costs.empty()) throw std::invalid_argument("PairhmmGpu::set_shape_costs: no shapes");
  for (const ShapeCost& c : costs) {
    if (!intra_shape_compiled(c.shape, arithmetic))
      not_compiled(c.shape, arithmetic_name(arithmetic));
  }
  (arithmetic == Arithmetic::ftz ? ftz_costs_ : ieee_costs_) = std::move(costs);
}

std::string PairhmmGpu::name() const {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, state_->device), "cudaGetDeviceProperties");
  return prop.name;
}

int PairhmmGpu::slots() const {
  return static_cast<int>(state_->slots.size());
}

Arithmetic PairhmmGpu::arithmetic_used() const {
  if (arithmetic_ != Arithmetic::automatic) return arithmetic_;
  return ftz_matches_canonical(state_->device) ? Arithmetic::ftz : Arithmetic::ieee;
}

void device_ftz_operations(int device, const std::vector<float>& a, const std::vector<float>& b,
                           std::vector<float>& products, std::vector<float>& sums) {
  if (a.size() != b.size()) throw std::invalid_argument("device_ftz_operations: sizes differ");
  const std::size_t n = a.size();
  products.assign(n, 0.0f);
  sums.assign(n, 0.0f);
  if (n == 0) return;
  check(cudaSetDevice(device), "cudaSetDevice");
  detail::DeviceBuffer<float> memory;  // a, b, products, sums
  memory.reserve(4 * n);
  float* const buffer = memory.get();
  check(cudaMemcpy(buffer, a.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy in");
  check(cudaMemcpy(buffer + n, b.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy in");
  constexpr unsigned kThreads = 256;
  ftz_probe_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(
      buffer, buffer + n, buffer + 2 * n, buffer + 3 * n, static_cast<int>(n));
  check(cudaGetLastError(), "probe launch");
  check(cudaMemcpy(products.data(), buffer + 2 * n, n * sizeof(float), cudaMemcpyDeviceToHost),
        "copy out");
  check(cudaMemcpy(sums.data(), buffer + 3 * n, n * sizeof(float), cudaMemcpyDeviceToHost),
        "copy out");
}

namespace {
Slot& slot_at(std::vector<std::unique_ptr<Slot>>& slots, int slot) {
  if (slot < 0 || static_cast<std::size_t>(slot) >= slots.size()) {
    throw std::out_of_range("PairhmmGpu: no slot " + std::to_string(slot));
  }
  return *slots[static_cast<std::size_t>(slot)];
}
}  // namespace

void PairhmmGpu::submit(int slot, const PairBatch& b, Kernel kernel, const ParallelFor& parallel) {
  Slot& sl = slot_at(state_->slots, slot);
  if (sl.busy) throw std::logic_error("PairhmmGpu::submit: slot still holds a batch");
  check(cudaSetDevice(state_->device), "cudaSetDevice");
  const std::size_t n = b.pairs();
  // The intra-task shape is chosen on the host before any timing starts.
  const Arithmetic arithmetic =
      kernel == Kernel::intra_task ? arithmetic_used() : Arithmetic::automatic;
  IntraShape shape = shape_;
  const auto choice_start = std::chrono::steady_clock::now();
  if (kernel == Kernel::intra_task && shape.lanes <= 0 && n > 0)
    shape = choose_intra_shape(b, arithmetic == Arithmetic::ftz ? ftz_costs_ : ieee_costs_,
                               state_->sms, parallel);
  if (kernel == Kernel::intra_task && n > 0) last_shape_ = shape;
  sl.choice =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - choice_start).count();
  sl.pairs = n;
  sl.staging = 0;
  if (n == 0) {  // nothing to run: finish returns at once
    sl.busy = true;
    return;
  }
  const auto staging_start = std::chrono::steady_clock::now();
  // Staged (pinned, copied in): the inputs; then the sums (copied out); the scratch lives
  // on the device only.
  if (b.tables.size() != kRowTableFloats) {
    throw std::invalid_argument("PairhmmGpu::submit: the batch has no row tables");
  }
  Arena in;
  const Section qualities = in.add<std::uint32_t>(b.qualities.size()),
                tables = in.add<float>(b.tables.size()),
                read_bases = in.add<std::uint8_t>(b.read_bases.size()),
                haplotype_bases = in.add<std::uint8_t>(b.haplotype_bases.size()),
                rows = in.add<std::int32_t>(n), columns = in.add<std::int32_t>(n),
                row_offset = in.add<std::int64_t>(n), column_offset = in.add<std::int64_t>(n),
                scratch_offset = in.add<std::int64_t>(n), initial = in.add<float>(n);
  const std::size_t in_bytes = in.bytes;
  Arena all = in;
  const Section sums_d = all.add<float>(n);
  const std::size_t staged_bytes = all.bytes;
  const Section scratch = all.add<float>(3 * static_cast<std::size_t>(b.scratch_columns));
  const Section parameters = all.add<float>(7 * b.read_rows());  // expanded on the device
  sl.host.reserve(staged_bytes);
  sl.buffers.reserve(all.bytes);
  char* const host = sl.host.get();
  char* const dev = sl.buffers.get();
  // The copies into the pinned buffer, in pieces of at most 4 MB (run on several threads
  // with `parallel`).
  struct Copy {
    char* to;
    const void* from;
    std::size_t bytes;
  };
  std::vector<Copy> copies;
  const auto stage = [&](const Section& to, const auto& from) {
    constexpr std::size_t kPiece = std::size_t{4} << 20;
    for (std::size_t done = 0; done < to.bytes; done += kPiece) {
      copies.push_back({host + to.at + done, reinterpret_cast<const char*>(from.data()) + done,
                        std::min(kPiece, to.bytes - done)});
    }
  };
  stage(qualities, b.qualities);
  stage(tables, b.tables);
  stage(read_bases, b.read_bases);
  stage(haplotype_bases, b.haplotype_bases);
  stage(rows, b.rows);
  stage(columns, b.columns);
  stage(row_offset, b.row_offset);
  stage(column_offset, b.column_offset);
  stage(scratch_offset, b.scratch_offset);
  stage(initial, b.initial_deletion);
  const auto copy = [&](std::size_t k) {
    std::memcpy(copies[k].to, copies[k].from, copies[k].bytes);
  };
  if (parallel) {
    parallel(copies.size(), 1, copy);
  } else {
    for (std::size_t k = 0; k < copies.size(); ++k) copy(k);
  }
  sl.staging =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - staging_start).count();
  cudaStream_t s = sl.stream.get();
  // From here the stream may hold work reading the pinned buffer: the slot is busy (finish
  // or abandon waits for it) even if a later call fails.
  sl.busy = true;
  sl.sums_at = sums_d.at;
  sl.start.record(s);
  check(cudaMemcpyAsync(dev, host, in_bytes, cudaMemcpyHostToDevice, s), "copy in");
  const DevicePairs d{at<const float>(dev, parameters),
                      at<const std::uint8_t>(dev, read_bases),
                      at<const std::uint8_t>(dev, haplotype_bases),
                      at<const std::int32_t>(dev, rows),
                      at<const std::int32_t>(dev, columns),
                      at<const std::int64_t>(dev, row_offset),
                      at<const std::int64_t>(dev, column_offset),
                      at<const std::int64_t>(dev, scratch_offset),
                      at<const float>(dev, initial),
                      at<float>(dev, scratch),
                      at<float>(dev, sums_d),
                      static_cast<int>(n)};
  sl.kernel_start.record(s);
  constexpr int kThreads = 128;
  if (b.read_rows() > 0) {
    expand_rows_kernel<<<static_cast<unsigned>((b.read_rows() + kThreads - 1) / kThreads), kThreads,
                         0, s>>>(at<const std::uint32_t>(dev, qualities),
                                 at<const float>(dev, tables), at<float>(dev, parameters),
                                 b.read_rows());
  }
  if (kernel == Kernel::inter_task) {
    inter_task_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, s>>>(d);
  } else if (kernel == Kernel::intra_checked) {
    intra_checked_kernel<<<static_cast<unsigned>((n * 32 + kThreads - 1) / kThreads), kThreads, 0,
                           s>>>(d);
  } else if (arithmetic == Arithmetic::ftz) {
    launch_intra_ftz(shape, static_cast<unsigned>(n), s, d);
  } else {
    launch_intra(shape, static_cast<unsigned>(n), s, d);
  }
  check(cudaGetLastError(), "kernel launch");
  sl.kernel_end.record(s);
  check(cudaMemcpyAsync(host + sums_d.at, dev + sums_d.at, sums_d.bytes, cudaMemcpyDeviceToHost, s),
        "copy out");
  sl.end.record(s);
}

void PairhmmGpu::finish(int slot, float* sums, SlotTimes* times) {
  Slot& sl = slot_at(state_->slots, slot);
  if (!sl.busy) throw std::logic_error("PairhmmGpu::finish: slot holds no batch");
  if (times) *times = SlotTimes{};
  if (sl.pairs == 0) {
    sl.busy = false;
    return;
  }
  check(cudaSetDevice(state_->device), "cudaSetDevice");
  const cudaError_t done = cudaEventSynchronize(sl.end.get());
  if (done != cudaSuccess) cudaStreamSynchronize(sl.stream.get());
  sl.busy = false;
  check(done, "kernel");
  std::memcpy(sums, sl.host.get() + sl.sums_at, sl.pairs * sizeof(float));
  const float compute = sl.kernel_end.ms_since(sl.kernel_start);
  const float total = sl.end.ms_since(sl.start);
  if (times) {
    *times = SlotTimes{sl.staging, compute / 1e3, (total - compute) / 1e3 + sl.staging, sl.choice};
  }
}

void PairhmmGpu::abandon() noexcept {
  cudaSetDevice(state_->device);
  for (const auto& s : state_->slots) {
    if (s->busy && s->pairs > 0) cudaStreamSynchronize(s->stream.get());
    s->busy = false;
  }
}

std::vector<float> PairhmmGpu::forward_sums(const PairBatch& b, Kernel kernel,
                                            double* kernel_seconds, double* transfer_seconds) {
  std::vector<float> sums(b.pairs());
  SlotTimes times;
  try {
    submit(0, b, kernel);
    finish(0, sums.data(), &times);
  } catch (...) {
    abandon();
    throw;
  }
  if (kernel_seconds) *kernel_seconds = times.kernel;
  if (transfer_seconds) *transfer_seconds = times.transfer;
  return sums;
}

}  // namespace duet::device::pairhmm
