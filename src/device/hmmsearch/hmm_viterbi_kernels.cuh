// The Viterbi filter kernels: a warp per target, a warp per target with nodes in registers (strip),
// and a thread per target. Part of hmm_gpu.cu's translation unit: included there only, inside its
// anonymous namespace, after hmm_kernel_constants.cuh.
#pragma once

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
  const int* item_order;       // list entries, longest target first (warp strategy)
  int* next_item;              // work counter (warp strategy), zero at launch
  short4* rows;                // warp strategy: (M+1) per warp; thread strategy: see kernel
  int* result;                 // per list entry: xC, or kViterbiOverflow
  const int4* strip_emit;      // strip strategy: viterbi_strip_emissions
  const uint4* strip_records;  // strip strategy: viterbi_strip_records
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
// One model's Viterbi score system, as the warp kernels read it.
struct ViterbiModelArgs {
  const std::int16_t* match;  // [x][k], k = 0..M
  const uint4* nodes;         // per node: bm mm im dm md mi ii dd_in (int16 each)
  int M;
  int base, e_loop, e_move, dd_bound;
};

// One target on the calling warp: returns xC, or kViterbiOverflow. `row`: M+1 cells.
__device__ __forceinline__ int viterbi_warp_target(const ViterbiModelArgs& a,
                                                   const std::uint8_t* dsq, int L, int ncj,
                                                   short4* row) {
  const int lane = threadIdx.x % 32;
  const short neg = static_cast<short>(kNeg16);
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
  return overflow ? kViterbiOverflow : xC;
}

__global__ void __launch_bounds__(kExactBlockThreads) viterbi_warp_kernel(ViterbiArgs a) {
  extern __shared__ short4 shared_rows[];
  const int lane = threadIdx.x % 32;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  // The row in shared memory when the launch gave some (a.rows == nullptr), else global.
  short4* row = a.rows == nullptr
                    ? shared_rows + static_cast<std::size_t>(threadIdx.x / 32) * (a.M + 1)
                    : a.rows + static_cast<std::size_t>(warp) * (a.M + 1);
  const ViterbiModelArgs model{a.match, a.nodes, a.M, a.base, a.e_loop, a.e_move, a.dd_bound};
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
    const int result =
        viterbi_warp_target(model, a.target_residues[target], L, a.ncj_move[item], row);
    if (lane == 0) a.result[item] = result;
  }
}

// ---------------------------------------------------------------- Viterbi, many models

// One model of a set (HmmGpuEngine::set_models): where its layout starts in the set's
// match scores (int16 units) and node records (16-byte units), and its constants.
struct ViterbiSetModel {
  std::int64_t match_at = 0, nodes_at = 0;
  int M = 0, base = 0, e_loop = 0, e_move = 0, dd_bound = 0;
  // Its strip tables (viterbi_set_strip_kernel), in 16-byte units; a model without them
  // (past 1,024 nodes) runs on viterbi_set_warp_kernel.
  std::int64_t strip_emit_at = 0, strip_records_at = 0;
};

// Items (a model of the set, a target of the slot's batch), each with its N/C/J move;
// warps take them from a counter, longest targets first, as viterbi_warp_kernel.
struct ViterbiSetArgs {
  const std::int16_t* match;
  const uint4* nodes;
  const ViterbiSetModel* models;
  const std::uint8_t* const* target_residues;
  const std::int64_t* offsets;
  const int* list;         // per item: its target
  const int* item_models;  // per item: its model
  const std::int16_t* ncj_move;
  int count;
  const int* item_order;
  int* next_item;
  short4* rows;     // nullptr: rows in shared memory; else rows_stride per warp
  int rows_stride;  // the set's longest model + 1
  int* result;
  const int4* strip_emit;  // the models' strip tables, at ViterbiSetModel::strip_*_at
  const uint4* strip_records;
};

