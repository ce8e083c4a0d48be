// PaparaGpu's checks of its arguments, the unpacking of the core types and the choice of
// kernel (see papara_gpu.hpp): C++20, which the core header needs and the CUDA source is not
// compiled as.
#include "device/papara/papara_gpu.hpp"

#include <stdexcept>
#include <string>

#include "core/papara/papara_kernel.hpp"

namespace duet::device::papara {

Kernel resolve_kernel(Kernel requested, bool protein, std::int16_t match, std::int16_t match_cgap) {
  if (protein) {
    if (requested == Kernel::automatic || requested == Kernel::protein) return Kernel::protein;
    throw std::invalid_argument(
        std::string("PaparaGpu::score: the ") + kernel_name(requested) +
        " kernel scores DNA profiles; protein ones take the protein kernel");
  }
  if (requested == Kernel::protein) {
    throw std::invalid_argument(
        "PaparaGpu::score: the protein kernel scores protein profiles only");
  }
  // base_rows takes the max of a residue's bases' incs: that is the residue's inc when a
  // match never lowers inc, without overflow.
  const bool base_rows_exact = match >= 0 && match + match_cgap <= INT16_MAX;
  if (requested == Kernel::automatic)
    return base_rows_exact ? Kernel::base_rows : Kernel::match_mask;
  if (requested == Kernel::base_rows && !base_rows_exact) {
    throw std::invalid_argument(
        "PaparaGpu::score: the base-rows kernel needs match >= 0 and match + match_cgap <= "
        "32767");
  }
  return requested;
}

PaparaGpu::PaparaGpu(int device, const duet::papara::ProfileView& profiles,
                     std::size_t scratch_bytes)
    : state_(create_state(device, scratch_bytes)) {
  try {
    const bool protein = profiles.alphabet() == duet::papara::Alphabet::protein;
    if (profiles.columns < 0 || profiles.edges < 0 ||
        profiles.edge_stride % duet::papara::kEdgeAlign != 0 ||
        profiles.edge_stride < profiles.edges ||
        (!protein && profiles.cells == nullptr && profiles.columns > 0 &&
         profiles.edge_stride > 0)) {
      throw std::invalid_argument("PaparaGpu: profiles need edge_stride >= edges, a multiple of " +
                                  std::to_string(duet::papara::kEdgeAlign) + ", and cells");
    }
    upload(protein, protein ? nullptr : profiles.cells, protein ? profiles.protein_cells : nullptr,
           profiles.columns, profiles.edges, profiles.edge_stride);
  } catch (...) {
    destroy_state(state_);
    throw;
  }
}

namespace {

void pack(const duet::papara::Scoring& scoring, std::int16_t packed[4]) {
  packed[0] = scoring.gap_open;
  packed[1] = scoring.gap_extend;
  packed[2] = scoring.match;
  packed[3] = scoring.match_cgap;
}

}  // namespace

void PaparaGpu::score(const std::uint8_t* residues, const std::int64_t* offsets,
                      std::size_t queries, int first_edge, int count,
                      const duet::papara::Scoring& scoring, std::int16_t* out) {
  if (protein()) {
    throw std::invalid_argument(
        "PaparaGpu::score: protein profiles give int32 scores (the int32 overload)");
  }
  std::int16_t packed[4];
  pack(scoring, packed);
  score_packed(residues, offsets, queries, first_edge, count, packed, out, nullptr);
}

void PaparaGpu::score(const std::uint8_t* residues, const std::int64_t* offsets,
                      std::size_t queries, int first_edge, int count,
                      const duet::papara::Scoring& scoring, std::int32_t* out) {
  if (!protein()) {
    throw std::invalid_argument(
        "PaparaGpu::score: DNA profiles give int16 scores (the int16 overload)");
  }
  std::int16_t packed[4];
  pack(scoring, packed);
  score_packed(residues, offsets, queries, first_edge, count, packed, nullptr, out);
}

}  // namespace duet::device::papara
