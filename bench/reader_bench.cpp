// Reader throughput: GB/s of FASTA parsed and digitized into scheduler blocks by
// BlockReader (what the scheduler's reader does), with the CPU time it took, checked
// against the residue and sequence counts of the sequential FastaReader.
// Usage: reader_bench FASTA [block_residues] [repeats] [parser_threads (0 = auto)]
#include <sys/resource.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/alphabet.hpp"
#include "core/fasta_reader.hpp"
#include "io/block_reader.hpp"

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: reader_bench FASTA [block_residues] [repeats] [parser_threads]\n");
    return 2;
  }
  duet::io::ReaderOptions options;
  options.block_residues = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1 << 20;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  options.threads = argc > 4 ? std::atoi(argv[4]) : 0;
  // GB/s are of FASTA text: for a gzip file, its inflated size (measured by inflating it).
  const auto file_bytes = static_cast<double>(std::filesystem::file_size(argv[1]));
  double bytes = file_bytes;
  {
    gzFile f = gzopen(argv[1], "rb");
    if (f != nullptr && gzdirect(f) == 0) {
      static char buffer[1 << 20];
      bytes = 0;
      int n = 0;
      while ((n = gzread(f, buffer, sizeof buffer)) > 0) bytes += n;
    }
    if (f != nullptr) gzclose(f);
  }
  const duet::Alphabet& alphabet = duet::Alphabet::amino();

  // The answer every pass must give: the sequential reader's counts.
  std::int64_t expected_residues = 0, expected_sequences = 0;
  {
    const auto start = std::chrono::steady_clock::now();
    duet::FastaReader reader(argv[1], alphabet);
    duet::Sequence s;
    while (reader.next(s)) {
      ++expected_sequences;
      expected_residues += static_cast<std::int64_t>(s.residues.size());
    }
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("FastaReader (sequential, line by line): %.3f s, %.3f GB/s\n", t, bytes / t / 1e9);
  }
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const double cpu0 = cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    duet::io::BlockReader reader(argv[1], alphabet, options);
    std::int64_t residues = 0, sequences = 0, blocks = 0;
    while (auto block = reader.next()) {
      if (block->index != blocks || block->first_sequence != sequences) {
        std::fprintf(stderr, "blocks out of order\n");
        return 1;
      }
      residues += block->residue_count();
      sequences += static_cast<std::int64_t>(block->sequences());
      ++blocks;
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu = cpu_seconds() - cpu0;
    if (residues != expected_residues || sequences != expected_sequences) {
      std::fprintf(
          stderr, "BlockReader read %lld sequences, %lld residues; FastaReader %lld, %lld\n",
          static_cast<long long>(sequences), static_cast<long long>(residues),
          static_cast<long long>(expected_sequences), static_cast<long long>(expected_residues));
      return 1;
    }
    best = std::min(best, s);
    std::printf(
        "BlockReader pass %d: %lld sequences, %lld residues, %lld blocks, %.3f s, %.3f GB/s, "
        "CPU %.2f s (%.3f GB per CPU second)\n",
        r, static_cast<long long>(sequences), static_cast<long long>(residues),
        static_cast<long long>(blocks), s, bytes / s / 1e9, cpu, bytes / cpu / 1e9);
  }
  std::printf("best: %.3f GB/s of FASTA text (%.0f MB of text, %.0f MB file)\n", bytes / best / 1e9,
              bytes / 1e6, file_bytes / 1e6);
  return 0;
}