__global__ void __launch_bounds__(kExactBlockThreads) viterbi_set_warp_kernel(ViterbiSetArgs a) {
  extern __shared__ short4 shared_rows[];
  const int lane = threadIdx.x % 32;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  short4* row = a.rows == nullptr
                    ? shared_rows + static_cast<std::size_t>(threadIdx.x / 32) * a.rows_stride
                    : a.rows + static_cast<std::size_t>(warp) * a.rows_stride;
  for (;;) {
    int next = 0;
    if (lane == 0) next = atomicAdd(a.next_item, 1);
    next = __shfl_sync(kAll, next, 0);
    if (next >= a.count) break;
    const int item = a.item_order[next];
    const int target = a.list[item];
    const ViterbiSetModel& d = a.models[a.item_models[item]];
    const ViterbiModelArgs model{
        a.match + d.match_at, a.nodes + d.nodes_at, d.M, d.base, d.e_loop, d.e_move, d.dd_bound};
    const std::int64_t offset = a.offsets[target];
    const int L = static_cast<int>(a.offsets[target + 1] - offset);
    const int result =
        viterbi_warp_target(model, a.target_residues[target], L, a.ncj_move[item], row);
    if (lane == 0) a.result[item] = result;
  }
}

// Strip kernel (GpuStrategy::warp_strip): a warp per target, lane l owning the S
// consecutive nodes l*S+1 .. l*S+S in registers (M, I, D in 32-bit ints), so a row is S
// independent node updates per lane and one shuffle of the lane's last (M, I, D, M->D)
// to the next lane.
// - Arithmetic: viterbi_filter_reference saturates every sum to 16 bits. Transitions are
//   <= 0, so only the lower bound can bite on them, and max(clamp(a), clamp(b)) =
//   clamp(max(a, b)): each cell is a chain of Hopper's fused add-max (DPX
//   __viaddmax_s32(a, b, c) = max(a + b, c)) seeded with -32768, in 32-bit ints, where no
//   sum wraps. The upper bound only bites on M after its emission; a row whose M reaches
//   32767 is the reference's overflow either way, and that row's other values are not used.
// - Tables interleaved across the lanes (viterbi_strip_emissions, viterbi_strip_records):
//   a warp's loads coalesce. A lane's S emissions of a row are S/4 16-byte loads. Its S
//   node records (8 int16 each) are read once per target and their transition scores held
//   in registers as ints when S <= 16; past that they are read and unpacked per row (a
//   field is one PRMT or shift). D->D is read when the lazy-F pass runs.
// - Nodes past M have emission kViterbiStripPadEmission and the record of node 0 (every
//   field -32768): their M, I and M->D stay at -32768 and never reach xE or Dmax, and
//   they only feed nodes past M.
// - The lazy-F rule as viterbi_warp_kernel: when Dmax + dd_bound > xB, each lane composes
//   its strip's (max,+) maps, one warp scan gives each lane the D entering its strip, and
//   the lane finishes its strip sequentially (exact by the same argument: dd <= 0,
//   D >= -32768).
__device__ __forceinline__ int low16(unsigned v) {  // bits 0..15, sign-extended
  unsigned r;
  asm("prmt.b32 %0, %1, 0, 0x9910;" : "=r"(r) : "r"(v));
  return static_cast<int>(r);
}
__device__ __forceinline__ int high16(unsigned v) {  // bits 16..31, sign-extended
  return static_cast<int>(v) >> 16;
}

// One model's strip tables and constants, as viterbi_strip_target reads them.
struct ViterbiStripModel {
  const int4* emit;      // viterbi_strip_emissions
  const uint4* records;  // viterbi_strip_records
  int base, e_loop, e_move, dd_bound;
};

// A node's transition scores but D->D, as the strip kernel holds them.
struct ViterbiStripFields {
  int bm, mm, im, dm, md, mi, ii;
};

