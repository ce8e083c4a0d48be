// BlockReader: see block.hpp.
#include "scheduler/block.hpp"

namespace duet::scheduler {

namespace {
constexpr std::size_t kMaxSequencesPerBlock = 1 << 16;
}

BlockReader::BlockReader(const std::string& path, const Alphabet& alphabet, std::size_t block_residues)
    : fasta_(path, alphabet), block_residues_(block_residues == 0 ? 1 : block_residues) {}

BlockPtr BlockReader::next() {
  auto block = std::make_shared<Block>();
  block->index = next_block_;
  block->first_sequence = next_sequence_;
  block->residues.reserve(block_residues_ + block_residues_ / 4);
  while (block->residues.size() < block_residues_ && block->sequences() < kMaxSequencesPerBlock &&
         fasta_.next(sequence_)) {
    block->names.push_back(std::move(sequence_.name));
    block->descriptions.push_back(std::move(sequence_.description));
    block->residues.insert(block->residues.end(), sequence_.residues.begin(), sequence_.residues.end());
    block->offsets.push_back(static_cast<std::int64_t>(block->residues.size()));
  }
  if (block->sequences() == 0) return nullptr;
  ++next_block_;
  next_sequence_ += static_cast<std::int64_t>(block->sequences());
  return block;
}

}  // namespace duet::scheduler
