// The pair-HMM GPU kernels (label gpu): both kernels against the canonical float sums, bit
// for bit, on random pairs (seed printed; DUET_TEST_SEED replays) and GKL's cases; skipped
// where no CUDA device exists. Also prints kernel-only and with-transfer GCUPS on 10s.in
// replicated, for bench/RESULTS.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <thread>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "core/pairhmm/pairhmm_model.hpp"
#include "device/gpu_info.hpp"
#include "device/pairhmm/pairhmm_gpu_feed.hpp"
#include "device/pairhmm/pairhmm_gpu_layout.hpp"
#include "device/pairhmm/pairhmm_shapes.hpp"
#include "io/hdf5_file.hpp"
#include "pairhmm_test_support.hpp"
#include "test_support.hpp"

namespace duet::device::pairhmm {
namespace {

using duet::pairhmm::Model;
using duet::pairhmm::Pair;

// A kernel and, for intra_task, its shape ({0, 0}: chosen per batch) and arithmetic.
struct Variant {
  Kernel kernel;
  IntraShape shape;
  Arithmetic arithmetic = Arithmetic::automatic;
};

std::string variant_name(const Variant& v) {
  std::string name = kernel_name(v.kernel);
  std::replace(name.begin(), name.end(), '-', '_');
  if (v.kernel == Kernel::intra_task) {
    if (v.arithmetic != Arithmetic::automatic)
      name += std::string("_") + arithmetic_name(v.arithmetic);
    name += v.shape.lanes > 0
                ? "_" + std::to_string(v.shape.lanes) + "x" + std::to_string(v.shape.rows_per_lane)
                : "_auto";
  }
  return name;
}

class PairhmmGpuKernel : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    if (::duet::device::list_gpus().gpus.empty()) GTEST_SKIP() << "no CUDA device";
    // Forcing ftz where the device's FTZ differs from x86's would rightly give other sums.
    if (GetParam().arithmetic == Arithmetic::ftz && !ftz_matches_canonical(0))
      GTEST_SKIP()
          << "this GPU's flush-to-zero arithmetic fails the probe (the kernel is not used)";
  }
};

