// Fuzz target: FastaReader (core/fasta_reader.hpp) on the fuzzer's bytes as a file (which
// zlib reads as gzip when they start with its magic) and gzip-compressed, for both
// alphabets. Bad input must end in duet::InputError; the plain and the compressed file
// must give the same sequences and the same error (file name aside).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/fasta_reader.hpp"
#include "fasta_outcome.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = duet::fuzz::as_text(data, size);
  const std::string plain = duet::fuzz::write_input("db.fa", bytes);
  const std::string gzip = duet::fuzz::write_gzip_input("db.fa.gz", bytes);
  for (const duet::Alphabet* alphabet : {&duet::Alphabet::amino(), &duet::Alphabet::dna()}) {
    const duet::fuzz::FastaOutcome from_plain = duet::fuzz::read_with_fasta_reader(plain, *alphabet);
    // Bytes that are gzip already are read decompressed from the plain file, so the
    // compressed copy holds other text.
    if (duet::fuzz::starts_with_gzip_magic(bytes)) continue;
    const duet::fuzz::FastaOutcome from_gzip = duet::fuzz::read_with_fasta_reader(gzip, *alphabet);
    const std::string difference = duet::fuzz::compare(from_plain, from_gzip, false);
    if (!difference.empty()) duet::fuzz::finding("plain and gzip input differ: " + difference);
  }
  return 0;
}
