// The float Forward parser kernel (hmm_forward_gpu.cuh), in the line of CUDAMPF: a warp
// per target, row by row, P nodes per lane per chunk of 32*P nodes.
//
// Layout: node k (1..M) of chunk c = (k-1) / (32P) is held by lane l = ((k-1) % 32P) / P
// in its slot j = (k-1) % P, at position q = c*32P + j*32 + l of every per-node array
// (transitions, emissions, the DP row). A warp's reads of one slot are thus 32
// consecutive words (coalesced in global memory, conflict-free in shared memory), and a
// lane only ever touches its own positions of the row: no barrier between rows.
//
// Arithmetic: that of forward_parser_reference (probability space, N/C/J/B/E specials,
// rescaling by 1/xE when xE > 1e4), in another order:
//   - M(i,k) = (xB bm(k) + M(i-1,k-1) mm(k) + I(i-1,k-1) im(k) + D(i-1,k-1) dm(k)) e(k),
//     I(i,k) = M(i-1,k) mi(k) + I(i-1,k) ii(k), with fused multiply-adds;
//   - the D->D chain D(i,k) = M(i,k-1) md(k-1) + D(i,k-1) dd(k-1) is linear: each lane
//     composes the maps x -> a + b x of its P nodes, a warp scan composes the lanes' maps,
//     and the chunk's incoming D (from the previous chunk's lane 31) is pushed through;
//   - the rescaling of a row is applied when the next row reads it (one multiply per
//     value read), not by rewriting the row;
//   - xE is a warp sum (butterfly) of per-lane partial sums.
// The row of (M, I, D) lives in shared memory when it fits (up to 8 warps a block), else
// in global memory (one row per resident warp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "device/cuda_raii.cuh"
#include "device/hmmsearch/forward_targets.cuh"
#include "device/hmmsearch/hmm_forward_gpu.cuh"

