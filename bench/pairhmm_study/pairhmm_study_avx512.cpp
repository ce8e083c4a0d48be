// The pair-HMM study kernels for avx512 (512-bit vectors), in namespace
// duet::simd::pairhmm::avx512. The source is pairhmm_study_kernel_impl.hpp; this file only
// chooses the width. CMake compiles it, and nothing else, with the avx512 flags.
#if !defined(__AVX512BW__)
#error \
    "pairhmm_study_avx512.cpp must be compiled with the avx512 flags (see bench/pairhmm_study/CMakeLists.txt)"
#endif

#define DUET_PAIRHMM_NAMESPACE avx512
#define DUET_PAIRHMM_VECTOR_BITS 512
#include "pairhmm_study/pairhmm_study_kernel_impl.hpp"
