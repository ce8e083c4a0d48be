// A packed sequence database (`duet makedb`): the residues of a FASTA file, digitized
// once, in a file that is memory-mapped and cut into Blocks without parsing.
//
// Format, version 1. Little-endian; every offset and size in bytes, 64-bit.
//
//   header, 256 bytes at offset 0:
//      0  magic            8 bytes: 0x89 'D' 'U' 'E' 'T' 'D' 'B' '\n' (0x89: not text,
//                          and not FASTA's '>')
//      8  version          u32 (kPackedVersion)
//     12  header bytes     u32 (256)
//     16  alphabet         u32: 1 amino, 2 DNA
//     20  alphabet codes   u32: Alphabet::Kp() (29 amino, 18 DNA); every residue is below it
//     24  sequences        u64
//     32  residues         u64
//     40  longest          u64: residues of the longest sequence
//     48  alignment        u64: sections start at multiples of it (4096)
//     56  sections         4 x 24 bytes: {offset u64, bytes u64, crc32 u32, zero u32}:
//           residues          the alphabet's codes (core/alphabet.hpp), one byte each,
//                             sequence after sequence: any run of consecutive sequences
//                             is one contiguous range, as Block::residues holds it
//           sequence offsets  i64 x (sequences + 1): sequence i is residues[o[i], o[i+1]);
//                             o[0] = 0, o[sequences] = residues
//           header text       name and description of each sequence, packed, no separators
//           header offsets    i64 x (2 x sequences + 1): name i is text[h[2i], h[2i+1]),
//                             its description text[h[2i+1], h[2i+2]) (Block::header_offsets)
//    152  zero             100 bytes
//    252  header crc32     u32, zlib's crc32 of bytes [0, 252)
//   then the sections, in the order above, each at a multiple of the alignment, the gaps
//   zero; the file ends where the last section ends.
//
// Checks on open (PackedDatabase): the magic, the version (another version is refused,
// naming both), the header's checksum, that every section lies inside the file and that
// the file is exactly as long as the header says (a truncated file is refused), and the
// alphabet. The section checksums are verified by a thread of their own while the first
// pass runs (reading every byte of a large database takes seconds that the search need
// not wait for); a block made before the verdict is still bounds-checked, so a corrupt
// file can never make a reader leave the mapping or hand a kernel a code outside the
// alphabet. A mismatch fails the pass (PackedBlockReader::next throws), so a run over a
// corrupt file writes no result.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/alphabet.hpp"
#include "core/block.hpp"
#include "core/input_file.hpp"
#include "io/block_reader.hpp"

namespace duet::io {

inline constexpr unsigned char kPackedMagic[8] = {0x89, 'D', 'U', 'E', 'T', 'D', 'B', '\n'};
inline constexpr std::uint32_t kPackedVersion = 1;
inline constexpr std::uint64_t kPackedAlignment = 4096;

// Whether `bytes` (at least 8 of them) start with the packed database's magic.
bool starts_with_packed_magic(const void* bytes, std::size_t size);

// Writes a packed database from blocks in database order. Residues go straight to their
// place in `path`; sequence offsets, names and their offsets go to three temporary files
// in `path`'s folder, unlinked as soon as they are made (nothing is left behind, whatever
// happens), and are copied after the residues by finish(). Memory stays at one block
// plus the write buffers, whatever the database's size. InputError naming `shown_path`
// when a write fails.
class PackedDatabaseWriter {
 public:
  PackedDatabaseWriter(const std::string& path, std::string shown_path, const Alphabet& alphabet);
  ~PackedDatabaseWriter();
  PackedDatabaseWriter(const PackedDatabaseWriter&) = delete;
  PackedDatabaseWriter& operator=(const PackedDatabaseWriter&) = delete;

  void add(const Block& block);
  // Writes the other sections and the header; the file is then complete (not synced).
  void finish();

  std::int64_t sequences() const { return sequences_; }
  std::int64_t residues() const { return residues_; }

