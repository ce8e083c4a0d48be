// The filter kernels for AVX-512BW (512-bit vectors), in namespace duet::simd::avx512.
// The source is kernels_impl.hpp; this file only chooses the width. CMake compiles it,
// and nothing else, with the AVX-512BW flags.
#if !defined(__AVX512BW__)
#error \
    "kernels_avx512.cpp must be compiled with the AVX-512BW flags (see src/host_simd/CMakeLists.txt)"
#endif

#define DUET_SIMD_NAMESPACE avx512
#define DUET_SIMD_VECTOR_BITS 512
#include "host_simd/hmmsearch/kernels_impl.hpp"