namespace duet::device::detail {

namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kGlobalRowThreads = 256;

struct ForwardArgs {
  const float4* trans0;  // per position: bm, mm, im, dm (into node k)
  const float4* trans1;  // per position: md(k-1), mi(k), ii(k), dd(k-1)
  const float* emis;     // [x][position]
  int Mp, chunks;
  float e_loop, e_move;
  const std::uint8_t* const* target_residues;  // per target: its first residue
  const std::int64_t* offsets;
  const int* list;    // targets
  const float2* ncj;  // per list entry: (loop, move)
  const int* order;   // list entries, longest target first
  int count;
  int* next;      // work counter, zero at launch
  float* rows;    // nullptr: rows in shared memory
  float* result;  // per list entry
};

template <int P>
__global__ void __launch_bounds__(256) forward_warp_kernel(ForwardArgs a) {
  extern __shared__ float shared_rows[];
  const int lane = threadIdx.x % 32;
  const std::size_t row_floats = 3 * static_cast<std::size_t>(a.Mp);
  float* row =
      a.rows == nullptr
          ? shared_rows + static_cast<std::size_t>(threadIdx.x / 32) * row_floats
          : a.rows +
                static_cast<std::size_t>((blockIdx.x * blockDim.x + threadIdx.x) / 32) * row_floats;
  float* rM = row;
  float* rI = row + a.Mp;
  float* rD = row + 2 * a.Mp;
  constexpr int W = 32 * P;
  for (;;) {
    int next = 0;
    if (lane == 0) next = atomicAdd(a.next, 1);
    next = __shfl_sync(kFull, next, 0);
    if (next >= a.count) break;
    const int item = a.order[next];
    const int target = a.list[item];
    const std::int64_t offset = a.offsets[target];
    const int L = static_cast<int>(a.offsets[target + 1] - offset);
    const std::uint8_t* dsq = a.target_residues[target];
    const float loop = a.ncj[item].x, move = a.ncj[item].y;
    for (int q = lane; q < a.Mp; q += 32) rM[q] = rI[q] = rD[q] = 0.0f;
    float xN = 1.0f, xJ = 0.0f, xC = 0.0f, xB = move;
    float total_scale = 0.0f;
    float s = 1.0f;  // pending rescaling of the row held (applied when it is read)
    for (int i = 0; i < L; ++i) {
      const float* e = a.emis + static_cast<std::size_t>(dsq[i]) * a.Mp;
      // Previous row at the node before the chunk, and current row there (M, D).
      float carry_pm = 0.0f, carry_pi = 0.0f, carry_pd = 0.0f;
      float carry_m = 0.0f, carry_d = 0.0f;
      float xe_part = 0.0f;
      for (int c = 0; c < a.chunks; ++c) {
        const int base = c * W + lane;
        float pm[P], pi[P], pd[P], mn[P], in[P], md[P], dd[P];
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const int q = base + j * 32;
          pm[j] = rM[q] * s;
          pi[j] = rI[q] * s;
          pd[j] = rD[q] * s;
        }
        // Previous row at node k-1 for my slot 0: lane l-1's last slot.
        float um = __shfl_up_sync(kFull, pm[P - 1], 1);
        float ui = __shfl_up_sync(kFull, pi[P - 1], 1);
        float ud = __shfl_up_sync(kFull, pd[P - 1], 1);
        if (lane == 0) {
          um = carry_pm;
          ui = carry_pi;
          ud = carry_pd;
        }
        carry_pm = __shfl_sync(kFull, pm[P - 1], 31);
        carry_pi = __shfl_sync(kFull, pi[P - 1], 31);
        carry_pd = __shfl_sync(kFull, pd[P - 1], 31);
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const int q = base + j * 32;
          const float4 t0 = a.trans0[q];
          const float4 t1 = a.trans1[q];
          const float em = e[q];
          const float mprev = j == 0 ? um : pm[j - 1];
          const float iprev = j == 0 ? ui : pi[j - 1];
          const float dprev = j == 0 ? ud : pd[j - 1];
          float sv = xB * t0.x;
          sv = fmaf(mprev, t0.y, sv);
          sv = fmaf(iprev, t0.z, sv);
          sv = fmaf(dprev, t0.w, sv);
          mn[j] = sv * em;
          in[j] = fmaf(pm[j], t1.y, pi[j] * t1.z);
          md[j] = t1.x;
          dd[j] = t1.w;
        }
        // Current row at node k-1 for my slot 0.
        float mleft = __shfl_up_sync(kFull, mn[P - 1], 1);
        if (lane == 0) mleft = carry_m;
        // My map D(last slot) = A + B * D(node before my slot 0).
        float A = mleft * md[0], B = dd[0];
#pragma unroll
        for (int j = 1; j < P; ++j) {
          A = fmaf(dd[j], A, mn[j - 1] * md[j]);
          B = dd[j] * B;
        }
#pragma unroll
        for (int d = 1; d < 32; d *= 2) {
          const float Ao = __shfl_up_sync(kFull, A, d);
          const float Bo = __shfl_up_sync(kFull, B, d);
          if (lane >= d) {
            A = fmaf(B, Ao, A);
            B = B * Bo;
          }
        }
        // D at the node before my slot 0: the previous lanes' composed map applied to the
        // chunk's incoming D.
        float Ax = __shfl_up_sync(kFull, A, 1);
        float Bx = __shfl_up_sync(kFull, B, 1);
        float dcur = lane == 0 ? carry_d : fmaf(Bx, carry_d, Ax);
        float dn[P];
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const float mprev = j == 0 ? mleft : mn[j - 1];
          dcur = fmaf(dd[j], dcur, mprev * md[j]);
          dn[j] = dcur;
        }
        carry_m = __shfl_sync(kFull, mn[P - 1], 31);
        carry_d = __shfl_sync(kFull, dn[P - 1], 31);
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const int q = base + j * 32;
          rM[q] = mn[j];
          rI[q] = in[j];
          rD[q] = dn[j];
          xe_part += mn[j] + dn[j];
        }
      }
      float xE = xe_part;
