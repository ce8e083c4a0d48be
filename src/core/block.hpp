// Block: a run of consecutive database sequences, the unit of work every worker and
// feeder takes. Residues of all sequences are concatenated; sequence i occupies
// residues[offsets[i], offsets[i+1]). Names and descriptions are packed the same way in
// one string (one allocation per block, not two per sequence). The readers of
// src/io make blocks of a FASTA file or a packed database (io/block_store.hpp); the
// scheduler hands them out (scheduler/scheduler.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/alphabet.hpp"

namespace duet {

// Which devices may take a block (scheduler::BlockQueue keeps it with the queued block):
// the static policy decides it up front; a block that a device failed on comes back as
// cpu_only.
enum class Affinity : std::uint8_t { any, cpu_only, gpu_only };

struct Block {
  std::int64_t index = 0;                // position of the block in the database (0, 1, 2...)
  std::int64_t first_sequence = 0;       // database index of its first sequence
  std::vector<Residue> residues;         // all sequences, concatenated
  std::vector<std::int64_t> offsets{0};  // size sequences() + 1
  // Name of sequence i: header_text[header_offsets[2i], header_offsets[2i+1]); its
  // description follows up to header_offsets[2i+2].
  std::string header_text;
  std::vector<std::int64_t> header_offsets{0};
  // Where its first record starts in the file: byte offset in the (uncompressed) text and
  // line number of the header. Lets a later pass re-read the file from this block on.
  std::uint64_t file_offset = 0;
  std::int64_t first_line = 0;
  // The block's cost when it is not its residues: a workload whose blocks are not
  // sequences (pairhmm: pairs, which hold no residues here) gives its work in units the
  // scheduler balances (pairhmm: DP cells / 256, at least one per pair) and its exact DP
  // cells. 0: residue_count() units, and residues x the workload's cells per residue.
  std::int64_t work_units = 0;
  std::int64_t work_cells = 0;

  // The scheduler's measure of the block's work (queue budgets, shares, trace, progress).
  std::int64_t work() const { return work_units > 0 ? work_units : residue_count(); }
  std::size_t sequences() const { return offsets.size() - 1; }
  std::int64_t residue_count() const { return static_cast<std::int64_t>(residues.size()); }
  const Residue* sequence(std::size_t i) const { return residues.data() + offsets[i]; }
  int length(std::size_t i) const { return static_cast<int>(offsets[i + 1] - offsets[i]); }
  std::string_view name(std::size_t i) const { return header(2 * i); }
  std::string_view description(std::size_t i) const { return header(2 * i + 1); }

  // Adds a sequence: its header now, its residues (already appended to `residues`) ending
  // at residues.size().
  void add_header(std::string_view name, std::string_view description);
  void end_sequence() { offsets.push_back(static_cast<std::int64_t>(residues.size())); }
  // Appends the sequences of `other` (which is left empty).
  void append(Block&& other);
  // Memory the block holds, in bytes (what its vectors and string allocated).
  std::size_t memory_bytes() const;

 private:
  std::string_view header(std::size_t k) const {
    return std::string_view(header_text)
        .substr(static_cast<std::size_t>(header_offsets[k]),
                static_cast<std::size_t>(header_offsets[k + 1] - header_offsets[k]));
  }
};

using BlockPtr = std::shared_ptr<Block>;

// What a device left of a block for the CPU's post stage: the workload's own state of the
// block (e.g. its targets' partial scores). It travels with the block, owned by the post
// task, from the device's batch to Workload::run_post.
class PostState {
 public:
  virtual ~PostState() = default;
};
using PostStatePtr = std::unique_ptr<PostState>;

// One pass of blocks in database order: indices 0, 1, 2... and first sequences that
// follow on (the scheduler relies on both). What the scheduler's reader thread drains: a
// pass of a BlockStore (io/block_store.hpp), or blocks a workload makes in memory (the
// pair-HMM's blocks of pairs).
class BlockSource {
 public:
  virtual ~BlockSource() = default;
  // The next block; nullptr at the end. May throw InputError.
  virtual BlockPtr next() = 0;
  // The next block, for a caller that will not run it (a rank of a distributed run
  // passing another rank's block: scheduler/distributed_source.hpp). It holds at least
  // its index, first sequence, number of sequences (offsets' size) and work(); a source
  // may leave out the residues and names where that saves work. Default: next().
  virtual BlockPtr next_to_skip() { return next(); }
  // Share of the database handed out so far, in [0, 1].
  virtual double fraction_done() const = 0;
  // Blocks handed out so far that were kept in memory from an earlier pass.
  virtual std::int64_t reused_blocks() const { return 0; }
  // The work of the whole pass (Block::work summed) when known before it starts; 0 if not.
  virtual std::int64_t known_work() const { return 0; }
};

}  // namespace duet
