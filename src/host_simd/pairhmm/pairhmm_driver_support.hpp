// What the drivers of the pair-HMM SIMD kernels share (pairhmm_simd.cpp, and the study
// kernels' in bench/pairhmm_study): scratch memory, the floating-point mode a kernel runs
// in, and the check of the base codes the kernels' emission keys cover. Compiled without
// ISA flags.
#pragma once

#include <simde/x86/sse.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>

namespace duet::simd::pairhmm {

// 64-byte aligned float scratch that only grows.
class AlignedFloats {
 public:
  float* get(std::size_t n) {
    if (n > size_) {
      data_.reset(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64)));
      if (!data_) throw std::bad_alloc();
      size_ = n;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  std::size_t size_ = 0;
};

// The kernels' emission keys cover the four-bit codes of BaseCode (what the readers make):
// `codes`, the codes of a call or-ed together, must stay below 16.
inline void require_base_codes(unsigned codes) {
  if (codes > 15)
    throw std::invalid_argument("pair-HMM SIMD kernels: a base code above 15 (not a BaseCode)");
}

// Flush to zero (MXCSR bit 15) while a kernel runs, as the canonical computation defines;
// the caller's mode is restored after.
class FlushToZero {
 public:
  FlushToZero() : saved_(simde_mm_getcsr()) { simde_mm_setcsr(saved_ | 0x8000u); }
  ~FlushToZero() { simde_mm_setcsr(saved_); }
  FlushToZero(const FlushToZero&) = delete;
  FlushToZero& operator=(const FlushToZero&) = delete;

 private:
  unsigned saved_;
};

}  // namespace duet::simd::pairhmm
