// CUDA error checks and owning buffers shared by the hmmsearch GPU files (hmm_gpu.cu, the
// Forward filter and the canonical Forward): one definition of each.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
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

// Device memory of at least n elements; reserve() grows it (contents are not kept).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    release();
    // A quarter more than asked, as PinnedBuffer: batches vary in size, and every regrowth
    // is a cudaFree, which waits for the whole device (the other slot's work included).
    const std::size_t grown = std::max<std::size_t>(n + n / 4, 1);
    check(cudaMalloc(reinterpret_cast<void**>(&data_), grown * sizeof(T)), "cudaMalloc");
    capacity_ = grown;
  }
  T* get() const { return data_; }
  std::size_t capacity() const { return capacity_; }

 private:
  void release() {
    if (data_ != nullptr) cudaFree(data_);  // no throw from a destructor path
    data_ = nullptr;
    capacity_ = 0;
  }
  T* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// Pinned host memory (page-locked, for asynchronous copies); grows by a quarter more than
// asked so that slowly growing batches do not reallocate each time.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { release(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    release();
    const std::size_t grown = std::max<std::size_t>(n + n / 4, 1);
    check(cudaMallocHost(reinterpret_cast<void**>(&data_), grown * sizeof(T)), "cudaMallocHost");
    capacity_ = grown;
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

}  // namespace duet::device::detail
