// The state of a GpuResidentStore (resident_store.hpp), for the CUDA code of the engines
// that read kept blocks from it and keep new ones in it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "device/cuda_raii.cuh"
#include "device/resident_store.hpp"

namespace duet::device {

struct GpuResidentStore::Impl {
  // Device memory is taken in chunks of this size (or a block's size, if larger).
  static constexpr std::uint64_t kChunkBytes = std::uint64_t{256} << 20;
  // Bytes after each kept block, as after a batch's residues in the slot buffers.
  static constexpr std::uint64_t kPadding = 16;
  int device = 0;
  std::uint64_t budget = 0;  // 0: half the free memory, resolved at the first block
  mutable std::mutex mutex;  // guards everything below
  std::vector<void*> chunks;
  std::uint8_t* chunk_free = nullptr;
  std::uint64_t chunk_left = 0, allocated = 0, kept = 0;
  struct Entry {
    std::int64_t first_sequence = 0;
    std::size_t targets = 0;
    std::int64_t residues = 0;
    const std::uint8_t* data = nullptr;
    bool ready = false;  // its upload has completed (the uploading slot has synchronised)
  };
  std::unordered_map<std::int64_t, Entry> entries;  // by block index

  // Room for `bytes` on the device (the caller holds the mutex, the device is current);
  // nullptr when the budget is spent or the device has no more memory.
  std::uint8_t* take(std::uint64_t bytes) {
    if (budget == 0) {
      std::size_t free = 0, total = 0;
      detail::check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
      budget = std::max<std::uint64_t>(free / 2, 1);
    }
    if (bytes > chunk_left) {
      if (allocated >= budget || bytes > budget - allocated) return nullptr;
      const std::uint64_t size = std::min(budget - allocated, std::max(bytes, kChunkBytes));
      void* chunk = nullptr;
      if (cudaMalloc(&chunk, size) != cudaSuccess) {
        cudaGetLastError();  // out of memory: keep what is kept, take no more
        budget = allocated;
        return nullptr;
      }
      chunks.push_back(chunk);
      chunk_free = static_cast<std::uint8_t*>(chunk);
      chunk_left = size;
      allocated += size;
    }
    std::uint8_t* at = chunk_free;
    chunk_free += bytes;
    chunk_left -= bytes;
    kept += bytes - kPadding;
    return at;
  }
};

}  // namespace duet::device
