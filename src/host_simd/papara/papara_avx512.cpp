// PaPaRa's scoring kernel for avx512 (512-bit vectors, 32 edges), in namespace
// duet::simd::papara::avx512. The source is papara_kernel_impl.hpp; this file only chooses the
// width. CMake compiles it, and nothing else, with the avx512 flags.
#if !defined(__AVX512BW__)
#error "papara_avx512.cpp must be compiled with the avx512 flags (see src/host_simd/CMakeLists.txt)"
#endif

#define DUET_PAPARA_NAMESPACE avx512
#define DUET_PAPARA_VECTOR_BITS 512
#include "host_simd/papara/papara_kernel_impl.hpp"
