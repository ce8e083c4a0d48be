// The inter-pair pair-HMM kernel for avx2 (256-bit vectors), in namespace
// duet::simd::pairhmm::avx2. The source is pairhmm_kernel_impl.hpp; this file only
// chooses the width. CMake compiles it, and nothing else, with the avx2 flags.
#if !defined(__AVX2__)
#error "pairhmm_avx2.cpp must be compiled with the avx2 flags (see src/host_simd/CMakeLists.txt)"
#endif

#define DUET_PAIRHMM_NAMESPACE avx2
#define DUET_PAIRHMM_VECTOR_BITS 256
#include "host_simd/pairhmm/pairhmm_kernel_impl.hpp"
