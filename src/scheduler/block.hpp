// Block: a run of consecutive database sequences, the unit of work every worker and
// feeder takes. Residues of all sequences are concatenated; sequence i occupies
// residues[offsets[i], offsets[i+1]). BlockReader streams a FASTA file into blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/alphabet.hpp"
#include "core/fasta_reader.hpp"

namespace duet::scheduler {

// Which devices may take a block: the static policy decides it up front; a block that a
// device failed on comes back as cpu_only.
enum class Affinity : std::uint8_t { any, cpu_only, gpu_only };

struct Block {
  std::int64_t index = 0;           // position of the block in the database (0, 1, 2...)
  std::int64_t first_sequence = 0;  // database index of its first sequence
  std::vector<std::string> names, descriptions;
  std::vector<Residue> residues;        // all sequences, concatenated
  std::vector<std::int64_t> offsets{0};  // size sequences() + 1
  Affinity affinity = Affinity::any;

  std::size_t sequences() const { return names.size(); }
  std::int64_t residue_count() const { return static_cast<std::int64_t>(residues.size()); }
  const Residue* sequence(std::size_t i) const { return residues.data() + offsets[i]; }
  int length(std::size_t i) const { return static_cast<int>(offsets[i + 1] - offsets[i]); }
};

using BlockPtr = std::shared_ptr<Block>;

// Streams a FASTA file (plain or gzip) into blocks of at least `block_residues` residues
// (fewer for the last one; one sequence longer than that makes a block by itself).
class BlockReader {
 public:
  BlockReader(const std::string& path, const Alphabet& alphabet, std::size_t block_residues);
  // The next block, or nullptr at end of file. Throws InputError on bad input.
  BlockPtr next();
  // Bytes of the file consumed so far and its size (0 if unknown): progress.
  std::uint64_t bytes_read() const { return fasta_.text().bytes_read(); }
  std::uint64_t file_size() const { return fasta_.text().file_size(); }

 private:
  FastaReader fasta_;
  std::size_t block_residues_;
  std::int64_t next_block_ = 0, next_sequence_ = 0;
  Sequence sequence_;
};

}  // namespace duet::scheduler
