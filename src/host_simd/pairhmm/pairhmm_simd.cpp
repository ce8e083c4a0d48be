// Pair-HMM SIMD dispatch and the inter-pair layout (see pairhmm_simd.hpp and
// pairhmm_isa_kernels.hpp). Compiled without ISA flags.
#include "host_simd/pairhmm/pairhmm_simd.hpp"

#include <simde/x86/sse.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "host_simd/pairhmm/pairhmm_driver_support.hpp"
#include "host_simd/pairhmm/pairhmm_isa_kernels.hpp"

namespace duet::simd::pairhmm {

namespace {

using duet::pairhmm::Model;
using duet::pairhmm::Pair;
using duet::pairhmm::RowParameters;

// A read row as the kernels take it: the entries of RowParameter (the base code's bits as
// the last), 32-byte aligned so that the packing moves them four at a time.
struct alignas(32) PackedRow {
  float entry[kParameters];
};
static_assert(kParameters == 8);

// Per-thread buffers of the packed group.
struct Workspace {
  AlignedFloats parameters, work, initial, sums;
  std::vector<std::int32_t> haplotype_bases, lane_rows, lane_columns;
  std::vector<std::uint8_t> row_ends;
  std::vector<RowParameters<float>> one_read;
  std::vector<PackedRow> rows;         // the rows of the call's reads
  std::vector<std::size_t> pair_rows;  // per pair: its read's first row in `rows`
  std::unordered_map<const duet::pairhmm::Read*, std::size_t> read_at;  // read: first row
  std::vector<std::size_t> order;  // the pairs group by group (group_pairs)
};

// The rows of every pair's read, computed once per read of the call: a pair whose read is
// the previous pair's (the batch format's order) or one seen before (grouped pairs) shares
// its rows.
void read_rows(const Model& model, std::span<const Pair> pairs, Workspace& ws) {
  ws.rows.clear();
  ws.pair_rows.resize(pairs.size());
  ws.read_at.clear();
  std::uint8_t codes = 0;  // every base code, or-ed
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    for (std::uint8_t b : pairs[i].haplotype->bases) codes |= b;
    if (i > 0 && pairs[i].read == pairs[i - 1].read) {
      ws.pair_rows[i] = ws.pair_rows[i - 1];
      continue;
    }
    const auto [seen, first_use] = ws.read_at.try_emplace(pairs[i].read, ws.rows.size());
    ws.pair_rows[i] = seen->second;
    if (!first_use) continue;
    model.rows(*pairs[i].read, ws.one_read);
    for (std::size_t r = 0; r < ws.one_read.size(); ++r) {
      const RowParameters<float>& p = ws.one_read[r];
      const std::int32_t base = pairs[i].read->bases[r];
      codes |= pairs[i].read->bases[r];
      PackedRow& row = ws.rows.emplace_back();
      row.entry[kMatchToMatch] = p.match_to_match;
      row.entry[kIndelToMatch] = p.indel_to_match;
      row.entry[kMatchToInsertion] = p.match_to_insertion;
      row.entry[kMatchToDeletion] = p.match_to_deletion;
      row.entry[kGapExtension] = p.gap_extension;
      row.entry[kEmissionMatch] = p.emission_match;
      row.entry[kEmissionMismatch] = p.emission_mismatch;
      std::memcpy(&row.entry[kReadBase], &base, sizeof(float));
    }
  }
  require_base_codes(codes);
}

// Packs pairs[members] into the inter-pair layout of W lanes, row by row: each packed row
// written whole, four lanes at a time (a 4x4 transpose of their rows' entries 0-3, then 4-7).
PairGroupView pack_group(std::span<const Pair> pairs, std::span<const std::size_t> members, int W,
                         Workspace& ws) {
  constexpr std::size_t kMaxLanes = 16;
  if (W > static_cast<int>(kMaxLanes) || W % 4 != 0 ||
      members.size() > static_cast<std::size_t>(W)) {
    throw std::logic_error("pack_group: lanes must be 4, 8, 12 or 16");
  }
  PairGroupView g;
  g.lanes = W;
  for (std::size_t k : members) {
    g.rows = std::max(g.rows, pairs[k].rows());
    g.columns = std::max(g.columns, pairs[k].columns());
  }
  const auto w = static_cast<std::size_t>(W);
  const auto rows = static_cast<std::size_t>(g.rows), columns = static_cast<std::size_t>(g.columns);
  const std::size_t n = members.size();
  ws.lane_rows.assign(w, 0);
  ws.lane_columns.assign(w, 0);
  ws.row_ends.assign(rows + 1, 0);
  float* initial = ws.initial.get(w);
  std::fill(initial, initial + w, 0.0f);
  // Each lane's sources (lanes past the group's pairs: none, zeros in every row).
  const PackedRow* lane_parameters[kMaxLanes] = {};
  const std::uint8_t* lane_haplotype[kMaxLanes] = {};
  std::size_t lane_rows[kMaxLanes] = {}, lane_columns[kMaxLanes] = {};
  for (std::size_t lane = 0; lane < n; ++lane) {
    const std::size_t k = members[lane];
    const Pair& pair = pairs[k];
    lane_parameters[lane] = ws.rows.data() + ws.pair_rows[k];
    lane_haplotype[lane] = pair.haplotype->bases.data();
    lane_rows[lane] = static_cast<std::size_t>(pair.rows());
    lane_columns[lane] = static_cast<std::size_t>(pair.columns());
    ws.lane_rows[lane] = pair.rows();
    ws.lane_columns[lane] = pair.columns();
    ws.row_ends[lane_rows[lane]] = 1;
    initial[lane] = Model::initial_deletion_float(pair.columns());
  }
  static const PackedRow kZeroRow{};
  float* parameters = ws.parameters.get(rows * kParameters * w);
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = parameters + r * kParameters * w;
    for (std::size_t lane = 0; lane < w; lane += 4) {
      const float* source[4];
      for (std::size_t j = 0; j < 4; ++j) {
        source[j] = (r < lane_rows[lane + j] ? lane_parameters[lane + j][r] : kZeroRow).entry;
      }
      for (std::size_t half = 0; half < kParameters; half += 4) {
        simde__m128 a = simde_mm_load_ps(source[0] + half), b = simde_mm_load_ps(source[1] + half);
        simde__m128 c = simde_mm_load_ps(source[2] + half), d = simde_mm_load_ps(source[3] + half);
        SIMDE_MM_TRANSPOSE4_PS(a, b, c, d);
        simde_mm_store_ps(row + (half + 0) * w + lane, a);
        simde_mm_store_ps(row + (half + 1) * w + lane, b);
        simde_mm_store_ps(row + (half + 2) * w + lane, c);
        simde_mm_store_ps(row + (half + 3) * w + lane, d);
      }
    }
  }
  ws.haplotype_bases.resize(columns * w);
  std::int32_t* haplotype_bases = ws.haplotype_bases.data();
  for (std::size_t c = 0; c < columns; ++c) {
    for (std::size_t lane = 0; lane < w; ++lane) {
      haplotype_bases[c * w + lane] =
          c < lane_columns[lane] ? lane_haplotype[lane][c] : std::uint8_t{0};
    }
  }
  g.parameters = parameters;
  g.haplotype_bases = haplotype_bases;
  g.lane_rows = ws.lane_rows.data();
  g.lane_columns = ws.lane_columns.data();
  g.row_ends = ws.row_ends.data();
  g.initial_deletion = initial;
  g.work = ws.work.get(work_floats(g.columns, W));
  g.sums = ws.sums.get(w);
  return g;
}

}  // namespace

