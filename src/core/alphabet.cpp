// Alphabet tables; see alphabet.hpp for the code layout.
#include "core/alphabet.hpp"

#include <cctype>

namespace duet {

Alphabet::Alphabet(AlphabetType type, std::string_view symbols, int K)
    : type_(type), symbols_(symbols), K_(K), Kp_(static_cast<int>(symbols.size())) {
  inmap_.fill(kIllegal);
  for (int x = 0; x < Kp_; ++x) {
    const unsigned char c = static_cast<unsigned char>(symbols_[x]);
    inmap_[c] = static_cast<Residue>(x);
    inmap_[static_cast<unsigned char>(std::tolower(c))] = static_cast<Residue>(x);
  }
  for (int x = 0; x < K_; ++x) degenerate_[x][x] = true;
  for (int y = 0; y < K_; ++y) degenerate_[any()][y] = true;
}

void Alphabet::set_degeneracy(char c, std::string_view members) {
  const int x = inmap_[static_cast<unsigned char>(c)];
  for (char m : members) degenerate_[x][inmap_[static_cast<unsigned char>(m)]] = true;
}

void Alphabet::set_synonym(char c, char same_as) {
  const Residue x = inmap_[static_cast<unsigned char>(same_as)];
  inmap_[static_cast<unsigned char>(c)] = x;
  inmap_[static_cast<unsigned char>(std::tolower(static_cast<unsigned char>(c)))] = x;
}

const Alphabet& Alphabet::amino() {
  static const Alphabet a = [] {
    Alphabet t(AlphabetType::amino, "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~", 20);
    t.set_synonym('_', '-');
    t.set_synonym('.', '-');
    t.set_degeneracy('B', "ND");
    t.set_degeneracy('J', "IL");
    t.set_degeneracy('Z', "QE");
    t.set_degeneracy('U', "C");  // selenocysteine scored as cysteine
    t.set_degeneracy('O', "K");  // pyrrolysine scored as lysine
    return t;
  }();
  return a;
}

const Alphabet& Alphabet::dna() {
  static const Alphabet a = [] {
    Alphabet t(AlphabetType::dna, "ACGT-RYMKSWHBVDN*~", 4);
    t.set_synonym('U', 'T');
    t.set_synonym('X', 'N');
    t.set_synonym('I', 'A');
    t.set_synonym('_', '-');
    t.set_synonym('.', '-');
    t.set_degeneracy('R', "AG");
    t.set_degeneracy('Y', "CT");
    t.set_degeneracy('M', "AC");
    t.set_degeneracy('K', "GT");
    t.set_degeneracy('S', "CG");
    t.set_degeneracy('W', "AT");
    t.set_degeneracy('H', "ACT");
    t.set_degeneracy('B', "CGT");
    t.set_degeneracy('V', "ACG");
    t.set_degeneracy('D', "AGT");
    return t;
  }();
  return a;
}

}  // namespace duet
