// pack_pairs: the device layout of a batch of pairs (see pairhmm_gpu.hpp).
#include "device/pairhmm_gpu_layout.hpp"

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
  std::vector<duet::pairhmm::RowParameters<float>> rows;
  std::int64_t row_total = 0, column_total = 0;
  for (const auto& p : pairs) {
    row_total += p.rows();
    column_total += p.columns();
  }
  b.parameters.reserve(static_cast<std::size_t>(row_total) * 7);
  b.read_bases.reserve(static_cast<std::size_t>(row_total));
  b.haplotype_bases.reserve(static_cast<std::size_t>(column_total));
  const duet::pairhmm::Read* last_read = nullptr;
  for (const auto& p : pairs) {
    if (p.read != last_read) model.rows(*p.read, rows);
    last_read = p.read;
    b.rows.push_back(p.rows());
    b.columns.push_back(p.columns());
    b.row_offset.push_back(static_cast<std::int64_t>(b.read_bases.size()));
    b.column_offset.push_back(static_cast<std::int64_t>(b.haplotype_bases.size()));
    b.initial_deletion.push_back(duet::pairhmm::Model::initial_deletion_float(p.columns()));
    for (const auto& r : rows) {
      b.parameters.insert(
          b.parameters.end(),
          {r.match_to_match, r.indel_to_match, r.match_to_insertion, r.match_to_deletion,
           r.gap_extension, r.emission_match, r.emission_mismatch});
    }
    b.read_bases.insert(b.read_bases.end(), p.read->bases.begin(), p.read->bases.end());
    b.haplotype_bases.insert(b.haplotype_bases.end(), p.haplotype->bases.begin(),
                             p.haplotype->bases.end());
    b.cells += p.cells();
  }
  return b;
}

}  // namespace duet::device::pairhmm