void expect_canonical(const Variant& v, const Model& model, const std::vector<Pair>& pairs) {
  PairhmmGpu gpu(0);
  gpu.set_intra_shape(v.shape);
  gpu.set_arithmetic(v.arithmetic);
  const std::vector<float> sums = gpu.forward_sums(pack_pairs(model, pairs), v.kernel);
  int mismatches = 0;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const float canonical = duet::pairhmm::forward_sum<float>(model, pairs[i]);
    if (std::memcmp(&sums[i], &canonical, sizeof(float)) != 0 && ++mismatches <= 5) {
      ADD_FAILURE() << variant_name(v) << " pair " << i << " (" << pairs[i].rows() << "x"
                    << pairs[i].columns() << "): " << sums[i] << " vs " << canonical;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(PairhmmGpuKernel, RandomPairsBitForBit) {
  std::mt19937_64 rng(test::test_seed());
  const auto input = test::random_input(rng, 80, 500, 5, 5);
  expect_canonical(GetParam(), Model{}, input.pair_list());
  const auto small = test::random_input(rng, 40, 40, 4, 4);
  expect_canonical(GetParam(), Model{}, small.pair_list());
}

// Long reads, related and unrelated to their haplotypes: values far below FLT_MIN (and sums
// that need the double fallback), so the intra-task kernel switches between its plain and
// checked products many times inside a pair.
TEST_P(PairhmmGpuKernel, LongPairsNearUnderflow) {
  std::mt19937_64 rng(test::test_seed() + 1);
  const auto input = test::random_input(rng, 10, 1500, 3, 3);
  const auto pairs = input.pair_list();
  int below_fallback = 0;
  for (const auto& pair : pairs) {
    below_fallback +=
        duet::pairhmm::forward_sum<float>(Model{}, pair) < duet::pairhmm::kDoubleFallbackThreshold;
  }
  std::cout << pairs.size() << " pairs, " << below_fallback
            << " with a float sum below the double fallback threshold\n";
  expect_canonical(GetParam(), Model{}, pairs);
}

// Pairs that come back to reads and haplotypes seen earlier in the batch (shared rows).
TEST_P(PairhmmGpuKernel, SharedReadsAndHaplotypes) {
  std::mt19937_64 rng(test::test_seed() + 2);
  const auto input = test::random_input(rng, 20, 300, 4, 4);
  std::vector<Pair> pairs = input.pair_list();
  const std::vector<Pair> once = pairs;
  pairs.insert(pairs.end(), once.rbegin(), once.rend());
  std::shuffle(pairs.begin(), pairs.end(), rng);
  expect_canonical(GetParam(), Model{}, pairs);
}

TEST_P(PairhmmGpuKernel, GklCases) {
  const auto gkl = duet::pairhmm::read_input(test::kGklTestData);
  expect_canonical(GetParam(), Model{}, gkl.pair_list());
}

void print_gcups(PairhmmGpu& gpu, const std::string& input, const PairBatch& batch, double kernel,
                 double transfer) {
  const Variant& v = PairhmmGpuKernel::GetParam();
  const auto cells = static_cast<double>(batch.cells);
  std::cout << "[ gcups    ] " << gpu.name() << " " << variant_name(v)
            << (v.kernel == Kernel::intra_task
                    ? " (" + std::to_string(gpu.last_intra_shape().lanes) + " lanes x " +
                          std::to_string(gpu.last_intra_shape().rows_per_lane) + " rows, " +
                          arithmetic_name(gpu.arithmetic_used()) + ")"
                    : std::string())
            << ": " << input << " (" << batch.cells << " cells): kernel " << cells / kernel / 1e9
            << " GCUPS, with transfers " << cells / (kernel + transfer) / 1e9 << " GCUPS\n";
}

TEST_P(PairhmmGpuKernel, Throughput) {
  const auto input = duet::pairhmm::read_input(test::kPairhmmData + "10s.in");
  const Model model;
  PairhmmGpu gpu(0);
  gpu.set_intra_shape(GetParam().shape);
  gpu.set_arithmetic(GetParam().arithmetic);
  for (const int copies : {1, 64}) {
    // Distinct copies (their own reads and haplotypes), as a file of 64 copies would be read.
    const std::vector<duet::pairhmm::Input> inputs(static_cast<std::size_t>(copies), input);
    std::vector<Pair> pairs;
    for (const auto& copy : inputs) {
      const auto list = copy.pair_list();
      pairs.insert(pairs.end(), list.begin(), list.end());
    }
    const PairBatch batch = pack_pairs(model, pairs);
    double kernel = 0, transfer = 0;
    gpu.forward_sums(batch, GetParam().kernel, &kernel, &transfer);  // warm-up
    gpu.forward_sums(batch, GetParam().kernel, &kernel, &transfer);
    print_gcups(gpu, "10s.in x" + std::to_string(copies), batch, kernel, transfer);
  }
  // Short reads (up to 8 bases), where a strip of many rows leaves most lanes idle.
  std::mt19937_64 rng(7);
  const PairBatch short_reads = pack_pairs(model, test::random_input(rng, 50000, 8).pair_list());
  double kernel = 0, transfer = 0;
  gpu.forward_sums(short_reads, GetParam().kernel, &kernel, &transfer);  // warm-up
  gpu.forward_sums(short_reads, GetParam().kernel, &kernel, &transfer);
  print_gcups(gpu, "short reads", short_reads, kernel, transfer);
}

// The layout (host only): each read's rows and each haplotype stored once, every pair's
// offsets pointing at its own read's parameters and bases and its own haplotype's bases,
// scratch rows of distinct pairs not overlapping.
TEST(PairhmmGpuLayout, ReadsAndHaplotypesOnce) {
  std::mt19937_64 rng(test::test_seed());
  const auto input = test::random_input(rng, 30, 60, 5, 5);
  const auto once = input.pair_list();
  std::vector<Pair> pairs = once;
  pairs.insert(pairs.end(), once.rbegin(), once.rend());  // every read and haplotype again
  const Model model;
  const PairBatch b = pack_pairs(model, pairs);
  const std::vector<float> parameters = row_parameters(b);
  std::int64_t rows = 0, columns = 0;
  for (const auto& batch : input.batches) {
    for (const auto& r : batch.reads) rows += r.length();
    for (const auto& h : batch.haplotypes) columns += h.length();
  }
  EXPECT_EQ(static_cast<std::int64_t>(b.read_bases.size()), rows);
  EXPECT_EQ(static_cast<std::int64_t>(b.qualities.size()), rows);
  EXPECT_EQ(static_cast<std::int64_t>(parameters.size()), 7 * rows);
  EXPECT_EQ(static_cast<std::int64_t>(b.haplotype_bases.size()), columns);
  ASSERT_EQ(b.pairs(), pairs.size());
  std::vector<duet::pairhmm::RowParameters<float>> expected;
  std::int64_t scratch = 0;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const Pair& p = pairs[i];
    ASSERT_EQ(b.rows[i], p.rows());
    ASSERT_EQ(b.columns[i], p.columns());
    EXPECT_EQ(b.scratch_offset[i], scratch);
    scratch += p.columns() + 1;
    model.rows(*p.read, expected);
    for (int r = 0; r < p.rows(); ++r) {
      const auto at = static_cast<std::size_t>(b.row_offset[i] + r);
      ASSERT_EQ(b.read_bases[at], p.read->bases[static_cast<std::size_t>(r)]) << "pair " << i;
      const float* q = &parameters[7 * at];
      const auto& e = expected[static_cast<std::size_t>(r)];
      const float want[7] = {e.match_to_match,    e.indel_to_match, e.match_to_insertion,
                             e.match_to_deletion, e.gap_extension,  e.emission_match,
                             e.emission_mismatch};
      ASSERT_EQ(std::memcmp(q, want, sizeof(want)), 0) << "pair " << i << " row " << r;
    }
    for (int c = 0; c < p.columns(); ++c) {
      ASSERT_EQ(b.haplotype_bases[static_cast<std::size_t>(b.column_offset[i] + c)],
                p.haplotype->bases[static_cast<std::size_t>(c)])
          << "pair " << i;
    }
  }
  EXPECT_EQ(b.scratch_columns, scratch);
}

// The shape choice (host only, runs without a device): on 10s.in the shapes that ran
// fastest when forced on the H100 (bench/RESULTS.md): with ieee arithmetic 32x1 for the
// file alone (too few warps to fill the GPU: the longest warp decides) and 8x2 for 64
// copies of it; with ftz 32x4 and 8x8; reads of at most 8 rows never take 32-row strips.
TEST(PairhmmGpuShape, ChoosesTheMeasuredBest) {
  const auto input = duet::pairhmm::read_input(test::kPairhmmData + "10s.in");
  std::vector<Pair> pairs = input.pair_list();
  const PairBatch once = pack_pairs(Model{}, pairs);
  const auto list = input.pair_list();
  for (int copy = 1; copy < 64; ++copy) pairs.insert(pairs.end(), list.begin(), list.end());
  const PairBatch many = pack_pairs(Model{}, pairs);
  const auto expect_shape = [](IntraShape shape, int lanes, int rows, const char* what) {
    EXPECT_EQ(shape.lanes, lanes) << what;
    EXPECT_EQ(shape.rows_per_lane, rows) << what;
  };
  const auto& ieee = measured_shape_costs(Arithmetic::ieee);
  const auto& ftz = measured_shape_costs(Arithmetic::ftz);
  expect_shape(choose_intra_shape(once, ieee), 32, 1, "ieee, x1");
  expect_shape(choose_intra_shape(many, ieee), 8, 2, "ieee, x64");
  expect_shape(choose_intra_shape(once, ftz), 32, 4, "ftz, x1");
  // x64 in the flush-to-zero kernel: 8x8 and 8x4 ran within 1% of each other (732 and 728
  // GCUPS, bench/RESULTS.md, 2026-11-27; then 16x4 at 719, 32x4 at 573).
  const IntraShape ftz_many = choose_intra_shape(many, ftz);
  EXPECT_TRUE(ftz_many.lanes == 8 && (ftz_many.rows_per_lane == 8 || ftz_many.rows_per_lane == 4))
      << "ftz, x64: " << ftz_many.lanes << "x" << ftz_many.rows_per_lane;
  std::mt19937_64 rng(test::test_seed());
  const auto short_reads = test::random_input(rng, 2000, 8, 4, 4);
  for (const Arithmetic a : {Arithmetic::ieee, Arithmetic::ftz}) {
    const IntraShape short_shape =
        choose_intra_shape(pack_pairs(Model{}, short_reads.pair_list()), measured_shape_costs(a));
    EXPECT_LE(short_shape.lanes * short_shape.rows_per_lane, 16) << arithmetic_name(a);
  }
}

// The probe's cases (host only): both sides of x86's rule in the window below FLT_MIN, many
// of each; and this machine's own SSE, with flush to zero set, gives the canonical product
// and sum on every case (the rule core/pairhmm/pairhmm_model.cpp writes is x86's).
TEST(PairhmmGpuArithmetic, ProbeCasesCoverBothSidesOfX86sRule) {
  const FtzCases cases = ftz_probe_cases();
  std::cout << cases.a.size() << " cases, " << cases.window << " products in the window, "
            << cases.window_flushed << " of them flushed\n";
  EXPECT_GE(cases.window_flushed, 1000u);
  EXPECT_GE(cases.window - cases.window_flushed, 1000u);
#if defined(__x86_64__) || defined(__i386__)
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8000u);  // FTZ
  std::size_t products = 0, sums = 0;
  for (std::size_t i = 0; i < cases.a.size(); ++i) {
    const float p = _mm_cvtss_f32(_mm_mul_ss(_mm_set_ss(cases.a[i]), _mm_set_ss(cases.b[i])));
    const float s = _mm_cvtss_f32(_mm_add_ss(_mm_set_ss(cases.a[i]), _mm_set_ss(cases.b[i])));
    const float cp = duet::pairhmm::canonical_product(cases.a[i], cases.b[i]);
    const float cs = duet::pairhmm::canonical_sum(cases.a[i], cases.b[i]);
    products += std::memcmp(&p, &cp, sizeof(float)) != 0;
    sums += std::memcmp(&s, &cs, sizeof(float)) != 0;
  }
  _mm_setcsr(saved);
  EXPECT_EQ(products, 0u);
  EXPECT_EQ(sums, 0u);
#endif
}

