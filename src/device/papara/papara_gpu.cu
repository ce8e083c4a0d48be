// PaPaRa's scoring kernel on the GPU and its host side (see papara_gpu.hpp).
//
// Exactness (DNA): every sum is a 16-bit wrapping add (PTX add.s16x2, which the DPX intrinsic
// __viaddmax_s16x2 fuses with a signed max.s16x2), every max a signed 16-bit max, in the
// scalar's expression tree: L = max(H_left + go, L_left + ge), U = max(H_up + o, U_up + e),
// H = max(H_diag + inc, L, U). Sums mod 2^16 may be regrouped freely (H_diag + inc is the
// same number whichever way inc is formed); only the maxima must see the scalar's operands.
// Protein: the same tree in int32, every sum a 32-bit wrapping add (formed unsigned: signed
// overflow is undefined in C++), every max a signed 32-bit max.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "device/cuda_raii.cuh"
#include "device/papara/papara_gpu.hpp"

namespace duet::device::papara {

namespace {

using detail::check;

// One warp per block: warps take tasks independently, and an SM then holds as many warps as
// its registers allow (with blocks of 4 warps, up to 3 warps' worth would stay unused).
constexpr int kThreads = 32;
constexpr int kWarps = kThreads / 32;
constexpr int kEdgesPerWarp = 64;         // DNA: 2 edges per lane
constexpr int kProteinEdgesPerWarp = 32;  // protein: 1 edge per lane
// Bytes of boundary scratch per query row and warp: H and L of two edges per lane (DNA, int16
// each) or of one edge per lane (protein, int32 each); 8 bytes per lane either way.
constexpr std::size_t kScratchRowBytes = 32 * sizeof(uint2);
// Default strip widths: the widest compiled, the fastest on an H100 (bench/papara_gpu_bench):
// fewer strips, so less boundary traffic per cell.
constexpr int kDefaultBaseRowsWidth = 24;
constexpr int kDefaultMatchMaskWidth = 24;
// Protein: the middle of the compiled widths (none spills registers); not yet tuned by
// bench/papara_gpu_bench --protein.
constexpr int kDefaultProteinWidth = 16;

// Lane pairs: kNegative (-32000) in both 16-bit lanes; the smallest int16 in both (a max
// with it leaves any value unchanged); 1 in both.
constexpr unsigned kNegativePair = 0x83008300u;
constexpr unsigned kSmallestPair = 0x80008000u;
constexpr unsigned kLaneOnes = 0x00010001u;

// max(a + b, c) per 16-bit lane, the sum wrapping (one DPX instruction).
__device__ __forceinline__ unsigned add_max(unsigned a, unsigned b, unsigned c) {
  return __viaddmax_s16x2(a, b, c);
}
// a + b per 16-bit lane, wrapping.
__device__ __forceinline__ unsigned add_pair(unsigned a, unsigned b) {
  return __viaddmax_s16x2(a, b, kSmallestPair);
}
// Signed max per 16-bit lane.
__device__ __forceinline__ unsigned max_pair(unsigned a, unsigned b) {
  return __vmaxs2(a, b);
}

struct KernelArgs {
  // Profiles: cells[j * edge_stride + e] (DNA) or protein_cells[j * edge_stride + e].
  const std::uint8_t* cells;
  const std::uint32_t* protein_cells;
  int columns, edge_stride;
  // The batch: query q is residues[offsets[q], offsets[q + 1]) (states 1..15, or amino acids
  // 0..19); this launch's queries are order[0, queries), longest first.
  const std::uint8_t* residues;
  const std::int64_t* offsets;
  const std::int32_t* order;
  int queries;
  int first_edge, count, groups;  // groups: tasks per query, ceil(count / edges per warp)
  // DNA scoring, each in both lanes except match (one lane's value: it multiplies a lane pair
  // of ones and zeros).
  unsigned gap_open, gap_extend, match, match_cgap;
  // Protein scoring, as int32.
  int gap_open32, gap_extend32, match32, match_cgap32;
  // Each resident warp's scratch: scratch_rows rows of 32 uint2, from warp slot * rows * 32.
  uint2* scratch;
  int scratch_rows;
  unsigned long long* next_task;
  std::int16_t* out;          // out[q * count + k] (DNA)
  std::int32_t* protein_out;  // the same (protein)
};

// a & b, computed where written: the compiler may otherwise repeat the AND at every use in
// the row loop (trading a register per column for an instruction per cell on the integer
// pipe, the resource the kernels are bound by).
__device__ __forceinline__ unsigned and_kept(unsigned a, unsigned b) {
  unsigned r;
  asm("and.b32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// How the kernels form inc(i, j) = (A_j & q_i ? match : 0) + (F_j ? match_cgap : 0) for a
// lane pair: set(c, ...) keeps what column c of the strip needs (flag_inc: match_cgap in a
// flagged lane, else 0), row(residue, body) calls body(inc_of) with inc_of(c) giving column
// c's inc in a row of that residue.
//
// BaseRows: inc for each of the four bases in registers; a row whose residue is one base
// reads its base's (a branch per row, uniform over the warp: every lane has the same query);
// another residue takes the max of its bases' incs, which is its inc when match >= 0 and
// match + match_cgap does not overflow (the host checks).
template <int C>
struct BaseRows {
  unsigned inc[4][C];
  __device__ __forceinline__ void set(int c, unsigned b0, unsigned b1, unsigned flag_inc,
                                      const KernelArgs& a) {
#pragma unroll
    for (int base = 0; base < 4; ++base) {
      const unsigned hits = ((b0 >> base) & 1u) | (((b1 >> base) & 1u) << 16);
      inc[base][c] = add_pair(hits * a.match, flag_inc);
    }
  }
  template <class Body>
  __device__ __forceinline__ void row(unsigned residue, const Body& body) const {
    switch (residue) {
      case 1:
        body([&](int c) { return inc[0][c]; });
        break;
      case 2:
        body([&](int c) { return inc[1][c]; });
        break;
      case 4:
        body([&](int c) { return inc[2][c]; });
        break;
      case 8:
        body([&](int c) { return inc[3][c]; });
        break;
      default:
        body([&](int c) {
          unsigned v = kSmallestPair;
#pragma unroll
          for (int base = 0; base < 4; ++base) {
            if ((residue >> base) & 1u) v = max_pair(v, inc[base][c]);
          }
          return v;
        });
    }
  }
};

// MatchMask: per column, bit r of a lane set when its state shares a base with residue r
// (from the block's table `masks`), and flag_inc; `match` as KernelArgs has it; inc is a shift, a
// mask and a multiply-add (kSplitInc: the multiply, then a 16-bit add, where one 32-bit add would
// carry between the lanes; see score_packed).
template <int C, bool kSplitInc>
struct MatchMask {
  const unsigned* masks;
  unsigned match;
  unsigned match_mask[C], flag_inc[C];
  __device__ __forceinline__ void set(int c, unsigned b0, unsigned b1, unsigned flag_inc_c,
                                      const KernelArgs&) {
    match_mask[c] = masks[b0 & 15u] | (masks[b1 & 15u] << 16);
    flag_inc[c] = flag_inc_c;
  }
  template <class Body>
  __device__ __forceinline__ void row(unsigned residue, const Body& body) const {
    body([&](int c) {
      const unsigned hits = (match_mask[c] >> residue) & kLaneOnes;  // 1 in a matching lane
      if constexpr (kSplitInc) {
        return add_pair(hits * match, flag_inc[c]);
      } else {
        return hits * match + flag_inc[c];
      }
    });
  }
};

// One strip of C columns [j0, j0 + C) of one lane's two edges e0, e1, over all m rows of the
// query. Kept in registers per column: what `columns` needs for inc, go_j and ge_j (0 in a
// flagged lane), and the DP's H and U of the row above. The column left of the strip (H and L
// per row) comes from `scratch`, and this strip's last column goes back there (`last`: the
// strip ends the profile, its last column's H goes into `best` instead). kTail: a strip that
// passes the profile's end; its columns past the end copy H from the left, so its last column
// holds H(i, n - 1) and its last row adds only copies.
template <int C, bool kTail, class Columns>
__device__ __forceinline__ void sweep_strip(const KernelArgs& a, Columns& columns,
                                            const std::uint8_t* query, int m, int e0, int e1,
                                            int j0, bool first, bool last, uint2* scratch,
                                            unsigned& best) {
  unsigned open[C], extend[C], up[C], u[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int j = j0 + c;
    unsigned b0 = 0, b1 = 0;
    if (!kTail || j < a.columns) {
      const std::uint8_t* column = a.cells + static_cast<std::size_t>(j) * a.edge_stride;
      b0 = __ldg(column + e0);
      b1 = __ldg(column + e1);
    }
    // 0xffff in a flagged lane.
    const unsigned flagged = ((b0 & 0x10u) ? 0x0000ffffu : 0u) | ((b1 & 0x10u) ? 0xffff0000u : 0u);
    columns.set(c, b0, b1, a.match_cgap & flagged, a);
    open[c] = and_kept(a.gap_open, ~flagged);
    extend[c] = and_kept(a.gap_extend, ~flagged);
    up[c] = 0;             // H(-1, j)
    u[c] = kNegativePair;  // U(-1, j)
  }
  // The left boundary of rows i, i + 1, i + 2 and the residues of those rows, loaded two rows
  // ahead so that the loads' latency hides behind a row's work. The first strip's boundary
  // is H(i, -1) = 0, L(i, -1) = kNegative.
  const uint2 outside = make_uint2(0u, kNegativePair);
  uint2 boundary = outside, boundary_next = outside;
  if (!first) {
    boundary = scratch[0];
    if (m > 1) boundary_next = scratch[32];
  }
  unsigned residue = __ldg(query), residue_next = m > 1 ? __ldg(query + 1) : 0u;
  unsigned diag = 0;  // H(i - 1, j0 - 1); row -1 is 0
  for (int i = 0; i < m; ++i) {
    uint2 boundary_after = outside;
    unsigned residue_after = 0;
    if (i + 2 < m) {
      residue_after = __ldg(query + i + 2);
      if (!first) boundary_after = scratch[(i + 2) * 32];
    }
    unsigned h = boundary.x, l = boundary.y;  // H(i, j - 1), L(i, j - 1)
    const unsigned diag_below = h;            // the next row's H(i, j0 - 1)
    const auto row = [&](const auto& inc_of) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        u[c] = add_max(up[c], a.gap_open, add_pair(u[c], a.gap_extend));
        l = add_max(h, open[c], add_pair(l, extend[c]));
        unsigned value = max_pair(add_max(diag, inc_of(c), u[c]), l);
        if (kTail && j0 + c >= a.columns) value = h;
        diag = up[c];
        up[c] = value;
        h = value;
      }
    };
    columns.row(residue, row);
    diag = diag_below;
    if (last) {
      best = max_pair(best, h);  // H(i, n - 1): the last column
    } else {
      scratch[i * 32] = make_uint2(h, l);
    }
    boundary = boundary_next;
    boundary_next = boundary_after;
    residue = residue_next;
    residue_next = residue_after;
  }
#pragma unroll
  for (int c = 0; c < C; ++c) best = max_pair(best, up[c]);  // H(m - 1, j): the last row
}

// Protein: a + b wrapping in 32 bits, as the scalar's int32 lanes add.
__device__ __forceinline__ int add_wrapping(int a, int b) {
  return static_cast<int>(static_cast<unsigned>(a) + static_cast<unsigned>(b));
}

// sweep_strip for protein: one lane's one edge, int32 cells, the same strips, boundary and
// tail handling (the scratch's uint2 holds H and L of the edge as int32 bits). Per column:
// the state set, inc with and without a match (the flag's match_cgap in both), go_j, ge_j,
// and H and U of the row above.
template <int C, bool kTail>
__device__ __forceinline__ void sweep_strip_protein(const KernelArgs& a, const std::uint8_t* query,
                                                    int m, int edge, int j0, bool first, bool last,
                                                    uint2* scratch, int& best) {
  constexpr unsigned kStates = 0xfffffu;  // kProteinStateMask
  constexpr unsigned kFlag = 1u << 20;    // kProteinFlagBit
  constexpr int kNegative = -32000;       // duet::papara::kNegative
  unsigned states[C];
  int with_match[C], without_match[C], open[C], extend[C], up[C], u[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int j = j0 + c;
    unsigned cell = 0;
    if (!kTail || j < a.columns)
      cell = __ldg(a.protein_cells + static_cast<std::size_t>(j) * a.edge_stride + edge);
    const bool flagged = (cell & kFlag) != 0u;
    states[c] = cell & kStates;
    without_match[c] = flagged ? a.match_cgap32 : 0;
    with_match[c] = add_wrapping(a.match32, without_match[c]);
    open[c] = flagged ? 0 : a.gap_open32;
    extend[c] = flagged ? 0 : a.gap_extend32;
    up[c] = 0;         // H(-1, j)
    u[c] = kNegative;  // U(-1, j)
  }
  // As sweep_strip: the left boundary and the residues two rows ahead.
  const uint2 outside = make_uint2(0u, static_cast<unsigned>(kNegative));
  uint2 boundary = outside, boundary_next = outside;
  if (!first) {
    boundary = scratch[0];
    if (m > 1) boundary_next = scratch[32];
  }
  unsigned residue = __ldg(query), residue_next = m > 1 ? __ldg(query + 1) : 0u;
  int diag = 0;  // H(i - 1, j0 - 1); row -1 is 0
  for (int i = 0; i < m; ++i) {
    uint2 boundary_after = outside;
    unsigned residue_after = 0;
    if (i + 2 < m) {
      residue_after = __ldg(query + i + 2);
      if (!first) boundary_after = scratch[(i + 2) * 32];
    }
    int h = static_cast<int>(boundary.x), l = static_cast<int>(boundary.y);  // H, L(i, j - 1)
    const int diag_below = h;  // the next row's H(i, j0 - 1)
#pragma unroll
    for (int c = 0; c < C; ++c) {
      u[c] = max(add_wrapping(up[c], a.gap_open32), add_wrapping(u[c], a.gap_extend32));
      l = max(add_wrapping(h, open[c]), add_wrapping(l, extend[c]));
      const int inc = ((states[c] >> residue) & 1u) != 0u ? with_match[c] : without_match[c];
      int value = max(max(add_wrapping(diag, inc), l), u[c]);
      if (kTail && j0 + c >= a.columns) value = h;
      diag = up[c];
      up[c] = value;
      h = value;
    }
    diag = diag_below;
    if (last) {
      best = max(best, h);  // H(i, n - 1): the last column
    } else {
      scratch[i * 32] = make_uint2(static_cast<unsigned>(h), static_cast<unsigned>(l));
    }
    boundary = boundary_next;
    boundary_next = boundary_after;
    residue = residue_next;
    residue_next = residue_after;
  }
#pragma unroll
  for (int c = 0; c < C; ++c) best = max(best, up[c]);  // H(m - 1, j): the last row
}

// Persistent warps as score_kernel; a task is one query against 32 consecutive edges, one per
// lane.
template <int C>
__global__ void __launch_bounds__(kThreads, 1) score_protein_kernel(const KernelArgs a) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const std::size_t slot = blockIdx.x * kWarps + threadIdx.x / 32;
  uint2* const scratch = a.scratch + slot * static_cast<std::size_t>(a.scratch_rows) * 32 + lane;
  const unsigned long long tasks = static_cast<unsigned long long>(a.queries) * a.groups;
  for (;;) {
    unsigned long long task = 0;
    if (lane == 0) task = atomicAdd(a.next_task, 1ull);
    task = __shfl_sync(0xffffffffu, task, 0);
    if (task >= tasks) return;
    const int query = a.order[task / a.groups];
    const int k = static_cast<int>(task % a.groups) * kProteinEdgesPerWarp + lane;
    const std::int64_t begin = a.offsets[query];
    const int m = static_cast<int>(a.offsets[query + 1] - begin);
    const std::uint8_t* const residues = a.residues + begin;
    // Lanes past the range repeat its last edge (and write nothing).
    const int edge = a.first_edge + min(k, a.count - 1);
    int best = -32000;  // kNegative
    int j0 = 0;
    for (; j0 + C <= a.columns; j0 += C) {
      sweep_strip_protein<C, false>(a, residues, m, edge, j0, j0 == 0, j0 + C == a.columns, scratch,
                                    best);
    }
    if (j0 < a.columns)
      sweep_strip_protein<C, true>(a, residues, m, edge, j0, j0 == 0, true, scratch, best);
    if (k < a.count) a.protein_out[static_cast<std::size_t>(query) * a.count + k] = best;
  }
}

// The compiled kernels: BaseRows, MatchMask<false>, MatchMask<true>, protein.
enum class Variant { base_rows, mask, mask_split, protein };

// Persistent warps: each takes tasks (one query against 64 consecutive edges of the range)
// from a counter until none is left.
template <int C, Variant V>
__global__ void __launch_bounds__(kThreads, 1) score_kernel(const KernelArgs a) {
  // Bit r (1..15) of match_masks[s] is set when state s shares a base with residue r.
  __shared__ unsigned match_masks[16];
  if (threadIdx.x < 16) {
    unsigned mask = 0;
    for (unsigned r = 1; r < 16; ++r) mask |= (r & threadIdx.x) != 0 ? 1u << r : 0u;
    match_masks[threadIdx.x] = mask;
  }
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const std::size_t slot = blockIdx.x * kWarps + threadIdx.x / 32;
  uint2* const scratch = a.scratch + slot * static_cast<std::size_t>(a.scratch_rows) * 32 + lane;
  const unsigned long long tasks = static_cast<unsigned long long>(a.queries) * a.groups;
  for (;;) {
    unsigned long long task = 0;
    if (lane == 0) task = atomicAdd(a.next_task, 1ull);
    task = __shfl_sync(0xffffffffu, task, 0);
    if (task >= tasks) return;
    const int query = a.order[task / a.groups];
    const int k0 = static_cast<int>(task % a.groups) * kEdgesPerWarp + 2 * lane;
    const std::int64_t begin = a.offsets[query];
    const int m = static_cast<int>(a.offsets[query + 1] - begin);
    const std::uint8_t* const residues = a.residues + begin;
    // Lanes past the range repeat its last edge (and write nothing).
    const int e0 = a.first_edge + min(k0, a.count - 1);
    const int e1 = a.first_edge + min(k0 + 1, a.count - 1);
    unsigned best = kNegativePair;
    const auto strip = [&](auto tail_tag, int j0) {
      constexpr bool kTail = decltype(tail_tag)::value;
      const bool first = j0 == 0, last = kTail || j0 + C == a.columns;
      if constexpr (V == Variant::base_rows) {
        BaseRows<C> columns;
        sweep_strip<C, kTail>(a, columns, residues, m, e0, e1, j0, first, last, scratch, best);
      } else {
        MatchMask<C, V == Variant::mask_split> columns{match_masks, a.match};
        sweep_strip<C, kTail>(a, columns, residues, m, e0, e1, j0, first, last, scratch, best);
      }
    };
    int j0 = 0;
    for (; j0 + C <= a.columns; j0 += C) strip(std::false_type{}, j0);
    if (j0 < a.columns) strip(std::true_type{}, j0);
    std::int16_t* const out = a.out + static_cast<std::size_t>(query) * a.count;
    if (k0 < a.count) out[k0] = static_cast<std::int16_t>(best & 0xffffu);
    if (k0 + 1 < a.count) out[k0 + 1] = static_cast<std::int16_t>(best >> 16);
  }
}

using KernelFunction = void (*)(KernelArgs);

template <int C, Variant V>
constexpr KernelFunction kernel_of() {
  if constexpr (V == Variant::protein) {
    return &score_protein_kernel<C>;
  } else {
    return &score_kernel<C, V>;
  }
}

template <Variant V>
KernelFunction kernel_of_variant(int strip_width) {
  switch (strip_width) {
    case 12:
      return kernel_of<12, V>();
    case 16:
      return kernel_of<16, V>();
    case 20:
      return kernel_of<20, V>();
    case 24:
      return kernel_of<24, V>();
    default:
      throw std::invalid_argument("PaparaGpu: strip width " + std::to_string(strip_width) +
                                  " is not compiled");
  }
}

KernelFunction kernel_for(Variant variant, int strip_width) {
  switch (variant) {
    case Variant::base_rows:
      return kernel_of_variant<Variant::base_rows>(strip_width);
    case Variant::mask:
      return kernel_of_variant<Variant::mask>(strip_width);
    case Variant::mask_split:
      return kernel_of_variant<Variant::mask_split>(strip_width);
    case Variant::protein:
      return kernel_of_variant<Variant::protein>(strip_width);
  }
  throw std::logic_error("PaparaGpu: unknown kernel variant");
}

unsigned lane_pair(std::int16_t v) {
  return static_cast<std::uint16_t>(v) * kLaneOnes;
}

std::size_t round_up8(std::size_t n) {
  return (n + 7) & ~std::size_t{7};
}

}  // namespace