// One target on the calling warp (strips of S nodes): returns xC, or kViterbiOverflow.
template <int S>
__device__ __forceinline__ int viterbi_strip_target(const ViterbiStripModel& model,
                                                    const std::uint8_t* dsq, int L, int ncj) {
  constexpr bool kFieldsInRegisters = S <= 16;
  static_assert(S % 4 == 0);
  const int lane = threadIdx.x % 32;
  const uint4* records = model.records + lane;  // node lane * S + j + 1 at records[32 * j]
  const auto fields_of = [](uint4 r) {          // bm mm | im dm | md mi | ii dd_in
    return ViterbiStripFields{low16(r.x), high16(r.x), low16(r.y), high16(r.y),
                              low16(r.z), high16(r.z), low16(r.w)};
  };
  ViterbiStripFields held[kFieldsInRegisters ? S : 1];
  if constexpr (kFieldsInRegisters) {
#pragma unroll
    for (int j = 0; j < S; ++j) held[j] = fields_of(__ldg(records + 32 * j));
  }
  const auto fields = [&](int j) -> ViterbiStripFields {
    if constexpr (kFieldsInRegisters) {
      return held[j];
    } else {
      return fields_of(__ldg(records + 32 * j));
    }
  };
  int mv[S], iv[S], dv[S];
#pragma unroll
  for (int j = 0; j < S; ++j) mv[j] = iv[j] = dv[j] = kNeg16;
  const int xN = model.base;
  int xB = static_cast<std::int16_t>(xN + ncj);
  int xJ = kNeg16, xC = kNeg16;
  int next_residue = L > 0 ? dsq[0] : 0;  // read a row ahead
  for (int i = 0; i < L; ++i) {
    const int residue = next_residue;
    if (i + 1 < L) next_residue = dsq[i + 1];
    int emit[S];
    {
      const int4* e = model.emit + static_cast<std::size_t>(residue) * (S / 4) * 32 + lane;
#pragma unroll
      for (int q = 0; q < S / 4; ++q) {
        const int4 v = __ldg(e + 32 * q);
        emit[4 * q] = v.x;
        emit[4 * q + 1] = v.y;
        emit[4 * q + 2] = v.z;
        emit[4 * q + 3] = v.w;
      }
    }
    // Row i-1's values of the node before the lane's first (the previous lane's last).
    int diag_m = __shfl_up_sync(kAll, mv[S - 1], 1);
    int diag_i = __shfl_up_sync(kAll, iv[S - 1], 1);
    int diag_d = __shfl_up_sync(kAll, dv[S - 1], 1);
    if (lane == 0) diag_m = diag_i = diag_d = kNeg16;
    int best_match = kNeg16, best_delete_entry = kNeg16;
    int md_prev = kNeg16;  // M(i, k-1) + md(k-1), within the strip
#pragma unroll
    for (int j = 0; j < S; ++j) {
      const ViterbiStripFields f = fields(j);
      int sv = __viaddmax_s32(xB, f.bm, kNeg16);
      sv = __viaddmax_s32(diag_m, f.mm, sv);
      sv = __viaddmax_s32(diag_i, f.im, sv);
      sv = __viaddmax_s32(diag_d, f.dm, sv);
      sv = __viaddmax_s32(sv, emit[j], kNeg16);
      const int ins = __viaddmax_s32(mv[j], f.mi, __viaddmax_s32(iv[j], f.ii, kNeg16));
      const int md = __viaddmax_s32(sv, f.md, kNeg16);
      diag_m = mv[j];
      diag_i = iv[j];
      diag_d = dv[j];
      mv[j] = sv;
      iv[j] = ins;
      dv[j] = md_prev;  // j = 0 is set from the previous lane below
      md_prev = md;
      best_match = max(best_match, sv);
      best_delete_entry = max(best_delete_entry, md);
    }
    {
      const int from_left = __shfl_up_sync(kAll, md_prev, 1);
      dv[0] = lane == 0 ? kNeg16 : from_left;  // node 1 has no D
    }
    const int xE = __reduce_max_sync(kAll, static_cast<unsigned>(best_match + 32768)) - 32768;
    if (xE >= 32767) return kViterbiOverflow;
    xC = static_cast<std::int16_t>(max(xC, xE + model.e_move));
    xJ = static_cast<std::int16_t>(max(xJ, xE + model.e_loop));
    xB = static_cast<std::int16_t>(max(xJ + ncj, xN + ncj));
    const int d_max =
        __reduce_max_sync(kAll, static_cast<unsigned>(best_delete_entry + 32768)) - 32768;
    if (d_max + model.dd_bound > xB) {
      // The strip's map x -> max(A, x + B), x the D entering the lane's first node.
      int dd[S];
#pragma unroll
      for (int j = 0; j < S; ++j) dd[j] = high16(__ldg(records + 32 * j).w);
      int A = kNeg16, B = 0;
#pragma unroll
      for (int j = 0; j < S; ++j) {
        A = max(dv[j], A + dd[j]);
        B = max(B + dd[j], -(1 << 24));
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
        dv[j] = max(dv[j], carry + dd[j]);
        carry = dv[j];
      }
    }
  }
  return xC;
}