// The probe on the device: prints what it found, and the automatic arithmetic follows it.
TEST(PairhmmGpuArithmetic, AutomaticFollowsTheProbe) {
  if (::duet::device::list_gpus().gpus.empty()) GTEST_SKIP() << "no CUDA device";
  const FtzProbe probe = probe_ftz_arithmetic(0);
  std::cout << "[ probe    ] " << probe.cases << " cases: " << probe.product_mismatches
            << " products and " << probe.sum_mismatches << " sums differ from the canonical ones\n";
  EXPECT_EQ(probe.cases, ftz_probe_cases().a.size());
  EXPECT_EQ(ftz_matches_canonical(0), probe.matches());
  const PairhmmGpu gpu(0);
  EXPECT_EQ(gpu.arithmetic_used(), probe.matches() ? Arithmetic::ftz : Arithmetic::ieee);
}

// The feeder's parts (host only): part ends non-decreasing, the last one at the last pair,
// each part's cells within one pair's cells of its share, empty parts where a pair is
// larger than a share or pairs are fewer than parts.
TEST(PairhmmGpuFeed, SplitByCells) {
  std::mt19937_64 rng(test::test_seed());
  const auto input = test::random_input(rng, 30, 200, 5, 5);
  const std::vector<Pair> pairs = input.pair_list();
  std::int64_t total = 0, largest = 0;
  for (const auto& p : pairs) total += p.cells(), largest = std::max(largest, p.cells());
  for (const int parts : {1, 2, 3, 4, 7, 64}) {
    const std::vector<std::size_t> ends = split_by_cells(pairs, parts);
    ASSERT_EQ(ends.size(), static_cast<std::size_t>(parts));
    EXPECT_EQ(ends.back(), pairs.size());
    std::size_t begin = 0;
    for (const std::size_t end : ends) {
      ASSERT_LE(begin, end);
      std::int64_t cells = 0;
      for (std::size_t i = begin; i < end; ++i) cells += pairs[i].cells();
      EXPECT_LE(cells, total / parts + 2 * largest) << parts << " parts";
      begin = end;
    }
  }
  const std::vector<Pair> three(pairs.begin(), pairs.begin() + 3);
  const std::vector<std::size_t> ends = split_by_cells(three, 5);
  ASSERT_EQ(ends.size(), 5u);
  EXPECT_EQ(ends.back(), 3u);
  int empty = 0;
  for (std::size_t k = 0; k < ends.size(); ++k) empty += ends[k] == (k == 0 ? 0 : ends[k - 1]);
  EXPECT_GE(empty, 2) << "3 pairs in 5 parts";
  EXPECT_EQ(split_by_cells({}, 3), (std::vector<std::size_t>{0, 0, 0}));
}

