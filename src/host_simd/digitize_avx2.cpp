// The AVX2 digitizer (see digitize.hpp), compiled with -mavx2 and called only when the
// CPU has AVX2. 32 bytes at a time: for each high nibble that has residues, a 16-entry
// shuffle indexed by the low nibble gives the codes of the bytes of that nibble, blended
// in where the high nibble matches; bytes of no listed nibble stay kBad.
#include <simde/x86/avx2.h>

#include "host_simd/digitize.hpp"

namespace duet::simd {

bool digitize_line_avx2(const DigitizeTable& table, const char* line, std::size_t n, Residue* out) {
  const simde__m256i low_bits = simde_mm256_set1_epi8(0x0f);
  unsigned flagged = 0;  // bytes whose entry has the high bit set (kSkip or kBad)
  for (std::size_t i = 0; i < n; i += 32) {
    const simde__m256i bytes =
        simde_mm256_loadu_si256(reinterpret_cast<const simde__m256i*>(line + i));
    const simde__m256i low = simde_mm256_and_si256(bytes, low_bits);
    // Shifting 16-bit lanes moves bits of the neighbouring byte in; the mask drops them.
    const simde__m256i high = simde_mm256_and_si256(simde_mm256_srli_epi16(bytes, 4), low_bits);
    simde__m256i codes = simde_mm256_set1_epi8(static_cast<char>(DigitizeTable::kBad));
    for (int k = 0; k < table.nibbles; ++k) {
      const simde__m256i entries = simde_mm256_load_si256(reinterpret_cast<const simde__m256i*>(
          table.by_nibble[static_cast<std::size_t>(k)].data()));
      const simde__m256i match = simde_mm256_cmpeq_epi8(
          high, simde_mm256_set1_epi8(
                    static_cast<char>(table.nibble_value[static_cast<std::size_t>(k)])));
      codes = simde_mm256_blendv_epi8(codes, simde_mm256_shuffle_epi8(entries, low), match);
    }
    simde_mm256_storeu_si256(reinterpret_cast<simde__m256i*>(out + i), codes);
    auto high_bits = static_cast<unsigned>(simde_mm256_movemask_epi8(codes));
    if (n - i < 32) high_bits &= (1u << (n - i)) - 1;  // only the line's own bytes count
    flagged |= high_bits;
  }
  return flagged == 0;
}

}  // namespace duet::simd
