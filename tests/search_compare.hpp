// Shared by the tests of whole searches (scheduler, GPU): a prefix of the example
// database, and bitwise equality of two searches' results (what /results holds).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "app/hmmsearch/search.hpp"
#include "core/text_reader.hpp"
#include "test_support.hpp"

namespace duet::test {

// The first `count` records of the MMseqs2 example database, as a plain FASTA file.
inline std::string database_prefix(const TempDir& dir, int count) {
  const std::string path = dir.file("db" + std::to_string(count) + ".fa");
  TextReader in("/usr/share/doc/mmseqs2/example-data/DB.fasta.gz");
  std::ofstream out(path);
  std::string line;
  int headers = 0;
  while (in.next_line(line)) {
    if (!line.empty() && line[0] == '>' && ++headers > count) break;
    out << line << '\n';
  }
  return path;
}

inline void expect_identical(const app::SearchRun& a, const app::SearchRun& b,
                             const std::string& what) {
  ASSERT_EQ(a.queries.size(), b.queries.size()) << what;
  for (std::size_t q = 0; q < a.queries.size(); ++q) {
    const auto& x = a.queries[q];
    const auto& y = b.queries[q];
    EXPECT_EQ(x.counts.targets, y.counts.targets) << what;
    EXPECT_EQ(x.counts.residues, y.counts.residues) << what;
    EXPECT_EQ(x.counts.passed_msv, y.counts.passed_msv) << what;
    EXPECT_EQ(x.counts.passed_bias, y.counts.passed_bias) << what;
    EXPECT_EQ(x.counts.passed_viterbi, y.counts.passed_viterbi) << what;
    EXPECT_EQ(x.counts.passed_forward, y.counts.passed_forward) << what;
    EXPECT_EQ(x.reported, y.reported) << what;
    ASSERT_EQ(x.targets.size(), y.targets.size()) << what;
    for (std::size_t i = 0; i < x.targets.size(); ++i) {
      const auto& s = x.targets[i];
      const auto& t = y.targets[i];
      const std::string where = what + " " + s.name;
      ASSERT_EQ(s.index, t.index) << where;
      EXPECT_EQ(s.name, t.name) << where;
      EXPECT_EQ(s.description, t.description) << where;
      EXPECT_EQ(s.length, t.length) << where;
      EXPECT_EQ(s.scores.stage, t.scores.stage) << where;
      EXPECT_EQ(0, std::memcmp(&s.scores.msv_bits, &t.scores.msv_bits, sizeof(float))) << where;
      EXPECT_EQ(0, std::memcmp(&s.scores.viterbi_bits, &t.scores.viterbi_bits, sizeof(float)))
          << where;
      EXPECT_EQ(0, std::memcmp(&s.scores.forward_bits, &t.scores.forward_bits, sizeof(float)))
          << where;
      EXPECT_EQ(0, std::memcmp(&s.scores.pvalue, &t.scores.pvalue, sizeof(double))) << where;
      EXPECT_EQ(0, std::memcmp(&s.evalue, &t.evalue, sizeof(double))) << where;
      EXPECT_EQ(s.reported, t.reported) << where;
    }
  }
}

}  // namespace duet::test