 private:
  class Section;
  std::string shown_path_;
  const Alphabet& alphabet_;
  int fd_ = -1;
  std::unique_ptr<Section> residue_section_, offsets_, header_text_, header_offsets_;
  std::int64_t sequences_ = 0, residues_ = 0, longest_ = 0, header_bytes_ = 0;
};

// A packed database, mapped read-only. Opening checks the header and sizes (InputError
// naming the file and what is wrong); the section checksums are verified by
// start_verification()'s thread.
class PackedDatabase {
 public:
  // Whether `file` is a regular file that starts with the magic (a FIFO or pipe is never
  // looked at: reading it would consume it).
  static bool is_packed(const InputFile& file);

  explicit PackedDatabase(const InputFile& file);
  ~PackedDatabase();  // stops and joins the verification thread
  PackedDatabase(const PackedDatabase&) = delete;
  PackedDatabase& operator=(const PackedDatabase&) = delete;

  const std::string& path() const { return path_; }
  const Alphabet& alphabet() const { return *alphabet_; }
  std::int64_t sequences() const { return sequences_; }
  std::int64_t residues() const { return residues_; }
  std::int64_t longest() const { return longest_; }
  // Where sequence i starts in the residues (i <= sequences()), as the file says.
  std::int64_t sequence_offset(std::int64_t i) const { return sequence_offsets_[i]; }

  // Sequences [first, first + count) as one block numbered `index` (its residues and
  // headers copied out of the mapping). InputError when the offsets or codes it holds are
  // impossible (a corrupt file).
  BlockPtr make_block(std::int64_t index, std::int64_t first, std::int64_t count) const;
  // One past the last sequence of the block that starts at sequence `first`: it closes at
  // `target` residues or 65,536 sequences (BlockReader's rule).
  std::int64_t block_end(std::int64_t first, std::size_t target) const;

  // Verifies every section's checksum, in the calling thread; InputError naming the first
  // section that differs. Stops early (returning) when `stop` becomes true.
  void verify_checksums(const std::atomic<bool>* stop = nullptr) const;
  // Starts verify_checksums on a thread of its own (once; later calls do nothing).
  void start_verification();
  // Throws the verification's InputError if it has failed; with `wait`, first waits for it
  // to end.
  void check_verification(bool wait);

 private:
  const unsigned char* section(int k) const { return map_ + section_offset_[k]; }
  // What is wrong with the section checksums ("is corrupt: ..."), empty when nothing is
  // (or when `stop` ended the check early).
  std::string checksum_problem(const std::atomic<bool>* stop) const;

  std::string path_;
  const unsigned char* map_ = nullptr;
  std::size_t map_size_ = 0;
  const Alphabet* alphabet_ = nullptr;
  std::int64_t sequences_ = 0, residues_ = 0, longest_ = 0;
  std::uint64_t section_offset_[4] = {}, section_bytes_[4] = {};
  std::uint32_t section_crc_[4] = {};
  const std::int64_t* sequence_offsets_ = nullptr;
  const std::int64_t* header_offsets_ = nullptr;
  const char* header_text_ = nullptr;

  std::thread verifier_;
  std::atomic<bool> stop_verifying_{false};
  std::atomic<bool> verified_{false};
  std::mutex failure_mutex_;
  std::string failure_;  // checksum_problem's answer, empty while none
};

// The blocks of a packed database for one pass, from block `start.block` (at sequence
// `start.sequence`) on. Block sizes follow ReaderOptions as BlockReader's do: blocks of
// block_residues, and with `consumers`, the first `consumers` blocks of the database and
// those of its last consumers x block_residues residues a quarter of that. Where blocks
// end is a function of the database and the options only, so every pass cuts the same
// blocks.
class PackedBlockReader : public BlockSource {
 public:
  PackedBlockReader(PackedDatabase& database, const ReaderOptions& options);
  BlockPtr next() override;  // InputError on a corrupt file (see PackedDatabase)
  // The next block's extent only: no residues or names copied (offsets all 0, work_units
  // its residues).
  BlockPtr next_to_skip() override;
  double fraction_done() const override;

 private:
  BlockPtr next_block(bool extent_only);

  PackedDatabase& database_;
  std::size_t block_residues_;
  std::size_t consumers_;
  std::int64_t next_block_, next_sequence_;
  std::int64_t residues_handed_ = 0, residues_before_ = 0;
  const std::atomic<bool>* stop_ = nullptr;
};

}  // namespace duet::io