// The rows the device expands from the packer's quality words and float tables
// (row_parameters: expand_row, as the device) are bit for bit Model::rows<float>, for
// several minimum base qualities.
TEST(PairhmmGpuLayout, PackerRowsAreTheModelRows) {
  std::mt19937_64 rng(test::test_seed());
  const auto input = test::random_input(rng, 30, 120, 5, 3);
  const std::vector<Pair> pairs = input.pair_list();
  std::vector<duet::pairhmm::RowParameters<float>> expected;
  for (const int min_base_quality : {0, 6, 30, 93}) {
    const Model model(duet::pairhmm::ModelOptions{min_base_quality});
    const PairBatch b = pack_pairs(model, pairs);
    const std::vector<float> parameters = row_parameters(b);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      model.rows(*pairs[i].read, expected);
      for (std::size_t r = 0; r < expected.size(); ++r) {
        const auto& e = expected[r];
        const float want[7] = {e.match_to_match,    e.indel_to_match, e.match_to_insertion,
                               e.match_to_deletion, e.gap_extension,  e.emission_match,
                               e.emission_mismatch};
        ASSERT_EQ(std::memcmp(&parameters[7 * (static_cast<std::size_t>(b.row_offset[i]) + r)],
                              want, sizeof(want)),
                  0)
            << "minimum base quality " << min_base_quality << ", pair " << i << ", row " << r;
      }
    }
  }
}

