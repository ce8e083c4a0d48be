// PaPaRa's scoring kernel (128-bit vectors, 8 edges) and traceback DP (4 queries) for sse4.1, in
// namespace duet::simd::papara::sse41. The sources are papara_kernel_impl.hpp and
// papara_traceback_impl.hpp; this file only chooses the width. CMake compiles it, and nothing
// else, with the sse41 flags.
#if !defined(__SSE4_1__)
#error "papara_sse41.cpp must be compiled with the sse41 flags (see src/host_simd/CMakeLists.txt)"
#endif

#define DUET_PAPARA_NAMESPACE sse41
#define DUET_PAPARA_VECTOR_BITS 128
#include "host_simd/papara/papara_kernel_impl.hpp"
#include "host_simd/papara/papara_traceback_impl.hpp"
