// The pair-HMM GPU feeder's host packing alone (device::pairhmm::PairPacker, no GPU): the
// pairs of a pair-HMM input packed in pieces of 4,096 pairs on one thread, as each helper
// of a feeder packs its share, REPEATS times; prints the best ns per pair and checks that
// every piece holds each of its pairs' rows and bases.
// Usage: pairhmm_pack_bench INPUT [repeats]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "core/pairhmm/pairhmm_input.hpp"
#include "core/pairhmm/pairhmm_model.hpp"
#include "device/pairhmm/pairhmm_gpu_layout.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: pairhmm_pack_bench INPUT [repeats]\n");
    return 2;
  }
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  const auto input = duet::pairhmm::read_input(argv[1]);
  const auto pairs = input.pair_list();
  const duet::pairhmm::Model model;
  const duet::device::pairhmm::PairPacker packer(model);
  constexpr std::size_t kPiece = 4096;
  duet::device::pairhmm::PairBatch piece;
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t first = 0; first < pairs.size(); first += kPiece) {
      const auto part = std::span(pairs).subspan(first, std::min(kPiece, pairs.size() - first));
      packer.pack(part, piece);
      // Each pair's rows and bases where its offsets say.
      for (std::size_t i = 0; i < part.size(); ++i) {
        const auto& p = part[i];
        if (piece.rows[i] != p.rows() || piece.columns[i] != p.columns() ||
            piece.read_bases[static_cast<std::size_t>(piece.row_offset[i])] != p.read->bases[0] ||
            piece.haplotype_bases[static_cast<std::size_t>(piece.column_offset[i])] !=
                p.haplotype->bases[0]) {
          std::fprintf(stderr, "pair %zu packed wrong\n", first + i);
          return 1;
        }
      }
    }
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::printf("%zu pairs in pieces of %zu: best of %d %.3f s, %.1f ns per pair\n", pairs.size(),
              kPiece, repeats, best, best / static_cast<double>(pairs.size()) * 1e9);
  return 0;
}
