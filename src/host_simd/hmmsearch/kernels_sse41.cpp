// The filter kernels for SSE4.1 (128-bit vectors), in namespace duet::simd::sse41.
// The source is kernels_impl.hpp; this file only chooses the width. CMake compiles it,
// and nothing else, with the SSE4.1 flags.
#if !defined(__SSE4_1__)
#error "kernels_sse41.cpp must be compiled with the SSE4.1 flags (see src/host_simd/CMakeLists.txt)"
#endif

#define DUET_SIMD_NAMESPACE sse41
#define DUET_SIMD_VECTOR_BITS 128
#include "host_simd/hmmsearch/kernels_impl.hpp"
