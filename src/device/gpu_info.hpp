// The GPUs this build can use, seen through a plain C++ header (no CUDA types).
// In a build without CUDA, list_gpus() reports that no GPU support is compiled in.
#pragma once

#include <string>
#include <vector>

namespace duet::device {

struct GpuInfo {
  int index = 0;
  std::string name;
  int multiprocessors = 0;
  double memory_gib = 0;
  int compute_major = 0, compute_minor = 0;
};

struct GpuInventory {
  bool cuda_compiled = false;
  std::string driver;   // "13.0" etc.; empty when no driver answers
  std::string problem;  // why no GPU is usable, empty when some are
  std::vector<GpuInfo> gpus;
};

GpuInventory list_gpus();

// The GPUs the NVIDIA driver shows, without starting CUDA (which costs 0.1 s before any
// answer): the entries of /proc/driver/nvidia/gpus, at most as many as CUDA_VISIBLE_DEVICES
// names when it is set. -1 when the driver's folder is missing: then only list_gpus() can
// tell. A count, not a promise: a device shown may still fail to start.
int gpus_shown_by_driver();

// Device start-up off the critical path. start_gpu_warmup() starts, once per process, a
// thread that initialises CUDA (list_gpus) and makes each device's context: the 0.2 to 0.3 s
// a process's first CUDA calls take (bench/RESULTS.md). The CPU workers run meanwhile; a
// GPU feeder joins once its device is ready (scheduler::GpuBackend::readiness).
void start_gpu_warmup();
enum class WarmupState { pending, ready, unavailable };
// Where device `device` stands (starts the warm-up if none was); unavailable: the reason in
// `problem`.
WarmupState gpu_warmup_state(int device, std::string* problem = nullptr);
// Whether the warm-up thread is still inside CUDA calls. A process that ends then must
// leave with _exit: the CUDA runtime's exit handlers must not run beside them.
bool gpu_warmup_running();

// Makes device `device`'s context current on the calling thread (the warm-up's last
// step); "" on success, else the CUDA error.
std::string make_device_context(int device);

}  // namespace duet::device
