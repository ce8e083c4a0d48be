// Feeding a GPU with pairs in parts, overlapped: the host packs and stages one part while the
// GPU runs the part before (each part on the next of the GPU's slots, round robin).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "core/pairhmm/pairhmm_model.hpp"
#include "device/pairhmm/pairhmm_gpu.hpp"
#include "device/pairhmm/pairhmm_gpu_layout.hpp"

namespace duet::device::pairhmm {

// Where the host's time went (seconds, summed over calls) and what the GPU's events say.
// With parts overlapped, kernel and transfer are summed over parts that ran at the same
// time, so they can add up to more than the wall time.
struct FeedTimes {
  std::int64_t parts = 0;           // parts submitted (empty ones included)
  double pack = 0;                  // host: pack_pairs
  double submit = 0;                // host: shape choice, staging into pinned memory, launches
  double choice = 0, staging = 0;   // of submit: the shape choice, the staging
  double wait = 0;                  // host: blocked in finish, waiting for the GPU
  double kernel = 0, transfer = 0;  // GPU events per part, summed
  std::size_t upload_bytes = 0;     // bytes of the packed parts (what is copied in)
};

// Part ends (indices into pairs, non-decreasing, the last one pairs.size()) cutting
// `pairs` into `parts` parts of about equal cells; a part may be empty (a pair of many
// cells, or fewer pairs than parts). parts < 1 counts as 1.
std::vector<std::size_t> split_by_cells(std::span<const duet::pairhmm::Pair> pairs, int parts);

// What the host packs parts into, kept between calls by a caller that feeds many batches:
// the vectors keep their capacity, so that packing does not fault in fresh memory for
// every batch.
struct FeedBuffers {
  PairBatch packed;
  std::vector<PairBatch> pieces;  // the pieces of a part packed in parallel
};

// Batches cut in parts on a GPU's slots, several batches in flight: submit() packs each
// part of a batch (packer) and submits it to the next slot in turn, first finishing that
// slot's earlier part (whose sums go to its own batch); collect() returns the oldest
// batch's sums once its parts are done. With 2 parts a batch and 4 slots, a batch's parts
// are packed while the GPU runs the batch before. On a failure both throw; then call
// abandon() (every batch in flight is dropped) before submitting again.
class PartPipeline {
 public:
  // `buffers`: where to pack (none: buffers of the pipeline's own).
  PartPipeline(PairhmmGpu& gpu, const PairPacker& packer, Kernel kernel,
               FeedBuffers* buffers = nullptr)
      : gpu_(gpu),
        packer_(packer),
        kernel_(kernel),
        slots_(static_cast<std::size_t>(gpu.slots())),
        buffers_(buffers != nullptr ? *buffers : own_buffers_) {}
  // `pairs` must stay alive and unchanged until its batch is collected (or abandoned).
  void submit(std::span<const duet::pairhmm::Pair> pairs, std::span<const std::size_t> ends,
              FeedTimes* times = nullptr, const PairPacker::ParallelFor& parallel = {},
              std::size_t piece_pairs = 4096);
  std::vector<float> collect(FeedTimes* times = nullptr);
  void abandon() noexcept;

 private:
  struct Batch {
    std::vector<float> sums;
    int parts_left = 0;
  };
  struct Slot {
    Batch* batch = nullptr;  // the batch of the part it holds; none: free
    std::size_t first = 0;   // the part's first pair in its batch
  };
  void finish_slot(std::size_t slot, FeedTimes& t);

  PairhmmGpu& gpu_;
  const PairPacker& packer_;
  Kernel kernel_;
  std::deque<Batch> batches_;  // oldest first; references stay valid as both ends change
  std::vector<Slot> slots_;
  std::size_t next_slot_ = 0;
  FeedBuffers own_buffers_;
  FeedBuffers& buffers_;
};

// The canonical float sums of `pairs` (sums[i] for pairs[i]), computed part by part:
// part k is pairs[ends[k-1], ends[k]) (from 0 for k = 0). Each part is packed (packer) on the host
// and submitted to the next slot of the GPU, waiting for that slot's previous part first, so
// that packing and staging part k + 1 overlaps the copies and the kernel of part k. On any
// failure the GPU's slots are abandoned and the exception propagates (no sums). With
// `parallel`, each part is packed in pieces of `piece_pairs` pairs on several threads
// (PairPacker::pack). `buffers`: where to pack (none: buffers of this call only).
std::vector<float> forward_sums_in_parts(PairhmmGpu& gpu, const PairPacker& packer,
                                         std::span<const duet::pairhmm::Pair> pairs,
                                         std::span<const std::size_t> ends, Kernel kernel,
                                         FeedTimes* times = nullptr,
                                         const PairPacker::ParallelFor& parallel = {},
                                         std::size_t piece_pairs = 4096,
                                         FeedBuffers* buffers = nullptr);

}  // namespace duet::device::pairhmm
