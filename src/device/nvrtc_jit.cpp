// Run-time specialisation with NVRTC (contract in nvrtc_jit.hpp).
#include "device/nvrtc_jit.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "device/jit_cache.hpp"

namespace duet::device::jit {
namespace {

// ---- NVRTC, opened at run time

struct Nvrtc {
  void* library = nullptr;
  std::string error;  // why it could not be opened
  int major = 0, minor = 0;
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
};

Nvrtc open_nvrtc() {
  Nvrtc n;
  const std::string soname = "libnvrtc.so." DUET_CUDA_MAJOR;
  for (const std::string& name :
       {soname, std::string(DUET_CUDA_LIBRARY_DIR) + "/" + soname, std::string("libnvrtc.so")}) {
    n.library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (n.library != nullptr) break;
  }
  if (n.library == nullptr) {
    const char* why = ::dlerror();
    n.error = "cannot open " + soname + (why != nullptr ? std::string(": ") + why : "");
    return n;
  }
  bool missing = false;
  const auto symbol = [&](auto& pointer, const char* name) {
    pointer =
        reinterpret_cast<std::remove_reference_t<decltype(pointer)>>(::dlsym(n.library, name));
    if (pointer == nullptr) {
      if (!missing) n.error = std::string(soname) + " lacks " + name;
      missing = true;
    }
  };
  symbol(n.version, "nvrtcVersion");
  symbol(n.create, "nvrtcCreateProgram");
  symbol(n.compile, "nvrtcCompileProgram");
  symbol(n.log_size, "nvrtcGetProgramLogSize");
  symbol(n.log, "nvrtcGetProgramLog");
  symbol(n.cubin_size, "nvrtcGetCUBINSize");
  symbol(n.cubin, "nvrtcGetCUBIN");
  symbol(n.destroy, "nvrtcDestroyProgram");
  symbol(n.error_string, "nvrtcGetErrorString");
  if (missing) {
    ::dlclose(n.library);
    n.library = nullptr;
    return n;
  }
  n.version(&n.major, &n.minor);
  return n;
}

const Nvrtc& nvrtc() {
  static const Nvrtc n = open_nvrtc();
  return n;
}

// ---- driver functions, through the runtime (no link to libcuda)

struct Driver {
  std::string error;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy = nullptr;
  decltype(&::cuGetErrorString) error_string = nullptr;
};

Driver open_driver() {
  Driver d;
  const auto symbol = [&](auto& pointer, const char* name) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t status =
        cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found);
    if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || p == nullptr) {
      if (d.error.empty()) d.error = std::string("the CUDA driver has no ") + name;
      return;
    }
    pointer = reinterpret_cast<std::remove_reference_t<decltype(pointer)>>(p);
  };
  symbol(d.ctx_get_current, "cuCtxGetCurrent");
  symbol(d.module_load_data, "cuModuleLoadData");
  symbol(d.module_get_function, "cuModuleGetFunction");
  symbol(d.module_unload, "cuModuleUnload");
  symbol(d.launch_kernel, "cuLaunchKernel");
  symbol(d.occupancy, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  symbol(d.error_string, "cuGetErrorString");
  return d;
}

const Driver& driver() {
  static const Driver d = open_driver();
  return d;
}

std::string driver_message(CUresult status) {
  const char* text = nullptr;
  if (driver().error_string != nullptr) driver().error_string(status, &text);
  return text != nullptr ? text : "CUDA driver error " + std::to_string(static_cast<int>(status));
}

// ---- caches

struct Loaded {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};

std::mutex cache_mutex;
std::map<std::pair<CUcontext, std::string>, Loaded>& memory_cache() {
  static std::map<std::pair<CUcontext, std::string>, Loaded> cache;
  return cache;
}

// Loads a cubin and finds the kernel; false (module unloaded) when the driver refuses.
bool load(const std::string& cubin, const std::string& kernel, Loaded& out, std::string& why) {
  CUmodule module = nullptr;
  CUresult status = driver().module_load_data(&module, cubin.data());
  if (status != CUDA_SUCCESS) {
    why = "cuModuleLoadData: " + driver_message(status);
    return false;
  }
  CUfunction function = nullptr;
  status = driver().module_get_function(&function, module, kernel.c_str());
  if (status != CUDA_SUCCESS) {
    why = "cuModuleGetFunction(" + kernel + "): " + driver_message(status);
    driver().module_unload(module);
    return false;
  }
  out = {module, function};
  return true;
}

