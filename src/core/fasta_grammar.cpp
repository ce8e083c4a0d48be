// The FASTA grammar: see fasta_grammar.hpp.
#include "core/fasta_grammar.hpp"

#include <algorithm>

namespace duet::fasta {

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), is_space);
}

const char* split_header(std::string_view line, Header& header) {
  // A NUL byte would pass as part of a name here and only fail at the HDF5 write (C
  // strings).
  if (line.find('\0') != std::string_view::npos) return "illegal NUL byte in a sequence header";
  std::size_t p = 1;
  while (p < line.size() && is_space(line[p])) ++p;
  std::size_t q = p;
  while (q < line.size() && !is_space(line[q])) ++q;
  if (q == p) return "sequence header has no name";
  header.name = line.substr(p, q - p);
  while (q < line.size() && is_space(line[q])) ++q;
  std::size_t e = line.size();
  while (e > q && is_space(line[e - 1])) --e;
  header.description = line.substr(q, e - q);
  return nullptr;
}

const char* not_a_header(bool first) {
  return first ? "not a FASTA file: the first line must start with '>'"
               : "expected a '>' header line";
}

std::string illegal_character(char c, const Alphabet& alphabet, std::string_view sequence_name) {
  const auto u = static_cast<unsigned char>(c);
  const std::string shown =
      std::isprint(u) ? std::string("'") + c + "'" : "byte " + std::to_string(static_cast<int>(u));
  return "illegal character " + shown + " in " + std::string(alphabet.name()) + " sequence '" +
         std::string(sequence_name) + "'";
}

}  // namespace duet::fasta
