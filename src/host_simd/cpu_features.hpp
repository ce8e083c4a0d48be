// The instruction sets the CPU kernels are built for, and the one query of what this CPU
// has: every kernel family (hmmsearch's, pairhmm's) and `duet info` ask here.
#pragma once

#include <cstdint>
#include <string_view>

namespace duet::simd {

enum class Isa : std::uint8_t { scalar, sse41, avx2, avx512 };

// "scalar", "sse4.1", "avx2", "avx512".
inline std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::sse41:
      return "sse4.1";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "?";
}

// Whether this CPU runs the kernels of `isa` (AVX-512: F and BW).
inline bool cpu_supports(Isa isa) {
  __builtin_cpu_init();  // harmless when already done; needed before static constructors
  switch (isa) {
    case Isa::scalar:
      return true;
    case Isa::sse41:
      return __builtin_cpu_supports("sse4.1");
    case Isa::avx2:
      return __builtin_cpu_supports("avx2");
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  }
  return false;
}

}  // namespace duet::simd