// Packing into a batch that held a larger one gives what a fresh batch gets.
TEST(PairhmmGpuLayout, PackIntoReusedBatch) {
  std::mt19937_64 rng(test::test_seed());
  const auto large = test::random_input(rng, 20, 300, 4, 4);
  const auto small = test::random_input(rng, 5, 100, 3, 3);
  const Model model;
  PairBatch reused = pack_pairs(model, large.pair_list());
  pack_pairs(model, small.pair_list(), reused);
  const PairBatch fresh = pack_pairs(model, small.pair_list());
  EXPECT_EQ(reused.qualities, fresh.qualities);
  EXPECT_EQ(reused.tables, fresh.tables);
  EXPECT_EQ(reused.read_bases, fresh.read_bases);
  EXPECT_EQ(reused.haplotype_bases, fresh.haplotype_bases);
  EXPECT_EQ(reused.rows, fresh.rows);
  EXPECT_EQ(reused.columns, fresh.columns);
  EXPECT_EQ(reused.row_offset, fresh.row_offset);
  EXPECT_EQ(reused.column_offset, fresh.column_offset);
  EXPECT_EQ(reused.scratch_offset, fresh.scratch_offset);
  EXPECT_EQ(reused.initial_deletion, fresh.initial_deletion);
  EXPECT_EQ(reused.cells, fresh.cells);
  EXPECT_EQ(reused.scratch_columns, fresh.scratch_columns);
}

