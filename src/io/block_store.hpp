// BlockStore: the database as blocks for one or more passes (one pass per query model),
// reusing parsed blocks across passes within a memory budget.
//
// The first pass reads the file (BlockReader). While the blocks it hands out fit in
// `reuse_bytes` (Block::memory_bytes), it keeps them, in order; past the budget it keeps
// nothing more. A later pass hands out the kept blocks, then, unless the whole database
// was kept, re-reads the file from the header of the first block not kept (a plain file
// seeks there; a gzip file is inflated up to there, not parsed). Block indices and
// sequence numbers are the same in every pass; where blocks end after the kept ones may
// differ (results never depend on it). A budget of 0 keeps nothing: every pass reads
// the whole file.
//
// One pass at a time, and beside it side passes (side_pass): other lines of passes may
// run at the same time over blocks of their own (a FASTA file's after a complete first
// pass), shared by side passes at once: passes only read their blocks.
//
// A packed database (`duet makedb`, packed_database.hpp), told from FASTA by its first
// bytes, is mapped once by the store and cut into blocks by each pass
// (PackedBlockReader): sequences numbered as in its FASTA, blocks by the FASTA reader's
// rule (the same blocks where the FASTA reader joins no chunks: a file of one chunk), the
// same blocks in every pass. Nothing is kept: the mapping is the cache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/alphabet.hpp"
#include "core/block.hpp"
#include "io/block_reader.hpp"

namespace duet::io {

class PackedDatabase;
class PackedBlockReader;

class BlockStore {
 public:
  // The database `file`, for one pass or, with `several_passes`, for more. A file that
  // cannot be read twice (a pipe or FIFO: InputFile::rereadable) is read once: for several
  // passes, every block must then be kept, and a store that cannot keep them all (a budget
  // of 0, or a database larger than it) throws InputError naming the file and what to do:
  // at once for 0, else as the first pass reaches the budget. A packed database whose
  // alphabet is not `alphabet`, or that is truncated or corrupt, throws InputError.
  BlockStore(const InputFile& file, const Alphabet& alphabet, const ReaderOptions& reader,
             std::uint64_t reuse_bytes, bool several_passes);
  ~BlockStore();

  // One pass: what the scheduler drains (BlockSource, core/block.hpp).
  class Pass final : public BlockSource {
   public:
    ~Pass() override;
    Pass(Pass&&) = default;
    // The next block in database order; nullptr at the end. Throws InputError.
    BlockPtr next() override;
    // A packed database's block without its residues (PackedBlockReader); else next().
    BlockPtr next_to_skip() override;
    // Share of the database handed out so far, in [0, 1] (estimated from file offsets).
    // From the thread that calls next().
    double fraction_done() const override;
    std::int64_t reused_blocks() const override { return static_cast<std::int64_t>(kept_handed_); }
    // The database's residues once a first pass is complete (BlockStore::total_residues).
    std::int64_t known_work() const override;

   private:
    friend class BlockStore;
    explicit Pass(BlockStore& store);
    BlockPtr next_block(bool to_skip);
    BlockStore& store_;
    bool first_ = false;  // the first pass: reads and keeps
    std::size_t kept_handed_ = 0;
    std::unique_ptr<BlockReader> reader_;
    std::unique_ptr<PackedBlockReader> packed_reader_;  // a packed database's blocks
  };

  // Starts a pass; the previous one must be finished or abandoned.
  Pass begin_pass();
  // A pass that may run at the same time as begin_pass's, with blocks of about
  // `block_residues` residues: over a packed database's blocks, which every pass cuts
  // anew; or, once a first pass is complete, over the store's own copies of the kept
  // blocks, joined up to that size, where the whole database is kept (made by the first
  // call). Its blocks are numbered from 0 in database order; their sequences keep their
  // numbers. Null where neither holds. The first call (which makes the copies) comes
  // before any other side pass; later calls may come from several threads, and their
  // passes run at once.
  std::unique_ptr<BlockSource> side_pass(std::size_t block_residues);

  const Alphabet& alphabet() const { return alphabet_; }
  // The packed database the store reads, nullptr for FASTA.
  const PackedDatabase* packed() const { return packed_.get(); }
  const std::string& path() const { return path_; }
  // Sizes known after one complete pass (0 before).
  std::int64_t total_residues() const { return total_residues_; }
  std::int64_t total_blocks() const { return total_blocks_; }
  // What is kept: blocks, bytes, and whether that is the whole database.
  std::size_t kept_blocks() const { return kept_.size(); }
  std::uint64_t kept_bytes() const { return kept_bytes_; }
  bool all_kept() const { return all_kept_; }

 private:
  const InputFile* file_ = nullptr;
  std::string path_;
  std::unique_ptr<PackedDatabase> packed_;  // set: file_ is a packed database
  bool must_keep_all_ = false;              // several passes over a file that cannot be read twice
  const Alphabet& alphabet_;
  ReaderOptions reader_options_;
  std::uint64_t reuse_bytes_;
  bool first_pass_done_ = false;  // a first pass has been started
  std::vector<BlockPtr> kept_;
  std::vector<BlockPtr> side_copies_;  // side_pass's copies of kept_
  std::uint64_t kept_bytes_ = 0;
  bool keeping_ = true;  // the first pass is still keeping blocks
  bool all_kept_ = false;
  ReadStart resume_;          // where the first block not kept starts
  double kept_fraction_ = 0;  // share of the file the kept blocks cover
  std::int64_t total_residues_ = 0, total_blocks_ = 0;
  std::int64_t first_pass_residues_ = 0, first_pass_blocks_ = 0;
};

}  // namespace duet::io
