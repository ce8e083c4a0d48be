// Pair-HMM inputs: reads (bases and four Phred quality strings) and haplotypes, grouped in
// batches where every read is scored against every haplotype of its batch.
//
// Two text formats (plain or gzip), both read strictly: an error names the file and line.
// - gkl: GKL's and GATK's test format, one pair per line, seven whitespace-separated
//   columns: haplotype, read, base qualities, insertion qualities, deletion qualities,
//   gap-continuation qualities, and an optional expected log10 likelihood. Lines starting
//   with '#' are comments. Each line is a batch of one read and one haplotype.
// - batch: a line "R H" (R, H >= 1), then R read lines (bases, base, insertion, deletion and
//   gap-continuation qualities), then H haplotype lines (bases), repeated to the end.
// Blank lines are skipped in both. Bases are A, C, G, T or N (upper case); qualities are
// Phred+33 characters ('!' to '~', 0 to 93), one per base; reads and haplotypes are not empty.
//
// Pairs are numbered in input order: batch by batch, read by read, haplotype by haplotype.
#pragma once

#include <cstdint>
#include <memory>
#include <memory_resource>
#include <string>
#include <vector>

namespace duet::pairhmm {

// Base codes: one bit per nucleotide, N all four bits, so that two bases "match" (GATK:
// equal, or either is N) exactly when their codes share a bit.
enum BaseCode : std::uint8_t { kA = 1, kC = 2, kG = 4, kT = 8, kN = 15 };
inline bool bases_match(std::uint8_t a, std::uint8_t b) {
  return (a & b) != 0;
}
char base_symbol(std::uint8_t code);

// A read's or haplotype's bytes. Those read from a file sit in an arena of their Input
// (one allocation for many reads: a file of millions of small batches was mostly malloc,
// page faults and free); those made otherwise, or copied, on the heap.
using Bytes = std::pmr::vector<std::uint8_t>;

struct Read {
  Bytes bases;                                                           // BaseCode
  Bytes base_quality, insertion_quality, deletion_quality, gcp_quality;  // Phred
  int length() const { return static_cast<int>(bases.size()); }
};

struct Haplotype {
  Bytes bases;  // BaseCode
  int length() const { return static_cast<int>(bases.size()); }
};

struct Batch {
  std::vector<Read> reads;
  std::vector<Haplotype> haplotypes;
  std::int64_t first_pair = 0;  // number of the batch's first pair in the input
  std::int64_t pairs() const {
    return static_cast<std::int64_t>(reads.size()) * static_cast<std::int64_t>(haplotypes.size());
  }
};

// One read against one haplotype, pointing into an Input (which must outlive it).
struct Pair {
  const Read* read = nullptr;
  const Haplotype* haplotype = nullptr;
  int rows() const { return read->length(); }
  int columns() const { return haplotype->length(); }
  std::int64_t cells() const { return static_cast<std::int64_t>(rows()) * columns(); }
};

enum class Format { automatic, gkl, batch };
// "gkl", "batch" or "auto"; anything else throws UsageError.
Format parse_format(const std::string& name);
const char* format_name(Format format);

struct Input {
  std::string path;
  Format format = Format::gkl;  // the format actually read
  // The arenas the reads and haplotypes read from the file were allocated from: released
  // with the Input, after its batches (declared before them). Its batches must not outlive
  // it, nor move to another Input without these.
  std::vector<std::shared_ptr<std::pmr::memory_resource>> arenas;
  std::vector<Batch> batches;
  std::vector<double> expected;  // gkl only: per pair, NaN where the column is absent

  std::int64_t pairs() const;
  std::int64_t cells() const;
  // Every pair, in input order.
  std::vector<Pair> pair_list() const;
};

// Reads a whole file. Format::automatic looks at the first line that is neither blank nor a
// comment: two integers mean batch, six or seven columns gkl. Throws InputError.
Input read_input(const std::string& path, Format format = Format::automatic);

}  // namespace duet::pairhmm
