// Pair-HMM SIMD dispatch and the inter-pair layout (see pairhmm_simd.hpp and
// pairhmm_isa_kernels.hpp). Compiled without ISA flags.
#include "host_simd/pairhmm_simd.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <vector>

#include <simde/x86/sse.h>

#include "core/error.hpp"
#include "host_simd/pairhmm_isa_kernels.hpp"

namespace duet::simd::pairhmm {

namespace {

using duet::pairhmm::Model;
using duet::pairhmm::Pair;
using duet::pairhmm::RowParameters;

// 64-byte aligned float scratch that only grows.
class AlignedFloats {
 public:
  float* get(std::size_t n) {
    if (n > size_) {
      data_.reset(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64)));
      if (!data_) throw std::bad_alloc();
      size_ = n;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  std::size_t size_ = 0;
};

// Per-thread buffers of the packed group.
struct Workspace {
  AlignedFloats parameters, work, initial, sums;
  std::vector<std::int32_t> read_bases, haplotype_bases, lane_rows, lane_columns;
  std::vector<std::uint8_t> row_ends;
  std::vector<RowParameters<float>> rows;
};

// Packs pairs[order[first .. first + count)] into the inter-pair layout of W lanes.
PairGroupView pack_group(const Model& model, std::span<const Pair> pairs, std::span<const std::size_t> members,
                         int W, Workspace& ws) {
  PairGroupView g;
  g.lanes = W;
  for (std::size_t k : members) {
    g.rows = std::max(g.rows, pairs[k].rows());
    g.columns = std::max(g.columns, pairs[k].columns());
  }
  const auto w = static_cast<std::size_t>(W);
  const auto rows = static_cast<std::size_t>(g.rows), columns = static_cast<std::size_t>(g.columns);
  float* parameters = ws.parameters.get(rows * kParameters * w);
  std::fill(parameters, parameters + rows * kParameters * w, 0.0f);
  ws.read_bases.assign(rows * w, 0);
  ws.haplotype_bases.assign(columns * w, 0);
  ws.lane_rows.assign(w, 0);
  ws.lane_columns.assign(w, 0);
  ws.row_ends.assign(rows + 1, 0);
  float* initial = ws.initial.get(w);
  std::fill(initial, initial + w, 0.0f);
  for (std::size_t lane = 0; lane < members.size(); ++lane) {
    const Pair& pair = pairs[members[lane]];
    model.rows(*pair.read, ws.rows);
    for (std::size_t r = 0; r < ws.rows.size(); ++r) {
      const RowParameters<float>& p = ws.rows[r];
      float* row = parameters + r * kParameters * w + lane;
      row[kMatchToMatch * w] = p.match_to_match;
      row[kIndelToMatch * w] = p.indel_to_match;
      row[kMatchToInsertion * w] = p.match_to_insertion;
      row[kMatchToDeletion * w] = p.match_to_deletion;
      row[kGapExtension * w] = p.gap_extension;
      row[kEmissionMatch * w] = p.emission_match;
      row[kEmissionMismatch * w] = p.emission_mismatch;
      ws.read_bases[r * w + lane] = pair.read->bases[r];
    }
    for (std::size_t c = 0; c < pair.haplotype->bases.size(); ++c) {
      ws.haplotype_bases[c * w + lane] = pair.haplotype->bases[c];
    }
    ws.lane_rows[lane] = pair.rows();
    ws.lane_columns[lane] = pair.columns();
    ws.row_ends[static_cast<std::size_t>(pair.rows())] = 1;
    initial[lane] = Model::initial_deletion_float(pair.columns());
  }
  g.parameters = parameters;
  g.read_bases = ws.read_bases.data();
  g.haplotype_bases = ws.haplotype_bases.data();
  g.lane_rows = ws.lane_rows.data();
  g.lane_columns = ws.lane_columns.data();
  g.row_ends = ws.row_ends.data();
  g.initial_deletion = initial;
  g.work = ws.work.get(3 * (columns + 1) * w);
  g.sums = ws.sums.get(w);
  return g;
}

// Flush to zero (MXCSR bit 15) while a kernel runs, as the canonical computation defines;
// the caller's mode is restored after.
class FlushToZero {
 public:
  FlushToZero() : saved_(simde_mm_getcsr()) { simde_mm_setcsr(saved_ | 0x8000u); }
  ~FlushToZero() { simde_mm_setcsr(saved_); }
  FlushToZero(const FlushToZero&) = delete;
  FlushToZero& operator=(const FlushToZero&) = delete;

 private:
  unsigned saved_;
};

template <int W>
void forward_sums_inter_pair(void (*kernel)(const PairGroupView&), const Model& model,
                             std::span<const Pair> pairs, float* sums) {
  thread_local Workspace ws;
  const FlushToZero flush_to_zero;
  // Similar sizes share a group: sorted by read length, then haplotype length.
  std::vector<std::size_t> order(pairs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return pairs[a].rows() != pairs[b].rows() ? pairs[a].rows() < pairs[b].rows()
                                              : pairs[a].columns() < pairs[b].columns();
  });
  for (std::size_t first = 0; first < order.size(); first += W) {
    const std::span<const std::size_t> members(order.data() + first, std::min<std::size_t>(W, order.size() - first));
    const PairGroupView g = pack_group(model, pairs, members, W, ws);
    kernel(g);
    for (std::size_t lane = 0; lane < members.size(); ++lane) sums[members[lane]] = g.sums[lane];
  }
}

}  // namespace

void forward_sums_avx2(const Model& model, std::span<const Pair> pairs, float* sums) {
  forward_sums_inter_pair<avx2::kLanes>(&avx2::forward_group, model, pairs, sums);
}

void forward_sums_avx512(const Model& model, std::span<const Pair> pairs, float* sums) {
  forward_sums_inter_pair<avx512::kLanes>(&avx512::forward_group, model, pairs, sums);
}

bool cpu_supports(PairhmmIsa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case PairhmmIsa::scalar: return true;
    case PairhmmIsa::avx2: return __builtin_cpu_supports("avx2");
    case PairhmmIsa::avx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  }
  return false;
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
    if (!cpu_supports(v.isa)) throw UsageError("--isa " + std::string(name) + ": this CPU lacks it");
    return v;
  }
  throw UsageError("--isa " + std::string(name) + ": no such pair-HMM kernel (scalar, avx2, avx512)");
}

}  // namespace duet::simd::pairhmm
