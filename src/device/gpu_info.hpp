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

// The engines' buffer allocations so far in this process and the host seconds they took,
// for DUET_TIMES: device buffers (in stream order where the engine gives a stream, else
// cudaMalloc, whose regrowth's cudaFree waits for the whole device) and pinned host
// buffers (a regrowth's cudaFreeHost waits too).
struct GpuBufferAllocations {
  long long device = 0, pinned = 0;
  double device_seconds = 0, pinned_seconds = 0;
};
GpuBufferAllocations gpu_buffer_allocations();

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
// step), and its SM share when an SM limit is set; "" on success, else the CUDA error.
std::string make_device_context(int device);

// ---- An SM limit (--gpu-sms, [gpu] sms): duet's kernels on part of each GPU, so that one
// machine can stand in for workstations with smaller GPUs.
// Every stream made after this (detail::Stream, which every engine's kernels run on) runs
// its kernels on `sms` SMs of its device: a CUDA green context's share, rounded up to the
// GPU's partition size (8 SMs on Hopper). 0, or a count at or above a GPU's own: the whole
// GPU. Set it before the GPUs start; memory is shared with the whole GPU's context.
void set_gpu_sm_limit(int sms);
int gpu_sm_limit();
// The SMs each GPU's kernels run on: the share under the limit, else the GPUs' own count
// (the smallest of those listed); 0 in a build without CUDA or when none is listed.
int gpu_sms_per_gpu();
// Runs a probe kernel on a stream made as the engines make theirs, on device `device`, and
// returns how many distinct SMs its blocks ran on: the proof that the limit holds (tests,
// `duet info`). Throws std::runtime_error when the device or its share fails.
int probe_kernel_sms(int device);

}  // namespace duet::device
