// pack_pairs: the device layout of a batch of pairs (see pairhmm_gpu.hpp).
#include "device/pairhmm_gpu_layout.hpp"

#include <algorithm>
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

PairPacker::PairPacker(const duet::pairhmm::Model& model)
    : min_base_quality_(static_cast<std::size_t>(
          std::clamp(model.options().min_base_quality, 0, duet::pairhmm::Model::kMaxQuality))),
      match_to_match_(static_cast<std::size_t>(kQualities) * kQualities) {
  for (int q = 0; q < kQualities; ++q) {
    const double e = model.error_probability(q);
    const auto at = static_cast<std::size_t>(q);
    error_[at] = static_cast<float>(e);
    correct_[at] = static_cast<float>(1.0 - e);
    third_[at] = static_cast<float>(e / 3.0);
    for (int d = 0; d < kQualities; ++d) {
      match_to_match_[at * kQualities + static_cast<std::size_t>(d)] =
          static_cast<float>(model.match_to_match(q, d));
    }
  }
}

void PairPacker::pack(std::span<const duet::pairhmm::Pair> pairs, PairBatch& b) const {
  b.parameters.clear();
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
  for (const auto& p : pairs) {
    if (p.read != last_read) {
      const duet::pairhmm::Read& r = *p.read;
      auto [read, new_read] =
          read_at.try_emplace(p.read, static_cast<std::int64_t>(b.read_bases.size()));
      if (new_read) {
        // The order of simd::pairhmm::RowParameter: mm, gm, mi, md, ge, match, mismatch.
        const std::size_t length = r.bases.size(), first = b.parameters.size();
        b.parameters.resize(first + 7 * length);
        float* q = b.parameters.data() + first;
        for (std::size_t i = 0; i < length; ++i, q += 7) {
          const std::size_t base = std::max<std::size_t>(r.base_quality[i], min_base_quality_);
          const std::size_t insertion = r.insertion_quality[i], deletion = r.deletion_quality[i],
                            gap = r.gcp_quality[i];
          q[0] = match_to_match_[insertion * kQualities + deletion];
          q[1] = correct_[gap];
          q[2] = error_[insertion];
          q[3] = error_[deletion];
          q[4] = error_[gap];
          q[5] = correct_[base];
          q[6] = third_[base];
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
    pack(pairs.subspan(first, std::min(piece_pairs, pairs.size() - first)), pieces[k]);
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
  out.parameters.resize(7 * total.reads);
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
    std::copy(p.parameters.begin(), p.parameters.end(), out.parameters.begin() + 7 * at.reads);
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
