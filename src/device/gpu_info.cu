// list_gpus() through the CUDA runtime: every device, with a reason when none answers.
#include <cuda_runtime.h>

#include "device/gpu_info.hpp"

namespace duet::device {

GpuInventory list_gpus() {
  GpuInventory inv;
  inv.cuda_compiled = true;
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    inv.driver = std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10);
  }
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    inv.problem = cudaGetErrorString(status);
    return inv;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    GpuInfo g;
    g.index = i;
    g.name = p.name;
    g.multiprocessors = p.multiProcessorCount;
    g.memory_gib = static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    g.compute_major = p.major;
    g.compute_minor = p.minor;
    inv.gpus.push_back(g);
  }
  if (inv.gpus.empty()) inv.problem = "no CUDA device found";
  return inv;
}

std::string make_device_context(int device) {
  cudaError_t status = cudaSetDevice(device);
  if (status == cudaSuccess) status = cudaFree(nullptr);  // makes the primary context
  return status == cudaSuccess ? std::string() : std::string(cudaGetErrorString(status));
}

}  // namespace duet::device
