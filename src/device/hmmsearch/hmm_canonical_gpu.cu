// The canonical Forward kernel (hmm_canonical_gpu.cuh): core/hmmsearch/forward_canonical.cpp's
// 4-lane striped parser, float for float.
//
// Threads: a group of four consecutive threads of a warp computes one target; thread j of
// the group plays SIMD lane j of the vector code and walks q = 0..Q-1 of every row for
// its lane, as the vector code does. What crosses lanes goes through warp shuffles inside
// the group: the one-lane move of the previous row's last vector (shift_up<1>), the lane
// carry of the delete chain (the same two steps), and the horizontal sum
// (l0 + l2) + (l1 + l3) (a butterfly: lane j adds lane j^2, then lane j^1; IEEE addition is
// commutative, so every lane gets the bits of the vector code's sum). The eight groups of a
// warp run their rows in step (the warp's row loop is common to them), each on its own
// target; a group whose target ends takes the next one, longest first, from a counter.
//
// Arithmetic: every float operation of forward_canonical is the same IEEE operation here,
// in the same order: PTX mul.rn.ftz, add.rn.ftz and div.rn.ftz (round to nearest;
// subnormal inputs and results flushed to zero, as SSE under MXCSR FTZ and DAZ), written as
// inline PTX so that no fused multiply-add can appear whatever the compiler's flags (the
// SASS holds FMUL and FADD, no FFMA). The rescaling factor float(1.0 / xE) is a double
// division (div.rn.f64) converted with cvt.rn.ftz.f32.f64. Only the logarithms are left
// to the host: the kernel records each rescaled row's xE (up to kCanonicalGpuRescalings)
// and the final C * move, and the host finishes with canonical_forward_finish and the
// length's ForwardScores::Length::score, the same code CanonicalForward::score ends with.
//
// One reordering that changes no bit: the vector code finishes a row by adding the lane
// carry to every stored D (D(q) += carry * dd_prefix(q)) and, when it rescales, by
// multiplying the stored M, D and I by r. Here the row is stored as the first pass leaves
// it, and the next row applies both as it reads a value: ((D + carry * dd_prefix(q)) * r),
// M * r, I * r, the same operations on the same operands (r = 1 when the row was not
// rescaled: x * 1 = x exactly, stored values are never subnormal). The row's sum takes
// the carry's additions in q order as the vector code does.
//
// Rows: a thread's (M, I, D) for q = 0..Q-1 at row[(3q + state) * 32 + lane of the warp],
// so that a warp's access is 32 consecutive words: in shared memory (conflict-free) when
// at least kMinSharedWarps warps fit in a block, else in global memory (coalesced), one
// region per resident warp. DUET_CANONICAL_GPU_ROWS=global forces global memory (studies).
// The kernel loads a row's inputs (transitions, emission, the previous row's cell) kChunk
// vectors at a time, one chunk ahead of use, whether rows are in shared or global memory:
// a launch lasts as long as its longest targets, whose threads then run nearly alone on
// their SM, where every load's latency would add to the row (bench/RESULTS.md).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "device/cuda_raii.cuh"
#include "device/ftz_arithmetic.cuh"
#include "device/hmmsearch/forward_targets.cuh"
#include "device/hmmsearch/hmm_canonical_gpu.cuh"
#include "device/hmmsearch/hmm_gpu.hpp"

