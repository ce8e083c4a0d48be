// PaPaRa's workload in core (src/core/papara): the worked example of the specification
// (../shared/papara/SPEC.md §5), in both gap-flag modes: edges, profiles, per-edge scores,
// branch choice, traceback and the alignment file; and the inputs' errors.
#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"
#include "core/papara/papara_alignment.hpp"
#include "core/papara/papara_choice.hpp"
#include "core/papara/papara_input.hpp"
#include "core/papara/papara_kernel.hpp"
#include "core/papara/papara_reference.hpp"
#include "test_support.hpp"

namespace duet::papara {
namespace {

using test::TempDir;
using test::write_file;

const char* const kTree = "((A:0.1,B:0.1):0.1,C:0.1,D:0.1);\n";
const char* const kAlignment = "4 6\nA CG--TA\nB CG--TA\nC CTGATA\nD CTGATC\n";
const char* const kReads = ">r1\nCGTA\n>r2\nCTGAGTA\n>r3\nCTGAGGTA\n>r4\nTCTGATA\n";
const char* const kExpected =
    "8 10\n"
    "A  -CG---TA--\n"
    "B  -CG---TA--\n"
    "C  -CTGA-TA--\n"
    "D  -CTGA-TC--\n"
    "r1 -CG---TA--\n"
    "r2 -CTGAGTA--\n"
    "r3 -CTGA-GGTA\n"
    "r4 TCTGA-TA--\n";

struct Example {
  TempDir dir;
  Reference reference;
  std::vector<Query> queries;
  Example() {
    write_file(dir.file("ref.tre"), kTree);
    write_file(dir.file("ref.phy"), kAlignment);
    write_file(dir.file("reads.fa"), kReads);
    queries = read_queries(dir.file("reads.fa"));
    std::vector<Query> extra;
    reference =
        make_reference(read_newick(dir.file("ref.tre")), read_phylip(dir.file("ref.phy")), extra);
    EXPECT_TRUE(extra.empty());
  }
};

std::string states_of(const Profiles& p, int edge) {
  std::string s;
  for (int j = 0; j < p.columns; ++j)
    s.push_back(
        kStateChars[p.cells[static_cast<std::size_t>(j * p.edge_stride + edge)] & kStateMask]);
  return s;
}

std::string flags_of(const Profiles& p, int edge) {
  std::string s;
  for (int j = 0; j < p.columns; ++j)
    s.push_back(
        (p.cells[static_cast<std::size_t>(j * p.edge_stride + edge)] & kFlagBit) != 0 ? '1' : '0');
  return s;
}

TEST(PaparaExample, EdgesInPaparasOrder) {
  Example ex;
  const Reference& r = ex.reference;
  ASSERT_EQ(r.edges.size(), 5u);
  const auto name = [&](int node) { return r.nodes[static_cast<std::size_t>(node)].name; };
  // 0 D-R, 1 X-R, 2 A-X, 3 B-X, 4 C-R (R the root, X the ancestor of A and B).
  EXPECT_EQ(name(r.edges[0].node), "D");
  EXPECT_EQ(r.edges[0].parent, r.start);
  EXPECT_EQ(name(r.edges[1].node), "");
  EXPECT_EQ(r.edges[1].parent, r.start);
  EXPECT_EQ(name(r.edges[2].node), "A");
  EXPECT_EQ(r.edges[2].parent, r.edges[1].node);
  EXPECT_EQ(name(r.edges[3].node), "B");
  EXPECT_EQ(name(r.edges[4].node), "C");
  EXPECT_NEAR(r.gap_fraction, 4.0 / 24.0, 1e-15);
}

TEST(PaparaExample, ProfilesInBothModes) {
  Example ex;
  const Profiles cgap = build_profiles(ex.reference, GapMode::cgap);
  const Profiles prob = build_profiles(ex.reference, GapMode::probabilistic);
  const char* states[] = {"CTGATM", "CKGATA", "CGGATA", "CGGATA", "CTGATA"};
  const char* cgap_flags[] = {"000000", "000000", "001100", "001100", "000000"};
  const char* prob_flags[] = {"000000", "001100", "001100", "001100", "000000"};
  for (int e = 0; e < 5; ++e) {
    EXPECT_EQ(states_of(cgap, e), states[e]) << "edge " << e;
    EXPECT_EQ(states_of(prob, e), states[e]) << "edge " << e;
    EXPECT_EQ(flags_of(cgap, e), cgap_flags[e]) << "edge " << e;
    EXPECT_EQ(flags_of(prob, e), prob_flags[e]) << "edge " << e;
  }
  // Padding edges repeat the last.
  EXPECT_EQ(cgap.edge_stride % kEdgeAlign, 0);
  EXPECT_EQ(states_of(cgap, cgap.edge_stride - 1), states[4]);
}

std::vector<std::int16_t> scores(const Profiles& p, const Query& q) {
  std::vector<std::int16_t> out(static_cast<std::size_t>(p.edges));
  score_edges_scalar(q.states, p.view(), 0, p.edges, Scoring{}, out.data());
  return out;
}

TEST(PaparaExample, ScoresAndBranchChoice) {
  Example ex;
  const Profiles cgap = build_profiles(ex.reference, GapMode::cgap);
  const Profiles prob = build_profiles(ex.reference, GapMode::probabilistic);
  EXPECT_EQ(scores(prob, ex.queries[0]), (std::vector<std::int16_t>{4, 8, 8, 8, 4}));
  EXPECT_EQ(scores(cgap, ex.queries[0]), (std::vector<std::int16_t>{4, 6, 8, 8, 4}));
  const int prob_edge[] = {1, 0, 0, 0}, cgap_edge[] = {2, 0, 0, 0};
  const int best[] = {8, 9, 8, 12};
  for (std::size_t q = 0; q < 4; ++q) {
    const auto sp = scores(prob, ex.queries[q]);
    const auto sc = scores(cgap, ex.queries[q]);
    const Choice cp = choose(sp.data(), 0, prob.edges), cc = choose(sc.data(), 0, cgap.edges);
    EXPECT_EQ(cp.edge, prob_edge[q]) << ex.queries[q].name;
    EXPECT_EQ(cp.score, best[q]) << ex.queries[q].name;
    EXPECT_EQ(cc.edge, cgap_edge[q]) << ex.queries[q].name;
    EXPECT_EQ(cc.score, best[q]) << ex.queries[q].name;
  }
  // r1, default mode: edges 1, 2 and 3 tie at 8 (runner-up 8), edges 0 and 4 score 4.
  const auto s = scores(prob, ex.queries[0]);
  Choice merged;  // merged from single edges in reverse order: the same choice
  for (int e = 4; e >= 0; --e)
    merged = merge(merged, choose(&s[static_cast<std::size_t>(e)], e, 1));
  EXPECT_EQ(merged.edge, 1);
  EXPECT_EQ(merged.runner_up, 8);
}

TEST(PaparaExample, TracebackAndAlignmentFile) {
  Example ex;
  for (GapMode mode : {GapMode::probabilistic, GapMode::cgap}) {
    const Profiles p = build_profiles(ex.reference, mode);
    std::vector<Trace> traces;
    for (const Query& q : ex.queries) {
      const auto s = scores(p, q);
      const Choice c = choose(s.data(), 0, p.edges);
      traces.push_back(traceback(q.states, p.view(), c.edge, Scoring{}));
      EXPECT_EQ(traces.back().score, c.score) << q.name;
    }
    if (mode == GapMode::probabilistic) {
      EXPECT_EQ(traces[0].codes, (std::vector<std::uint8_t>{0, 0, 1, 1, 0, 0}));
    }
    std::ostringstream out;
    write_alignment(out, aligned_rows(ex.reference, ex.queries, traces, false), false);
    EXPECT_EQ(out.str(), kExpected);
  }
}

// Each bad input names its file and line.
void expect_input_error(const std::string& tree, const std::string& alignment,
                        const std::string& reads, const std::string& where,
                        const std::string& what) {
  TempDir dir;
  write_file(dir.file("t.tre"), tree);
  write_file(dir.file("a.phy"), alignment);
  write_file(dir.file("q.fa"), reads);
  try {
    std::vector<Query> extra;
    const auto queries = read_queries(dir.file("q.fa"));
    const Reference r =
        make_reference(read_newick(dir.file("t.tre")), read_phylip(dir.file("a.phy")), extra);
    build_profiles(r, GapMode::probabilistic);
    ADD_FAILURE() << "no error for: " << what;
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(dir.file(where)), std::string::npos) << message;
    EXPECT_NE(message.find(what), std::string::npos) << message;
  }
}

TEST(PaparaInputs, BadInputNamesFileAndLine) {
  expect_input_error("((A,B),C,E);", kAlignment, kReads, "t.tre:1", "tip 'E' has no row");
  expect_input_error(kTree, "4 6\nA CG--TA\nB CG--T\nC CTGATA\nD CTGATC\n", kReads, "a.phy:3",
                     "row 'B' has 5 characters");
  expect_input_error(kTree, "4 6\nA CG--TA\nB CG--TA\nC CTGJTA\nD CTGATC\n", kReads, "a.phy:4",
                     "'J' is not a DNA character");
  expect_input_error(kTree, kAlignment, ">r1\nCGTA\n>r2\nnnnn\n", "q.fa:3",
                     "query 'r2' has no residue");
  expect_input_error("((A,B,C),D);", kAlignment, kReads, "t.tre:1", "inner node has 3 children");
  expect_input_error("((A:0,B:0):0.1,C:0.1,D:0.1);",
                     "4 6\nA CG--TA\nB CGA-TA\nC CTGATA\nD CTGATC\n", kReads, "t.tre",
                     "zero-length sibling branches");
}

TEST(PaparaInputs, QueryFilterAndExtraRows) {
  TempDir dir;
  write_file(dir.file("q.fa"), ">  a first\nAC gt-N\nU_RY\n>empty\n\n>b\nT\n");
  const auto q = read_queries(dir.file("q.fa"));
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].name, "a");
  // Lower case, N and U are dropped, and so are _ and -.
  EXPECT_EQ(q[0].states, (std::vector<std::uint8_t>{1, 2, 5, 10}));
  write_file(dir.file("t.tre"), kTree);
  write_file(dir.file("a.phy"), "5 6\nA CG--TA\nB CG--TA\nx CGATAC\nC CTGATA\nD CTGATC\n");
  std::vector<Query> extra;
  const Reference r =
      make_reference(read_newick(dir.file("t.tre")), read_phylip(dir.file("a.phy")), extra);
  ASSERT_EQ(extra.size(), 1u);
  EXPECT_EQ(extra[0].name, "x");
  EXPECT_EQ(r.names, (std::vector<std::string>{"A", "B", "C", "D"}));
}

TEST(PaparaInputs, RootedTreeMergesTheRootBranches) {
  TempDir dir;
  // ((A,B),(C,D)): the numbering starts at (A,B); edge 0 joins it to (C,D).
  write_file(dir.file("t.tre"), "((A:0.1,B:0.2):0.3,(C:0.1,D:0.1):0.4);");
  write_file(dir.file("a.phy"), kAlignment);
  std::vector<Query> extra;
  const Reference r =
      make_reference(read_newick(dir.file("t.tre")), read_phylip(dir.file("a.phy")), extra);
  ASSERT_EQ(r.edges.size(), 5u);
  EXPECT_NEAR(r.edges[0].length, 0.7, 1e-12);
  const auto name = [&](int e) {
    return r.nodes[static_cast<std::size_t>(r.edges[static_cast<std::size_t>(e)].node)].name;
  };
  EXPECT_EQ(name(1), "C");
  EXPECT_EQ(name(2), "D");
  EXPECT_EQ(name(3), "A");
  EXPECT_EQ(name(4), "B");
}

}  // namespace
}  // namespace duet::papara
