// Streaming FASTA reader (plain or gzip) that digitizes residues as Easel does for an
// unaligned file: letters of the alphabet in either case with Easel's synonyms, '*' as
// the nonresidue; '-' and anything else is an error naming the file and line, as is a NUL
// byte in a header line.
#pragma once

#include <string>
#include <string_view>

#include "core/alphabet.hpp"
#include "core/sequence.hpp"
#include "core/text_reader.hpp"

namespace duet {

// The first line of a packed database (duet makedb: its magic bytes up to their '\n'),
// and what both FASTA readers say of a file whose first line it is (a packed database
// reaches a FASTA reader only when it could not be mapped: a pipe, a FIFO, or gzip).
inline constexpr std::string_view kPackedDatabaseFirstLine =
    "\x89"
    "DUETDB";
inline constexpr const char* kPackedDatabaseNotMapped =
    "a packed database (duet makedb) must be given as itself, a regular file: not through a "
    "pipe or FIFO, and not compressed";

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
