// list_gpus() through the CUDA runtime: every device, with a reason when none answers.
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>

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

int probe_gpu_count() {
  if (std::getenv("CUDA_VISIBLE_DEVICES") != nullptr) return -1;
  std::error_code error;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.compare(0, 6, "nvidia") == 0 &&
        std::all_of(name.begin() + 6, name.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      ++count;
    }
  }
  return error ? -1 : count;
}

}  // namespace duet::device
