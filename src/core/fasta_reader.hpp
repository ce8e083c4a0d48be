// Streaming FASTA reader (plain or gzip), record by record, on the grammar of
// fasta_grammar.hpp (the block reader's too).
#pragma once

#include <string>

#include "core/alphabet.hpp"
#include "core/fasta_grammar.hpp"
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