// Packing in pieces on several threads (pieces of 1, 7 and 64 pairs, run out of order on
// threads): every pair points at the same rows, parameters, bases and sizes as with the
// serial pack; the scratch layout and the totals are the same.
TEST(PairhmmGpuLayout, PackInPiecesGivesEveryPairTheSameData) {
  std::mt19937_64 rng(test::test_seed());
  const auto input = test::random_input(rng, 40, 200, 5, 4);
  const std::vector<Pair> pairs = input.pair_list();
  const Model model;
  const PairPacker packer(model);
  PairBatch serial;
  packer.pack(pairs, serial);
  // Bodies from the last index down, on four threads.
  const PairPacker::ParallelFor parallel = [](std::size_t n, std::size_t,
                                              const std::function<void(std::size_t)>& body) {
    std::atomic<std::size_t> left{n};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (std::size_t k; (k = left.fetch_sub(1)) > 0 && k <= n;) body(k - 1);
      });
    }
    for (auto& t : threads) t.join();
  };
  std::vector<PairBatch> pieces;
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{64}}) {
    PairBatch joined;
    packer.pack(pairs, joined, pieces, parallel, piece);
    ASSERT_EQ(joined.pairs(), serial.pairs()) << "pieces of " << piece;
    EXPECT_EQ(joined.rows, serial.rows);
    EXPECT_EQ(joined.columns, serial.columns);
    EXPECT_EQ(joined.scratch_offset, serial.scratch_offset);
    EXPECT_EQ(joined.initial_deletion, serial.initial_deletion);
    EXPECT_EQ(joined.cells, serial.cells);
    EXPECT_EQ(joined.scratch_columns, serial.scratch_columns);
    EXPECT_EQ(joined.qualities.size(), joined.read_bases.size());
    EXPECT_EQ(joined.tables, serial.tables);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const auto rows = static_cast<std::size_t>(serial.rows[i]);
      const auto columns = static_cast<std::size_t>(serial.columns[i]);
      const auto r0 = static_cast<std::size_t>(serial.row_offset[i]);
      const auto r1 = static_cast<std::size_t>(joined.row_offset[i]);
      const auto c0 = static_cast<std::size_t>(serial.column_offset[i]);
      const auto c1 = static_cast<std::size_t>(joined.column_offset[i]);
      ASSERT_LE(r1 + rows, joined.read_bases.size()) << "pair " << i;
      ASSERT_LE(c1 + columns, joined.haplotype_bases.size()) << "pair " << i;
      ASSERT_TRUE(std::equal(serial.read_bases.begin() + r0, serial.read_bases.begin() + r0 + rows,
                             joined.read_bases.begin() + r1))
          << "pieces of " << piece << ", pair " << i;
      ASSERT_TRUE(std::equal(serial.qualities.begin() + r0, serial.qualities.begin() + r0 + rows,
                             joined.qualities.begin() + r1))
          << "pieces of " << piece << ", pair " << i;
      ASSERT_TRUE(std::equal(serial.haplotype_bases.begin() + c0,
                             serial.haplotype_bases.begin() + c0 + columns,
                             joined.haplotype_bases.begin() + c1))
          << "pieces of " << piece << ", pair " << i;
    }
  }
  // Without a runner, or in one piece, the serial pack itself.
  PairBatch plain;
  packer.pack(pairs, plain, pieces, {}, 1);
  EXPECT_EQ(plain.row_offset, serial.row_offset);
  packer.pack(pairs, plain, pieces, parallel, pairs.size());
  EXPECT_EQ(plain.column_offset, serial.column_offset);
}

