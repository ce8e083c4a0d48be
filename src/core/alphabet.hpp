// Biological alphabets with HMMER's (Easel's) digital codes.
//
// Codes 0..K-1 are the canonical residues, K is the gap, K+1..Kp-4 are degenerate
// residues, Kp-3 is "any" (X or N), Kp-2 the nonresidue '*', Kp-1 the missing-data '~'.
// Amino: "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~" (K=20, Kp=29); DNA: "ACGT-RYMKSWHBVDN*~" (K=4, Kp=18).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace duet {

using Residue = std::uint8_t;

enum class AlphabetType { amino, dna };

class Alphabet {
 public:
  static constexpr Residue kIllegal = 255;  // not a symbol of this alphabet

  static const Alphabet& amino();
  static const Alphabet& dna();
  static const Alphabet& of(AlphabetType type) { return type == AlphabetType::amino ? amino() : dna(); }

  AlphabetType type() const { return type_; }
  std::string_view name() const { return type_ == AlphabetType::amino ? "amino" : "DNA"; }
  int K() const { return K_; }    // canonical residues
  int Kp() const { return Kp_; }  // all codes
  int gap() const { return K_; }
  int any() const { return Kp_ - 3; }
  int nonresidue() const { return Kp_ - 2; }
  int missing() const { return Kp_ - 1; }
  char symbol(Residue code) const { return symbols_[code]; }

  // Code of a character read from a sequence file, case-insensitive, with Easel's
  // synonyms; kIllegal for anything else.
  Residue digitize(char c) const { return inmap_[static_cast<unsigned char>(c)]; }

  // True when degenerate code x includes canonical residue y (x < K: only y == x).
  bool includes(int x, int y) const { return degenerate_[x][y]; }
  // True for codes that stand for residues (canonical or degenerate, not gap/'*'/'~').
  bool is_residue(int x) const { return x < K_ || (x > K_ && x < Kp_ - 2); }

 private:
  Alphabet(AlphabetType type, std::string_view symbols, int K);
  void set_degeneracy(char c, std::string_view members);
  void set_synonym(char c, char same_as);

  AlphabetType type_;
  std::string symbols_;
  int K_;
  int Kp_;
  std::array<Residue, 256> inmap_{};
  std::array<std::array<bool, 20>, 32> degenerate_{};
};

}  // namespace duet
