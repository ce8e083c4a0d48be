// list_gpus() through the CUDA runtime: every device, with a reason when none answers; the
// SM limit's green contexts and the streams made in them.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "device/cuda_raii.cuh"
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

namespace {

// The driver's green-context functions, through the runtime (no link to libcuda: a binary
// that linked it would not start on a machine without the NVIDIA driver).
struct GreenDriver {
  std::string missing;  // the first function the driver lacks
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetDevResource) device_resource = nullptr;
  decltype(&::cuDevSmResourceSplitByCount) split_by_count = nullptr;
  decltype(&::cuDevResourceGenerateDesc) generate_desc = nullptr;
  decltype(&::cuGreenCtxCreate) create = nullptr;
  decltype(&::cuGreenCtxStreamCreate) stream_create = nullptr;
  decltype(&::cuGetErrorString) error_string = nullptr;
};

GreenDriver open_green_driver() {
  GreenDriver d;
  const auto symbol = [&](auto& pointer, const char* name) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion(name, &p, CUDA_VERSION, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess || p == nullptr) {
      if (d.missing.empty()) d.missing = name;
      return;
    }
    pointer = reinterpret_cast<std::remove_reference_t<decltype(pointer)>>(p);
  };
  symbol(d.device_get, "cuDeviceGet");
  symbol(d.device_resource, "cuDeviceGetDevResource");
  symbol(d.split_by_count, "cuDevSmResourceSplitByCount");
  symbol(d.generate_desc, "cuDevResourceGenerateDesc");
  symbol(d.create, "cuGreenCtxCreate");
  symbol(d.stream_create, "cuGreenCtxStreamCreate");
  symbol(d.error_string, "cuGetErrorString");
  return d;
}

const GreenDriver& green_driver() {
  static const GreenDriver d = open_green_driver();
  return d;
}

std::string driver_problem(const char* call, CUresult status) {
  const char* text = nullptr;
  if (green_driver().error_string != nullptr) green_driver().error_string(status, &text);
  return std::string(call) + ": " +
         (text != nullptr ? text : "CUDA driver error " + std::to_string(static_cast<int>(status)));
}

std::atomic<int> g_sm_limit{0};

// A device's share of SMs under the limit `limit`: its green context (null: the whole GPU,
// the limit being at or above its count), or why it could not be made. Made once per
// device and limit, never destroyed (its streams live as long as the engines).
struct SmShare {
  int limit = 0;
  int sms = 0;
  CUgreenCtx context = nullptr;
  std::string problem;
};

std::mutex g_share_mutex;
std::map<int, SmShare> g_shares;  // by device; guarded by g_share_mutex

SmShare make_share(int device, int limit) {
  SmShare share;
  share.limit = limit;
  const GreenDriver& d = green_driver();
  if (!d.missing.empty()) {
    share.problem = "the CUDA driver has no " + d.missing + " (green contexts need CUDA 12.4)";
    return share;
  }
  CUdevice handle = 0;
  CUresult status = d.device_get(&handle, device);
  if (status != CUDA_SUCCESS) {
    share.problem = driver_problem("cuDeviceGet", status);
    return share;
  }
  CUdevResource all{};
  status = d.device_resource(handle, &all, CU_DEV_RESOURCE_TYPE_SM);
  if (status != CUDA_SUCCESS) {
    share.problem = driver_problem("cuDeviceGetDevResource", status);
    return share;
  }
  if (limit >= static_cast<int>(all.sm.smCount)) {
    share.sms = static_cast<int>(all.sm.smCount);
    return share;
  }
  CUdevResource part{}, rest{};
  unsigned groups = 1;
  status = d.split_by_count(&part, &groups, &all, &rest, 0, static_cast<unsigned>(limit));
  if (status != CUDA_SUCCESS || groups != 1) {
    share.problem = status != CUDA_SUCCESS ? driver_problem("cuDevSmResourceSplitByCount", status)
                                           : "cuDevSmResourceSplitByCount made no group";
    return share;
  }
  CUdevResourceDesc desc = nullptr;
  status = d.generate_desc(&desc, &part, 1);
  if (status == CUDA_SUCCESS)
    status = d.create(&share.context, desc, handle, CU_GREEN_CTX_DEFAULT_STREAM);
  if (status != CUDA_SUCCESS) {
    share.problem = driver_problem("cuGreenCtxCreate", status);
    share.context = nullptr;
    return share;
  }
  share.sms = static_cast<int>(part.sm.smCount);
  return share;
}

// Device `device`'s share under the current limit (made on first use); the caller holds
// g_share_mutex.
const SmShare& share_of(int device) {
  const int limit = g_sm_limit.load();
  auto it = g_shares.find(device);
  if (it == g_shares.end() || it->second.limit != limit) {
    it = g_shares.insert_or_assign(device, make_share(device, limit)).first;
  }
  return it->second;
}

}  // namespace

