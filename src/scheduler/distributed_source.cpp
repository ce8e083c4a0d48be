// ChunkCoordinator and DistributedSource: see distributed_source.hpp.
#include "scheduler/distributed_source.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace duet::scheduler {

std::int64_t chunk_blocks(std::int64_t remaining, int ranks, std::int64_t min_blocks) {
  const std::int64_t min = std::max<std::int64_t>(1, min_blocks);
  if (remaining <= 0) return min;
  return std::max(min, remaining / (2 * std::max(1, ranks)));
}

ChunkCoordinator::ChunkCoordinator(int ranks, std::int64_t min_blocks)
    : ranks_(std::max(1, ranks)), min_blocks_(std::max<std::int64_t>(1, min_blocks)) {}

Chunk ChunkCoordinator::next_chunk(int pass, std::int64_t estimated_blocks) {
  std::lock_guard lock(mutex_);
  PassState& p = passes_[pass];
  if (estimated_blocks > 0) p.estimate = estimated_blocks;  // the latest is the best
  const std::int64_t size = chunk_blocks(p.estimate - p.next, ranks_, min_blocks_);
  const Chunk chunk{p.next, p.next + size};
  p.next = chunk.last;
  return chunk;
}

DistributedSource::DistributedSource(BlockSource& all, ChunkClient& chunks, int pass,
                                     std::int64_t expected_blocks,
                                     std::function<void(const Block&)> skipped)
    : all_(all),
      client_(chunks),
      pass_(pass),
      expected_blocks_(expected_blocks),
      skipped_(std::move(skipped)) {}

std::int64_t DistributedSource::estimated_blocks() const {
  // The first blocks of a file can be smaller than the rest (io::ReaderOptions::consumers),
  // so the share read says little at first.
  const double done = all_.fraction_done();
  if (seen_ == 0 || done < kTrustedShare) return expected_blocks_;
  return std::max(
      seen_, static_cast<std::int64_t>(static_cast<double>(seen_) / std::min(1.0, done) + 0.5));
}

BlockPtr DistributedSource::next() {
  while (!ended_) {
    if (seen_ >= chunk_.last) {
      chunk_ = client_.next_chunk(pass_, estimated_blocks());
      ++chunks_;
      if (chunk_.first < seen_ || chunk_.size() <= 0) {
        throw std::logic_error("DistributedSource: chunk [" + std::to_string(chunk_.first) + ", " +
                               std::to_string(chunk_.last) + ") of pass " + std::to_string(pass_) +
                               " is not ahead of block " + std::to_string(seen_));
      }
    }
    // Another rank's block is only passed by (next_to_skip: its extent).
    BlockPtr block = seen_ < chunk_.first ? all_.next_to_skip() : all_.next();
    if (!block) {
      ended_ = true;
      break;
    }
    if (block->index != seen_) {
      throw std::logic_error("DistributedSource: block " + std::to_string(block->index) +
                             " came where block " + std::to_string(seen_) + " was due");
    }
    ++seen_;
    if (block->index < chunk_.first) {
      if (skipped_) skipped_(*block);
      continue;
    }
    ++taken_;
    return block;
  }
  return nullptr;
}

}  // namespace duet::scheduler
