// PaPaRa's scoring kernel (256-bit vectors, 16 edges) and traceback DP (8 queries) for avx2, in
// namespace duet::simd::papara::avx2. The sources are papara_kernel_impl.hpp and
// papara_traceback_impl.hpp; this file only chooses the width. CMake compiles it, and nothing
// else, with the avx2 flags.
#if !defined(__AVX2__)
#error "papara_avx2.cpp must be compiled with the avx2 flags (see src/host_simd/CMakeLists.txt)"
#endif

#define DUET_PAPARA_NAMESPACE avx2
#define DUET_PAPARA_VECTOR_BITS 256
#include "host_simd/papara/papara_kernel_impl.hpp"
#include "host_simd/papara/papara_traceback_impl.hpp"
