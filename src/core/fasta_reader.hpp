// Streaming FASTA reader (plain or gzip) that digitizes residues as Easel does for an
// unaligned file: letters of the alphabet in either case with Easel's synonyms, '*' as
// the nonresidue; '-' and anything else is an error naming the file and line, as is a NUL
// byte in a header line.
#pragma once

#include <string>

#include "core/alphabet.hpp"
#include "core/sequence.hpp"
#include "core/text_reader.hpp"

namespace duet {

class FastaReader {
 public:
  FastaReader(const std::string& path, const Alphabet& alphabet);
  // Reads the next record into `sequence`; false at end of file. Throws InputError.
  bool next(Sequence& sequence);
  const TextReader& text() const { return text_; }

 private:
  TextReader text_;
  const Alphabet& alphabet_;
  std::string line_;
  bool have_header_ = false;  // line_ holds the next record's header
  bool started_ = false;
};

}  // namespace duet
