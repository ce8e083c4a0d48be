// pack_pairs: the device layout of a batch of pairs (see pairhmm_gpu.hpp).
#include "device/pairhmm/pairhmm_gpu_layout.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <unordered_map>

namespace duet::device::pairhmm {

const char* kernel_name(Kernel kernel) {
  switch (kernel) {
    case Kernel::inter_task:
      return "inter";
    case Kernel::intra_task:
      return "intra";
    case Kernel::intra_checked:
      return "intra-checked";
  }
  return "?";
}

FtzCases ftz_probe_cases() {
  constexpr double kMin = 0x1p-126, kWindowLow = kMin - 0x1p-150;
  constexpr double kTiny = kMin * (1.0 - 0x1p-25);  // the canonical rule's boundary
  FtzCases cases;
  std::mt19937_64 rng(20261124);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto add = [&](float a, float b) {
    cases.a.push_back(a);
    cases.b.push_back(b);
    const double product = std::fabs(static_cast<double>(a) * static_cast<double>(b));
    if (product >= kWindowLow && product < kMin) {
      ++cases.window;
      cases.window_flushed += product < kTiny;
    }
  };
  // b near target / a, and its neighbours: a * b lands within a few 2^-150 of the target.
  const auto aim = [&](float a, double target) {
    const float b = static_cast<float>(target / static_cast<double>(a));
    if (!std::isnormal(b)) return;
    float lower = b, upper = b;
    add(a, b);
    for (int k = 0; k < 2; ++k) {
      lower = std::nextafter(lower, 0.0f);
      upper = std::nextafter(upper, 1.0f);
      add(a, lower);
      add(a, upper);
    }
  };
  const auto random_float = [&](int lowest_exponent, int highest_exponent) {
    std::uniform_int_distribution<int> exponent(lowest_exponent, highest_exponent);
    return static_cast<float>(std::ldexp(1.0 + unit(rng), exponent(rng)));
  };
  // Aimed at the window: 20,000 targets, five products each.
  for (int i = 0; i < 20000; ++i) aim(random_float(-100, 0), kWindowLow + unit(rng) * 0x1p-150);
  // Products across the subnormal range and just above it (2^-150 to 2^-120).
  for (int i = 0; i < 20000; ++i)
    aim(random_float(-60, 10),
        std::ldexp(1.0 + unit(rng), -150 + static_cast<int>(unit(rng) * 30)));
  // Sums of both signs near FLT_MIN (differences that are tiny, or just not).
  for (int i = 0; i < 20000; ++i) {
    const float a = static_cast<float>(kMin * (1.0 + 3.0 * unit(rng)));
    const float b = -static_cast<float>(kMin * (1.0 + 3.0 * unit(rng)));
    add(a, b);
  }
  // Ordinary values, zeros and FLT_MIN itself.
  for (int i = 0; i < 20000; ++i) add(random_float(-126, 20), random_float(-126, 20));
  for (const float v : {0.0f, -0.0f, FLT_MIN, -FLT_MIN, 1.0f, 0x1p120f}) {
    for (const float w : {0.0f, -0.0f, FLT_MIN, 0.5f, 1.0f, 0x1p-120f}) add(v, w);
  }
  return cases;
}

FtzProbe probe_ftz_arithmetic(int device) {
  const FtzCases cases = ftz_probe_cases();
  std::vector<float> products, sums;
  device_ftz_operations(device, cases.a, cases.b, products, sums);
  FtzProbe probe;
  probe.cases = cases.a.size();
  for (std::size_t i = 0; i < cases.a.size(); ++i) {
    const float product = duet::pairhmm::canonical_product(cases.a[i], cases.b[i]);
    const float sum = duet::pairhmm::canonical_sum(cases.a[i], cases.b[i]);
    probe.product_mismatches += std::memcmp(&product, &products[i], sizeof(float)) != 0;
    probe.sum_mismatches += std::memcmp(&sum, &sums[i], sizeof(float)) != 0;
  }
  return probe;
}

bool ftz_matches_canonical(int device) {
  static std::mutex mutex;
  static std::map<int, bool> found;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto known = found.find(device);
  if (known != found.end()) return known->second;
  const bool matches = probe_ftz_arithmetic(device).matches();
  found.emplace(device, matches);
  return matches;
}

PairPacker::PairPacker(const duet::pairhmm::Model& model)
    : min_base_quality_(static_cast<std::uint32_t>(
          std::clamp(model.options().min_base_quality, 0, duet::pairhmm::Model::kMaxQuality))),
      tables_(kRowTableFloats) {
  float* const error = tables_.data();
  float* const correct = error + kQualities;
  float* const third = correct + kQualities;
  float* const match_to_match = third + kQualities;
  for (int q = 0; q < kQualities; ++q) {
    const double e = model.error_probability(q);
    const auto at = static_cast<std::size_t>(q);
    error[at] = static_cast<float>(e);
    correct[at] = static_cast<float>(1.0 - e);
    third[at] = static_cast<float>(e / 3.0);
    for (int d = 0; d < kQualities; ++d) {
      match_to_match[at * kQualities + static_cast<std::size_t>(d)] =
          static_cast<float>(model.match_to_match(q, d));
    }
  }
}

std::vector<float> row_parameters(const PairBatch& b) {
  std::vector<float> out(7 * b.read_rows());
  for (std::size_t r = 0; r < b.read_rows(); ++r) {
    expand_row(b.qualities[r], b.tables.data(), out.data() + 7 * r);
  }
  return out;
}

void PairPacker::pack(std::span<const duet::pairhmm::Pair> pairs, PairBatch& b) const {
  pack_records(pairs, b);
  b.tables = tables_;
}

namespace {
constexpr std::size_t kPrefetchAhead = 16;  // pairs
}  // namespace

void PairPacker::pack_records(std::span<const duet::pairhmm::Pair> pairs, PairBatch& b) const {
  b.qualities.clear();
  b.tables.clear();
  b.read_bases.clear();
  b.haplotype_bases.clear();
  b.rows.clear();
  b.columns.clear();
  b.row_offset.clear();
  b.column_offset.clear();
  b.scratch_offset.clear();
  b.initial_deletion.clear();
  b.cells = b.scratch_columns = 0;
  const std::size_t n = pairs.size();
  b.rows.reserve(n);
  b.columns.reserve(n);
  b.row_offset.reserve(n);
  b.column_offset.reserve(n);
  b.scratch_offset.reserve(n);
  b.initial_deletion.reserve(n);
  // Each distinct read and haplotype once, in order of first use. Pairs come read by read
  // (input order), so the previous pair's read is checked before the map.
  std::unordered_map<const duet::pairhmm::Read*, std::int64_t> read_at;
  std::unordered_map<const duet::pairhmm::Haplotype*, std::int64_t> haplotype_at;
  const duet::pairhmm::Read* last_read = nullptr;
  std::int64_t last_read_at = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const duet::pairhmm::Pair& p = pairs[k];
    // A read's bases and qualities are five allocations the parser made long before: ask
    // for those of the read kPrefetchAhead pairs ahead, once per read, so that they are in
    // cache when it comes.
    if (k + kPrefetchAhead < n &&
        pairs[k + kPrefetchAhead].read != pairs[k + kPrefetchAhead - 1].read) {
      const duet::pairhmm::Read& ahead = *pairs[k + kPrefetchAhead].read;
      for (const auto* v : {&ahead.bases, &ahead.base_quality, &ahead.insertion_quality,
                            &ahead.deletion_quality, &ahead.gcp_quality})
        __builtin_prefetch(v->data());
    }
    if (p.read != last_read) {
      const duet::pairhmm::Read& r = *p.read;
      auto [read, new_read] =
          read_at.try_emplace(p.read, static_cast<std::int64_t>(b.read_bases.size()));
      if (new_read) {
        const std::size_t length = r.bases.size(), first = b.qualities.size();
        b.qualities.resize(first + length);
        std::uint32_t* q = b.qualities.data() + first;
        for (std::size_t i = 0; i < length; ++i) {
          const std::uint32_t base = std::max<std::uint32_t>(r.base_quality[i], min_base_quality_);
          q[i] = base | static_cast<std::uint32_t>(r.insertion_quality[i]) << 8 |
                 static_cast<std::uint32_t>(r.deletion_quality[i]) << 16 |
                 static_cast<std::uint32_t>(r.gcp_quality[i]) << 24;
        }
        b.read_bases.insert(b.read_bases.end(), r.bases.begin(), r.bases.end());
      }
      last_read = p.read;
      last_read_at = read->second;
    }
    auto [haplotype, new_haplotype] =
        haplotype_at.try_emplace(p.haplotype, static_cast<std::int64_t>(b.haplotype_bases.size()));
    if (new_haplotype) {
      b.haplotype_bases.insert(b.haplotype_bases.end(), p.haplotype->bases.begin(),
                               p.haplotype->bases.end());
    }
    b.rows.push_back(p.rows());
    b.columns.push_back(p.columns());
    b.row_offset.push_back(last_read_at);
    b.column_offset.push_back(haplotype->second);
    b.scratch_offset.push_back(b.scratch_columns);
    b.scratch_columns += p.columns() + 1;
    b.initial_deletion.push_back(duet::pairhmm::Model::initial_deletion_float(p.columns()));
    b.cells += p.cells();
  }
}

