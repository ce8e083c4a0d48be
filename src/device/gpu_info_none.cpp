// list_gpus() in a build without CUDA.
#include <stdexcept>

#include "device/gpu_info.hpp"

namespace duet::device {

GpuInventory list_gpus() {
  GpuInventory inv;
  inv.problem = "this build has no CUDA support (nvcc was not found when it was configured)";
  return inv;
}

GpuBufferAllocations gpu_buffer_allocations() {
  return {};
}

std::string make_device_context(int) {
  return list_gpus().problem;
}

namespace {
int g_sm_limit = 0;
}

void set_gpu_sm_limit(int sms) {
  g_sm_limit = sms;
}
int gpu_sm_limit() {
  return g_sm_limit;
}
int gpu_sms_per_gpu() {
  return 0;
}
int probe_kernel_sms(int) {
  throw std::runtime_error(list_gpus().problem);
}

}  // namespace duet::device
