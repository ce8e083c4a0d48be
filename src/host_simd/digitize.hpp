// Digitizing one FASTA sequence line through a 256-entry table, for the FASTA block reader
// (io/block_reader.hpp).
//
// The table maps every byte to a residue code (< 0x80), to kSkip (white space that a
// sequence line may hold) or to kBad (anything else), by the grammar's rules
// (core/fasta_grammar.hpp). A digitizer
// writes the table entry of each of the n bytes of `line` to `out` and returns true when
// all were residue codes; otherwise the caller redoes the line byte by byte (dropping
// white space, reporting the bad byte). Both `line` and `out` must have 32 bytes of room
// past n: the vector version reads and writes whole 32-byte vectors (what it writes past
// n is garbage).
//
// Two versions, one result: scalar (any x86-64) and AVX2 (16-entry shuffles, one per
// high nibble that has residues, blended by comparing the high nibble); the dispatcher
// picks AVX2 when the CPU has it (cpu_features.hpp). Tests compare them on every byte value.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/alphabet.hpp"

namespace duet::simd {

struct DigitizeTable {
  static constexpr std::uint8_t kSkip = 0x80;
  static constexpr std::uint8_t kBad = 0xff;

  explicit DigitizeTable(const Alphabet& alphabet);

  std::array<std::uint8_t, 256> codes{};
  // The table split by high nibble, for the vector version: only the nibbles that hold
  // an entry other than kBad (bytes of any other nibble are kBad).
  int nibbles = 0;
  alignas(32) std::array<std::array<std::uint8_t, 32>, 16> by_nibble{};  // each 16 entries, twice
  std::array<std::uint8_t, 16> nibble_value{};
};

using DigitizeLine = bool (*)(const DigitizeTable& table, const char* line, std::size_t n,
                              Residue* out);

bool digitize_line_scalar(const DigitizeTable& table, const char* line, std::size_t n,
                          Residue* out);
bool digitize_line_avx2(const DigitizeTable& table, const char* line, std::size_t n, Residue* out);

// The fastest version this CPU runs; `allow_simd` false gives the scalar one.
DigitizeLine best_digitizer(bool allow_simd = true);

}  // namespace duet::simd