// The overlapped feeder: parts of uneven sizes (an empty one among them, reads cut between
// parts) on 1, 2 and 3 slots, twice on the same GPU (slot buffers reused and grown), each
// time bit for bit the canonical float sums; the slots refuse a second batch and a finish
// without one.
TEST(PairhmmGpuFeed, PartsBitForBit) {
  if (::duet::device::list_gpus().gpus.empty()) GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 rng(test::test_seed());
  const Model model;
  const PairPacker packer(model);
  const auto input = test::random_input(rng, 60, 400, 5, 5);
  const std::vector<Pair> pairs = input.pair_list();
  const std::size_t n = pairs.size();
  ASSERT_GE(n, 20u);
  std::vector<float> canonical(n);
  for (std::size_t i = 0; i < n; ++i)
    canonical[i] = duet::pairhmm::forward_sum<float>(model, pairs[i]);
  const auto expect_canonical_sums = [&](const std::vector<float>& sums, const std::string& what) {
    ASSERT_EQ(sums.size(), n) << what;
    int mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (std::memcmp(&sums[i], &canonical[i], sizeof(float)) != 0 && ++mismatches <= 5) {
        ADD_FAILURE() << what << " pair " << i << ": " << sums[i] << " vs " << canonical[i];
      }
    }
    EXPECT_EQ(mismatches, 0) << what;
  };
  const std::vector<std::size_t> uneven = {1, n / 5, n / 5, n / 5 + 1, n / 2 + 3, n - 1, n};
  for (const int slots : {1, 2, 3}) {
    PairhmmGpu gpu(0, slots);
    ASSERT_EQ(gpu.slots(), slots);
    for (const Variant v :
         {Variant{Kernel::intra_task, {}}, Variant{Kernel::intra_task, {8, 2}},
          Variant{Kernel::intra_task, {8, 2}, Arithmetic::ieee}, Variant{Kernel::inter_task, {}}}) {
      gpu.set_intra_shape(v.shape);
      gpu.set_arithmetic(v.arithmetic);
      const std::string what = variant_name(v) + " on " + std::to_string(slots) + " slots";
      FeedTimes times;
      expect_canonical_sums(forward_sums_in_parts(gpu, packer, pairs, uneven, v.kernel, &times),
                            what + ", uneven parts");
      EXPECT_EQ(times.parts, static_cast<std::int64_t>(uneven.size()));
      const std::vector<std::size_t> even = split_by_cells(pairs, 4);
      expect_canonical_sums(forward_sums_in_parts(gpu, packer, pairs, even, v.kernel, &times),
                            what + ", 4 parts");
      const std::vector<std::size_t> whole = {n};
      expect_canonical_sums(forward_sums_in_parts(gpu, packer, pairs, whole, v.kernel),
                            what + ", one part");
      // Parts packed in pieces of 3 pairs on the calling thread through a runner.
      const PairPacker::ParallelFor in_order = [](std::size_t count, std::size_t,
                                                  const std::function<void(std::size_t)>& body) {
        for (std::size_t k = 0; k < count; ++k) body(k);
      };
      expect_canonical_sums(
          forward_sums_in_parts(gpu, packer, pairs, even, v.kernel, nullptr, in_order, 3),
          what + ", 4 parts packed in pieces");
    }
  }
  PairhmmGpu gpu(0, 2);
  const PairBatch batch = pack_pairs(model, std::span<const Pair>(pairs).first(10));
  gpu.submit(1, batch, Kernel::intra_task);
  EXPECT_THROW(gpu.submit(1, batch, Kernel::intra_task), std::logic_error);
  std::vector<float> sums(10);
  EXPECT_THROW(gpu.finish(0, sums.data()), std::logic_error);
  gpu.finish(1, sums.data());
  EXPECT_EQ(std::memcmp(sums.data(), canonical.data(), 10 * sizeof(float)), 0);
  EXPECT_THROW(gpu.finish(1, sums.data()), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, PairhmmGpuKernel, ::testing::ValuesIn([] {
      std::vector<Variant> v = {{Kernel::inter_task, {}},
                                {Kernel::intra_task, {}},
                                {Kernel::intra_task, {}, Arithmetic::ieee},
                                {Kernel::intra_task, {}, Arithmetic::ftz},
                                {Kernel::intra_checked, {}}};
      for (const IntraShape shape :
           {IntraShape{32, 1}, IntraShape{16, 1}, IntraShape{8, 1}, IntraShape{16, 2},
            IntraShape{8, 2}, IntraShape{4, 2}, IntraShape{8, 4}, IntraShape{4, 4}}) {
        v.push_back({Kernel::intra_task, shape, Arithmetic::ieee});
        v.push_back({Kernel::intra_task, shape, Arithmetic::ftz});
      }
      for (const IntraShape shape :
           {IntraShape{32, 2}, IntraShape{32, 4}, IntraShape{16, 4}, IntraShape{8, 8}}) {
        v.push_back({Kernel::intra_task, shape, Arithmetic::ftz});
      }
      return v;
    }()),
    [](const ::testing::TestParamInfo<Variant>& v) { return variant_name(v.param); });

