// CUDA error checks and the owners of CUDA objects (device and pinned buffers, streams,
// events), shared by every GPU engine (hmmsearch's, pairhmm's): one definition of each.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace duet::device::detail {

// Throws std::runtime_error naming the call when a CUDA call failed.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(status));
  }
}
inline void check_launch(const char* kernel) {
  check(cudaGetLastError(), kernel);
}

enum class BufferKind { device = 0, pinned = 1 };
// Counts an allocation of a buffer below that began at `started` (gpu_buffer_allocations).
void note_buffer_allocation(BufferKind kind, std::chrono::steady_clock::time_point started);

// Whether DeviceBuffer::reserve given a stream allocates in stream order (the default);
// DUET_DEBUG_SYNC_BUFFERS=1 makes it allocate as without a stream, for benchmarks.
bool stream_ordered_buffers();
// Lets the device's default memory pool (cudaMallocAsync's) keep the memory freed to it
// for later allocations instead of giving it back at each synchronisation. Once per device.
void keep_freed_device_memory(int device);

// The capacity a buffer below takes when it must hold n elements: batches vary in size,
// and a regrowth without a stream is a cudaFree or cudaFreeHost, which waits for the whole
// device (other slots' and engines' work included). Up to 64 MiB twice what is asked,
// larger a quarter more. (On the H100 machine, 1,000 models against 20 M residues with GPU
// lines: 685 allocations in 1.36 s of the feeders' time against 713 in 1.45 s at a quarter
// more; about 490 are first allocations, most others jumps of more than twice. With the
// slots' buffers in stream order: 299 device allocations in 0.05 s, 179 pinned in 0.47 s;
// bench/RESULTS.md, 2026-12-07.)
template <class T>
std::size_t grown_capacity(std::size_t n) {
  constexpr std::size_t kDoubleUpTo = (std::size_t{64} << 20) / sizeof(T);
  return std::max<std::size_t>(n <= kDoubleUpTo ? 2 * n : n + n / 4, 1);
}

// Device memory of at least n elements; reserve() grows it (contents are not kept).
// Given a stream, reserve() frees and allocates in that stream's order (cudaFreeAsync,
// cudaMallocAsync: no wait for the device), and the buffer must then be used on that
// stream, or after it. Without one, cudaMalloc.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void reserve(std::size_t n, cudaStream_t stream = nullptr) {
    if (n <= capacity_) return;
    const auto started = std::chrono::steady_clock::now();
    const std::size_t grown = grown_capacity<T>(n);
    if (stream != nullptr && stream_ordered_buffers()) {
      if (data_ != nullptr) {
        check(in_stream_order_ ? cudaFreeAsync(data_, stream) : cudaFree(data_), "buffer free");
      }
      data_ = nullptr;
      capacity_ = 0;
      check(cudaMallocAsync(reinterpret_cast<void**>(&data_), grown * sizeof(T), stream),
            "cudaMallocAsync");
      in_stream_order_ = true;
    } else {
      release();
      check(cudaMalloc(reinterpret_cast<void**>(&data_), grown * sizeof(T)), "cudaMalloc");
      in_stream_order_ = false;
    }
    capacity_ = grown;
    note_buffer_allocation(BufferKind::device, started);
  }
  T* get() const { return data_; }
  std::size_t capacity() const { return capacity_; }

 private:
  // cudaFree waits for the device, so it also frees memory allocated in stream order.
  void release() {
    if (data_ != nullptr) cudaFree(data_);  // no throw from a destructor path
    data_ = nullptr;
    capacity_ = 0;
  }
  T* data_ = nullptr;
  std::size_t capacity_ = 0;
  bool in_stream_order_ = false;
};

// Pinned host memory (page-locked, for asynchronous copies); grows as DeviceBuffer.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { release(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    const auto started = std::chrono::steady_clock::now();
    release();
    const std::size_t grown = grown_capacity<T>(n);
    check(cudaMallocHost(reinterpret_cast<void**>(&data_), grown * sizeof(T)), "cudaMallocHost");
    capacity_ = grown;
    note_buffer_allocation(BufferKind::pinned, started);
  }
  T* get() const { return data_; }
  T& operator[](std::size_t i) const { return data_[i]; }
  std::size_t capacity() const { return capacity_; }

 private:
  void release() {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  T* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// A non-blocking stream on the current device; under an SM limit (set_gpu_sm_limit in
// gpu_info.hpp), one of the device's green context, whose kernels run on its share of the
// SMs. Throws std::runtime_error when the stream or the share cannot be made.
cudaStream_t make_stream();

class Stream {
 public:
  Stream() : s_(make_stream()) {}
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Events wait with cudaEventBlockingSync: the waiting thread sleeps.
class Event {
 public:
  explicit Event(bool timing = true) {
    check(cudaEventCreateWithFlags(&e_,
                                   cudaEventBlockingSync | (timing ? 0u : cudaEventDisableTiming)),
          "cudaEventCreate");
  }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t s) { check(cudaEventRecord(e_, s), "cudaEventRecord"); }
  cudaEvent_t get() const { return e_; }
  float ms_since(const Event& start) const {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.e_, e_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace duet::device::detail
