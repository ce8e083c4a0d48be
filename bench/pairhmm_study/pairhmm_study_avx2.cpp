// The pair-HMM study kernels for avx2 (256-bit vectors), in namespace
// duet::simd::pairhmm::avx2. The source is pairhmm_study_kernel_impl.hpp; this file only
// chooses the width. CMake compiles it, and nothing else, with the avx2 flags.
#if !defined(__AVX2__)
#error \
    "pairhmm_study_avx2.cpp must be compiled with the avx2 flags (see bench/pairhmm_study/CMakeLists.txt)"
#endif

#define DUET_PAIRHMM_NAMESPACE avx2
#define DUET_PAIRHMM_VECTOR_BITS 256
#include "pairhmm_study/pairhmm_study_kernel_impl.hpp"
