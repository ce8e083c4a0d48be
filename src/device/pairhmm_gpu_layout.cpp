// pack_pairs: the device layout of a batch of pairs (see pairhmm_gpu.hpp).
#include "device/pairhmm_gpu_layout.hpp"

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

PairBatch pack_pairs(const duet::pairhmm::Model& model,
                     std::span<const duet::pairhmm::Pair> pairs) {
  PairBatch b;
  const std::size_t n = pairs.size();
  b.rows.reserve(n);
  b.columns.reserve(n);
  b.row_offset.reserve(n);
  b.column_offset.reserve(n);
  b.scratch_offset.reserve(n);
  b.initial_deletion.reserve(n);
  // Each distinct read and haplotype once, in order of first use.
  std::unordered_map<const duet::pairhmm::Read*, std::int64_t> read_at;
  std::unordered_map<const duet::pairhmm::Haplotype*, std::int64_t> haplotype_at;
  std::vector<duet::pairhmm::RowParameters<float>> rows;
  for (const auto& p : pairs) {
    auto [read, new_read] =
        read_at.try_emplace(p.read, static_cast<std::int64_t>(b.read_bases.size()));
    if (new_read) {
      model.rows(*p.read, rows);
      for (const auto& r : rows) {
        b.parameters.insert(
            b.parameters.end(),
            {r.match_to_match, r.indel_to_match, r.match_to_insertion, r.match_to_deletion,
             r.gap_extension, r.emission_match, r.emission_mismatch});
      }
      b.read_bases.insert(b.read_bases.end(), p.read->bases.begin(), p.read->bases.end());
    }
    auto [haplotype, new_haplotype] =
        haplotype_at.try_emplace(p.haplotype, static_cast<std::int64_t>(b.haplotype_bases.size()));
    if (new_haplotype) {
      b.haplotype_bases.insert(b.haplotype_bases.end(), p.haplotype->bases.begin(),
                               p.haplotype->bases.end());
    }
    b.rows.push_back(p.rows());
    b.columns.push_back(p.columns());
    b.row_offset.push_back(read->second);
    b.column_offset.push_back(haplotype->second);
    b.scratch_offset.push_back(b.scratch_columns);
    b.scratch_columns += p.columns() + 1;
    b.initial_deletion.push_back(duet::pairhmm::Model::initial_deletion_float(p.columns()));
    b.cells += p.cells();
  }
  return b;
}

}  // namespace duet::device::pairhmm