namespace duet::device::detail {

namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kLanes = kCanonicalForwardLanes;
static_assert(kLanes == 4, "a group of four threads per target");
static_assert(kCanonicalNodeFields == 8, "a lane's transitions are two float4");
constexpr int kBlockThreads = 256;
// Global-memory rows of one slot are capped (fewer resident blocks for long models).
constexpr int kMinSharedWarps = 2;
constexpr std::size_t kGlobalRowBytes = std::size_t{1} << 30;
// Vectors of a row whose inputs are loaded together, a chunk ahead of use.
constexpr int kChunk = 4;

// ---- IEEE float operations as the SSE parser does them (round to nearest, FTZ + DAZ) ----

// mul_ftz and add_ftz: device/ftz_arithmetic.cuh.
__device__ __forceinline__ float div_ftz(float a, float b) {
  float r;
  asm("div.rn.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// float(1.0 / double(x)): the double division, then the conversion to float (flushed).
__device__ __forceinline__ float reciprocal_through_double(float x) {
  const double wide = static_cast<double>(x);  // exact
  double inverse;
  asm("div.rn.f64 %0, %1, %2;" : "=d"(inverse) : "d"(1.0), "d"(wide));
  float r;
  asm("cvt.rn.ftz.f32.f64 %0, %1;" : "=f"(r) : "d"(inverse));
  return r;
}
// Lane j of the group takes lane j - by; the lowest `by` lanes get +0 (shift_up<by>).
// Every thread of the warp must call it.
__device__ __forceinline__ float shift_up(float v, int by, int lane) {
  const float up = __shfl_up_sync(kFull, v, by, kLanes);
  return lane >= by ? up : 0.0f;
}

struct CanonicalArgs {
  const float* match;      // [x][q][lane]
  const float4* nodes;     // [q][lane][2]: {bm, mm, im, dm}, {md, mi, ii, dd}
  const float* dd_prefix;  // [q][lane], q = 0..Q
  int Q;
  float e_loop, e_move;
  const std::uint8_t* const* target_residues;  // per target: its first residue
  const std::int64_t* offsets;
  const int* list;    // per list entry: the target (index into the uploaded batch)
  const float2* ncj;  // per list entry: (loop, move)
  const int* order;   // list entries, longest target first
  int count;
  int* next;          // work counter, zero at launch
  float* rows;        // rows in global memory (kGlobalRows), else unused
  float* rescale_xe;  // per list entry: kCanonicalGpuRescalings values
  int* rescalings;    // per list entry: rescaled rows (may exceed kCanonicalGpuRescalings)
  float* c_move;      // per list entry: C * move after the last row
};

template <bool kGlobalRows>
__global__ void __launch_bounds__(kBlockThreads) canonical_forward_kernel(CanonicalArgs a) {
  extern __shared__ float shared_rows[];
  const int warp_lane = static_cast<int>(threadIdx.x % 32);
  const int lane = warp_lane % kLanes;
  const int Q = a.Q;
  constexpr int stride = 32;  // between a thread's consecutive cells
  const std::size_t warp_row_floats = 3 * static_cast<std::size_t>(Q) * stride;
  const std::size_t warp_index =
      kGlobalRows ? (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32
                  : threadIdx.x / 32;
  // This thread's cell (q, state) is row[(3 * q + state) * stride].
  float* const row =
      (kGlobalRows ? a.rows : shared_rows) + warp_index * warp_row_floats + warp_lane;
  const float4* __restrict__ const nodes = a.nodes + 2 * lane;
  const float* __restrict__ const dd_prefix = a.dd_prefix + lane;
  const std::size_t match_row = static_cast<std::size_t>(Q) * kLanes;

  // The lane carry's multipliers: the whole lanes' D->D products moved one lane up, and
  // that times itself moved one lane up (the vector code recomputes them every row).
  const float through1 =
      shift_up(a.dd_prefix[static_cast<std::size_t>(Q) * kLanes + lane], 1, lane);
  const float through2 = mul_ftz(through1, shift_up(through1, 1, lane));

  // The group's target and the parser's state (the same in the group's four threads).
  int item = -1, L = 0, i = 0, events = 0;
  const std::uint8_t* dsq = nullptr;
  float loop = 0.0f, move = 0.0f;
  float xN = 0.0f, xJ = 0.0f, xC = 0.0f, xB = 0.0f;
  float scale_prev = 1.0f;  // the previous row's rescaling (1: none)
  float carry_prev = 0.0f;  // the previous row's lane carry (this lane)
  bool work_left = true;
  for (;;) {
    if (item >= 0 && i == L) {
      if (lane == 0) {
        a.c_move[item] = mul_ftz(xC, move);
        a.rescalings[item] = events;
      }
      item = -1;
    }
    if (item < 0 && work_left) {
      int next = 0;
      if (lane == 0) next = atomicAdd(a.next, 1);
      next = __shfl_sync(0xfu << (warp_lane - lane), next, 0, kLanes);
      if (next >= a.count) {
        work_left = false;
      } else {
        item = a.order[next];
        const int target = a.list[item];
        const std::int64_t offset = a.offsets[target];
        L = static_cast<int>(a.offsets[target + 1] - offset);
        dsq = a.target_residues[target];
        loop = a.ncj[item].x;
        move = a.ncj[item].y;
        xN = 1.0f;
        xJ = 0.0f;
        xC = 0.0f;
        xB = move;
        i = 0;
        events = 0;
        scale_prev = 1.0f;
        carry_prev = 0.0f;
        // Row "-1" is all zeros: stored so, the first row reads it as any other (with
        // scale 1 and carry 0, every finished value is +0, as the vector code's are).
        for (int q = 0; q < Q; ++q) {
          float* cell = row + static_cast<std::size_t>(3 * q) * stride;
          cell[0] = cell[stride] = cell[2 * stride] = 0.0f;
        }
      }
    }
    if (__all_sync(kFull, item < 0)) break;
    const bool active = item >= 0 && i < L;
    // The previous row's cell at vector q as stored, and finished: the lane carry added to
    // D, the rescaling applied. No branch here or in a vector's step below, so that the
    // compiler can interleave the independent work of a chunk's vectors (a warp issues in
    // order: branches between them left each vector's chain of dependent operations to
    // stall the warp alone).
    struct Stored {
      float m, ins, d, dd_prefix;
    };
    const auto load = [&](int q) {
      const float* cell = row + static_cast<std::size_t>(3 * q) * stride;
      return Stored{cell[0], cell[stride], cell[2 * stride], dd_prefix[q * kLanes]};
    };
    const auto finish = [&](const Stored& c, float& m, float& ins, float& d) {
      m = mul_ftz(c.m, scale_prev);
      ins = mul_ftz(c.ins, scale_prev);
      d = mul_ftz(add_ftz(c.d, mul_ftz(carry_prev, c.dd_prefix)), scale_prev);
    };
    float mpv = 0.0f, ipv = 0.0f, dpv = 0.0f;
    if (active) finish(load(Q - 1), mpv, ipv, dpv);
    mpv = shift_up(mpv, 1, lane);
    ipv = shift_up(ipv, 1, lane);
    dpv = shift_up(dpv, 1, lane);
    float sum = 0.0f;        // M and D of the row (D as computed within lanes)
    float delete_in = 0.0f;  // D within the lane at vector q
    if (active) {
      const float* __restrict__ match =
          a.match + static_cast<std::size_t>(dsq[i]) * match_row + lane;
      // Vector q's inputs: transitions into (bm, mm, im, dm) and out of (md, mi, ii, dd)
      // the lane's node, emission, previous row's cell. They are loaded kChunk vectors at
      // a time, one chunk ahead of use: a launch's time is that of its longest targets,
      // whose four threads often run alone on their SM, so each vector's load latency
      // would otherwise add to the row's time (nothing stored in a chunk is read by the
      // next one: vector q reads only the previous row's cell q).
      struct Inputs {
        float4 into, out;
        float emission;
        Stored stored;
      };
      const auto load_one = [&](int q) {
        return Inputs{nodes[2 * q * kLanes], nodes[2 * q * kLanes + 1], match[q * kLanes], load(q)};
      };
      // One vector: M from the previous row's diagonal, the row's sum, the stores, and the
      // D within the lane for the next vector.
      const auto step = [&](const Inputs& in, int q) {
        float sv = mul_ftz(xB, in.into.x);
        sv = add_ftz(sv, mul_ftz(mpv, in.into.y));
        sv = add_ftz(sv, mul_ftz(ipv, in.into.z));
        sv = add_ftz(sv, mul_ftz(dpv, in.into.w));
        sv = mul_ftz(sv, in.emission);
        sum = add_ftz(sum, add_ftz(sv, delete_in));
        finish(in.stored, mpv, ipv, dpv);
        float* cell = row + static_cast<std::size_t>(3 * q) * stride;
        cell[0] = sv;
        cell[2 * stride] = delete_in;
        // Insert emissions have odds 1.
        cell[stride] = add_ftz(mul_ftz(mpv, in.out.y), mul_ftz(ipv, in.out.z));
        delete_in = add_ftz(mul_ftz(sv, in.out.x), mul_ftz(delete_in, in.out.w));
      };
      // Whole chunks, then the vectors left one by one.
      const int whole = Q / kChunk * kChunk;
      Inputs next[kChunk];
      if (whole > 0) {
#pragma unroll
        for (int u = 0; u < kChunk; ++u) next[u] = load_one(u);
      }
      for (int q0 = 0; q0 < whole; q0 += kChunk) {
        Inputs now[kChunk];
#pragma unroll
        for (int u = 0; u < kChunk; ++u) now[u] = next[u];
        if (q0 + kChunk < whole) {
#pragma unroll
          for (int u = 0; u < kChunk; ++u) next[u] = load_one(q0 + kChunk + u);
        }
#pragma unroll
        for (int u = 0; u < kChunk; ++u) step(now[u], q0 + u);
      }
      for (int q = whole; q < Q; ++q) step(load_one(q), q);
    }
    // D entering each lane's segment from the lane below (C[j] = X[j] + U[j] * C[j-1] in
    // two steps), and what it adds to every D of the row.
    float carry = shift_up(delete_in, 1, lane);
    carry = add_ftz(carry, mul_ftz(through1, shift_up(carry, 1, lane)));
    carry = add_ftz(carry, mul_ftz(through2, shift_up(carry, 2, lane)));
    if (active) {
      // The products are independent; only the sum is a chain (in q order).
      for (int q0 = 0; q0 < Q; q0 += kChunk) {
        float products[kChunk];
#pragma unroll
        for (int u = 0; u < kChunk; ++u)
          products[u] = q0 + u < Q ? mul_ftz(carry, dd_prefix[(q0 + u) * kLanes]) : 0.0f;
#pragma unroll
        for (int u = 0; u < kChunk; ++u) {
          if (q0 + u < Q) sum = add_ftz(sum, products[u]);
        }
      }
    }
    const float pair = add_ftz(sum, __shfl_xor_sync(kFull, sum, 2));  // l0 + l2, l1 + l3
    const float xE = add_ftz(pair, __shfl_xor_sync(kFull, pair, 1));
    if (active) {
      xN = mul_ftz(xN, loop);
      xC = add_ftz(mul_ftz(xC, loop), mul_ftz(xE, a.e_move));
      xJ = add_ftz(mul_ftz(xJ, loop), mul_ftz(xE, a.e_loop));
      xB = add_ftz(mul_ftz(xJ, move), mul_ftz(xN, move));
      scale_prev = 1.0f;
      if (xE > 1.0e4f) {  // sparse rescaling
        xN = div_ftz(xN, xE);
        xC = div_ftz(xC, xE);
        xJ = div_ftz(xJ, xE);
        xB = div_ftz(xB, xE);
        scale_prev = reciprocal_through_double(xE);
        if (lane == 0 && events < kCanonicalGpuRescalings) {
          a.rescale_xe[static_cast<std::size_t>(item) * kCanonicalGpuRescalings + events] = xE;
        }
        ++events;
      }
      carry_prev = carry;
      ++i;
    }
  }
}

}  // namespace

struct CanonicalForwardGpu::Impl {
  ForwardScores fwd;  // a copy: N/C/J probabilities by length, and the CPU's fallback
  int Q = 0;
  float e_loop = 0, e_move = 0;
  DeviceBuffer<float> match, dd_prefix;
  DeviceBuffer<float4> nodes;
  int warps_per_block = 0;  // > 0: rows in shared memory
  int resident_blocks = 0;
  int multiprocessors = 0;
  std::size_t shared_optin = 0;  // shared memory a block may use at most
  NcjByLength ncj{fwd};          // after fwd, which it reads
  struct Slot {
    PinnedBuffer<int> rescalings;
    ForwardTargetList targets_list;
    PinnedBuffer<float> rescale_xe, c_move;
    DeviceBuffer<int> d_rescalings;
    DeviceBuffer<float> d_rescale_xe, d_c_move, d_rows;
    int n = 0;
    std::vector<int> targets;  // per list entry, for the CPU's fallback
    std::vector<float> scores;
    std::int64_t cpu_targets = 0;
    std::unique_ptr<CanonicalForward> cpu;  // created on the first fallback
  };
  Slot slots[kSlots];
};

CanonicalForwardGpu::CanonicalForwardGpu(const ForwardScores& fwd, int multiprocessors,
                                         std::size_t shared_optin)
    : impl_(std::make_unique<Impl>()) {
  impl_->multiprocessors = multiprocessors;
  impl_->shared_optin = shared_optin;
  set_model(fwd);
}

void CanonicalForwardGpu::set_model(const ForwardScores& fwd) {
  Impl& m = *impl_;
  const std::size_t shared_optin = m.shared_optin;
  m.fwd = fwd;
  m.ncj = NcjByLength{m.fwd};
  for (Impl::Slot& s : m.slots) s.cpu.reset();  // the CPU's fallback of the old model
  const CanonicalDeviceLayout layout =
      build_canonical_device_layout(stripe_forward_scores(fwd, kCanonicalForwardLanes));
  m.Q = layout.Q;
  m.e_loop = layout.e_loop;
  m.e_move = layout.e_move;
  const auto upload = [](auto& buffer, const std::vector<float>& host) {
    using T = std::remove_reference_t<decltype(*buffer.get())>;
    const std::size_t count = host.size() * sizeof(float) / sizeof(T);
    buffer.reserve(count);
    check(
        cudaMemcpy(buffer.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
        "cudaMemcpy canonical forward");
  };
  upload(m.match, layout.match);
  upload(m.dd_prefix, layout.dd_prefix);
  upload(m.nodes, layout.nodes);
  // Rows in shared memory when kMinSharedWarps warps fit in a block (up to 8 warps).
  const std::size_t warp_row_bytes = 3 * static_cast<std::size_t>(m.Q) * 32 * sizeof(float);
  m.warps_per_block =
      static_cast<int>(std::min<std::size_t>(kBlockThreads / 32, shared_optin / warp_row_bytes));
  const char* forced = std::getenv("DUET_CANONICAL_GPU_ROWS");
  if (m.warps_per_block < kMinSharedWarps ||
      (forced != nullptr && std::strcmp(forced, "global") == 0)) {
    m.warps_per_block = 0;
  }
  int per_sm = 0;
  if (m.warps_per_block > 0) {
    const std::size_t shared = m.warps_per_block * warp_row_bytes;
    // The device's limit (see hmm_gpu.cu's set_model): engines of other models launch it.
    check(cudaFuncSetAttribute(canonical_forward_kernel<false>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(shared_optin)),
          "cudaFuncSetAttribute canonical forward");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, canonical_forward_kernel<false>,
                                                        m.warps_per_block * 32, shared),
          "cudaOccupancy canonical forward");
  } else {
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, canonical_forward_kernel<true>,
                                                        kBlockThreads, 0),
          "cudaOccupancy canonical forward");
  }
  m.resident_blocks = std::max(1, per_sm) * m.multiprocessors;
}

