// The canonical Forward on the GPU (core/hmmsearch/forward_canonical.hpp, bit for bit): internal to
// src/device, used by HmmGpuEngine (hmm_gpu.cu). Four threads per target, one per SIMD
// lane of the 4-lane striped parser, eight targets per warp, longest targets first from an
// atomic counter. The kernel computes every float of forward_canonical and records the xE
// of each rescaled row and the final C * move; the host takes the logarithms
// (canonical_forward_finish). The design and the arithmetic are described in
// hmm_canonical_gpu.cu; the contract in hmm_gpu.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/profile.hpp"

namespace duet::device::detail {

class CanonicalForwardGpu {
 public:
  static constexpr int kSlots = 2;
  // Uploads the model (CanonicalDeviceLayout) to the current device.
  CanonicalForwardGpu(const ForwardScores& fwd, int multiprocessors,
                      std::size_t shared_per_block_optin);
  // Uploads another model; the slots' buffers stay (the slots must be idle).
  void set_model(const ForwardScores& fwd);
  ~CanonicalForwardGpu();
  CanonicalForwardGpu(const CanonicalForwardGpu&) = delete;
  CanonicalForwardGpu& operator=(const CanonicalForwardGpu&) = delete;

  // Starts the kernel on stream `st` for the targets `which` (indices into the uploaded
  // batch: per-target residue pointers and offsets on the device, lengths on the host); `start` and
  // `done` are recorded around the kernel alone.
  void submit(int slot, cudaStream_t st, const std::uint8_t* const* d_target_residues,
              const std::int64_t* d_offsets, const std::vector<int>& lengths, const int* which,
              int n, cudaEvent_t start, cudaEvent_t done);
  // After the stream has been synchronised: one canonical score (nats) per entry of
  // `which`, finished on the host; `host_residues` (per target of the batch, its residues
  // on the host) and `lengths` serve the targets rescaled more than
  // kCanonicalGpuRescalings times (computed on the CPU).
  const std::vector<float>& scores(int slot, const std::uint8_t* const* host_residues,
                                   const std::vector<int>& lengths);
  // Targets of the slot's last batch that the CPU computed.
  std::int64_t cpu_targets(int slot) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace duet::device::detail
