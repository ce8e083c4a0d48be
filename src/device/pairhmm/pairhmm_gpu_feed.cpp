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

std::vector<float> forward_sums_in_parts(PairhmmGpu& gpu, const PairPacker& packer,
                                         std::span<const duet::pairhmm::Pair> pairs,
                                         std::span<const std::size_t> ends, Kernel kernel,
                                         FeedTimes* times, const PairPacker::ParallelFor& parallel,
                                         std::size_t piece_pairs, FeedBuffers* buffers) {
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  if (ends.empty() || ends.back() != pairs.size()) {
    throw std::invalid_argument("forward_sums_in_parts: the last part must end at the last pair");
  }
  std::vector<float> sums(pairs.size());
  FeedTimes t;
  // The part each slot holds (its first pair), in order of submission: part k on slot k % S.
  const int slots = gpu.slots();
  std::vector<std::size_t> first_in(static_cast<std::size_t>(slots));
  std::vector<bool> busy(static_cast<std::size_t>(slots), false);
  const auto collect = [&](int slot) {
    const auto t0 = Clock::now();
    SlotTimes st;
    gpu.finish(slot, sums.data() + first_in[static_cast<std::size_t>(slot)], &st);
    busy[static_cast<std::size_t>(slot)] = false;
    t.wait += seconds(Clock::now() - t0);
    t.kernel += st.kernel;
    t.transfer += st.transfer;
    t.choice += st.choice;
    t.staging += st.staging;
  };
  FeedBuffers own;
  FeedBuffers& use = buffers != nullptr ? *buffers : own;
  PairBatch& packed = use.packed;  // reused: its vectors keep their capacity
  std::vector<PairBatch>& pieces = use.pieces;
  try {
    std::size_t begin = 0;
    for (std::size_t k = 0; k < ends.size(); ++k) {
      if (ends[k] < begin || ends[k] > pairs.size()) {
        throw std::invalid_argument("forward_sums_in_parts: part ends must not decrease");
      }
      const auto t0 = Clock::now();
      packer.pack(pairs.subspan(begin, ends[k] - begin), packed, pieces, parallel, piece_pairs);
      const auto t1 = Clock::now();
      const int slot = static_cast<int>(k % static_cast<std::size_t>(slots));
      if (busy[static_cast<std::size_t>(slot)]) collect(slot);
      const auto t2 = Clock::now();
      gpu.submit(slot, packed, kernel, parallel);
      busy[static_cast<std::size_t>(slot)] = true;
      first_in[static_cast<std::size_t>(slot)] = begin;
      t.pack += seconds(t1 - t0);
      t.submit += seconds(Clock::now() - t2);
      t.parts += 1;
      t.upload_bytes += packed.qualities.size() * sizeof(std::uint32_t) +
                        packed.tables.size() * sizeof(float) + packed.read_bases.size() +
                        packed.haplotype_bases.size() + packed.pairs() * 36;
      begin = ends[k];
    }
    // The parts still in flight, oldest first.
    for (std::size_t k = 0; k < static_cast<std::size_t>(slots); ++k) {
      const int slot = static_cast<int>((ends.size() + k) % static_cast<std::size_t>(slots));
      if (busy[static_cast<std::size_t>(slot)]) collect(slot);
    }
  } catch (...) {
    gpu.abandon();
    throw;
  }
  if (times) {
    times->parts += t.parts;
    times->pack += t.pack;
    times->submit += t.submit;
    times->choice += t.choice;
    times->staging += t.staging;
    times->wait += t.wait;
    times->kernel += t.kernel;
    times->transfer += t.transfer;
    times->upload_bytes += t.upload_bytes;
  }
  return sums;
}

}  // namespace duet::device::pairhmm
