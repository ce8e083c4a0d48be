// FastaReader: see fasta_reader.hpp.
#include "core/fasta_reader.hpp"

#include "core/error.hpp"

namespace duet {

FastaReader::FastaReader(const std::string& path, const Alphabet& alphabet)
    : text_(path), alphabet_(alphabet) {}

bool FastaReader::next(Sequence& sequence) {
  if (!have_header_) {
    while (text_.next_line(line_)) {
      if (fasta::is_blank(line_)) continue;
      if (text_.line_number() == 1 && line_ == fasta::kPackedDatabaseFirstLine)
        throw InputError(text_.path(), 1, fasta::kPackedDatabaseNotMapped);
      if (line_[0] != '>')
        throw InputError(text_.path(), text_.line_number(), fasta::not_a_header(!started_));
      have_header_ = true;
      break;
    }
    started_ = true;
    if (!have_header_) return false;
  }
  sequence.line = text_.line_number();
  fasta::Header header;
  if (const char* error = fasta::split_header(line_, header))
    throw InputError(text_.path(), text_.line_number(), error);
  sequence.name.assign(header.name);
  sequence.description.assign(header.description);
  sequence.residues.clear();
  have_header_ = false;

  while (text_.next_line(line_)) {
    if (!line_.empty() && line_[0] == '>') {
      have_header_ = true;
      break;
    }
    for (char c : line_) {
      if (fasta::is_dropped(c)) continue;
      const Residue x = fasta::residue_code(alphabet_, c);
      if (x == Alphabet::kIllegal) {
        throw InputError(text_.path(), text_.line_number(),
                         fasta::illegal_character(c, alphabet_, sequence.name));
      }
      sequence.residues.push_back(x);
    }
  }
  return true;
}

}  // namespace duet
