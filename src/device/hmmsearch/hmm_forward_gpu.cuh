// The float Forward parser on the GPU: internal to src/device, used by
// HmmGpuEngine (hmm_gpu.cu). One warp per target, rows in order, longest targets first
// from an atomic counter. The design and the arithmetic are described in
// hmm_forward_gpu.cu; the contract (tolerance against forward_parser_reference) in
// hmm_gpu.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/hmmsearch/profile.hpp"

namespace duet::device::detail {

class ForwardGpu {
 public:
  static constexpr int kSlots = 2;
  // Uploads the model (interleaved per-lane layout) to the current device.
  ForwardGpu(const ForwardScores& fwd, int multiprocessors, std::size_t shared_per_block_optin);
  ~ForwardGpu();
  ForwardGpu(const ForwardGpu&) = delete;
  ForwardGpu& operator=(const ForwardGpu&) = delete;

  // Starts the kernel on stream `st` for the targets `which` (indices into the uploaded
  // batch: per-target residue pointers and offsets on the device, lengths on the host); `start` and
  // `done` are recorded around the kernel alone.
  void submit(int slot, cudaStream_t st, const std::uint8_t* const* d_target_residues,
              const std::int64_t* d_offsets, const std::vector<int>& lengths, const int* which,
              int n, cudaEvent_t start, cudaEvent_t done);
  // After the stream has been synchronised: one raw score (nats) per entry of `which`.
  const std::vector<float>& scores(int slot);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace duet::device::detail
