// GpuResidentStore (resident_store.hpp): its life and its figures; the engines use its
// state (resident_store.cuh) directly.
#include "device/resident_store.cuh"

namespace duet::device {

GpuResidentStore::GpuResidentStore(int device, std::uint64_t budget_bytes)
    : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  impl_->budget = budget_bytes;
}

GpuResidentStore::~GpuResidentStore() {
  if (impl_->chunks.empty()) return;  // CUDA never touched
  cudaSetDevice(impl_->device);
  for (void* chunk : impl_->chunks) cudaFree(chunk);  // no throw from a destructor
}

int GpuResidentStore::device() const {
  return impl_->device;
}
std::uint64_t GpuResidentStore::budget_bytes() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->budget;
}
std::uint64_t GpuResidentStore::kept_bytes() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->kept;
}
std::size_t GpuResidentStore::kept_blocks() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->entries.size();
}

}  // namespace duet::device