std::string compile(const KernelSource& source, const std::vector<std::string>& options) {
  const Nvrtc& n = nvrtc();
  const std::string text(source.text);
  nvrtcProgram program = nullptr;
  nvrtcResult status = n.create(&program, text.c_str(), source.name.c_str(), 0, nullptr, nullptr);
  if (status != NVRTC_SUCCESS)
    throw std::runtime_error(std::string("nvrtcCreateProgram: ") + n.error_string(status));
  std::vector<const char*> pointers;
  for (const std::string& o : options) pointers.push_back(o.c_str());
  status = n.compile(program, static_cast<int>(pointers.size()), pointers.data());
  std::size_t log_size = 0;
  n.log_size(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) n.log(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (status != NVRTC_SUCCESS) {
    n.destroy(&program);
    throw std::runtime_error("NVRTC could not compile " + source.name + ": " +
                             n.error_string(status) + (log.empty() ? "" : "\n" + log));
  }
  std::size_t size = 0;
  status = n.cubin_size(program, &size);
  std::string cubin(size, '\0');
  if (status == NVRTC_SUCCESS && size > 0) status = n.cubin(program, cubin.data());
  n.destroy(&program);
  if (status != NVRTC_SUCCESS || size == 0)
    throw std::runtime_error(std::string("nvrtcGetCUBIN: ") + n.error_string(status));
  return cubin;
}

}  // namespace

std::string nvrtc_version() {
  const Nvrtc& n = nvrtc();
  if (n.library == nullptr) return n.error;
  return "nvrtc " + std::to_string(n.major) + "." + std::to_string(n.minor);
}

JitFunction get_function(const KernelSource& source, const std::vector<std::string>& options,
                         const std::string& specialisation) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(Clock::now() - started).count();
  };
  if (nvrtc().library == nullptr) throw std::runtime_error(nvrtc().error);
  if (!driver().error.empty()) throw std::runtime_error(driver().error);
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    throw std::runtime_error("cannot read the current GPU's compute capability");
  }
  CUcontext context = nullptr;
  if (driver().ctx_get_current(&context) != CUDA_SUCCESS || context == nullptr)
    throw std::runtime_error("no current CUDA context (cudaSetDevice first)");

  const std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  std::vector<std::string> all_options = {"--gpu-architecture=" + arch, "-std=c++17"};
  all_options.insert(all_options.end(), options.begin(), options.end());
  CacheKey key;
  key.kernel = source.kernel;
  key.specialisation = specialisation;
  key.source_hash = fnv1a64(source.text);
  for (const std::string& o : all_options) key.options += (key.options.empty() ? "" : " ") + o;
  key.arch = arch;
  key.compiler = nvrtc_version();
  const std::string key_text = key.text();

  std::lock_guard lock(cache_mutex);
  JitFunction result;
  const auto found = memory_cache().find({context, key_text});
  if (found != memory_cache().end()) {
    result.function = found->second.function;
    result.origin = "memory";
    result.seconds = seconds();
    return result;
  }
  const std::string directory = cache_directory_from_environment();
  if (!directory.empty()) result.cache_file = directory + "/" + key.file_name();
  Loaded loaded;
  std::string why;
  if (const auto cubin = read_entry(directory, key);
      cubin && load(*cubin, source.kernel, loaded, why)) {
    result.origin = "disk cache";
  } else {
    const std::string fresh = compile(source, all_options);
    if (!load(fresh, source.kernel, loaded, why)) throw std::runtime_error(why);
    write_entry(directory, key, fresh);  // a cache that cannot be written is no error
    result.origin = "compiled";
  }
  memory_cache()[{context, key_text}] = loaded;
  result.function = loaded.function;
  result.seconds = seconds();
  return result;
}

void launch(const JitFunction& f, unsigned blocks, unsigned threads, unsigned shared_bytes,
            void* stream, void* args) {
  void* parameters[] = {args};
  const CUresult status =
      driver().launch_kernel(static_cast<CUfunction>(f.function), blocks, 1, 1, threads, 1, 1,
                             shared_bytes, static_cast<CUstream>(stream), parameters, nullptr);
  if (status != CUDA_SUCCESS) throw std::runtime_error("cuLaunchKernel: " + driver_message(status));
}

int max_active_blocks(const JitFunction& f, unsigned threads, unsigned shared_bytes) {
  int blocks = 0;
  const CUresult status = driver().occupancy(&blocks, static_cast<CUfunction>(f.function),
                                             static_cast<int>(threads), shared_bytes);
  if (status != CUDA_SUCCESS)
    throw std::runtime_error("cuOccupancyMaxActiveBlocksPerMultiprocessor: " +
                             driver_message(status));
  return blocks;
}

void drop_memory_cache() {
  std::lock_guard lock(cache_mutex);
  for (auto& [key, loaded] : memory_cache()) driver().module_unload(loaded.module);
  memory_cache().clear();
}

}  // namespace duet::device::jit
