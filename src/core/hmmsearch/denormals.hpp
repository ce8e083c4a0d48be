// The denormal mode of the float DPs in probability space (the canonical Forward, domain
// definition): denormal results flushed to zero and denormal inputs read as zero (MXCSR
// FTZ and DAZ), as HMMER runs its SIMD code, while an object lives; the caller's mode after.
// Besides being HMMER's arithmetic, it keeps the DPs fast: tiny probabilities in
// denormal range cost some CPUs a hundred times a normal operation.
#pragma once

#if !defined(__SSE__)
#error "the denormal mode is set in the SSE control register (MXCSR): x86-64 only"
#endif
#include <xmmintrin.h>

namespace duet {

class FlushDenormals {
 public:
  FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
  ~FlushDenormals() { _mm_setcsr(saved_); }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_;
};

}  // namespace duet
