// PaPaRa's workload in core (src/core/papara): the worked example of the specification
// (../shared/papara/SPEC.md §5), in both gap-flag modes: edges, profiles, per-edge scores,
// branch choice, traceback and the alignment file; and the inputs' errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>

#include "app/papara/papara_workload.hpp"
#include "core/error.hpp"
#include "core/papara/papara_alignment.hpp"
#include "core/papara/papara_choice.hpp"
#include "core/papara/papara_input.hpp"
#include "core/papara/papara_kernel.hpp"
#include "core/papara/papara_reference.hpp"
#include "host_simd/cpu_features.hpp"
#include "io/hdf5_file.hpp"
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
                        const std::string& reads, const std::string& where, const std::string& what,
                        Alphabet alphabet = Alphabet::dna) {
  TempDir dir;
  write_file(dir.file("t.tre"), tree);
  write_file(dir.file("a.phy"), alignment);
  write_file(dir.file("q.fa"), reads);
  try {
    std::vector<Query> extra;
    const auto queries = read_queries(dir.file("q.fa"), alphabet);
    const Reference r = make_reference(read_newick(dir.file("t.tre")),
                                       read_phylip(dir.file("a.phy")), extra, alphabet);
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

// Protein (-a), as PaPaRa 2.5's amino-acid model: queries keep only the 20 upper-case
// amino acids; references take them in either case, B (N or D), Z (Q or E) and '-', the only
// gap; anything else (X, ?, ., U, *) is an error naming the file and line.
TEST(PaparaProtein, CharactersAndStateSets) {
  TempDir dir;
  write_file(dir.file("q.fa"), ">p1\nAR ND-Cqx*BZX\nVW\n>p2\nbzx\n>p3\nY\n");
  try {
    read_queries(dir.file("q.fa"), Alphabet::protein);
    ADD_FAILURE() << "no error for a query of B, Z and X only";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("q.fa:4")), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("query 'p2' has no residue"), std::string::npos);
  }
  write_file(dir.file("q.fa"), ">p1\nAR ND-Cqx*BZX\nVW\n>p3\nY\n");
  const auto q = read_queries(dir.file("q.fa"), Alphabet::protein);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].states, (std::vector<std::uint8_t>{0, 1, 2, 3, 4, 19, 17}));  // A R N D C V W
  EXPECT_EQ(q[1].states, (std::vector<std::uint8_t>{18}));
  EXPECT_EQ(residue_char(17, Alphabet::protein), 'W');
  // Reference characters and their state sets.
  EXPECT_EQ(protein_reference_code('a'), 0);
  EXPECT_EQ(protein_reference_code('-'), kProteinGapCode);
  for (char c : {'X', 'x', '?', '.', 'U', '*', 'J', 'O'}) EXPECT_EQ(protein_reference_code(c), -1);
  EXPECT_EQ(protein_state_set(static_cast<std::uint8_t>(protein_reference_code('b'))),
            (1u << 2) | (1u << 3));  // N or D
  EXPECT_EQ(protein_state_set(static_cast<std::uint8_t>(protein_reference_code('Z'))),
            (1u << 5) | (1u << 6));  // Q or E
  EXPECT_EQ(protein_state_set(kProteinGapCode), kProteinStateMask);
  // N is asparagine, not a gap: only '-' makes a column all-gap.
  write_file(dir.file("t.tre"), kTree);
  write_file(dir.file("a.phy"), "4 5\nA MK-NW\nB mk-N-\nC MR-bz\nD MK-NW\n");
  std::vector<Query> extra;
  const Reference r = make_reference(read_newick(dir.file("t.tre")), read_phylip(dir.file("a.phy")),
                                     extra, Alphabet::protein);
  EXPECT_EQ(r.columns(), 4);
  EXPECT_EQ(r.rows[1], "mkN-");
  EXPECT_DOUBLE_EQ(r.gap_fraction, 1.0 / 16);
  const Profiles cgap = build_profiles(r, GapMode::cgap);
  EXPECT_TRUE(cgap.cells.empty());
  ASSERT_EQ(cgap.protein_cells.size(), static_cast<std::size_t>(4 * cgap.edge_stride));
  // Edge 0 is D's: column 2 combines N (A, B, D) with B (C): N.
  EXPECT_EQ(cgap.protein_cells[static_cast<std::size_t>(2 * cgap.edge_stride)], 1u << 2);
  expect_input_error(kTree, "4 5\nA MK-NW\nB MK-NW\nC MKXNW\nD MK-NW\n", ">q\nMKNW\n", "a.phy:4",
                     "'X' is not an amino-acid character", Alphabet::protein);
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