#pragma unroll
      for (int d = 16; d >= 1; d /= 2) xE += __shfl_xor_sync(kFull, xE, d);
      xN = xN * loop;
      xC = fmaf(xC, loop, xE * a.e_move);
      xJ = fmaf(xJ, loop, xE * a.e_loop);
      xB = fmaf(xJ, move, xN * move);
      s = 1.0f;
      if (xE > 1.0e4f) {
        xN /= xE;
        xC /= xE;
        xJ /= xE;
        xB /= xE;
        s = static_cast<float>(1.0 / static_cast<double>(xE));
        total_scale =
            static_cast<float>(static_cast<double>(total_scale) + log(static_cast<double>(xE)));
      }
    }
    if (lane == 0) {
      a.result[item] = static_cast<float>(static_cast<double>(total_scale) +
                                          log(static_cast<double>(xC * move)));
    }
  }
}

int nodes_per_lane(int M) {
  return M <= 32 ? 1 : (M <= 64 ? 2 : 4);
}

}  // namespace

struct ForwardGpu::Impl {
  int M = 0, P = 1, Mp = 0, chunks = 0;
  float e_loop = 0, e_move = 0;
  ForwardScores fwd;  // a copy: N/C/J probabilities by length
  DeviceBuffer<float4> trans0, trans1;
  DeviceBuffer<float> emis;
  int warps_per_block = 0;  // > 0: rows in shared memory
  int resident_blocks = 0;
  NcjByLength ncj{fwd};  // after fwd, which it reads
  struct Slot {
    ForwardTargetList targets_list;
    PinnedBuffer<float> result;
    DeviceBuffer<float> d_result, d_rows;
    int n = 0;
    std::vector<ForwardScores::Length> ncj;  // per list entry: finishes its score
    std::vector<float> scores;
  };
  Slot slots[kSlots];
};

ForwardGpu::ForwardGpu(const ForwardScores& fwd, int multiprocessors, std::size_t shared_optin)
    : impl_(new Impl) {
  Impl& m = *impl_;
  m.fwd = fwd;
  m.M = fwd.M;
  m.P = nodes_per_lane(fwd.M);
  const int W = 32 * m.P;
  m.chunks = std::max(1, (fwd.M + W - 1) / W);
  m.Mp = m.chunks * W;
  m.e_loop = fwd.e_loop;
  m.e_move = fwd.e_move;
  const int Kp = static_cast<int>(fwd.match.size());
  std::vector<float4> t0(m.Mp, float4{0, 0, 0, 0}), t1(m.Mp, float4{0, 0, 0, 0});
  std::vector<float> em(static_cast<std::size_t>(Kp) * m.Mp, 0.0f);
  for (int k = 1; k <= fwd.M; ++k) {
    const int c = (k - 1) / W, r = (k - 1) % W;
    const int q = c * W + (r % m.P) * 32 + r / m.P;
    t0[q] = float4{fwd.bm[k], fwd.mm[k], fwd.im[k], fwd.dm[k]};
    t1[q] =
        float4{k > 1 ? fwd.md[k - 1] : 0.0f, fwd.mi[k], fwd.ii[k], k > 1 ? fwd.dd[k - 1] : 0.0f};
    for (int x = 0; x < Kp; ++x) em[static_cast<std::size_t>(x) * m.Mp + q] = fwd.match[x][k];
  }
  m.trans0.reserve(t0.size());
  m.trans1.reserve(t1.size());
  m.emis.reserve(em.size());
  check(cudaMemcpy(m.trans0.get(), t0.data(), t0.size() * sizeof(float4), cudaMemcpyHostToDevice),
        "cudaMemcpy forward");
  check(cudaMemcpy(m.trans1.get(), t1.data(), t1.size() * sizeof(float4), cudaMemcpyHostToDevice),
        "cudaMemcpy forward");
  check(cudaMemcpy(m.emis.get(), em.data(), em.size() * sizeof(float), cudaMemcpyHostToDevice),
        "cudaMemcpy forward");
  const std::size_t row_bytes = 3 * static_cast<std::size_t>(m.Mp) * sizeof(float);
  m.warps_per_block = static_cast<int>(std::min<std::size_t>(8, shared_optin / row_bytes));
  const auto setup = [&](auto kernel) {
    int threads = kGlobalRowThreads;
    std::size_t shared = 0;
    if (m.warps_per_block > 0) {
      threads = m.warps_per_block * 32;
      shared = m.warps_per_block * row_bytes;
      // The device's limit (see hmm_gpu.cu's set_model): engines of other models launch it.
      check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(shared_optin)),
            "cudaFuncSetAttribute forward");
    }
    int per_sm = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared),
          "cudaOccupancy forward");
    m.resident_blocks = std::max(1, per_sm) * multiprocessors;
  };
  if (m.P == 1)
    setup(forward_warp_kernel<1>);
  else if (m.P == 2)
    setup(forward_warp_kernel<2>);
  else
    setup(forward_warp_kernel<4>);
}

