// forward_sums_in_parts: see pairhmm_gpu_feed.hpp.
#include "device/pairhmm/pairhmm_gpu_feed.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace duet::device::pairhmm {

std::vector<std::size_t> split_by_cells(std::span<const duet::pairhmm::Pair> pairs, int parts) {
  parts = std::max(1, parts);
  std::int64_t total = 0;
  for (const auto& p : pairs) total += p.cells();
  std::vector<std::size_t> ends;
  ends.reserve(static_cast<std::size_t>(parts));
  std::int64_t so_far = 0;
  std::size_t i = 0;
  for (int k = 1; k < parts; ++k) {
    // Part k ends at the first pair that takes the running total to k / parts of the cells.
    const std::int64_t target = total / parts * k + total % parts * k / parts;
    while (i < pairs.size() && so_far < target) so_far += pairs[i++].cells();
    ends.push_back(i);
  }
  ends.push_back(pairs.size());
  return ends;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

void add_times(FeedTimes& to, const FeedTimes& t) {
  to.parts += t.parts;
  to.pack += t.pack;
  to.submit += t.submit;
  to.choice += t.choice;
  to.staging += t.staging;
  to.wait += t.wait;
  to.kernel += t.kernel;
  to.transfer += t.transfer;
  to.upload_bytes += t.upload_bytes;
}

}  // namespace

void PartPipeline::finish_slot(std::size_t slot, FeedTimes& t) {
  Slot& s = slots_[slot];
  const auto t0 = Clock::now();
  SlotTimes st;
  gpu_.finish(static_cast<int>(slot), s.batch->sums.data() + s.first, &st);
  s.batch->parts_left -= 1;
  s.batch = nullptr;
  t.wait += seconds(Clock::now() - t0);
  t.kernel += st.kernel;
  t.transfer += st.transfer;
  t.choice += st.choice;
  t.staging += st.staging;
}

void PartPipeline::submit(std::span<const duet::pairhmm::Pair> pairs,
                          std::span<const std::size_t> ends, FeedTimes* times,
                          const PairPacker::ParallelFor& parallel, std::size_t piece_pairs) {
  if (ends.empty() || ends.back() != pairs.size()) {
    throw std::invalid_argument("PartPipeline::submit: the last part must end at the last pair");
  }
  FeedTimes t;
  Batch& batch = batches_.emplace_back();
  batch.sums.resize(pairs.size());
  std::size_t begin = 0;
  for (std::size_t k = 0; k < ends.size(); ++k) {
    if (ends[k] < begin || ends[k] > pairs.size()) {
      throw std::invalid_argument("PartPipeline::submit: part ends must not decrease");
    }
    const auto t0 = Clock::now();
    packer_.pack(pairs.subspan(begin, ends[k] - begin), buffers_.packed, buffers_.pieces, parallel,
                 piece_pairs);
    const auto t1 = Clock::now();
    const std::size_t slot = next_slot_;
    next_slot_ = (next_slot_ + 1) % slots_.size();
    if (slots_[slot].batch != nullptr) finish_slot(slot, t);
    const auto t2 = Clock::now();
    gpu_.submit(static_cast<int>(slot), buffers_.packed, kernel_, parallel);
    slots_[slot] = Slot{&batch, begin};
    batch.parts_left += 1;
    t.pack += seconds(t1 - t0);
    t.submit += seconds(Clock::now() - t2);
    t.parts += 1;
    const PairBatch& p = buffers_.packed;
    t.upload_bytes += p.qualities.size() * sizeof(std::uint32_t) + p.tables.size() * sizeof(float) +
                      p.read_bases.size() + p.haplotype_bases.size() + p.pairs() * 36;
    begin = ends[k];
  }
  if (times) add_times(*times, t);
}

std::vector<float> PartPipeline::collect(FeedTimes* times) {
  if (batches_.empty()) throw std::logic_error("PartPipeline::collect: no batch in flight");
  FeedTimes t;
  Batch& oldest = batches_.front();
  // Its parts still on slots, in the order they were submitted.
  for (std::size_t k = 0; k < slots_.size() && oldest.parts_left > 0; ++k) {
    const std::size_t slot = (next_slot_ + k) % slots_.size();
    if (slots_[slot].batch == &oldest) finish_slot(slot, t);
  }
  std::vector<float> sums = std::move(oldest.sums);
  batches_.pop_front();
  if (times) add_times(*times, t);
  return sums;
}

void PartPipeline::abandon() noexcept {
  gpu_.abandon();
  for (Slot& s : slots_) s = Slot{};
  batches_.clear();
}

std::vector<float> forward_sums_in_parts(PairhmmGpu& gpu, const PairPacker& packer,
                                         std::span<const duet::pairhmm::Pair> pairs,
                                         std::span<const std::size_t> ends, Kernel kernel,
                                         FeedTimes* times, const PairPacker::ParallelFor& parallel,
                                         std::size_t piece_pairs, FeedBuffers* buffers) {
  PartPipeline pipeline(gpu, packer, kernel, buffers);
  try {
    pipeline.submit(pairs, ends, times, parallel, piece_pairs);
    return pipeline.collect(times);
  } catch (...) {
    pipeline.abandon();
    throw;
  }
}

}  // namespace duet::device::pairhmm
