// FastaReader: see fasta_reader.hpp.
#include "core/fasta_reader.hpp"

#include <cctype>

#include "core/error.hpp"

namespace duet {

FastaReader::FastaReader(const std::string& path, const Alphabet& alphabet)
    : text_(path), alphabet_(alphabet) {}

namespace {

bool is_blank(const std::string& s) {
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

bool FastaReader::next(Sequence& sequence) {
  if (!have_header_) {
    while (text_.next_line(line_)) {
      if (is_blank(line_)) continue;
      if (text_.line_number() == 1 && line_ == kPackedDatabaseFirstLine)
        throw InputError(text_.path(), 1, kPackedDatabaseNotMapped);
      if (line_[0] != '>') {
        throw InputError(text_.path(), text_.line_number(),
                         started_ ? "expected a '>' header line"
                                  : "not a FASTA file: the first line must start with '>'");
      }
      have_header_ = true;
      break;
    }
    started_ = true;
    if (!have_header_) return false;
  }
  // Parse the header: name is the first word, the description the rest. A NUL byte would
  // pass as part of a name here and only fail at the HDF5 write (C strings).
  sequence.line = text_.line_number();
  if (line_.find('\0') != std::string::npos) {
    throw InputError(text_.path(), text_.line_number(), "illegal NUL byte in a sequence header");
  }
  std::size_t p = 1;
  while (p < line_.size() && std::isspace(static_cast<unsigned char>(line_[p]))) ++p;
  std::size_t q = p;
  while (q < line_.size() && !std::isspace(static_cast<unsigned char>(line_[q]))) ++q;
  if (q == p) throw InputError(text_.path(), text_.line_number(), "sequence header has no name");
  sequence.name.assign(line_, p, q - p);
  while (q < line_.size() && std::isspace(static_cast<unsigned char>(line_[q]))) ++q;
  std::size_t e = line_.size();
  while (e > q && std::isspace(static_cast<unsigned char>(line_[e - 1]))) --e;
  sequence.description.assign(line_, q, e - q);
  sequence.residues.clear();
  have_header_ = false;

  while (text_.next_line(line_)) {
    if (!line_.empty() && line_[0] == '>') {
      have_header_ = true;
      break;
    }
    for (char c : line_) {
      if (c == ' ' || c == '\t' || c == '\r') continue;
      const Residue x = (c == '-') ? Alphabet::kIllegal : alphabet_.digitize(c);
      if (x == Alphabet::kIllegal) {
        const unsigned char u = static_cast<unsigned char>(c);
        std::string shown = std::isprint(u) ? std::string("'") + c + "'"
                                            : "byte " + std::to_string(static_cast<int>(u));
        throw InputError(text_.path(), text_.line_number(),
                         "illegal character " + shown + " in " + std::string(alphabet_.name()) +
                             " sequence '" + sequence.name + "'");
      }
      sequence.residues.push_back(x);
    }
  }
  return true;
}

}  // namespace duet
