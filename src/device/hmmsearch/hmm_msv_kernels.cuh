// The MSV filter kernels: the fast wavefront kernel and the exact row kernel
// (msv_exact_kernel.cuh). Part of hmm_gpu.cu's translation unit: included there only, inside its
// anonymous namespace, after hmm_kernel_constants.cuh.
#pragma once

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
// `block`: the block's index among those running this model (blockIdx.x).
template <int G, int N>
__device__ __forceinline__ void msv_wavefront(const MsvFastArgs& a, int block) {
  constexpr int H = N / 2;  // registers, two nodes each
  constexpr int Q = N / 8;  // 16-byte profile reads per row
  extern __shared__ uint4 shared_profile[];
  for (int i = threadIdx.x; i < a.profile_vec4; i += blockDim.x) shared_profile[i] = a.profile[i];
  __syncthreads();

  const int t = threadIdx.x % G;
  const int group = (block * blockDim.x + threadIdx.x) / G;
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

template <int G, int N>
__global__ void __launch_bounds__(kMsvBlockThreads) msv_wavefront_kernel(MsvFastArgs a) {
  msv_wavefront<G, N>(a, static_cast<int>(blockIdx.x));
}

// ---------------------------------------------------------------- MSV, many models

// One model of a set run in one launch (HmmGpuEngine::set_models): where its layout
// starts in the set's words and costs, and its score constants.
struct MsvSetModel {
  std::int64_t words_at = 0;  // in 16-byte units
  std::int64_t costs_at = 0;
  int vec4 = 0, tiles = 0, Kp = 0, M = 0;
  int base = 0, bias = 0, tec = 0;
};

// A launch over a set's models: each block runs one entry of `entries` (x: the model's
// index in the set, y: its boundary slot, or -1 for a model of one tile, which never
// reads or writes the boundary) on one group of targets. Per model m, the arrays bjbm,
// result and exact_list hold n values from m * n, and exact_count one value at m.
struct MsvSetArgs {
  const uint4* words;
  const std::uint8_t* costs;
  const MsvSetModel* models;
  const int2* entries;
  int entry_count;  // msv_set_wavefront_kernel: entries of the launch
  const std::uint8_t* const* target_residues;
  const std::int64_t* offsets;
  const int* order;
  int n;
  const std::uint8_t* bjbm;
  std::int16_t* boundary;        // boundary slots, boundary_stride values each
  std::int64_t boundary_stride;  // 2 values per residue of the batch
  int* result;
  int* exact_list;
  int* exact_count;
  std::uint8_t* rows;  // msv_exact_rows's rows: rows_stride bytes per warp
  int rows_stride;     // the longest model it runs + 1
};

__device__ __forceinline__ MsvFastArgs msv_set_model_args(const MsvSetArgs& s, int model,
                                                          int boundary_slot) {
  const MsvSetModel& d = s.models[model];
  const std::int64_t at = static_cast<std::int64_t>(model) * s.n;
  MsvFastArgs a{};
  a.profile = s.words + d.words_at;
  a.profile_vec4 = d.vec4;
  a.tiles = d.tiles;
  a.pad_residue = d.Kp;
  a.target_residues = s.target_residues;
  a.offsets = s.offsets;
  a.order = s.order;
  a.n = s.n;
  a.bjbm = s.bjbm + at;
  a.base = d.base;
  a.bias = d.bias;
  a.tec = d.tec;
  a.boundary = s.boundary + max(boundary_slot, 0) * s.boundary_stride;
  a.result = s.result + at;
  a.exact_list = s.exact_list + at;
  a.exact_count = s.exact_count + model;
  return a;
}

// The fast kernel for the models of one launch entry list, all of the same G and N: the
// profile in shared memory is the entry's model's. Block b runs entry b % entry_count on
// target group b / entry_count: the blocks start in that order, so every model's groups
// of longest targets run first (entry-major order left the last models' long groups to
// end the launch).
template <int G, int N>
__global__ void __launch_bounds__(kMsvBlockThreads) msv_set_wavefront_kernel(MsvSetArgs s) {
  const unsigned entries = static_cast<unsigned>(s.entry_count);
  const int2 entry = s.entries[blockIdx.x % entries];
  msv_wavefront<G, N>(msv_set_model_args(s, entry.x, entry.y),
                      static_cast<int>(blockIdx.x / entries));
}

// ---------------------------------------------------------------- MSV, exact rows

// The static exact kernels (msv_exact_kernel.cuh): for a model of up to C * 32 nodes, C
// the smallest bucket (exact_chunks_bucket) that holds it, msv_exact_registers<C, 0> (the
// row in registers); for a longer model, msv_exact_rows (the row in global memory). The
// engine compiles run-time specialisations of the same code with NVRTC (nvrtc_jit.hpp)
// when GpuKernelChoice::jit asks.
using MsvExactArgs = msv_exact::Args;

// The bucket of 32-node chunks of a model of M nodes: 2, 4, 8, 16, 32 or 48, or 0 for a
// model too long for its row in registers.
constexpr int exact_chunks_bucket(int M) {
  const int chunks = (M + 31) / 32;
  for (const int c : {2, 4, 8, 16, 32, 48}) {
    if (chunks <= c) return c;
  }
  return 0;
}

// Calls f(std::integral_constant<int, C>) with C = `bucket`, a value of exact_chunks_bucket.
template <typename F>
void with_exact_bucket(int bucket, F&& f) {
  using std::integral_constant;
  switch (bucket) {
    case 2:
      f(integral_constant<int, 2>{});
      break;
    case 4:
      f(integral_constant<int, 4>{});
      break;
    case 8:
      f(integral_constant<int, 8>{});
      break;
    case 16:
      f(integral_constant<int, 16>{});
      break;
    case 32:
      f(integral_constant<int, 32>{});
      break;
    case 48:
      f(integral_constant<int, 48>{});
      break;
    default:
      f(integral_constant<int, 0>{});
      break;
  }
}

// kChunks > 0: msv_exact_registers<kChunks, 0>; 0: msv_exact_rows.
template <int kChunks>
__device__ __forceinline__ void msv_exact_static(const MsvExactArgs& a) {
  if constexpr (kChunks > 0) {
    msv_exact::msv_exact_registers<kChunks, 0>(a);
  } else {
    msv_exact::msv_exact_rows(a);
  }
}

template <int kChunks>
__global__ void __launch_bounds__(kExactBlockThreads) msv_exact_kernel(MsvExactArgs a) {
  msv_exact_static<kChunks>(a);
}

// The exact kernel over the models of a set with one bucket of chunk counts: blockIdx.y
// picks the model (models[blockIdx.y]), each with its own list of targets; msv_exact_rows
// keeps its rows per blockIdx.y.
template <int kChunks>
__global__ void __launch_bounds__(kExactBlockThreads)
    msv_set_exact_kernel(MsvSetArgs s, const int* models) {
  const int model = models[blockIdx.y];
  const MsvSetModel& d = s.models[model];
  const std::int64_t at = static_cast<std::int64_t>(model) * s.n;
  MsvExactArgs e{};
  e.cost = s.costs + d.costs_at;
  e.M = d.M;
  e.target_residues = s.target_residues;
  e.offsets = s.offsets;
  e.bjbm = s.bjbm + at;
  e.base = d.base;
  e.bias = d.bias;
  e.tec = d.tec;
  e.list = s.exact_list + at;
  e.count = s.exact_count + model;
  e.rows = s.rows + static_cast<std::int64_t>(blockIdx.y) * gridDim.x * (kExactBlockThreads / 32) *
                        s.rows_stride;
  e.result = s.result + at;
  msv_exact_static<kChunks>(e);
}

// ---------------------------------------------------------------- MSV, the stage's decision

// A pair's best J value from the kernels' result code (the fast kernel's best cell C, or
// the exact kernel's kMsvExact + xJ), or overflow: as finish_msv reads it (hmm_gpu.cu).
// False for a code that is no score (a kernel left the pair unscored).
__host__ __device__ inline bool msv_code_xj(int code, int tec, int bias, bool& overflow, int& xJ) {
  overflow = code == kMsvOverflow || (code >= 0 && code < kMsvExact && code >= 255 - bias);
  if (overflow) return true;
  if (code < 0) return false;
  xJ = code >= kMsvExact ? code - kMsvExact : (code > tec ? code - tec : 0);
  return true;
}

// The MSV stage's decision on every pair of a batch, one model's or a set's (after both
// MSV kernels): pair (model m, target i) passes where msv_gate_passes says so with the
// model's gate, the target's null score and its N->B cost (bjbm less B->M); an empty
// target never passes, a pair without a score always does (the host then reports it).
// Passing pairs are appended to `passes` (x model, y target, z code) in no particular
// order and counted in `count`.
struct MsvGateArgs {
  const int* result;  // models * n codes, model-major
  const std::uint8_t* bjbm;
  const MsvGate* gates;
  const float* null_nats;  // per target
  const std::int64_t* offsets;
  int n;
  std::int64_t pairs;  // models * n
  int4* passes;        // (model, target, result code, 0: bias_composition_kernel's)
  unsigned long long* count;
};
__global__ void msv_gate_kernel(MsvGateArgs a) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       j < a.pairs; j += stride) {
    const int model = static_cast<int>(j / a.n);
    const int target = static_cast<int>(j - static_cast<std::int64_t>(model) * a.n);
    if (a.offsets[target + 1] == a.offsets[target]) continue;  // empty: HMMER skips it
    const MsvGate& g = a.gates[model];
    const int code = a.result[j];
    bool overflow = false;
    int xJ = 0;
    const bool passes =
        !msv_code_xj(code, g.tec, g.bias, overflow, xJ) ||
        msv_gate_passes(g, overflow, xJ, (static_cast<int>(a.bjbm[j]) - g.tbm) & 0xff,
                        a.null_nats[target]);
    if (passes) a.passes[atomicAdd(a.count, 1ull)] = make_int4(model, target, code, 0);
  }
}

// The fast kernels' shapes (G threads per target, N nodes per thread): calls
// f(std::integral_constant<int, G>, std::integral_constant<int, N>) for the shape (g, n)
// (g 8, 16 or 32; n 16 or 32), or, for_each_msv_shape, for every shape.
template <typename F>
void with_msv_shape(int g, int n, F&& f) {
  using std::integral_constant;
  if (n == 16) {
    if (g == 8)
      f(integral_constant<int, 8>{}, integral_constant<int, 16>{});
    else if (g == 16)
      f(integral_constant<int, 16>{}, integral_constant<int, 16>{});
    else
      f(integral_constant<int, 32>{}, integral_constant<int, 16>{});
  } else {
    if (g == 8)
      f(integral_constant<int, 8>{}, integral_constant<int, 32>{});
    else if (g == 16)
      f(integral_constant<int, 16>{}, integral_constant<int, 32>{});
    else
      f(integral_constant<int, 32>{}, integral_constant<int, 32>{});
  }
}
template <typename F>
void for_each_msv_shape(F&& f) {
  for (const int g : {8, 16, 32}) {
    for (const int n : {16, 32}) with_msv_shape(g, n, f);
  }
}
