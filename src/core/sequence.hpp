// One database sequence in digital form (codes of an Alphabet), as a reader returns it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/alphabet.hpp"

namespace duet {

struct Sequence {
  std::string name;
  std::string description;
  std::vector<Residue> residues;  // 0-based: residues[0] is the first residue
  std::int64_t line = 0;          // line of the header in its file
};

}  // namespace duet
