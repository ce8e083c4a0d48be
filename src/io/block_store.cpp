// BlockStore: see block_store.hpp.
#include "io/block_store.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"
#include "io/packed_database.hpp"

namespace duet::io {

namespace {

InputError cannot_keep_all(const std::string& path, std::uint64_t reuse_bytes) {
  return InputError(path, 0,
                    "cannot be read twice (a pipe or FIFO), and searching several models needs "
                    "all of it in memory, more than --reuse-memory (" +
                        std::to_string(reuse_bytes) +
                        " bytes) allows: raise --reuse-memory, or give a regular file");
}

}  // namespace

BlockStore::BlockStore(const InputFile& file, const Alphabet& alphabet, const ReaderOptions& reader,
                       std::uint64_t reuse_bytes, bool several_passes)
    : file_(&file),
      path_(file.path()),
      alphabet_(alphabet),
      reader_options_(reader),
      reuse_bytes_(reuse_bytes) {
  if (PackedDatabase::is_packed(file)) {
    packed_ = std::make_unique<PackedDatabase>(file);
    if (&packed_->alphabet() != &alphabet) {
      throw InputError(path_, 0,
                       "is a packed " + std::string(packed_->alphabet().name()) +
                           " database, and the model is " + std::string(alphabet.name()) +
                           ": search it with a model of its alphabet, or make the database "
                           "again with `duet makedb --alphabet " +
                           (alphabet.type() == AlphabetType::amino ? "amino" : "dna") + "`");
    }
    keeping_ = false;  // every pass cuts its blocks from the mapping
    return;
  }
  must_keep_all_ = several_passes && !file.rereadable();
  if (must_keep_all_ && reuse_bytes_ == 0) throw cannot_keep_all(path_, reuse_bytes_);
  keeping_ = reuse_bytes_ > 0;
}

BlockStore::~BlockStore() = default;

BlockStore::Pass BlockStore::begin_pass() {
  return Pass(*this);
}

namespace {

// A side pass over the store's copies of its blocks.
class CopiedBlocks final : public BlockSource {
 public:
  explicit CopiedBlocks(const std::vector<BlockPtr>& blocks) : blocks_(blocks) {}
  BlockPtr next() override { return handed_ < blocks_.size() ? blocks_[handed_++] : nullptr; }
  double fraction_done() const override {
    return blocks_.empty() ? 1.0
                           : static_cast<double>(handed_) / static_cast<double>(blocks_.size());
  }
  std::int64_t reused_blocks() const override { return static_cast<std::int64_t>(handed_); }
  std::int64_t known_work() const override {
    std::int64_t work = 0;
    for (const BlockPtr& b : blocks_) work += b->work();
    return work;
  }

 private:
  const std::vector<BlockPtr>& blocks_;
  std::size_t handed_ = 0;
};

}  // namespace

std::unique_ptr<BlockSource> BlockStore::side_pass(std::size_t block_residues) {
  if (packed_) {
    ReaderOptions options = reader_options_;
    options.block_residues = block_residues;
    options.consumers = 0;
    return std::make_unique<PackedBlockReader>(*packed_, options);
  }
  if (!all_kept_ || total_blocks_ == 0) return nullptr;  // not all kept, or an empty database
  if (side_copies_.empty()) {
    for (const BlockPtr& b : kept_) {
      if (side_copies_.empty() ||
          side_copies_.back()->residues.size() + b->residues.size() > block_residues) {
        side_copies_.push_back(std::make_shared<Block>(*b));
        side_copies_.back()->index = static_cast<std::int64_t>(side_copies_.size()) - 1;
      } else {
        Block copy = *b;
        side_copies_.back()->append(std::move(copy));
      }
    }
  }
  return std::make_unique<CopiedBlocks>(side_copies_);
}

BlockStore::Pass::Pass(BlockStore& store) : store_(store), first_(!store.first_pass_done_) {
  store.first_pass_done_ = true;
  if (store.packed_) {
    // Once, by the first pass; see PackedDatabase.
    if (store.reader_options_.verify_packed) store.packed_->start_verification();
    packed_reader_ = std::make_unique<PackedBlockReader>(*store.packed_, store.reader_options_);
  } else if (first_) {
    reader_ = std::make_unique<BlockReader>(*store.file_, store.alphabet_, store.reader_options_);
  }
}

BlockStore::Pass::~Pass() = default;

BlockPtr BlockStore::Pass::next() {
  return next_block(false);
}

BlockPtr BlockStore::Pass::next_to_skip() {
  return next_block(true);
}

BlockPtr BlockStore::Pass::next_block(bool to_skip) {
  BlockStore& s = store_;
  const auto from_packed = [&] {
    return to_skip ? packed_reader_->next_to_skip() : packed_reader_->next();
  };
  if (first_) {
    BlockPtr block = packed_reader_ ? from_packed() : reader_->next();
    if (!block) {
      // The whole database went through: its size is known, and what was kept is all of it
      // if nothing had to be dropped.
      s.total_residues_ = s.first_pass_residues_;
      s.total_blocks_ = s.first_pass_blocks_;
      if (s.keeping_) s.all_kept_ = true;
      s.keeping_ = false;
      return nullptr;
    }
    s.first_pass_residues_ += block->work();
    ++s.first_pass_blocks_;
    if (s.keeping_) {
      const std::uint64_t bytes = block->memory_bytes();
      if (s.kept_bytes_ + bytes <= s.reuse_bytes_) {
        s.kept_.push_back(block);
        s.kept_bytes_ += bytes;
      } else {
        if (s.must_keep_all_) throw cannot_keep_all(s.path_, s.reuse_bytes_);
        s.keeping_ = false;
        s.resume_ = {block->file_offset, block->first_line, block->index, block->first_sequence};
        s.kept_fraction_ = reader_->fraction_handed_out();
      }
    }
    return block;
  }
  if (packed_reader_) return from_packed();
  if (kept_handed_ < s.kept_.size()) return s.kept_[kept_handed_++];
  if (s.all_kept_) return nullptr;
  if (!reader_) {
    ReaderOptions options = s.reader_options_;
    if (!s.kept_.empty()) options.start = s.resume_;
    reader_ = std::make_unique<BlockReader>(*s.file_, s.alphabet_, options);
  }
  return reader_->next();
}

std::int64_t BlockStore::Pass::known_work() const {
  return first_ ? 0 : store_.total_residues_;
}

double BlockStore::Pass::fraction_done() const {
  const BlockStore& s = store_;
  if (packed_reader_) return packed_reader_->fraction_done();
  if (first_ || reader_) return reader_->fraction_handed_out();
  if (s.kept_.empty()) return 0;
  const double kept_share = static_cast<double>(kept_handed_) / static_cast<double>(s.kept_.size());
  return kept_share * (s.all_kept_ ? 1.0 : s.kept_fraction_);
}

}  // namespace duet::io
