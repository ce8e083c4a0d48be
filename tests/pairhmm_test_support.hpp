// Helpers of the pair-HMM tests: the shared data files and random pairs.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "core/pairhmm/pairhmm_input.hpp"

namespace duet::test {

inline const std::string kPairhmmData = DUET_PAIRHMM_DATA "/";
inline const std::string kGklTestData = kPairhmmData + "gkl-pairhmm-testdata.txt";

// Random batches: reads and haplotypes of lengths 1..max_length over A, C, G, T and N (about
// 2% N), base and gap-continuation qualities 0..93, insertion and deletion qualities 4..93
// (below 4 the match-to-match probability is not positive). Half the reads are copies of
// a piece of a haplotype with substitutions and indels, so that both likely pairs and
// pairs that need the double fallback (log10 below about -64) occur.
inline pairhmm::Input random_input(std::mt19937_64& rng, int batches, int max_length,
                                   int max_reads = 4, int max_haplotypes = 4) {
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::uint8_t codes[] = {pairhmm::kA, pairhmm::kC, pairhmm::kG, pairhmm::kT};
  auto base = [&]() -> std::uint8_t {
    return uniform(0, 49) == 0 ? std::uint8_t{pairhmm::kN} : codes[uniform(0, 3)];
  };
  pairhmm::Input input;
  input.path = "random";
  input.format = pairhmm::Format::batch;
  std::int64_t first = 0;
  for (int b = 0; b < batches; ++b) {
    pairhmm::Batch batch;
    batch.first_pair = first;
    const int haplotypes = uniform(1, max_haplotypes), reads = uniform(1, max_reads);
    for (int h = 0; h < haplotypes; ++h) {
      pairhmm::Haplotype hap;
      hap.bases.resize(static_cast<std::size_t>(uniform(1, max_length)));
      for (auto& x : hap.bases) x = base();
      batch.haplotypes.push_back(std::move(hap));
    }
    for (int r = 0; r < reads; ++r) {
      pairhmm::Read read;
      const auto& source =
          batch.haplotypes[static_cast<std::size_t>(uniform(0, haplotypes - 1))].bases;
      if (uniform(0, 1) == 0) {
        const int start = uniform(0, static_cast<int>(source.size()) - 1);
        for (int i = start; i < static_cast<int>(source.size()) &&
                            static_cast<int>(read.bases.size()) < max_length;
             ++i) {
          const int event = uniform(0, 99);
          if (event < 3) continue;                      // deletion
          if (event < 6) read.bases.push_back(base());  // insertion
          read.bases.push_back(event < 10 ? base() : source[static_cast<std::size_t>(i)]);
        }
        if (read.bases.empty()) read.bases.push_back(base());
      } else {
        read.bases.resize(static_cast<std::size_t>(uniform(1, max_length)));
        for (auto& x : read.bases) x = base();
      }
      const std::size_t n = read.bases.size();
      read.base_quality.resize(n);
      read.insertion_quality.resize(n);
      read.deletion_quality.resize(n);
      read.gcp_quality.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        read.base_quality[i] = static_cast<std::uint8_t>(uniform(0, 93));
        read.insertion_quality[i] = static_cast<std::uint8_t>(uniform(4, 93));
        read.deletion_quality[i] = static_cast<std::uint8_t>(uniform(4, 93));
        read.gcp_quality[i] = static_cast<std::uint8_t>(uniform(0, 93));
      }
      batch.reads.push_back(std::move(read));
    }
    first += batch.pairs();
    input.batches.push_back(std::move(batch));
  }
  return input;
}

// The batch-format text of an input (for command-line tests).
inline std::string batch_text(const pairhmm::Input& input) {
  std::string text;
  auto bases = [](const pairhmm::Bytes& b) {
    std::string s;
    for (auto x : b) s += pairhmm::base_symbol(x);
    return s;
  };
  auto quals = [](const pairhmm::Bytes& q) {
    std::string s;
    for (auto x : q) s += static_cast<char>(x + 33);
    return s;
  };
  for (const auto& b : input.batches) {
    text += std::to_string(b.reads.size()) + " " + std::to_string(b.haplotypes.size()) + "\n";
    for (const auto& r : b.reads) {
      text += bases(r.bases) + " " + quals(r.base_quality) + " " + quals(r.insertion_quality) +
              " " + quals(r.deletion_quality) + " " + quals(r.gcp_quality) + "\n";
    }
    for (const auto& h : b.haplotypes) text += bases(h.bases) + "\n";
  }
  return text;
}

}  // namespace duet::test