struct PaparaGpu::State {
  int device = 0;
  std::size_t scratch_bytes = 0;
  int multiprocessors = 0;
  int columns = 0, edges = 0, edge_stride = 0;
  bool protein = false;  // cells holds protein words (uint32), else DNA bytes
  Kernel kernel = Kernel::automatic;
  int strip_width = 0;  // 0: the kernel's default
  Kernel last_kernel = Kernel::automatic;
  int last_strip_width = 0;
  double kernel_seconds = 0;
  int launches = 0;
  detail::DeviceBuffer<unsigned char> cells;
  // The batch: staged in `staging` (offsets, order, residues), copied into `inputs`, which
  // also holds the task counters and the scores; the scores come back through `scores`.
  detail::DeviceBuffer<unsigned char> inputs;
  detail::DeviceBuffer<uint2> scratch;
  detail::PinnedBuffer<unsigned char> staging;
  detail::PinnedBuffer<unsigned char> scores;  // int16 (DNA) or int32 (protein) scores
  detail::Stream stream;
  detail::Event start, stop, done{false};
};

PaparaGpu::State* PaparaGpu::create_state(int device, std::size_t scratch_bytes) {
  check(cudaSetDevice(device), "cudaSetDevice");
  auto state = std::make_unique<State>();
  state->device = device;
  state->scratch_bytes = scratch_bytes;
  check(cudaDeviceGetAttribute(&state->multiprocessors, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute");
  return state.release();
}

void PaparaGpu::destroy_state(State* state) noexcept {
  if (state == nullptr) return;
  cudaSetDevice(state->device);
  delete state;
}

PaparaGpu::~PaparaGpu() {
  destroy_state(state_);
}

bool PaparaGpu::protein() const {
  return state_->protein;
}

std::string PaparaGpu::name() const {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, state_->device), "cudaGetDeviceProperties");
  return prop.name;
}