template <int W, bool kGrouped>
void forward_sums_inter_pair(GroupKernel kernel, const Model& model, std::span<const Pair> pairs,
                             float* sums) {
  static_assert(kGroupingPairs % W == 0, "groups must not straddle two chunks");
  thread_local Workspace ws;
  const FlushToZero flush_to_zero;
  // At most kGroupingPairs pairs at a time: bounds the rows kept and the grouping's work.
  for (std::size_t start = 0; start < pairs.size(); start += kGroupingPairs) {
    const std::span<const Pair> chunk =
        pairs.subspan(start, std::min(kGroupingPairs, pairs.size() - start));
    read_rows(model, chunk, ws);
    if constexpr (kGrouped) {
      ws.order.resize(chunk.size());
      std::iota(ws.order.begin(), ws.order.end(), std::size_t{0});
    } else {
      group_pairs(chunk, W, ws.order);
    }
    for (std::size_t first = 0; first < ws.order.size(); first += W) {
      const std::span<const std::size_t> members(ws.order.data() + first,
                                                 std::min<std::size_t>(W, ws.order.size() - first));
      const PairGroupView g = pack_group(chunk, members, W, ws);
      kernel(g);
      for (std::size_t lane = 0; lane < members.size(); ++lane)
        sums[start + members[lane]] = g.sums[lane];
    }
  }
}

template void forward_sums_inter_pair<avx2::kLanes, false>(GroupKernel, const Model&,
                                                           std::span<const Pair>, float*);
template void forward_sums_inter_pair<avx2::kLanes, true>(GroupKernel, const Model&,
                                                          std::span<const Pair>, float*);
template void forward_sums_inter_pair<avx512::kLanes, false>(GroupKernel, const Model&,
                                                             std::span<const Pair>, float*);
template void forward_sums_inter_pair<avx512::kLanes, true>(GroupKernel, const Model&,
                                                            std::span<const Pair>, float*);