// ---- `duet papara` end to end ----
namespace duet::papara {
namespace {

const std::string kData = DUET_PAPARA_DATA;

struct CaseRun {
  std::string case_dir, expected, args;  // a line of cmd.txt: "expected_X: papara ARGS"
};

std::vector<CaseRun> case_runs() {
  std::vector<CaseRun> runs;
  std::vector<std::string> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(kData))
    if (entry.is_directory()) dirs.push_back(entry.path().string());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    std::istringstream in(test::read_file(dir + "/cmd.txt"));
    std::string line;
    while (std::getline(in, line)) {
      const auto colon = line.find(": papara ");
      if (line.rfind("expected", 0) != 0 || colon == std::string::npos) continue;
      runs.push_back({dir, line.substr(0, colon), line.substr(colon + 9)});
    }
  }
  return runs;
}

// Runs duet papara in the case's folder; the alignment and result file go to `dir`.
test::CommandResult run_duet(const CaseRun& c, const TempDir& dir, const std::string& extra,
                             const std::string& environment = "") {
  return test::run_command("cd " + c.case_dir + " && " + environment + " " DUET_BINARY " papara " +
                           c.args + " --alignment " + dir.file("out.txt") + " --h5 " +
                           dir.file("out.h5") + " --quiet " + extra);
}

// Each query's best edge and score as PaPaRa 2.5 printed them (best_MODE.txt: name edge score).
std::map<std::string, std::pair<int, int>> read_best(const std::string& path) {
  std::map<std::string, std::pair<int, int>> best;
  std::istringstream in(test::read_file(path));
  std::string name;
  int edge = 0, score = 0;
  while (in >> name >> edge >> score) best[name] = {edge, score};
  return best;
}

TEST(PaparaCommand, MatchesPapara25ByteForByte) {
  const auto runs = case_runs();
  ASSERT_GE(runs.size(), 20u) << "no PaPaRa cases in " << kData;
  for (const CaseRun& c : runs) {
    TempDir dir;
    const auto result = run_duet(c, dir, "");
    ASSERT_EQ(result.status, 0) << c.case_dir << " " << c.args << "\n" << result.output;
    EXPECT_EQ(test::read_file(dir.file("out.txt")), test::read_file(c.case_dir + "/" + c.expected))
        << c.case_dir << ": duet papara " << c.args;
    // The chosen edge and its score, where PaPaRa printed them.
    const std::string mode = c.expected.substr(9, c.expected.find('.') - 9);
    const std::string best_file = c.case_dir + "/best_" + mode + ".txt";
    if (!std::filesystem::exists(best_file)) continue;
    const auto best = read_best(best_file);
    const io::Hdf5Reader h5(dir.file("out.h5"));
    const auto names = h5.read_strings("/results/papara/query");
    const auto edges = h5.read_int32("/results/papara/edge");
    const auto scores = h5.read_int32("/results/papara/score");
    ASSERT_EQ(best.size(), names.size()) << best_file;
    for (std::size_t q = 0; q < names.size(); ++q) {
      const auto it = best.find(names[q]);
      ASSERT_NE(it, best.end()) << names[q];
      EXPECT_EQ(edges[q], it->second.first) << best_file << " " << names[q];
      EXPECT_EQ(scores[q], it->second.second) << best_file << " " << names[q];
    }
  }
}

