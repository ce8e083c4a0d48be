// Fuzz target: the parallel BlockReader (io/block_reader.hpp) against FastaReader,
// whose parsing it promises to follow exactly: the same sequences, the same error with the
// same line. Each input is read as a plain file and gzip-compressed, with several parser
// threads and chunks and blocks of a few bytes (sizes taken from a hash of the input, so
// a saved input replays the same run), so that chunk boundaries fall everywhere. On bad
// input both must fail with the same error; the sequences handed out before it may stop
// at different records (fasta_outcome.hpp, compare) but must agree as far as both go.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "fasta_outcome.hpp"
#include "fuzz_support.hpp"
#include "io/block_reader.hpp"

namespace {

duet::fuzz::FastaOutcome read_with_block_reader(const std::string& path,
                                                const duet::Alphabet& alphabet,
                                                const duet::io::ReaderOptions& options) {
  duet::fuzz::FastaOutcome out;
  try {
    duet::io::BlockReader reader(path, alphabet, options);
    while (const duet::BlockPtr block = reader.next()) {
      for (std::size_t i = 0; i < block->sequences(); ++i) {
        duet::Sequence s;
        s.name = block->name(i);
        s.description = block->description(i);
        s.residues.assign(block->sequence(i), block->sequence(i) + block->length(i));
        s.line = i == 0 ? block->first_line : 0;  // only a block's first line is kept
        out.sequences.push_back(std::move(s));
      }
    }
  } catch (const duet::InputError& e) {
    out.failed = true;
    out.error_line = e.line();
    out.error = duet::fuzz::without_file(e);
  }
  return out;
}

std::uint64_t hash(std::string_view bytes) {  // FNV-1a
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = duet::fuzz::as_text(data, size);
  std::uint64_t h = hash(bytes);
  auto pick = [&](std::uint64_t n) {
    const std::uint64_t x = h % n;
    h = h / n ^ (h * 0x9e3779b97f4a7c15ull);
    return x;
  };
  // The smallest sizes everywhere, then sizes and settings from the input's hash.
  duet::io::ReaderOptions tiny;
  tiny.threads = 3;
  tiny.chunk_bytes = 1;
  tiny.block_residues = 1;
  duet::io::ReaderOptions varied;
  varied.threads = 1 + static_cast<int>(pick(3));
  varied.chunk_bytes = 1 + pick(96);
  varied.block_residues = 1 + pick(48);
  varied.consumers = static_cast<int>(pick(4));
  varied.simd = pick(2) == 0;

  const std::string plain = duet::fuzz::write_input("db.fa", bytes);
  const std::string gzip = duet::fuzz::write_gzip_input("db.fa.gz", bytes);
  const duet::Alphabet& alphabet = pick(2) == 0 ? duet::Alphabet::amino() : duet::Alphabet::dna();
  for (const std::string& path : {plain, gzip}) {
    // Bytes that are gzip already: the compressed copy is not worth a second read.
    if (path == gzip && duet::fuzz::starts_with_gzip_magic(bytes)) continue;
    const duet::fuzz::FastaOutcome expected = duet::fuzz::read_with_fasta_reader(path, alphabet);
    for (const auto* options : {&tiny, &varied}) {
      const std::string difference =
          duet::fuzz::compare(expected, read_with_block_reader(path, alphabet, *options), true);
      if (!difference.empty()) {
        duet::fuzz::finding("BlockReader and FastaReader differ on " + path + " (threads " +
                            std::to_string(options->threads) + ", chunk_bytes " +
                            std::to_string(options->chunk_bytes) + ", block_residues " +
                            std::to_string(options->block_residues) + ", consumers " +
                            std::to_string(options->consumers) +
                            (options->simd ? ", simd" : ", scalar") + "): " + difference);
      }
    }
  }
  return 0;
}
