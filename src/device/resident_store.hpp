// GpuResidentStore: database blocks kept in a GPU's memory across the passes of a run,
// for any engine that uploads blocks. Its state (Impl) is in resident_store.cuh, for the
// engines' CUDA code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace duet::device {

// Database blocks kept on one GPU across engines (query models): a block's residues stay
// in device memory after its first upload, keyed by its block index, within a budget;
// an engine given the store reads a kept block's targets from there instead of copying
// them into pinned memory and uploading them again. Memory is taken in chunks (up to
// 256 MiB) as blocks arrive and never given back before the store ends; a block that
// does not fit in what is left of the budget is uploaded with its batch, as without a
// store. Nothing is evicted. Safe for several engines and feeder threads at once (a
// mutex guards the map; a block is served only once its upload has completed on the
// device, which an engine's stream waits for with an event).
// `budget_bytes` 0 means half the device's free memory when the first block arrives (the
// engine's own buffers for a batch exist by then). Nothing touches CUDA before that.
// Must outlive every engine that uses it.
class GpuResidentStore {
 public:
  GpuResidentStore(int device, std::uint64_t budget_bytes);
  ~GpuResidentStore();
  GpuResidentStore(const GpuResidentStore&) = delete;
  GpuResidentStore& operator=(const GpuResidentStore&) = delete;
  int device() const;
  std::uint64_t budget_bytes() const;  // 0 until resolved (auto) at the first block
  std::uint64_t kept_bytes() const;    // residues of the kept blocks
  std::size_t kept_blocks() const;

  // The store's state, which an engine's CUDA code reads and fills (resident_store.cuh
  // defines it).
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace duet::device