// The alignment and /results/papara of every CPU kernel, CPU-only, hybrid and GPU-only
// (a test-double GPU here; the real one in papara_gpu_tests), with small blocks and failing
// batches, are the default run's.
TEST(PaparaCommand, IdenticalOnEveryKernelAndDevice) {
  const auto runs = case_runs();
  std::vector<std::pair<std::string, std::string>> variants = {
      {"--no-gpu --block-cells 5000", ""},
      {"--cpu 1", ""},
      {"--block-cells 3000 --gpu-batch-blocks 3", "DUET_DEBUG_TEST_GPU=1"},
      {"--block-cells 3000 --gpu-only", "DUET_DEBUG_TEST_GPU=1 DUET_DEBUG_GPU_FAULT_EVERY=2"},
  };
  const std::pair<simd::Isa, const char*> isas[] = {
      {simd::Isa::sse41, "sse4.1"}, {simd::Isa::avx2, "avx2"}, {simd::Isa::avx512, "avx512"}};
  for (const auto& [isa, name] : isas)
    if (simd::cpu_supports(isa)) variants.push_back({std::string("--isa ") + name, ""});
  for (const CaseRun& c : runs) {
    if (c.expected != "expected_default.phy" && c.expected != "expected_c.phy") continue;
    TempDir base;
    ASSERT_EQ(run_duet(c, base, "--isa scalar --no-gpu").status, 0);
    const std::string alignment = test::read_file(base.file("out.txt"));
    EXPECT_EQ(alignment, test::read_file(c.case_dir + "/" + c.expected))
        << c.case_dir << ": duet papara --isa scalar " << c.args;
    const io::Hdf5Reader h5(base.file("out.h5"));
    for (const auto& [options, environment] : variants) {
      TempDir dir;
      const auto result = run_duet(c, dir, options, environment);
      ASSERT_EQ(result.status, 0) << options << "\n" << result.output;
      EXPECT_EQ(test::read_file(dir.file("out.txt")), alignment)
          << c.case_dir << " " << c.args << " " << options;
      const io::Hdf5Reader other(dir.file("out.h5"));
      for (const char* d : {"edge", "score", "runner_up_score"})
        EXPECT_EQ(other.read_int32(std::string("/results/papara/") + d),
                  h5.read_int32(std::string("/results/papara/") + d))
            << c.case_dir << " " << options << " " << d;
    }
  }
}

// The block size: DNA's and protein's (-a) defaults, or --block-cells, as /run records it.
TEST(PaparaCommand, BlockSizeByAlphabetUnlessGiven) {
  const struct {
    const char* folder;
    const char* options;
    std::int64_t block_cells;
  } runs[] = {{"case01", "", app::kPaparaBlockCells},
              {"case13", "-a", app::kPaparaProteinBlockCells},
              {"case13", "-a --block-cells 5000", 5000},
              {"case01", "--block-cells 3000", 3000}};
  for (const auto& r : runs) {
    TempDir dir;
    const auto result = test::run_command(
        "cd " + kData + "/" + r.folder +
        " && " DUET_BINARY " papara -t ref.tre -s ref.phy -q queries.fa --no-gpu --quiet " +
        r.options + " --alignment " + dir.file("out.txt") + " --h5 " + dir.file("out.h5"));
    ASSERT_EQ(result.status, 0) << r.folder << " " << r.options << "\n" << result.output;
    EXPECT_EQ(io::Hdf5Reader(dir.file("out.h5")).attribute_int("/run", "block_cells"),
              r.block_cells)
        << r.folder << " " << r.options;
  }
}

// -n NAME: the alignment goes to papara_alignment.NAME in the current folder, as PaPaRa
// writes it.
TEST(PaparaCommand, RunNameNamesTheAlignmentFile) {
  TempDir dir;
  write_file(dir.file("ref.tre"), kTree);
  write_file(dir.file("ref.phy"), kAlignment);
  write_file(dir.file("q.fa"), kReads);
  const auto result = test::run_command(
      "cd " + dir.path().string() +
      " && " DUET_BINARY " papara -t ref.tre -s ref.phy -q q.fa -n run7 --h5 out.h5 --quiet");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_EQ(test::read_file(dir.file("papara_alignment.run7")), kExpected);
}

// A signal at any phase: exit 130, the old alignment file untouched, nothing else written.
TEST(PaparaCommand, InterruptAtEveryPhaseWritesNothing) {
  for (const char* phase :
       {"read inputs", "built profiles", "scored", "aligned", "wrote the alignment"}) {
    TempDir dir;
    write_file(dir.file("ref.tre"), kTree);
    write_file(dir.file("ref.phy"), kAlignment);
    write_file(dir.file("q.fa"), kReads);
    write_file(dir.file("papara_alignment.default"), "old\n");
    const auto result =
        test::run_command("cd " + dir.path().string() + " && DUET_DEBUG_SIGNAL_AT='2@" + phase +
                          "' " DUET_BINARY " papara -t ref.tre -s ref.phy -q q.fa --h5 out.h5");
    EXPECT_EQ(result.status, 130) << phase << "\n" << result.output;
    EXPECT_EQ(test::read_file(dir.file("papara_alignment.default")), "old\n") << phase;
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path()))
      ++files;
    EXPECT_EQ(files, 4u) << phase;  // the inputs and the old file: no result, no temporary file
  }
}

