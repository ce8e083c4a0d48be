// The filter kernels for AVX2 (256-bit vectors), in namespace duet::simd::avx2.
// The source is kernels_impl.hpp; this file only chooses the width. CMake compiles it,
// and nothing else, with the AVX2 flags.
#if !defined(__AVX2__)
#error "kernels_avx2.cpp must be compiled with the AVX2 flags (see src/host_simd/CMakeLists.txt)"
#endif

#define DUET_SIMD_NAMESPACE avx2
#define DUET_SIMD_VECTOR_BITS 256
#include "host_simd/hmmsearch/kernels_impl.hpp"
