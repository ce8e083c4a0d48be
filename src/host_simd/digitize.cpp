// DigitizeTable, the scalar digitizer and the dispatcher; see digitize.hpp. The AVX2
// version is in digitize_avx2.cpp (compiled with -mavx2).
#include "host_simd/digitize.hpp"

#include "core/fasta_grammar.hpp"
#include "host_simd/cpu_features.hpp"

namespace duet::simd {

DigitizeTable::DigitizeTable(const Alphabet& alphabet) {
  for (int c = 0; c < 256; ++c) {
    const char byte = static_cast<char>(c);
    const Residue x = fasta::residue_code(alphabet, byte);
    codes[static_cast<std::size_t>(c)] = fasta::is_dropped(byte)   ? kSkip
                                         : x == Alphabet::kIllegal ? kBad
                                                                   : x;
  }
  for (int high = 0; high < 16; ++high) {
    bool used = false;
    for (int low = 0; low < 16; ++low)
      used = used || codes[static_cast<std::size_t>(16 * high + low)] != kBad;
    if (!used) continue;
    auto& lanes = by_nibble[static_cast<std::size_t>(nibbles)];
    for (int low = 0; low < 32; ++low)
      lanes[static_cast<std::size_t>(low)] = codes[static_cast<std::size_t>(16 * high + low % 16)];
    nibble_value[static_cast<std::size_t>(nibbles)] = static_cast<std::uint8_t>(high);
    ++nibbles;
  }
}

bool digitize_line_scalar(const DigitizeTable& table, const char* line, std::size_t n,
                          Residue* out) {
  std::uint8_t seen = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t x = table.codes[static_cast<unsigned char>(line[i])];
    out[i] = x;
    seen |= x;
  }
  return seen < DigitizeTable::kSkip;
}

DigitizeLine best_digitizer(bool allow_simd) {
  if (allow_simd && cpu_supports(Isa::avx2)) return digitize_line_avx2;
  return digitize_line_scalar;
}

}  // namespace duet::simd
