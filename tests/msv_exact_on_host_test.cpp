// The exact MSV kernel's header (src/device/hmmsearch/msv_exact_kernel.cuh) run on the
// host, so that machines without a GPU (CI) test its every instantiation against
// msv_filter_reference: the static buckets of register rows, the run-time
// specialisation's fixed lengths, and the rows in global memory. A warp is 32 fibers on
// one thread, switched at each warp collective (__shfl_sync, __shfl_up_sync,
// __reduce_max_sync, __syncwarp), which this file defines with CUDA's semantics; the
// kernel's own text is compiled unchanged. The GPU builds are tested on the GPU
// (gpu_kernels_test.cpp); this test covers the kernel's logic where no GPU is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/hmmsearch/msv_gate.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"
#include "simd_test_support.hpp"

#if defined(__x86_64__)

// ---- the CUDA names the header uses, on the host ----
namespace {
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
}  // namespace
Dim3 threadIdx, blockIdx, blockDim{32, 1, 1}, gridDim{1, 1, 1};
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(x)
using std::max;
using std::min;

// A fiber switch: the callee-saved registers and the stack pointer (System V x86-64).
extern "C" void duet_test_switch_fiber(void** save_sp, void* to_sp);
asm(R"(
.text
.globl duet_test_switch_fiber
duet_test_switch_fiber:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
)");

namespace {
void* g_scheduler_sp;
void* g_lane_sp[32];
bool g_lane_done[32];
std::function<void()> g_lane_body;
// A collective's values, one per lane, in two buffers: a lane writes collective k's value
// into buffer k % 2 while lanes behind it still read collective k-1's.
long long g_values[2][32];
int g_parity[32];

int current_lane() {
  return static_cast<int>(threadIdx.x);
}
// Writes the lane's value, waits until every lane has written, returns the buffer.
const long long* exchange(long long v) {
  const int lane = current_lane();
  long long* values = g_values[g_parity[lane]];
  g_parity[lane] ^= 1;
  values[lane] = v;
  duet_test_switch_fiber(&g_lane_sp[lane], g_scheduler_sp);
  return values;
}
[[noreturn]] void lane_entry() {
  const int lane = current_lane();
  g_lane_body();
  g_lane_done[lane] = true;
  duet_test_switch_fiber(&g_lane_sp[lane], g_scheduler_sp);
  __builtin_unreachable();
}
}  // namespace

int __shfl_sync(unsigned, int v, int source) {
  return static_cast<int>(exchange(v)[source & 31]);
}
int __shfl_up_sync(unsigned, int v, unsigned delta) {
  const int lane = current_lane();
  const int d = static_cast<int>(delta);
  return static_cast<int>(exchange(v)[lane >= d ? lane - d : lane]);
}
unsigned __reduce_max_sync(unsigned, unsigned v) {
  const long long* values = exchange(v);
  unsigned best = 0;
  for (int l = 0; l < 32; ++l) best = std::max(best, static_cast<unsigned>(values[l]));
  return best;
}
void __syncwarp() {
  exchange(0);
}

#include "device/hmmsearch/msv_exact_kernel.cuh"  // (its `#pragma unroll`s: tests/CMakeLists.txt)

