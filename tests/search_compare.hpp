// Shared by the tests of whole searches (scheduler, GPU): a prefix of the example
// database, and bitwise equality of two searches' results (what /results holds).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "app/hmmsearch/search.hpp"
#include "core/hmmsearch/synthetic.hpp"
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

// One query's results: its pipeline counts and every target's record, bit for bit.
inline void expect_identical_query(const app::QueryResult& x, const app::QueryResult& y,
                                   const std::string& what) {
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
    EXPECT_EQ(s.included, t.included) << where;
    // Domain definition: the same domains, scores bit for bit.
    const TargetDomains& a = s.domains;
    const TargetDomains& b = t.domains;
    EXPECT_EQ(0, std::memcmp(&a.score_bits, &b.score_bits, sizeof(float))) << where;
    ASSERT_EQ(a.domains.size(), b.domains.size()) << where;
    for (std::size_t d = 0; d < a.domains.size(); ++d) {
      const Domain& dx = a.domains[d];
      const Domain& dy = b.domains[d];
      EXPECT_EQ(dx.env_from, dy.env_from) << where;
      EXPECT_EQ(dx.env_to, dy.env_to) << where;
      EXPECT_EQ(dx.ali_from, dy.ali_from) << where;
      EXPECT_EQ(dx.hmm_from, dy.hmm_from) << where;
      EXPECT_EQ(0, std::memcmp(&dx.bits, &dy.bits, sizeof(float))) << where;
      EXPECT_EQ(dx.alignment.target, dy.alignment.target) << where;
      EXPECT_EQ(dx.reported, dy.reported) << where;
    }
  }
}

inline void expect_identical(const app::SearchRun& a, const app::SearchRun& b,
                             const std::string& what) {
  ASSERT_EQ(a.queries.size(), b.queries.size()) << what;
  for (std::size_t q = 0; q < a.queries.size(); ++q)
    expect_identical_query(a.queries[q], b.queries[q], what);
}

// `count` short models (20 to 60 nodes) for a many-model run: `distinct` of them drawn
// from the tutorial Pfam models and calibrated (duet's synthetic models), repeated in turn
// under names of their own; `drawn` gets the distinct ones.
inline std::vector<HmmModel> short_models(int count, int distinct, std::uint64_t seed,
                                          std::vector<HmmModel>& drawn) {
  std::vector<HmmModel> sources;
  for (const char* name : {"globins4.hmm", "fn3.hmm", "Pkinase.hmm"}) {
    std::vector<HmmModel> m =
        read_hmm_file(std::string("/usr/share/doc/hmmer/examples/tutorial/") + name);
    sources.push_back(std::move(m.front()));
  }
  drawn.clear();
  for (int k = 0; k < distinct; ++k) {
    const std::uint64_t s = seed + static_cast<std::uint64_t>(k);
    HmmModel m =
        synthetic_model(sources, 20 + static_cast<int>(s % 41), s, "short" + std::to_string(k));
    calibrate_model(m, s);
    drawn.push_back(std::move(m));
  }
  std::vector<HmmModel> models;
  for (int i = 0; i < count; ++i) {
    models.push_back(drawn[static_cast<std::size_t>(i % distinct)]);
    models.back().name = "m" + std::to_string(i);
  }
  return models;
}

// Every query of `run` has the results of its model searched alone (alone[q % size],
// one-model runs); stops at the first query that differs.
inline void expect_each_as_alone(const app::SearchRun& run,
                                 const std::vector<app::SearchRun>& alone,
                                 const std::string& what) {
  for (std::size_t q = 0; q < run.queries.size(); ++q) {
    const app::SearchRun& one = alone[q % alone.size()];
    ASSERT_EQ(one.queries.size(), 1u);
    expect_identical_query(one.queries[0], run.queries[q], what + ", query " + std::to_string(q));
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace duet::test
