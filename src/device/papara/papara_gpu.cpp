// PaparaGpu's checks of its arguments and the unpacking of the core types (see
// papara_gpu.hpp): C++20, which the core header needs and the CUDA source is not compiled as.
#include "device/papara/papara_gpu.hpp"

#include <stdexcept>
#include <string>

#include "core/papara/papara_kernel.hpp"

namespace duet::device::papara {

PaparaGpu::PaparaGpu(int device, const duet::papara::ProfileView& profiles,
                     std::size_t scratch_bytes)
    : state_(create_state(device, scratch_bytes)) {
  try {
    if (profiles.columns < 0 || profiles.edges < 0 ||
        profiles.edge_stride % duet::papara::kEdgeAlign != 0 ||
        profiles.edge_stride < profiles.edges ||
        (profiles.cells == nullptr && profiles.columns > 0 && profiles.edge_stride > 0)) {
      throw std::invalid_argument("PaparaGpu: profiles need edge_stride >= edges, a multiple of " +
                                  std::to_string(duet::papara::kEdgeAlign) + ", and cells");
    }
    upload(profiles.cells, profiles.columns, profiles.edges, profiles.edge_stride);
  } catch (...) {
    destroy_state(state_);
    throw;
  }
}

void PaparaGpu::score(const std::uint8_t* residues, const std::int64_t* offsets,
                      std::size_t queries, int first_edge, int count,
                      const duet::papara::Scoring& scoring, std::int16_t* out) {
  const std::int16_t packed[4] = {scoring.gap_open, scoring.gap_extend, scoring.match,
                                  scoring.match_cgap};
  score_packed(residues, offsets, queries, first_edge, count, packed, out);
}

}  // namespace duet::device::papara
