// The list of targets a Forward kernel runs on, shared by the Forward filter
// (hmm_forward_gpu.cu) and the canonical Forward (hmm_canonical_gpu.cu): indices into the
// slot's uploaded targets, each one's N/C/J loop and move scores, and the order longest
// first (the kernels take targets in that order from a counter).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "core/hmmsearch/profile.hpp"
#include "device/cuda_raii.cuh"
#include "device/hmmsearch/by_length.hpp"
#include "device/hmmsearch/target_order.hpp"

namespace duet::device::detail {

// ForwardScores::ncj by target length, computed once per length (by_length.hpp).
class NcjByLength {
 public:
  explicit NcjByLength(const ForwardScores& fwd)
      : by_length_([&fwd](int L) { return fwd.ncj(L); }) {}
  ForwardScores::Length operator()(int L) { return by_length_(L); }

 private:
  ByLength<ForwardScores::Length> by_length_;
};

// One slot's target list, staged in pinned memory and uploaded on the slot's stream.
class ForwardTargetList {
 public:
  // Stages which[0..n) with their N/C/J scores and the order longest first, queues the
  // uploads on `st` and zeroes the counter. The pinned copies stay valid until the next
  // stage() (the uploads read them asynchronously).
  void stage(NcjByLength& ncj, const std::vector<int>& lengths, const int* which, int n,
             cudaStream_t st) {
    list_.reserve(n + 1);
    order_.reserve(n + 1);
    ncj_.reserve(n + 1);
    for (int i = 0; i < n; ++i) {
      list_[i] = which[i];
      const ForwardScores::Length x = ncj(lengths[which[i]]);
      ncj_[i] = float2{x.loop, x.move};
    }
    order_longest_first(
        n, order_.get(), [&](int i) { return lengths[which[i]]; }, counts_);
    d_list_.reserve(n + 1);
    d_order_.reserve(n + 1);
    d_ncj_.reserve(n + 1);
    d_next_.reserve(1);
    if (n == 0) return;
    const auto bytes = [n](auto* p) { return static_cast<std::size_t>(n) * sizeof(*p); };
    check(
        cudaMemcpyAsync(d_list_.get(), list_.get(), bytes(list_.get()), cudaMemcpyHostToDevice, st),
        "H2D Forward target list");
    check(cudaMemcpyAsync(d_order_.get(), order_.get(), bytes(order_.get()), cudaMemcpyHostToDevice,
                          st),
          "H2D Forward target order");
    check(cudaMemcpyAsync(d_ncj_.get(), ncj_.get(), bytes(ncj_.get()), cudaMemcpyHostToDevice, st),
          "H2D Forward N/C/J scores");
    check(cudaMemsetAsync(d_next_.get(), 0, sizeof(int), st), "cudaMemsetAsync Forward counter");
  }
  const int* list() const { return d_list_.get(); }
  const int* order() const { return d_order_.get(); }
  const float2* ncj() const { return d_ncj_.get(); }
  int* next() const { return d_next_.get(); }

 private:
  PinnedBuffer<int> list_, order_;
  std::vector<std::int64_t> counts_;  // order_longest_first's scratch
  PinnedBuffer<float2> ncj_;
  DeviceBuffer<int> d_list_, d_order_, d_next_;
  DeviceBuffer<float2> d_ncj_;
};

}  // namespace duet::device::detail