std::string make_device_context(int device) {
  cudaError_t status = cudaSetDevice(device);
  if (status == cudaSuccess) status = cudaFree(nullptr);  // makes the primary context
  if (status != cudaSuccess) return cudaGetErrorString(status);
  if (g_sm_limit.load() <= 0) return {};
  std::lock_guard lock(g_share_mutex);
  const SmShare& share = share_of(device);
  return share.problem.empty() ? std::string()
                               : "--gpu-sms " + std::to_string(share.limit) + ": " + share.problem;
}

void set_gpu_sm_limit(int sms) {
  g_sm_limit.store(std::max(sms, 0));
}

int gpu_sm_limit() {
  return g_sm_limit.load();
}

int gpu_sms_per_gpu() {
  int shared = 0;
  if (g_sm_limit.load() > 0) {
    std::lock_guard lock(g_share_mutex);
    for (const auto& [device, share] : g_shares)
      if (share.limit == g_sm_limit.load()) shared = std::max(shared, share.sms);
  }
  if (shared > 0) return shared;
  int fewest = 0;
  for (const GpuInfo& g : list_gpus().gpus)
    fewest = fewest == 0 ? g.multiprocessors : std::min(fewest, g.multiprocessors);
  return fewest;
}

namespace {
// Per BufferKind: allocations, and their nanoseconds.
std::atomic<long long> g_allocations[2]{}, g_allocation_ns[2]{};
}  // namespace

GpuBufferAllocations gpu_buffer_allocations() {
  const auto seconds = [](const std::atomic<long long>& ns) {
    return static_cast<double>(ns.load()) / 1e9;
  };
  return {g_allocations[0].load(), g_allocations[1].load(), seconds(g_allocation_ns[0]),
          seconds(g_allocation_ns[1])};
}

namespace detail {

void note_buffer_allocation(BufferKind kind, std::chrono::steady_clock::time_point started) {
  const auto k = static_cast<std::size_t>(kind);
  g_allocations[k].fetch_add(1, std::memory_order_relaxed);
  g_allocation_ns[k].fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - started)
                                   .count(),
                               std::memory_order_relaxed);
}

bool stream_ordered_buffers() {
  static const bool on = [] {
    const char* off = std::getenv("DUET_DEBUG_SYNC_BUFFERS");
    return off == nullptr || std::string(off) != "1";
  }();
  return on;
}

void keep_freed_device_memory(int device) {
  static std::mutex mutex;
  static std::vector<int> done;
  std::lock_guard lock(mutex);
  if (std::find(done.begin(), done.end(), device) != done.end()) return;
  done.push_back(device);
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) return;
  std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
}

cudaStream_t make_stream() {
  cudaStream_t stream = nullptr;
  if (g_sm_limit.load() > 0) {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    std::lock_guard lock(g_share_mutex);
    const SmShare& share = share_of(device);
    if (!share.problem.empty()) {
      throw std::runtime_error("--gpu-sms " + std::to_string(share.limit) + ": " + share.problem);
    }
    if (share.context != nullptr) {
      CUstream made = nullptr;
      const CUresult status =
          green_driver().stream_create(&made, share.context, CU_STREAM_NON_BLOCKING, 0);
      if (status != CUDA_SUCCESS) {
        throw std::runtime_error("CUDA: " + driver_problem("cuGreenCtxStreamCreate", status));
      }
      return made;
    }
  }
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  return stream;
}

}  // namespace detail

namespace {

__global__ void sm_probe_kernel(unsigned* seen, long long spin) {
  unsigned sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  const long long start = clock64();
  while (clock64() - start < spin) {
  }
  if (threadIdx.x == 0) atomicOr(&seen[sm / 32], 1u << (sm % 32));
}

}  // namespace

int probe_kernel_sms(int device) {
  using namespace detail;
  check(cudaSetDevice(device), "cudaSetDevice");
  constexpr int kWords = 32;  // SM ids below 1,024
  const Stream stream;
  DeviceBuffer<unsigned> seen;
  seen.reserve(kWords);
  check(cudaMemsetAsync(seen.get(), 0, kWords * sizeof(unsigned), stream.get()), "cudaMemset");
  // Many more blocks than any GPU holds at once, each long enough that every SM the stream
  // may use gets some.
  sm_probe_kernel<<<8192, 128, 0, stream.get()>>>(seen.get(), 20000);
  check_launch("sm_probe_kernel");
  unsigned host[kWords] = {};
  check(cudaMemcpyAsync(host, seen.get(), sizeof host, cudaMemcpyDeviceToHost, stream.get()),
        "cudaMemcpy");
  check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
  int count = 0;
  for (const unsigned word : host) count += __builtin_popcount(word);
  return count;
}

}  // namespace duet::device
