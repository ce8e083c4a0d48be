// Kernel selection for the pair-HMM workload (see pairhmm_kernels.hpp).
#include "app/pairhmm_kernels.hpp"

#include <map>
#include <mutex>

#include "core/error.hpp"
#include "host_simd/pairhmm_simd.hpp"

namespace duet::app {

const CpuKernel& select_cpu_kernel(const std::string& isa) {
  const simd::pairhmm::PairhmmVariant& v = simd::pairhmm::pairhmm_variant(isa);
  static std::mutex mutex;
  static std::map<std::string, CpuKernel> kernels;
  std::lock_guard lock(mutex);
  const std::string name(v.name);
  auto it = kernels.find(name);
  if (it == kernels.end()) {
    const std::string description =
        v.lanes == 1 ? "scalar float" : name + " inter-pair x" + std::to_string(v.lanes) + " float";
    it = kernels.emplace(name, CpuKernel{description, name, v.function}).first;
  }
  return it->second;
}

GpuBackends make_gpu_backends(const pairhmm::Model&, const std::string&, bool required, SumsConsumer,
                              std::span<const pairhmm::Pair>) {
  if (required) throw UsageError("--gpu-only: no GPU available (this build has no CUDA backend)");
  return {};
}

}  // namespace duet::app