CanonicalForwardGpu::~CanonicalForwardGpu() = default;

void CanonicalForwardGpu::submit(int slot, cudaStream_t st,
                                 const std::uint8_t* const* d_target_residues,
                                 const std::int64_t* d_offsets, const std::vector<int>& lengths,
                                 const int* which, int n, cudaEvent_t start, cudaEvent_t done) {
  Impl& m = *impl_;
  Impl::Slot& s = m.slots[slot];
  s.n = n;
  s.targets.assign(which, which + n);
  s.rescalings.reserve(n + 1);
  s.c_move.reserve(n + 1);
  s.rescale_xe.reserve(static_cast<std::size_t>(n) * kCanonicalGpuRescalings + 1);
  s.targets_list.stage(m.ncj, lengths, which, n, st);
  s.d_rescalings.reserve(n + 1);
  s.d_c_move.reserve(n + 1);
  s.d_rescale_xe.reserve(static_cast<std::size_t>(n) * kCanonicalGpuRescalings + 1);
  check(cudaEventRecord(start, st), "cudaEventRecord");
  if (n > 0) {
    CanonicalArgs a{};
    a.match = m.match.get();
    a.nodes = m.nodes.get();
    a.dd_prefix = m.dd_prefix.get();
    a.Q = m.Q;
    a.e_loop = m.e_loop;
    a.e_move = m.e_move;
    a.target_residues = d_target_residues;
    a.offsets = d_offsets;
    a.list = s.targets_list.list();
    a.ncj = s.targets_list.ncj();
    a.order = s.targets_list.order();
    a.count = n;
    a.next = s.targets_list.next();
    a.rescale_xe = s.d_rescale_xe.get();
    a.rescalings = s.d_rescalings.get();
    a.c_move = s.d_c_move.get();
    const std::size_t warp_row_floats = 3 * static_cast<std::size_t>(m.Q) * 32;
    const int targets_per_warp = 32 / kLanes;
    // Warps per block: as many as fit (shared rows) or kBlockThreads / 32 (global rows),
    // fewer when the launch has too few targets to give every multiprocessor a full block:
    // most launches of a search hold tens to hundreds of targets, and their time is that
    // of the longest ones, which then run faster one warp to a multiprocessor than packed
    // into a few blocks.
    const int most = m.warps_per_block > 0 ? m.warps_per_block : kBlockThreads / 32;
    const int warps_needed = (n + targets_per_warp - 1) / targets_per_warp;
    const int warps =
        std::clamp((warps_needed + m.multiprocessors - 1) / m.multiprocessors, 1, most);
    const int threads = warps * 32;
    const int per_block = warps * targets_per_warp;
    std::size_t shared = 0;
    int blocks = 0;
    if (m.warps_per_block > 0) {
      shared = warps * warp_row_floats * sizeof(float);
      blocks = std::min(m.resident_blocks * (most / warps), (n + per_block - 1) / per_block);
      a.rows = nullptr;
      // What the multiprocessor's memory does not give to shared memory is L1: ask for no
      // more shared memory than this launch's blocks on one multiprocessor use (a hint; the
      // driver rounds it up to a configuration it has). The transitions and emissions are
      // read from L1 at every vector: with the largest shared configuration, 9% of those
      // reads missed L1 (ncu, the 32 longest targets at M = 260, one warp per SM).
      const int blocks_per_sm = (blocks + m.multiprocessors - 1) / m.multiprocessors;
      const double wanted = static_cast<double>(blocks_per_sm) * (shared + 1024);
      const int percent = std::clamp(
          static_cast<int>(std::ceil(100.0 * wanted / static_cast<double>(m.shared_optin))), 1,
          100);
      check(cudaFuncSetAttribute(canonical_forward_kernel<false>,
                                 cudaFuncAttributePreferredSharedMemoryCarveout, percent),
            "cudaFuncSetAttribute canonical forward carveout");
    } else {
      const std::size_t block_row_bytes = warps * warp_row_floats * sizeof(float);
      const int cap = static_cast<int>(std::max<std::size_t>(1, kGlobalRowBytes / block_row_bytes));
      blocks = std::min({m.resident_blocks * (most / warps), cap, (n + per_block - 1) / per_block});
      s.d_rows.reserve(static_cast<std::size_t>(blocks) * warps * warp_row_floats);
      a.rows = s.d_rows.get();
    }
    if (a.rows == nullptr) {
      canonical_forward_kernel<false><<<blocks, threads, shared, st>>>(a);
    } else {
      canonical_forward_kernel<true><<<blocks, threads, shared, st>>>(a);
    }
    check(cudaGetLastError(), "canonical_forward_kernel");
  }
  check(cudaEventRecord(done, st), "cudaEventRecord");
  if (n > 0) {
    check(cudaMemcpyAsync(s.rescalings.get(), s.d_rescalings.get(), n * sizeof(int),
                          cudaMemcpyDeviceToHost, st),
          "D2H canonical rescalings");
    check(cudaMemcpyAsync(s.c_move.get(), s.d_c_move.get(), n * sizeof(float),
                          cudaMemcpyDeviceToHost, st),
          "D2H canonical c_move");
    check(cudaMemcpyAsync(s.rescale_xe.get(), s.d_rescale_xe.get(),
                          static_cast<std::size_t>(n) * kCanonicalGpuRescalings * sizeof(float),
                          cudaMemcpyDeviceToHost, st),
          "D2H canonical rescale factors");
  }
}

const std::vector<float>& CanonicalForwardGpu::scores(int slot,
                                                      const std::uint8_t* const* host_residues,
                                                      const std::vector<int>& lengths) {
  Impl& m = *impl_;
  Impl::Slot& s = m.slots[slot];
  s.scores.resize(s.n);
  s.cpu_targets = 0;
  for (int i = 0; i < s.n; ++i) {
    const int events = s.rescalings.get()[i];
    const int target = s.targets[i];
    if (events <= kCanonicalGpuRescalings) {
      s.scores[i] =
          m.ncj(lengths[target])
              .score(canonical_forward_finish(
                  s.rescale_xe.get() + static_cast<std::size_t>(i) * kCanonicalGpuRescalings,
                  events, s.c_move.get()[i]));
      continue;
    }
    if (!s.cpu) s.cpu = std::make_unique<CanonicalForward>(m.fwd);
    s.scores[i] = s.cpu->score(host_residues[target], lengths[target]);
    ++s.cpu_targets;
  }
  return s.scores;
}

std::int64_t CanonicalForwardGpu::cpu_targets(int slot) const {
  return impl_->slots[slot].cpu_targets;
}

}  // namespace duet::device::detail