ForwardGpu::~ForwardGpu() {
  delete impl_;
}

void ForwardGpu::submit(int slot, cudaStream_t st, const std::uint8_t* const* d_target_residues,
                        const std::int64_t* d_offsets, const std::vector<int>& lengths,
                        const int* which, int n, cudaEvent_t start, cudaEvent_t done) {
  Impl& m = *impl_;
  Impl::Slot& s = m.slots[slot];
  s.n = n;
  s.result.reserve(n + 1);
  s.targets_list.stage(m.ncj, lengths, which, n, st);
  s.ncj.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) s.ncj[static_cast<std::size_t>(i)] = m.ncj(lengths[which[i]]);
  s.d_result.reserve(n + 1);
  check(cudaEventRecord(start, st), "cudaEventRecord");
  if (n > 0) {
    ForwardArgs a{};
    a.trans0 = m.trans0.get();
    a.trans1 = m.trans1.get();
    a.emis = m.emis.get();
    a.Mp = m.Mp;
    a.chunks = m.chunks;
    a.e_loop = m.e_loop;
    a.e_move = m.e_move;
    a.target_residues = d_target_residues;
    a.offsets = d_offsets;
    a.list = s.targets_list.list();
    a.ncj = s.targets_list.ncj();
    a.order = s.targets_list.order();
    a.count = n;
    a.next = s.targets_list.next();
    a.result = s.d_result.get();
    const std::size_t row_floats = 3 * static_cast<std::size_t>(m.Mp);
    int threads = kGlobalRowThreads;
    std::size_t shared = 0;
    int blocks = 0;
    if (m.warps_per_block > 0) {
      threads = m.warps_per_block * 32;
      shared = m.warps_per_block * row_floats * sizeof(float);
      blocks = std::min(m.resident_blocks, (n + m.warps_per_block - 1) / m.warps_per_block);
      a.rows = nullptr;
    } else {
      blocks = std::min(m.resident_blocks, (n * 32 + threads - 1) / threads);
      s.d_rows.reserve(static_cast<std::size_t>(blocks) * (threads / 32) * row_floats);
      a.rows = s.d_rows.get();
    }
    if (m.P == 1)
      forward_warp_kernel<1><<<blocks, threads, shared, st>>>(a);
    else if (m.P == 2)
      forward_warp_kernel<2><<<blocks, threads, shared, st>>>(a);
    else
      forward_warp_kernel<4><<<blocks, threads, shared, st>>>(a);
    check(cudaGetLastError(), "forward_warp_kernel");
  }
  check(cudaEventRecord(done, st), "cudaEventRecord");
  if (n > 0) {
    check(cudaMemcpyAsync(s.result.get(), s.d_result.get(), n * sizeof(float),
                          cudaMemcpyDeviceToHost, st),
          "D2H forward");
  }
}

const std::vector<float>& ForwardGpu::scores(int slot) {
  Impl::Slot& s = impl_->slots[slot];
  s.scores.resize(static_cast<std::size_t>(s.n));
  for (std::size_t i = 0; i < s.scores.size(); ++i) s.scores[i] = s.ncj[i].score(s.result.get()[i]);
  return s.scores;
}

}  // namespace duet::device::detail
