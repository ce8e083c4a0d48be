// What reading a FASTA file gave (the sequences, then the error if there was one), from
// FastaReader or from the parallel BlockReader, and the comparison of two such outcomes;
// for the FASTA fuzz targets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/alphabet.hpp"
#include "core/error.hpp"
#include "core/fasta_reader.hpp"
#include "core/sequence.hpp"

namespace duet::fuzz {

struct FastaOutcome {
  std::vector<Sequence> sequences;  // Sequence::line: the header's line
  bool failed = false;
  std::int64_t error_line = 0;
  std::string error;  // InputError::what() without the file name
};

inline std::string without_file(const InputError& e) {
  const std::string what = e.what();
  return what.rfind(e.file(), 0) == 0 ? what.substr(e.file().size()) : what;
}

inline FastaOutcome read_with_fasta_reader(const std::string& path, const Alphabet& alphabet) {
  FastaOutcome out;
  try {
    FastaReader reader(path, alphabet);
    Sequence s;
    while (reader.next(s)) out.sequences.push_back(s);
  } catch (const InputError& e) {
    out.failed = true;
    out.error_line = e.line();
    out.error = without_file(e);
  }
  return out;
}

// "" when `b` matches `a`: the same error, and the same sequences; with `prefix_on_error`,
// when both failed, sequences that agree as far as the shorter list goes (a reader may
// hand out a little less or more of what precedes the error: BlockReader drops the blocks
// of the chunk with the error, and hands out a record that FastaReader cannot finish
// because the next header line is cut by a gzip read error).
inline std::string compare(const FastaOutcome& a, const FastaOutcome& b, bool prefix_on_error) {
  if (a.failed != b.failed || a.error_line != b.error_line || a.error != b.error) {
    return "errors '" + (a.failed ? a.error : std::string("none")) + "' and '" +
           (b.failed ? b.error : std::string("none")) + "'";
  }
  const bool prefix = prefix_on_error && a.failed;
  if (!prefix && b.sequences.size() != a.sequences.size()) {
    return std::to_string(a.sequences.size()) + " and " + std::to_string(b.sequences.size()) +
           " sequences";
  }
  const std::size_t common = std::min(a.sequences.size(), b.sequences.size());
  for (std::size_t i = 0; i < common; ++i) {
    const Sequence& x = a.sequences[i];
    const Sequence& y = b.sequences[i];
    if (x.name != y.name || x.description != y.description || x.residues != y.residues ||
        (y.line != 0 && x.line != y.line)) {
      return "sequence " + std::to_string(i) + " ('" + x.name + "', line " +
             std::to_string(x.line) + ") differs";
    }
  }
  return "";
}

}  // namespace duet::fuzz
