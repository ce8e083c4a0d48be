// The FASTA grammar duet reads, plain or gzip: one set of rules, and one set of messages,
// for both readers, FastaReader (core/fasta_reader.hpp, line by line) and the parallel
// block reader (io/block_reader.hpp, chunk by chunk).
//
// - Blank lines may precede the first header; any other line there is an error.
// - A header line starts with '>' and holds no NUL byte; the name is its first word, the
//   description the rest with the white space around it removed.
// - Sequence lines hold letters of the alphabet (either case, Easel's synonyms, '*' as
//   the nonresidue) and white space that is dropped (space, tab, '\r'); '-' and any other
//   byte are errors, as Easel has it for an unaligned file.
// - A file whose first line is a packed database's (duet makedb) is told so: it reaches a
//   FASTA reader only when it could not be mapped (a pipe, a FIFO, or gzip).
// Errors are InputErrors naming the file and line, with the messages made here.
#pragma once

#include <string>
#include <string_view>

#include "core/alphabet.hpp"
#include "core/text_reader.hpp"

namespace duet::fasta {

// The first line of a packed database (its magic bytes up to their '\n').
inline constexpr std::string_view kPackedDatabaseFirstLine =
    "\x89"
    "DUETDB";
inline constexpr const char* kPackedDatabaseNotMapped =
    "a packed database (duet makedb) must be given as itself, a regular file: not through a "
    "pipe or FIFO, and not compressed";

// A line of white space only (is_space, core/text_reader.hpp).
bool is_blank(std::string_view line);

// A byte of a sequence line that is dropped.
constexpr bool is_dropped(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}
// The residue code of a byte of a sequence line that is not dropped; Alphabet::kIllegal
// for '-' (a gap) and for any byte outside the alphabet.
inline Residue residue_code(const Alphabet& alphabet, char c) {
  return c == '-' ? Alphabet::kIllegal : alphabet.digitize(c);
}

struct Header {
  std::string_view name, description;
};
// Splits a header line (line[0] is '>'; the line without its '\n'): nullptr, or the
// message saying what is wrong with it.
const char* split_header(std::string_view line, Header& header);

// The message for a line that is not a header where one must be: before the first record
// (first) or after one.
const char* not_a_header(bool first);
// The message for byte `c` of a sequence line, illegal in `alphabet` (residue_code).
std::string illegal_character(char c, const Alphabet& alphabet, std::string_view sequence_name);

}  // namespace duet::fasta