const char* kernel_name(Kernel kernel) {
  switch (kernel) {
    case Kernel::automatic:
      return "auto";
    case Kernel::base_rows:
      return "base-rows";
    case Kernel::match_mask:
      return "match-mask";
    case Kernel::protein:
      return "protein";
  }
  return "?";
}

double PaparaGpu::last_kernel_seconds() const {
  return state_->kernel_seconds;
}
int PaparaGpu::last_launches() const {
  return state_->launches;
}
Kernel PaparaGpu::last_kernel() const {
  return state_->last_kernel;
}
int PaparaGpu::last_strip_width() const {
  return state_->last_strip_width;
}

void PaparaGpu::set_kernel(Kernel kernel, int strip_width) {
  if (strip_width != 0) (void)kernel_for(Variant::mask, strip_width);  // throws if not compiled
  state_->kernel = kernel;
  state_->strip_width = strip_width;
}

void PaparaGpu::upload(bool protein, const std::uint8_t* cells, const std::uint32_t* protein_cells,
                       int columns, int edges, int edge_stride) {
  State& s = *state_;
  check(cudaSetDevice(s.device), "cudaSetDevice");
  // The device holds the host's layout as it is: cells[j * edge_stride + e], one byte (DNA)
  // or one 32-bit word (protein) each.
  s.protein = protein;
  const std::size_t bytes = static_cast<std::size_t>(columns) *
                            static_cast<std::size_t>(edge_stride) *
                            (s.protein ? sizeof(std::uint32_t) : sizeof(std::uint8_t));
  const void* const source = s.protein ? static_cast<const void*>(protein_cells) : cells;
  s.cells.reserve(bytes);
  if (bytes > 0)
    check(cudaMemcpy(s.cells.get(), source, bytes, cudaMemcpyHostToDevice), "copy profiles");
  s.columns = columns;
  s.edges = edges;
  s.edge_stride = edge_stride;
}