namespace duet {
namespace {

namespace exact = device::msv_exact;

// Runs `kernel` on one warp (a grid of one 32-thread block); false if the lanes left the
// kernel at different collectives.
bool run_warp(const std::function<void()>& kernel) {
  constexpr std::size_t kStack = std::size_t{1} << 18;
  static std::vector<char> stacks(32 * kStack);
  g_lane_body = kernel;
  for (int l = 0; l < 32; ++l) {
    auto top =
        reinterpret_cast<std::uintptr_t>(stacks.data() + (l + 1) * kStack) & ~std::uintptr_t{15};
    auto* sp = reinterpret_cast<std::uintptr_t*>(top);
    *--sp = 0;  // lane_entry starts with the stack pointer at 8 mod 16, as after a call
    *--sp = reinterpret_cast<std::uintptr_t>(&lane_entry);
    for (int r = 0; r < 6; ++r) *--sp = 0;  // the six registers the switch restores
    g_lane_sp[l] = sp;
    g_lane_done[l] = false;
    g_parity[l] = 0;
  }
  for (;;) {
    for (int l = 0; l < 32; ++l) {
      threadIdx.x = static_cast<unsigned>(l);
      duet_test_switch_fiber(&g_scheduler_sp, g_lane_sp[l]);
    }
    const auto done = std::count(std::begin(g_lane_done), std::end(g_lane_done), true);
    if (done == 32) return true;
    if (done != 0) return false;
  }
}

// The kernel's result code for each target of `a` (its list: every target).
template <typename Kernel>
std::vector<int> codes(exact::Args a, std::size_t n, Kernel kernel) {
  std::vector<int> result(n, -1);
  a.result = result.data();
  EXPECT_TRUE(run_warp([&] { kernel(a); })) << "lanes diverged";
  return result;
}

// Every instantiation on random models at the bucket bounds and past them, amino and DNA,
// with targets of 1 to 3 residues (the cost prefetch's ends), sampled domains, consensus
// runs (overflows) and random codes: each code equals msv_filter_reference's score.
TEST(MsvExactOnHost, EveryInstantiationMatchesReference) {
  std::mt19937_64 rng(simd_test::test_seed() ^ 0xe1);
  int checked = 0, overflows = 0;
  for (const int M : {1, 31, 33, 64, 65, 129, 256, 257, 513, 1024, 1025, 1536, 1537, 1700}) {
    for (const Alphabet* abc : {&Alphabet::amino(), &Alphabet::dna()}) {
      const HmmModel hmm = simd_test::random_hmm(rng, *abc, M, simd_test::random_style(rng));
      const SearchProfile p = build_search_profile(hmm, Background::for_alphabet(*abc));
      const MsvScores& msv = p.msv;
      const auto row = static_cast<std::size_t>(M + 1);
      std::vector<std::uint8_t> costs(msv.cost.size() * row, 255);
      for (std::size_t x = 0; x < msv.cost.size(); ++x)
        std::copy(msv.cost[x].begin() + 1, msv.cost[x].begin() + M + 1,
                  costs.begin() + x * row + 1);
      std::vector<std::vector<Residue>> seqs;
      for (const int L : {1, 2, 3}) seqs.push_back(simd_test::random_codes(rng, *abc, L));
      std::uniform_int_distribution<int> extra(1, 300);
      for (int i = 0; i < 8; ++i) {
        seqs.push_back(simd_test::sampled_from_model(rng, hmm, std::max(1, M / 2 + extra(rng)),
                                                     0.05 * (i % 4)));
      }
      seqs.push_back(simd_test::consensus_repeated(hmm, std::min(3 * M + 5, 900)));
      seqs.push_back(simd_test::random_codes(rng, *abc, 300));
      const std::size_t n = seqs.size();
      std::vector<const std::uint8_t*> residues;
      std::vector<exact::Int64> offsets{0};
      std::vector<std::uint8_t> bjbm;
      std::vector<int> list;
      for (std::size_t i = 0; i < n; ++i) {
        residues.push_back(seqs[i].data());
        offsets.push_back(offsets.back() + static_cast<exact::Int64>(seqs[i].size()));
        bjbm.push_back(static_cast<std::uint8_t>(
            (msv.tjb(static_cast<int>(seqs[i].size())) + msv.tbm) & 0xff));
        list.push_back(static_cast<int>(n - 1 - i));  // not in order
      }
      const int count = static_cast<int>(n);
      std::vector<std::uint8_t> rows(row);
      exact::Args a{};
      a.cost = costs.data();
      a.M = M;
      a.target_residues = residues.data();
      a.offsets = offsets.data();
      a.bjbm = bjbm.data();
      a.base = msv.base;
      a.bias = msv.bias;
      a.tec = msv.tec;
      a.list = list.data();
      a.count = &count;
      a.rows = rows.data();
      std::vector<std::pair<std::string, std::vector<int>>> runs;
      runs.emplace_back("rows in memory",
                        codes(a, n, [](const exact::Args& x) { exact::msv_exact_rows(x); }));
      const int chunks = (M + 31) / 32;
      const auto bucket = [&](auto c) {
        constexpr int C = decltype(c)::value;
        if (chunks > C) return;
        runs.emplace_back("bucket " + std::to_string(C), codes(a, n, [](const exact::Args& x) {
                            exact::msv_exact_registers<C, 0>(x);
                          }));
      };
      bucket(std::integral_constant<int, 2>{});
      bucket(std::integral_constant<int, 16>{});
      bucket(std::integral_constant<int, 48>{});
      bucket(std::integral_constant<int, 64>{});  // past kPrefetchChunks: no prefetch
      // The run-time specialisation: the length fixed when compiled.
      const auto fixed = [&](auto m) {
        constexpr int kM = decltype(m)::value;
        if (M != kM) return;
        runs.emplace_back("length " + std::to_string(kM), codes(a, n, [](const exact::Args& x) {
                            exact::msv_exact_registers<(kM + 31) / 32, kM>(x);
                          }));
      };
      fixed(std::integral_constant<int, 33>{});
      fixed(std::integral_constant<int, 1537>{});
      fixed(std::integral_constant<int, 1700>{});
      for (std::size_t i = 0; i < n; ++i) {
        const int L = static_cast<int>(seqs[i].size());
        const FilterScore ref = msv_filter_reference(msv, seqs[i].data(), L);
        overflows += ref.overflow ? 1 : 0;
        for (const auto& [name, result] : runs) {
          const std::string what = name + ", M=" + std::to_string(M) + ", L=" + std::to_string(L) +
                                   (abc == &Alphabet::dna() ? " dna" : " amino");
          ++checked;
          const int code = result[i];
          if (code == exact::kResultOverflow) {
            EXPECT_TRUE(ref.overflow) << what;
            continue;
          }
          ASSERT_GE(code, exact::kResultExact) << what;
          EXPECT_FALSE(ref.overflow) << what;
          const float nats =
              msv_nats_of_xj(code - exact::kResultExact, msv.tjb(L), msv.base, msv.scale);
          EXPECT_EQ(0, std::memcmp(&nats, &ref.nats, sizeof(float)))
              << what << ": kernel " << nats << " reference " << ref.nats;
        }
        if (HasFailure()) return;
      }
    }
  }
  EXPECT_GT(overflows, 0);  // the overflow path was taken
  std::printf("%d scores checked, %d overflows\n", checked, overflows);
}

}  // namespace
}  // namespace duet

#else
TEST(MsvExactOnHost, EveryInstantiationMatchesReference) {
  GTEST_SKIP() << "the fiber switch is written for x86-64";
}
#endif
