// Reader throughput: GB/s of FASTA parsed and digitized into scheduler blocks by
// BlockReader (the reader thread's work), checked against the residue count of a first
// pass. Usage: reader_bench FASTA [block_residues] [repeats]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/alphabet.hpp"
#include "scheduler/block.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: reader_bench FASTA [block_residues] [repeats]\n");
    return 2;
  }
  const std::size_t block_residues = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1 << 20;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  const auto bytes = static_cast<double>(std::filesystem::file_size(argv[1]));
  std::int64_t expected = -1;
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    duet::scheduler::BlockReader reader(argv[1], duet::Alphabet::amino(), block_residues);
    std::int64_t residues = 0, sequences = 0;
    while (auto block = reader.next()) {
      residues += block->residue_count();
      sequences += static_cast<std::int64_t>(block->sequences());
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (expected >= 0 && residues != expected) {
      std::fprintf(stderr, "residue count changed between passes\n");
      return 1;
    }
    expected = residues;
    best = std::min(best, s);
    std::printf("pass %d: %lld sequences, %lld residues, %.3f s, %.3f GB/s\n", r, static_cast<long long>(sequences),
                static_cast<long long>(residues), s, bytes / s / 1e9);
  }
  std::printf("best: %.3f GB/s (%.0f MB file)\n", bytes / best / 1e9, bytes / 1e6);
  return 0;
}
