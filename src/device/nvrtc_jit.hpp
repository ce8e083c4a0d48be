// Run-time specialisation of CUDA kernels with NVRTC, behind a plain C++ header (no CUDA
// types): a kernel's source text, compiled with given options (a -D per specialised
// constant) for the current GPU's architecture into a cubin, loaded into the device's
// primary context with the driver API, and launched on a runtime stream.
//
// Caches: in memory, one loaded kernel per (context, cache key) for the life of the
// process; on disk (jit_cache.hpp), one cubin per key, so a later process loads instead of
// compiling. A disk entry that is not intact, or that the driver refuses to load, is
// compiled again and rewritten, never used.
//
// Neither NVRTC nor the driver library is linked: NVRTC is opened at run time
// (libnvrtc.so.<CUDA major> from the loader's path, else from the toolkit's library
// folder of the build), and the driver functions come from the CUDA runtime
// (cudaGetDriverEntryPointByVersion), so the program starts and runs its static kernels on
// machines without NVRTC. Every failure (no NVRTC, a compile error, a load error) throws
// std::runtime_error with a message that says which and why; callers fall back to their
// static kernels.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace duet::device::jit {

struct KernelSource {
  std::string_view text;  // the whole translation unit (self-contained: no #include)
  std::string name;       // its file name, for NVRTC's messages
  std::string kernel;     // the extern "C" entry point
};

// A kernel loaded into the primary context of the device it was asked for on.
struct JitFunction {
  void* function = nullptr;  // CUfunction, valid for the life of the process
  std::string origin;        // "compiled", "disk cache" or "memory"
  double seconds = 0;        // this request: compile and load, or read and load
  std::string cache_file;    // the disk entry ("" when the disk cache is off)
};

// The kernel for the current CUDA device (cudaSetDevice made its primary context current),
// compiled with `options` (e.g. {"-DDUET_JIT_M=260"}) for its architecture (sm_XY).
// `specialisation` names it in the cache file (e.g. "M260"). The disk cache folder is
// cache_directory_from_environment() (jit_cache.hpp) at the time of the call. Thread-safe.
JitFunction get_function(const KernelSource& source, const std::vector<std::string>& options,
                         const std::string& specialisation);

// Launches `f` on `stream` (a cudaStream_t) with a single parameter: the struct at `args`.
// Throws std::runtime_error when the launch fails.
void launch(const JitFunction& f, unsigned blocks, unsigned threads, unsigned shared_bytes,
            void* stream, void* args);

// Blocks of `threads` threads (and `shared_bytes` of dynamic shared memory) of `f` that
// fit on one multiprocessor at once. Throws std::runtime_error when the driver fails.
int max_active_blocks(const JitFunction& f, unsigned threads, unsigned shared_bytes);

// "nvrtc 13.0", or why NVRTC could not be opened.
std::string nvrtc_version();

// Forgets the memory cache (unloads its modules), so that the next get_function reads the
// disk cache as a new process would. Only while no kernel it returned is in use (tests).
void drop_memory_cache();

}  // namespace duet::device::jit
