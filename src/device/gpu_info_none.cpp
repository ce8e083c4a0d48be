// list_gpus() in a build without CUDA.
#include "device/gpu_info.hpp"

namespace duet::device {

GpuInventory list_gpus() {
  GpuInventory inv;
  inv.problem = "this build has no CUDA support (nvcc was not found when it was configured)";
  return inv;
}

std::string make_device_context(int) {
  return list_gpus().problem;
}

}  // namespace duet::device