// Lanes idle where a pair is smaller than its group's largest read and haplotype, so
// pairs are grouped greedily by size (see pairhmm_simd.hpp); the idle cells of a size r x c
// added to a group of size R x C so far: max(R, r) * max(C, c) - r * c.
void group_pairs(std::span<const Pair> pairs, int W, std::vector<std::size_t>& order) {
  const std::size_t n = pairs.size();
  // Sizes by cells (largest first), each a run of `keys` (sorted on copies of the sizes,
  // not through the pairs' pointers).
  struct SizeKey {
    std::int64_t cells;
    std::int32_t rows, columns;
    std::size_t index;
  };
  std::vector<SizeKey> keys(n);
  for (std::size_t i = 0; i < n; ++i)
    keys[i] = {pairs[i].cells(), pairs[i].rows(), pairs[i].columns(), i};
  std::sort(keys.begin(), keys.end(), [](const SizeKey& x, const SizeKey& y) {
    if (x.cells != y.cells) return x.cells > y.cells;
    if (x.rows != y.rows) return x.rows < y.rows;
    return x.index < y.index;
  });
  order.resize(n);
  std::vector<std::int64_t> rows, columns;  // per size
  std::vector<std::size_t> next, end;       // per size: its pairs left, order[next, end)
  for (std::size_t i = 0; i < n; ++i) {
    order[i] = keys[i].index;
    if (i == 0 || keys[i].rows != rows.back() || keys[i].columns != columns.back()) {
      rows.push_back(keys[i].rows);
      columns.push_back(keys[i].columns);
      next.push_back(i);
      end.push_back(i);
    }
    end.back() = i + 1;
  }
  std::vector<std::size_t> grouped;
  grouped.reserve(n);
  const std::size_t sizes = rows.size(), w = static_cast<std::size_t>(W);
  std::size_t first = 0;  // the largest size with pairs left
  while (grouped.size() < n) {
    while (next[first] == end[first]) ++first;
    std::int64_t R = 0, C = 0;
    std::size_t filled = 0, take = first;
    while (true) {
      const std::size_t k = std::min(w - filled, end[take] - next[take]);
      grouped.insert(grouped.end(), order.begin() + static_cast<std::ptrdiff_t>(next[take]),
                     order.begin() + static_cast<std::ptrdiff_t>(next[take] + k));
      next[take] += k;
      filled += k;
      R = std::max(R, rows[take]);
      C = std::max(C, columns[take]);
      if (filled == w || grouped.size() == n) break;
      std::int64_t best = -1;
      for (std::size_t s = first; s < sizes; ++s) {
        // A size s leaves at least R * C - r * c idle cells, a bound that only grows with
        // s (cells never grow along the sizes): past the best, no later size is better.
        if (best >= 0 && R * C - rows[s] * columns[s] >= best) break;
        if (next[s] == end[s]) continue;
        const std::int64_t idle =
            std::max(R, rows[s]) * std::max(C, columns[s]) - rows[s] * columns[s];
        if (best < 0 || idle < best) {
          best = idle;
          take = s;
        }
      }
    }
  }
  order.swap(grouped);
}

void forward_sums_avx2(const Model& model, std::span<const Pair> pairs, float* sums) {
  forward_sums_inter_pair<avx2::kLanes, false>(&avx2::forward_group, model, pairs, sums);
}

void forward_sums_avx512(const Model& model, std::span<const Pair> pairs, float* sums) {
  forward_sums_inter_pair<avx512::kLanes, false>(&avx512::forward_group, model, pairs, sums);
}

void forward_sums_avx2_grouped(const Model& model, std::span<const Pair> pairs, float* sums) {
  forward_sums_inter_pair<avx2::kLanes, true>(&avx2::forward_group, model, pairs, sums);
}

void forward_sums_avx512_grouped(const Model& model, std::span<const Pair> pairs, float* sums) {
  forward_sums_inter_pair<avx512::kLanes, true>(&avx512::forward_group, model, pairs, sums);
}

const PairhmmVariant& best_pairhmm_variant() {
  // A pointer, not a reference: g++ 13 warns (-Wdangling-reference) on a reference
  // initialised from a lambda's returned reference.
  static const PairhmmVariant* const best = []() -> const PairhmmVariant* {
    for (auto it = kPairhmmVariants.rbegin(); it != kPairhmmVariants.rend(); ++it)
      if (cpu_supports(it->isa)) return &*it;
    return &kPairhmmVariants.front();
  }();
  return *best;
}

const PairhmmVariant& pairhmm_variant(std::string_view name) {
  if (name == "auto") return best_pairhmm_variant();
  for (const PairhmmVariant& v : kPairhmmVariants) {
    if (v.name != name) continue;
    if (!cpu_supports(v.isa))
      throw UsageError("--isa " + std::string(name) + ": this CPU lacks it");
    return v;
  }
  throw UsageError("--isa " + std::string(name) +
                   ": no such pair-HMM kernel (scalar, avx2, avx512)");
}

}  // namespace duet::simd::pairhmm