void PairPacker::pack(std::span<const duet::pairhmm::Pair> pairs, PairBatch& out,
                      std::vector<PairBatch>& pieces, const ParallelFor& parallel,
                      std::size_t piece_pairs) const {
  piece_pairs = std::max<std::size_t>(piece_pairs, 1);
  const std::size_t count = (pairs.size() + piece_pairs - 1) / piece_pairs;
  if (!parallel || count < 2) {
    pack(pairs, out);
    return;
  }
  if (pieces.size() < count) pieces.resize(count);
  parallel(count, 1, [&](std::size_t k) {
    const std::size_t first = k * piece_pairs;
    pack_records(pairs.subspan(first, std::min(piece_pairs, pairs.size() - first)), pieces[k]);
  });
  // Where each piece goes in the joined batch.
  struct Base {
    std::size_t pairs = 0, reads = 0, haplotypes = 0;
    std::int64_t scratch = 0;
  };
  std::vector<Base> base(count + 1);
  out.cells = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const PairBatch& p = pieces[k];
    base[k + 1] = {base[k].pairs + p.pairs(), base[k].reads + p.read_bases.size(),
                   base[k].haplotypes + p.haplotype_bases.size(),
                   base[k].scratch + p.scratch_columns};
    out.cells += p.cells;
  }
  const Base& total = base[count];
  out.qualities.resize(total.reads);
  out.tables = tables_;
  out.read_bases.resize(total.reads);
  out.haplotype_bases.resize(total.haplotypes);
  out.rows.resize(total.pairs);
  out.columns.resize(total.pairs);
  out.row_offset.resize(total.pairs);
  out.column_offset.resize(total.pairs);
  out.scratch_offset.resize(total.pairs);
  out.initial_deletion.resize(total.pairs);
  out.scratch_columns = total.scratch;
  parallel(count, 1, [&](std::size_t k) {
    const PairBatch& p = pieces[k];
    const Base& at = base[k];
    std::copy(p.qualities.begin(), p.qualities.end(), out.qualities.begin() + at.reads);
    std::copy(p.read_bases.begin(), p.read_bases.end(), out.read_bases.begin() + at.reads);
    std::copy(p.haplotype_bases.begin(), p.haplotype_bases.end(),
              out.haplotype_bases.begin() + at.haplotypes);
    std::copy(p.rows.begin(), p.rows.end(), out.rows.begin() + at.pairs);
    std::copy(p.columns.begin(), p.columns.end(), out.columns.begin() + at.pairs);
    std::copy(p.initial_deletion.begin(), p.initial_deletion.end(),
              out.initial_deletion.begin() + at.pairs);
    for (std::size_t i = 0; i < p.pairs(); ++i) {
      out.row_offset[at.pairs + i] = p.row_offset[i] + static_cast<std::int64_t>(at.reads);
      out.column_offset[at.pairs + i] =
          p.column_offset[i] + static_cast<std::int64_t>(at.haplotypes);
      out.scratch_offset[at.pairs + i] = p.scratch_offset[i] + at.scratch;
    }
  });
}

void pack_pairs(const duet::pairhmm::Model& model, std::span<const duet::pairhmm::Pair> pairs,
                PairBatch& out) {
  PairPacker(model).pack(pairs, out);
}

PairBatch pack_pairs(const duet::pairhmm::Model& model,
                     std::span<const duet::pairhmm::Pair> pairs) {
  PairBatch b;
  pack_pairs(model, pairs, b);
  return b;
}

}  // namespace duet::device::pairhmm