void PaparaGpu::score_packed(const std::uint8_t* residues, const std::int64_t* offsets,
                             std::size_t queries, int first_edge, int count,
                             const std::int16_t scoring[4], std::int16_t* dna_out,
                             std::int32_t* protein_out) {
  State& s = *state_;
  s.kernel_seconds = 0;
  s.launches = 0;
  if (first_edge < 0 || count < 0 || first_edge > s.edges - count) {
    throw std::invalid_argument("PaparaGpu::score: edges [" + std::to_string(first_edge) + ", +" +
                                std::to_string(count) + ") outside the " + std::to_string(s.edges) +
                                " edges");
  }
  if (queries > static_cast<std::size_t>(INT32_MAX)) {
    throw std::invalid_argument("PaparaGpu::score: too many queries in one batch");
  }
  for (std::size_t q = 0; q < queries; ++q) {
    const std::int64_t m = offsets[q + 1] - offsets[q];
    if (m <= 0 || m > INT32_MAX) {
      throw std::invalid_argument("PaparaGpu::score: query " + std::to_string(q) +
                                  " is empty or too long");
    }
  }
  // Residues the kernels index by: DNA states 1..15 (a shift of the match mask), protein
  // amino acids 0..19 (a bit of the 20-bit state set).
  const unsigned lowest = s.protein ? 0u : 1u, highest = s.protein ? 19u : 15u;
  for (std::size_t i = static_cast<std::size_t>(offsets[0]);
       i < static_cast<std::size_t>(offsets[queries]); ++i) {
    if (residues[i] < lowest || residues[i] > highest) {
      throw std::invalid_argument(
          "PaparaGpu::score: residue " + std::to_string(residues[i]) +
          (s.protein ? " is not an amino acid 0..19" : " is not a state 1..15"));
    }
  }
  const std::int16_t gap_open = scoring[0], gap_extend = scoring[1], match = scoring[2],
                     match_cgap = scoring[3];
  const Kernel chosen = resolve_kernel(s.kernel, s.protein, match, match_cgap);
  if (queries == 0 || count == 0) return;
  const std::size_t n_scores = queries * static_cast<std::size_t>(count);
  if (s.columns == 0) {  // the scalar's score with no columns: max over H(i, -1) = 0
    if (s.protein) {
      std::fill(protein_out, protein_out + n_scores, std::int32_t{0});
    } else {
      std::fill(dna_out, dna_out + n_scores, std::int16_t{0});
    }
    return;
  }
  check(cudaSetDevice(s.device), "cudaSetDevice");

  // Longest queries first: long tasks start early and short ones fill the end.
  std::vector<std::int32_t> order(queries);
  std::iota(order.begin(), order.end(), 0);
  const auto length = [offsets](std::int32_t q) { return offsets[q + 1] - offsets[q]; };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int32_t x, std::int32_t y) { return length(x) > length(y); });

  // match_mask forms inc = hits * match + flag_inc as one 32-bit multiply-add unless the low
  // lane's match + match_cgap (as unsigned 16-bit) carries into the high lane; then in two
  // steps (mask_split).
  const bool split_inc = static_cast<std::uint32_t>(static_cast<std::uint16_t>(match)) +
                             static_cast<std::uint16_t>(match_cgap) >
                         0xffffu;
  const Variant variant = chosen == Kernel::protein     ? Variant::protein
                          : chosen == Kernel::base_rows ? Variant::base_rows
                          : split_inc                   ? Variant::mask_split
                                                        : Variant::mask;
  const int strip_width = s.strip_width != 0            ? s.strip_width
                          : chosen == Kernel::protein   ? kDefaultProteinWidth
                          : chosen == Kernel::base_rows ? kDefaultBaseRowsWidth
                                                        : kDefaultMatchMaskWidth;
  const std::size_t score_bytes = s.protein ? sizeof(std::int32_t) : sizeof(std::int16_t);
  const KernelFunction kernel = kernel_for(variant, strip_width);
  int blocks_per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kThreads, 0),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const std::int64_t full_warps =
      static_cast<std::int64_t>(std::max(1, blocks_per_sm)) * s.multiprocessors * kWarps;

  // Launches: queries too long for every resident warp to hold their rows within the scratch
  // budget go first, with fewer warps; the rest with all of them.
  struct Launch {
    std::size_t first = 0, queries = 0;  // into order
    int rows = 0;                        // scratch rows per warp (its longest query)
    std::int64_t blocks = 0;
  };
  const int edges_per_warp = s.protein ? kProteinEdgesPerWarp : kEdgesPerWarp;
  const int groups = (count + edges_per_warp - 1) / edges_per_warp;
  const auto warps_for = [&](int rows, std::size_t n) {
    const std::int64_t fit = static_cast<std::int64_t>(
        s.scratch_bytes / (static_cast<std::size_t>(rows) * kScratchRowBytes));
    const std::int64_t tasks = static_cast<std::int64_t>(n) * groups;
    return std::max<std::int64_t>(1, std::min({full_warps, fit, tasks}));
  };
  std::vector<Launch> launches;
  std::size_t q = 0;
  while (q < queries) {
    Launch l;
    l.first = q;
    l.rows = static_cast<int>(length(order[q]));
    const bool crowded =
        warps_for(l.rows, queries - q) <
        std::min<std::int64_t>(full_warps, static_cast<std::int64_t>(queries - q) * groups);
    std::size_t end = q + 1;
    if (crowded) {  // this launch: every query that also needs fewer warps than the GPU holds
      const std::int64_t fit_rows = static_cast<std::int64_t>(
          s.scratch_bytes / (static_cast<std::size_t>(full_warps) * kScratchRowBytes));
      while (end < queries && length(order[end]) > fit_rows) ++end;
    } else {
      end = queries;
    }
    l.queries = end - q;
    l.blocks = (warps_for(l.rows, l.queries) + kWarps - 1) / kWarps;
    launches.push_back(l);
    q = end;
  }
  std::size_t scratch_elements = 0;
  for (const Launch& l : launches) {
    scratch_elements = std::max(scratch_elements, static_cast<std::size_t>(l.blocks) * kWarps *
                                                      static_cast<std::size_t>(l.rows) * 32);
  }

  // Staging: offsets (rebased to 0), order, residues; then on the device the task counters
  // and the scores.
  const std::int64_t base = offsets[0];
  const std::size_t total_residues = static_cast<std::size_t>(offsets[queries] - base);
  const std::size_t offsets_at = 0, order_at = round_up8((queries + 1) * sizeof(std::int64_t));
  const std::size_t residues_at = order_at + round_up8(queries * sizeof(std::int32_t));
  const std::size_t staged = residues_at + round_up8(total_residues);
  const std::size_t counters_at = staged;
  const std::size_t scores_at = counters_at + launches.size() * sizeof(unsigned long long);
  const std::size_t device_bytes = scores_at + n_scores * score_bytes;
  s.staging.reserve(staged);
  s.scores.reserve(n_scores * score_bytes);
  s.inputs.reserve(device_bytes);
  s.scratch.reserve(scratch_elements);
  unsigned char* const host = s.staging.get();
  auto* const host_offsets = reinterpret_cast<std::int64_t*>(host + offsets_at);
  for (std::size_t i = 0; i <= queries; ++i) host_offsets[i] = offsets[i] - base;
  std::memcpy(host + order_at, order.data(), queries * sizeof(std::int32_t));
  std::memcpy(host + residues_at, residues + base, total_residues);

  cudaStream_t stream = s.stream.get();
  unsigned char* const device = s.inputs.get();
  check(cudaMemcpyAsync(device, host, staged, cudaMemcpyHostToDevice, stream), "copy batch in");
  check(cudaMemsetAsync(device + counters_at, 0, launches.size() * sizeof(unsigned long long),
                        stream),
        "clear task counters");
  KernelArgs args{};
  args.cells = s.protein ? nullptr : s.cells.get();
  args.protein_cells = s.protein ? reinterpret_cast<const std::uint32_t*>(s.cells.get()) : nullptr;
  args.columns = s.columns;
  args.edge_stride = s.edge_stride;
  args.residues = device + residues_at;
  args.offsets = reinterpret_cast<const std::int64_t*>(device + offsets_at);
  args.first_edge = first_edge;
  args.count = count;
  args.groups = groups;
  args.gap_open = lane_pair(gap_open);
  args.gap_extend = lane_pair(gap_extend);
  args.match = static_cast<std::uint16_t>(match);
  args.match_cgap = lane_pair(match_cgap);
  args.gap_open32 = gap_open;
  args.gap_extend32 = gap_extend;
  args.match32 = match;
  args.match_cgap32 = match_cgap;
  args.scratch = s.scratch.get();
  // scores_at follows the 8-byte counters at an 8-byte boundary: aligned for int32.
  args.out = s.protein ? nullptr : reinterpret_cast<std::int16_t*>(device + scores_at);
  args.protein_out = s.protein ? reinterpret_cast<std::int32_t*>(device + scores_at) : nullptr;
  s.start.record(stream);
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    args.order = reinterpret_cast<const std::int32_t*>(device + order_at) + l.first;
    args.queries = static_cast<int>(l.queries);
    args.scratch_rows = l.rows;
    args.next_task = reinterpret_cast<unsigned long long*>(device + counters_at) + i;
    kernel<<<static_cast<unsigned>(l.blocks), kThreads, 0, stream>>>(args);
    detail::check_launch("papara score_kernel");
  }
  s.stop.record(stream);
  check(cudaMemcpyAsync(s.scores.get(), device + scores_at, n_scores * score_bytes,
                        cudaMemcpyDeviceToHost, stream),
        "copy scores out");
  s.done.record(stream);
  check(cudaEventSynchronize(s.done.get()), "papara score_kernel");
  void* const out = s.protein ? static_cast<void*>(protein_out) : static_cast<void*>(dna_out);
  std::memcpy(out, s.scores.get(), n_scores * score_bytes);
  s.kernel_seconds = s.stop.ms_since(s.start) * 1e-3;
  s.launches = static_cast<int>(launches.size());
  s.last_kernel = chosen;
  s.last_strip_width = strip_width;
}

}  // namespace duet::device::papara
