// Kernel selection for PaPaRa's workload (see papara_kernels.hpp).
#include "app/papara/papara_kernels.hpp"

#include "core/error.hpp"

namespace duet::app {

const PaparaCpuKernel& select_papara_cpu_kernel(const std::string& isa) {
  static const PaparaCpuKernel scalar{"scalar int16", &papara::score_edges_scalar};
  if (isa != "auto" && isa != "scalar")
    throw UsageError("--isa " + isa + ": no such PaPaRa kernel");
  return scalar;
}

std::vector<std::string> papara_isa_names() {
  return {"auto", "scalar"};
}

std::vector<std::unique_ptr<scheduler::GpuBackend>> make_papara_gpu_backends(
    const papara::ProfileView&, const QueryResidues&, const papara::Scoring&,
    std::span<const PaparaUnit>, ChoiceConsumer, bool required) {
  if (required) throw UsageError("--gpu-only: this build has no GPU kernel for papara");
  return {};
}

}  // namespace duet::app