// Bad input: one message naming the file and line, a non-zero exit, and no output file
// made or changed.
TEST(PaparaCommand, BadInputLeavesEveryFileAsItWas) {
  TempDir dir;
  write_file(dir.file("ref.tre"), "((A:0.1,B:0.1):0.1,C:0.1,E:0.1);\n");
  write_file(dir.file("ref.phy"), kAlignment);
  write_file(dir.file("q.fa"), kReads);
  write_file(dir.file("old.txt"), "keep me\n");
  const auto result = test::run_command(
      "cd " + dir.path().string() +
      " && " DUET_BINARY " papara -t ref.tre -s ref.phy -q q.fa --alignment old.txt --h5 out.h5");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("ref.tre:1: tip 'E' has no row"), std::string::npos)
      << result.output;
  EXPECT_EQ(test::read_file(dir.file("old.txt")), "keep me\n");
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.h5")));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path()))
    ++files;
  EXPECT_EQ(files, 4u);  // no temporary file left
  // A bad scoring scheme is a usage error.
  const auto bad = test::run_command("cd " + dir.path().string() +
                                     " && " DUET_BINARY
                                     " papara -t ref.tre -s ref.phy -p -3:-1:2:-1 --h5 out.h5");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("match + match_cgap must be negative"), std::string::npos)
      << bad.output;
  // --gpu-only -a is taken as DNA's is: on a GPU machine it writes PaPaRa's file (what
  // papara_gpu_tests checks), elsewhere it fails for want of a GPU, writing nothing.
  const auto protein_gpu = test::run_command(
      "cd " + kData + "/case13 && " DUET_BINARY " papara -a -t ref.tre -s ref.phy -q queries.fa " +
      "--alignment " + dir.file("protein.txt") + " --h5 " + dir.file("out.h5") + " --gpu-only");
  if (protein_gpu.status == 0) {
    EXPECT_EQ(test::read_file(dir.file("protein.txt")),
              test::read_file(kData + "/case13/expected_default.phy"));
  } else {
    EXPECT_NE(protein_gpu.output.find("--gpu-only: no"), std::string::npos) << protein_gpu.output;
    EXPECT_EQ(protein_gpu.output.find("DNA only"), std::string::npos) << protein_gpu.output;
    EXPECT_FALSE(std::filesystem::exists(dir.file("protein.txt")));
  }
}

}  // namespace
}  // namespace duet::papara

