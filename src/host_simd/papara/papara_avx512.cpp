// PaPaRa's scoring kernel (512-bit vectors, 32 edges) and traceback DP (16 queries) for avx512, in
// namespace duet::simd::papara::avx512. The sources are papara_kernel_impl.hpp and
// papara_traceback_impl.hpp; this file only chooses the width. CMake compiles it, and nothing
// else, with the avx512 flags.
#if !defined(__AVX512BW__)
#error "papara_avx512.cpp must be compiled with the avx512 flags (see src/host_simd/CMakeLists.txt)"
#endif

#define DUET_PAPARA_NAMESPACE avx512
#define DUET_PAPARA_VECTOR_BITS 512
#include "host_simd/papara/papara_kernel_impl.hpp"
#include "host_simd/papara/papara_traceback_impl.hpp"
