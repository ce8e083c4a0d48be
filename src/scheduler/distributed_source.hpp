// The database shared by the processes (ranks) of a job: each rank runs the whole hybrid
// scheduler on the blocks a coordinator hands it, chunk by chunk, as it asks for them.
//
// - ChunkCoordinator: the hand-out (guided self-scheduling). Chunks of a pass follow one
//   another in block order, each block in exactly one chunk; a chunk is about the
//   remaining blocks / (2 x ranks), so that chunks shrink toward the end and the last
//   rank finishes about one small chunk after the others. The number of blocks is the
//   latest estimate a rank sent with a request (0: none yet: one block).
// - ChunkClient: how a rank asks (the coordinator itself in process, or messages to it:
//   app/kit/cluster.hpp).
// - DistributedSource: a rank's BlockSource. It reads the whole pass of its local source
//   (every rank reads the same blocks, with the same indices), hands on the blocks of
//   its chunks, and tells `skipped` of every other block, so that an in-order result
//   sink (result_sink.hpp) does not wait for them and the rank knows what it ran.
//
// The scheduler knows blocks, not ranks or messages.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "core/block.hpp"

namespace duet::scheduler {

// Blocks [first, last) of a pass.
struct Chunk {
  std::int64_t first = 0, last = 0;
  std::int64_t size() const { return last - first; }
};

class ChunkClient {
 public:
  virtual ~ChunkClient() = default;
  // The rank's next chunk of pass `pass` (0, 1, 2...: every rank runs the same passes in
  // the same order). `estimated_blocks`: the rank's estimate of the pass's blocks (0: not
  // known). A chunk past the pass's end is empty work: the rank finds the end first.
  virtual Chunk next_chunk(int pass, std::int64_t estimated_blocks) = 0;
};

// The chunk rule: of `remaining` estimated blocks among `ranks`, remaining / (2 x ranks),
// at least `min_blocks`.
std::int64_t chunk_blocks(std::int64_t remaining, int ranks, std::int64_t min_blocks);

class ChunkCoordinator final : public ChunkClient {
 public:
  explicit ChunkCoordinator(int ranks, std::int64_t min_blocks = 1);
  // Thread-safe: rank 0's reader and the message service call it at once.
  Chunk next_chunk(int pass, std::int64_t estimated_blocks) override;

 private:
  struct PassState {
    std::int64_t next = 0, estimate = 0;
  };
  int ranks_;
  std::int64_t min_blocks_;
  std::mutex mutex_;
  std::map<int, PassState> passes_;
};

class DistributedSource final : public BlockSource {
 public:
  // Reads `all` (a whole pass, blocks 0, 1, 2...), asking `chunks` for pass `pass`.
  // `expected_blocks`: the workload's estimate of the pass's blocks (0: none), sent with
  // the requests until a tenth of the pass is read; from then on, the blocks read over
  // the share of the pass read.
  DistributedSource(BlockSource& all, ChunkClient& chunks, int pass, std::int64_t expected_blocks,
                    std::function<void(const Block& block)> skipped = {});
  BlockPtr next() override;
  double fraction_done() const override { return all_.fraction_done(); }
  std::int64_t reused_blocks() const override { return all_.reused_blocks(); }
  // This rank's share is not known before the pass ends.
  std::int64_t known_work() const override { return 0; }

  std::int64_t blocks_taken() const { return taken_; }
  // Blocks of the pass read so far (all of them once next() has returned null).
  std::int64_t blocks_read() const { return seen_; }
  std::int64_t chunks_taken() const { return chunks_; }

 private:
  static constexpr double kTrustedShare = 0.1;
  std::int64_t estimated_blocks() const;

  BlockSource& all_;
  ChunkClient& client_;
  int pass_;
  std::int64_t expected_blocks_;
  std::function<void(const Block&)> skipped_;
  Chunk chunk_;             // the current chunk; empty before the first
  std::int64_t seen_ = 0;   // blocks read from `all`
  std::int64_t taken_ = 0;  // of them, handed on
  std::int64_t chunks_ = 0;
  bool ended_ = false;
};

}  // namespace duet::scheduler