// ---- a large reference ----
namespace duet::papara {
namespace {

// A random binary tree of `tips` tips (random joins, so about log-deep), as Newick, and a
// random alignment of its tips.
std::string random_newick(std::mt19937_64& rng, int tips) {
  std::vector<std::string> parts;
  for (int t = 0; t < tips; ++t) parts.push_back("t" + std::to_string(t));
  std::uniform_real_distribution<double> length(0.01, 0.3);
  const auto with_length = [&](const std::string& s) {
    return s + ":" + std::to_string(length(rng));
  };
  while (parts.size() > 3) {
    std::uniform_int_distribution<std::size_t> pick(0, parts.size() - 1);
    const std::size_t a = pick(rng);
    std::swap(parts[a], parts.back());
    std::string x = parts.back();
    parts.pop_back();
    const std::size_t b = std::uniform_int_distribution<std::size_t>(0, parts.size() - 1)(rng);
    parts[b] = "(" + with_length(x) + "," + with_length(parts[b]) + ")";
  }
  return "(" + with_length(parts[0]) + "," + with_length(parts[1]) + "," + with_length(parts[2]) +
         ");\n";
}

// An independent statement of §2: each side of an edge by recursion over the tree.
struct NaiveProfiles {
  const Reference& r;
  GapMode mode;
  struct Side {
    std::vector<std::uint8_t> state, aux;
    std::vector<std::array<double, 2>> partial;
    bool tip = false;
  };
  // The side of `node` seen from its neighbour `from`.
  Side side(int node, int from) const {
    const Node& n = r.nodes[static_cast<std::size_t>(node)];
    Side s;
    if (n.row >= 0) {
      s.tip = true;
      for (std::uint8_t st : r.states[static_cast<std::size_t>(n.row)]) {
        s.state.push_back(st);
        s.aux.push_back(st == kGapState ? 1 : 0);
        s.partial.push_back(st == kGapState ? std::array<double, 2>{0, 1}
                                            : std::array<double, 2>{1, 0});
      }
      return s;
    }
    int k = 0;
    Side c[2];
    double len[2] = {0, 0};
    for (int slot = 0; slot < 3; ++slot) {
      if (n.neighbor[static_cast<std::size_t>(slot)] == from) continue;
      c[k] = side(n.neighbor[static_cast<std::size_t>(slot)], node);
      len[k++] = n.length[static_cast<std::size_t>(slot)];
    }
    return combine(c[0], len[0], c[1], len[1]);
  }
  Side combine(const Side& a, double la, const Side& b, double lb) const {
    Side s;
    const double g = r.gap_fraction;
    const auto p = [g](double t, int x, int y) {
      const double d = std::exp(-t);
      const double q[2][2] = {{(1 - g) + g * d, g * (1 - d)}, {(1 - g) * (1 - d), g + (1 - g) * d}};
      return q[x][y];
    };
    for (std::size_t j = 0; j < a.state.size(); ++j) {
      std::uint8_t st = a.state[j] & b.state[j];
      s.state.push_back(st != 0 ? st : static_cast<std::uint8_t>(a.state[j] | b.state[j]));
      const bool tip = a.tip || b.tip;
      const bool ga = tip ? (a.aux[j] & 1) != 0 : a.aux[j] == 1;
      const bool gb = tip ? (b.aux[j] & 1) != 0 : b.aux[j] == 1;
      s.aux.push_back(ga && gb ? 1 : (ga != gb ? 3 : 0));
      std::array<double, 2> l;
      for (int x = 0; x < 2; ++x)
        l[static_cast<std::size_t>(x)] =
            (p(la, x, 0) * a.partial[j][0] + p(la, x, 1) * a.partial[j][1]) *
            (p(lb, x, 0) * b.partial[j][0] + p(lb, x, 1) * b.partial[j][1]);
      if (l[0] < 0x1p-256 && l[1] < 0x1p-256) l = {l[0] * 0x1p256, l[1] * 0x1p256};
      s.partial.push_back(l);
    }
    return s;
  }
  std::string profile(int edge) const {
    const Edge& e = r.edges[static_cast<std::size_t>(edge)];
    const Side s = combine(side(e.node, e.parent), e.length, side(e.parent, e.node), e.length);
    std::string out;
    for (std::size_t j = 0; j < s.state.size(); ++j) {
      const bool flag = mode == GapMode::cgap ? s.aux[j] == 1 : s.partial[j][0] < s.partial[j][1];
      out.push_back(static_cast<char>(s.state[j] | (flag ? kFlagBit : 0)));
    }
    return out;
  }
};

// A 10,000-taxon reference: 19,997 edges in PaPaRa's numbering (each joins a node to the
// parent of an earlier edge or to the start), and the profiles of sampled edges in both
// modes as a direct recursion over the tree computes them.
TEST(PaparaLargeReference, TenThousandTaxa) {
  std::mt19937_64 rng(test::test_seed());
  const int tips = 10000, columns = 40;
  TempDir dir;
  write_file(dir.file("t.tre"), random_newick(rng, tips));
  std::string phylip = std::to_string(tips) + " " + std::to_string(columns) + "\n";
  const char symbols[] = "ACGTACGTACGT-RYN";
  for (int t = 0; t < tips; ++t) {
    phylip += "t" + std::to_string(t) + " ";
    for (int j = 0; j < columns; ++j) phylip.push_back(symbols[rng() % 16]);
    phylip += "\n";
  }
  write_file(dir.file("a.phy"), phylip);
  std::vector<Query> extra;
  const Reference r =
      make_reference(read_newick(dir.file("t.tre")), read_phylip(dir.file("a.phy")), extra);
  ASSERT_EQ(r.edges.size(), static_cast<std::size_t>(2 * tips - 3));
  std::vector<char> seen(r.nodes.size(), 0);
  seen[static_cast<std::size_t>(r.start)] = 1;
  for (const Edge& e : r.edges) {
    EXPECT_TRUE(seen[static_cast<std::size_t>(e.parent)]) << "preorder";
    seen[static_cast<std::size_t>(e.node)] = 1;
  }
  for (GapMode mode : {GapMode::cgap, GapMode::probabilistic}) {
    const Profiles p = build_profiles(r, mode);
    const NaiveProfiles naive{r, mode};
    for (int k = 0; k < 25; ++k) {
      const int edge = static_cast<int>(rng() % r.edges.size());
      std::string got;
      for (int j = 0; j < p.columns; ++j)
        got.push_back(static_cast<char>(
            p.cells[static_cast<std::size_t>(j) * static_cast<std::size_t>(p.edge_stride) +
                    static_cast<std::size_t>(edge)]));
      EXPECT_EQ(got, naive.profile(edge))
          << "edge " << edge << (mode == GapMode::cgap ? " -c" : "");
    }
  }
}

}  // namespace
}  // namespace duet::papara