// The command on a GPU: --no-gpu, --gpu-only (also in many small batches, two in flight at
// a time) and the default mode (started with --gpu-min-cells 0 while the CPU works; left
// alone below the threshold) give identical likelihoods, and /run names the GPU kernel
// each used.
TEST(PairhmmGpuCommand, ModesIdenticalAndSmallInputsStayOnTheCpu) {
  if (::duet::device::list_gpus().gpus.empty()) GTEST_SKIP() << "no CUDA device";
  test::TempDir dir;
  std::ifstream in(test::kPairhmmData + "10s.in");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  std::string copies;
  for (int k = 0; k < 8; ++k) copies += text + "\n";
  test::write_file(dir.file("x8.in"), copies);
  std::map<std::string, std::int64_t> sms;  // /run gpu_sms of each run
  const auto run = [&](const std::string& name, const std::string& options,
                       const std::string& env = "") {
    const auto r =
        test::run_command(env + std::string(DUET_BINARY) + " pairhmm --quiet " + options +
                          " --h5 " + dir.file(name + ".h5") + " " + dir.file("x8.in"));
    EXPECT_EQ(r.status, 0) << name << ": " << r.output;
    const io::Hdf5Reader h5(dir.file(name + ".h5"));
    sms[name] = h5.attribute_int("/run", "gpu_sms");
    return std::make_pair(h5.read_doubles("/results/pairhmm/log10_likelihood"),
                          h5.attribute_string("/run", "gpu_kernel"));
  };
  const auto [cpu, cpu_kernel] = run("cpu", "--no-gpu");
  const auto [gpu, gpu_kernel] = run("gpu", "--gpu-only");
  // Many small batches, two in flight at a time, every fifth failing (the CPU redoes it
  // and any batch in flight with it).
  const auto [batches, batches_kernel] =
      run("batches", "--gpu-only --gpu-batch-blocks 4 --block-cells 1000000",
          "DUET_DEBUG_GPU_FAULT_EVERY=5 ");
  const auto [hybrid, hybrid_kernel] = run("hybrid", "--gpu-min-cells 0");
  const auto [small, small_kernel] = run("small", "--gpu-min-cells 1000000000000");
  // On a share of the GPU's SMs (--gpu-sms), recorded in /run.
  const auto [share, share_kernel] = run("share", "--gpu-only --gpu-sms 8");
  ASSERT_EQ(cpu.size(), std::size_t{8 * 3550});
  EXPECT_EQ(cpu, gpu);
  EXPECT_EQ(cpu, batches);
  EXPECT_EQ(cpu, hybrid);
  EXPECT_EQ(cpu, small);
  EXPECT_EQ(cpu, share);
  EXPECT_EQ(sms["cpu"], 0);
  EXPECT_GT(sms["gpu"], 8);  // the whole GPU
  EXPECT_GE(sms["share"], 8);
  EXPECT_LT(sms["share"], sms["gpu"]);
  EXPECT_EQ(cpu_kernel, "none");
  EXPECT_NE(gpu_kernel.find("arithmetic"), std::string::npos) << gpu_kernel;
  EXPECT_EQ(batches_kernel, gpu_kernel);
  // The default mode's GPU joins once started, if the CPU has not finished by then.
  EXPECT_TRUE(hybrid_kernel.find("arithmetic") != std::string::npos ||
              hybrid_kernel.find("no GPU started") != std::string::npos)
      << hybrid_kernel;
  EXPECT_EQ(small_kernel.rfind("none (a small input", 0), std::size_t{0}) << small_kernel;
}

}  // namespace
}  // namespace duet::device::pairhmm