// Warps take targets from a counter, longest first, as viterbi_warp_kernel.
template <int S>
__global__ void __launch_bounds__(kExactBlockThreads) viterbi_strip_kernel(ViterbiArgs a) {
  const int lane = threadIdx.x % 32;
  const ViterbiStripModel model{a.strip_emit, a.strip_records, a.base,
                                a.e_loop,     a.e_move,        a.dd_bound};
  for (;;) {
    int next = 0;
    if (lane == 0) next = atomicAdd(a.next_item, 1);
    next = __shfl_sync(kAll, next, 0);
    if (next >= a.count) break;
    const int item = a.item_order[next];
    const int target = a.list[item];
    const std::int64_t offset = a.offsets[target];
    const int L = static_cast<int>(a.offsets[target + 1] - offset);
    const int result =
        viterbi_strip_target<S>(model, a.target_residues[target], L, a.ncj_move[item]);
    if (lane == 0) a.result[item] = result;
  }
}

// The set's items whose models have strips of S nodes (viterbi_set_warp_kernel's
// arguments and order), a warp per item.
template <int S>
__global__ void __launch_bounds__(kExactBlockThreads) viterbi_set_strip_kernel(ViterbiSetArgs a) {
  const int lane = threadIdx.x % 32;
  for (;;) {
    int next = 0;
    if (lane == 0) next = atomicAdd(a.next_item, 1);
    next = __shfl_sync(kAll, next, 0);
    if (next >= a.count) break;
    const int item = a.item_order[next];
    const int target = a.list[item];
    const ViterbiSetModel& d = a.models[a.item_models[item]];
    const ViterbiStripModel model{a.strip_emit + d.strip_emit_at,
                                  a.strip_records + d.strip_records_at,
                                  d.base,
                                  d.e_loop,
                                  d.e_move,
                                  d.dd_bound};
    const std::int64_t offset = a.offsets[target];
    const int L = static_cast<int>(a.offsets[target + 1] - offset);
    const int result =
        viterbi_strip_target<S>(model, a.target_residues[target], L, a.ncj_move[item]);
    if (lane == 0) a.result[item] = result;
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
// 4, 8, 12, 16, 24 or 32 that covers the model, 0 past 1024 nodes (viterbi_warp_kernel then).
constexpr int kViterbiStripWidths[] = {4, 8, 12, 16, 24, 32};
int viterbi_strip_width(int M) {
  static_assert(32 * 32 == kViterbiStripMaxLength);
  for (int s : kViterbiStripWidths) {
    if (32 * s >= M) return s;
  }
  return 0;
}

// f(std::integral_constant<int, S>) for the strip width S = `width` (one of
// kViterbiStripWidths).
template <typename F>
void with_strip_width(int width, F&& f) {
  switch (width) {
    case 4:
      f(std::integral_constant<int, 4>{});
      break;
    case 8:
      f(std::integral_constant<int, 8>{});
      break;
    case 12:
      f(std::integral_constant<int, 12>{});
      break;
    case 16:
      f(std::integral_constant<int, 16>{});
      break;
    case 24:
      f(std::integral_constant<int, 24>{});
      break;
    default:
      f(std::integral_constant<int, 32>{});
      break;
  }
}
