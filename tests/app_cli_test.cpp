// The `duet` command as a user meets it: bad input gives one clear message naming the
// file (and line), a non-zero exit, and leaves nothing behind; good input gives an HDF5
// file whose contents agree with the text report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "io/hdf5_file.hpp"
#include "io/sweep.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

using test::TempDir;

const std::string kGlobins = "/usr/share/doc/hmmer/examples/tutorial/globins4.hmm";
const std::string kDuet = DUET_BINARY;

std::string small_db(const TempDir& dir) {
  const std::string path = dir.file("db.fa");
  test::run_command("zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz | head -n 600 > " + path);
  return path;
}

// Runs duet expecting failure; checks the message and that the folder holds only `keep`.
void expect_failure(const TempDir& dir, const std::string& args, const std::string& must_contain,
                    std::size_t files_expected) {
  const auto r = test::run_command(kDuet + " " + args);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(must_contain), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("duet: error: "), std::string::npos) << r.output;
  // One line of error, no half-written files.
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
  }
  EXPECT_EQ(files, files_expected);
}

TEST(Cli, MissingFiles) {
  TempDir dir;
  const std::string db = small_db(dir);
  expect_failure(dir, "hmmsearch --h5 " + dir.file("o.h5") + " " + dir.file("nope.hmm") + " " + db,
                 "nope.hmm", 1);
  expect_failure(dir,
                 "hmmsearch --h5 " + dir.file("o.h5") + " " + kGlobins + " " + dir.file("nope.fa"),
                 "nope.fa", 1);
}

TEST(Cli, MalformedFastaNamesLineAndKeepsExistingOutput) {
  TempDir dir;
  test::write_file(dir.file("bad.fa"), ">a\nACDEF\n>b\nAC%DE\n");
  test::write_file(dir.file("old.h5"), "previous results");
  expect_failure(dir,
                 "hmmsearch --h5 " + dir.file("old.h5") + " " + kGlobins + " " + dir.file("bad.fa"),
                 "bad.fa:4: illegal character '%'", 2);
  EXPECT_EQ(test::read_file(dir.file("old.h5")), "previous results");
}

TEST(Cli, MalformedHmmNamesLine) {
  TempDir dir;
  std::string text = test::read_file(kGlobins);
  const auto p = text.find("      3 ");
  text.replace(p + 10, 7, "abcdefg");
  test::write_file(dir.file("bad.hmm"), text);
  const std::string db = small_db(dir);
  const auto line = std::count(text.begin(), text.begin() + static_cast<long>(p), '\n') + 1;
  expect_failure(dir, "hmmsearch --h5 " + dir.file("o.h5") + " " + dir.file("bad.hmm") + " " + db,
                 "bad.hmm:" + std::to_string(line) + ":", 2);
}

TEST(Cli, BadConfigFiles) {
  TempDir dir;
  const std::string db = small_db(dir);
  test::write_file(dir.file("unknown.toml"), "[hmmsearch]\nE = 1.0\nF4 = 0.1\n");
  expect_failure(dir,
                 "hmmsearch --config " + dir.file("unknown.toml") + " --h5 " + dir.file("o.h5") +
                     " " + kGlobins + " " + db,
                 "unknown.toml:3:", 2);
  test::write_file(dir.file("type.toml"), "[run]\ncpu = \"two\"\n");
  expect_failure(dir,
                 "hmmsearch --config " + dir.file("type.toml") + " --h5 " + dir.file("o.h5") + " " +
                     kGlobins + " " + db,
                 "type.toml:2:", 3);
}

// A kernel table the user names is read even on a CPU-only run: a missing file or a bad
// row is an error naming it, not silently ignored.
TEST(Cli, BadGpuKernelTable) {
  TempDir dir;
  const std::string db = small_db(dir);
  expect_failure(dir,
                 "hmmsearch --no-gpu --gpu-kernel-table " + dir.file("none.toml") + " --h5 " +
                     dir.file("o.h5") + " " + kGlobins + " " + db,
                 "none.toml", 1);
  test::write_file(dir.file("table.toml"),
                   "device = \"x\"\nmeasured = \"2026-11-22\"\n[[row]]\nmax_length = 10\n"
                   "msv_group_threads = 12\nviterbi_strategy = \"warp\"\n");
  expect_failure(dir,
                 "hmmsearch --no-gpu --gpu-kernel-table " + dir.file("table.toml") + " --h5 " +
                     dir.file("o.h5") + " " + kGlobins + " " + db,
                 "table.toml:5:", 2);
}

TEST(Cli, CorruptGzipDatabase) {
  TempDir dir;
  test::run_command(
      "zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz | head -n 4000 | gzip > " +
      dir.file("db.fa.gz"));
  std::string bytes = test::read_file(dir.file("db.fa.gz"));
  for (std::size_t i = bytes.size() / 2; i < bytes.size() / 2 + 64; ++i)
    bytes[i] = static_cast<char>(~bytes[i]);
  test::write_file(dir.file("db.fa.gz"), bytes);
  expect_failure(dir,
                 "hmmsearch --h5 " + dir.file("o.h5") + " " + kGlobins + " " + dir.file("db.fa.gz"),
                 "db.fa.gz", 1);
}

TEST(Cli, OutputFolderMissing) {
  TempDir dir;
  const std::string db = small_db(dir);
  expect_failure(dir, "hmmsearch --h5 " + dir.file("no/such/o.h5") + " " + kGlobins + " " + db,
                 "no/such/o.h5", 1);
  expect_failure(dir,
                 "hmmsearch --tblout " + dir.file("no/t.tbl") + " --h5 " + dir.file("o.h5") + " " +
                     kGlobins + " " + db,
                 "no/t.tbl", 1);
}

// A quiet run prints nothing, whatever the worker count against the cores (oneTBB warns
// on stderr when an arena asks for more threads than it may have; duet sets its limits).
TEST(Cli, QuietRunPrintsNothingWithMoreWorkersThanCores) {
  TempDir dir;
  const std::string models = dir.file("three.hmm");
  test::run_command("cat " + kGlobins + " /usr/share/doc/hmmer/examples/tutorial/fn3.hmm " +
                    kGlobins + " > " + models);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string workers = std::to_string(cores + 3);
  for (const std::string extra : {"", " --no-gpu"}) {
    const auto r =
        test::run_command(kDuet + " hmmsearch --quiet --cpu " + workers + extra + " --h5 " +
                          dir.file("r.h5") + " " + models + " " + small_db(dir));
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, "") << "--cpu " << workers << extra;
  }
}

TEST(Cli, ResultFileAgreesWithReport) {
  TempDir dir;
  test::run_command("zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz | head -n 6000 > " +
                    dir.file("db.fa"));
  const auto r = test::run_command(kDuet + " hmmsearch -E 1e9 --F3 1 --domE 1e9 --domtblout " +
                                   dir.file("d.tbl") + " --h5 " + dir.file("r.h5") + " " +
                                   kGlobins + " " + dir.file("db.fa"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("null2"), std::string::npos);
  const auto counts = test::read_pass_counts(r.output);
  ASSERT_EQ(counts.size(), 1u);
  io::Hdf5Reader h5(dir.file("r.h5"));
  const std::string g = "/results/hmmsearch/globins4";
  EXPECT_EQ(h5.attribute_int(g, "targets"), 3000);
  EXPECT_EQ(h5.attribute_int(g, "passed_msv"), counts[0][0]);
  EXPECT_EQ(h5.attribute_int(g, "passed_bias"), counts[0][1]);
  EXPECT_EQ(h5.attribute_int(g, "passed_viterbi"), counts[0][2]);
  EXPECT_EQ(h5.attribute_int(g, "passed_forward"), counts[0][3]);
  const auto stage = h5.read_uint8(g + "/stage");
  const auto index = h5.read_int64(g + "/index");
  const auto names = h5.read_strings(g + "/name");
  ASSERT_EQ(static_cast<long>(stage.size()), counts[0][0]);  // targets that passed MSV
  ASSERT_EQ(names.size(), stage.size());
  for (std::size_t i = 1; i < index.size(); ++i)
    EXPECT_LT(index[i - 1], index[i]);  // database order
  const long passed = std::count(stage.begin(), stage.end(), 5);
  EXPECT_EQ(passed, counts[0][3]);
  EXPECT_NE(h5.attribute_string("/run", "null2").find("on"), std::string::npos);
  // The domains table: every domain of every hit (database order); those reported are
  // --domtblout's rows (the best hits first): the same alignment starts.
  const auto reported = h5.read_uint8(g + "/domains/reported");
  const auto ali_from = h5.read_int32(g + "/domains/ali_from");
  const auto target_row = h5.read_int64(g + "/domains/target_row");
  const auto target_reported = h5.read_uint8(g + "/reported");
  std::vector<int> h5_rows;
  for (std::size_t j = 0; j < reported.size(); ++j) {
    if (reported[j] == 0) continue;
    EXPECT_EQ(target_reported.at(static_cast<std::size_t>(target_row[j])), 1);
    h5_rows.push_back(ali_from[j]);
  }
  std::vector<int> table_rows;
  std::ifstream table(dir.file("d.tbl"));
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string f;
    for (int c = 0; c < 17; ++c) fields >> f;
    int from = 0;
    fields >> from;  // column 18: alignment start
    table_rows.push_back(from);
  }
  ASSERT_FALSE(table_rows.empty());
  std::sort(h5_rows.begin(), h5_rows.end());
  std::sort(table_rows.begin(), table_rows.end());
  EXPECT_EQ(h5_rows, table_rows);
  EXPECT_NE(h5.attribute_string("/run", "config_toml").find("[hmmsearch]"), std::string::npos);
  EXPECT_NE(h5.attribute_string("/run", "command_line").find("-E 1e9"), std::string::npos);
}

// -o takes HMMER's meaning: the text output goes to the file, nothing of it to standard
// output; `-o NAME.h5` (the HDF5 file before --h5) is refused with the way to --h5, and
// nothing is written.
TEST(Cli, TextOutputGoesToMinusO) {
  TempDir dir;
  const std::string db = small_db(dir);
  const auto r = test::run_command(kDuet + " hmmsearch -o " + dir.file("hits.txt") + " --h5 " +
                                   dir.file("r.h5") + " " + kGlobins + " " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("Query:"), std::string::npos) << r.output;
  const std::string text = test::read_file(dir.file("hits.txt"));
  EXPECT_NE(text.find("Query:       globins4"), std::string::npos);
  EXPECT_NE(text.find("Internal pipeline statistics summary:"), std::string::npos);
  EXPECT_NE(text.find("[ok]"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir.file("r.h5")));
  expect_failure(dir, "hmmsearch -o " + dir.file("old.h5") + " " + kGlobins + " " + db,
                 "the HDF5 result file is --h5 " + dir.file("old.h5"), 3);
}

// --gpu-resident: a size or auto, recorded in the configuration; the residues read from
// the GPU's resident store are recorded per query and in /run (0 without a GPU).
TEST(Cli, GpuResidentOption) {
  TempDir dir;
  const std::string db = small_db(dir);
  expect_failure(
      dir, "hmmsearch --gpu-resident lots --h5 " + dir.file("o.h5") + " " + kGlobins + " " + db,
      "--gpu-resident: 'lots' is not auto or a size", 1);
  const auto r = test::run_command(kDuet + " hmmsearch --no-gpu --gpu-resident 64M --h5 " +
                                   dir.file("r.h5") + " " + kGlobins + " " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  io::Hdf5Reader h5(dir.file("r.h5"));
  EXPECT_NE(h5.attribute_string("/run", "config_toml").find("resident = \"64M\""),
            std::string::npos);
  EXPECT_EQ(h5.attribute_int("/run", "gpu_resident_residues"), 0);
  EXPECT_EQ(h5.attribute_int("/run", "gpu_uploaded_residues"), 0);
  EXPECT_EQ(h5.attribute_int("/trace/globins4", "gpu_resident_residues"), 0);
  const auto a = test::run_command(kDuet + " hmmsearch --no-gpu --gpu-resident auto --h5 " +
                                   dir.file("a.h5") + " " + kGlobins + " " + db);
  ASSERT_EQ(a.status, 0) << a.output;
  EXPECT_NE(io::Hdf5Reader(dir.file("a.h5"))
                .attribute_string("/run", "config_toml")
                .find("resident = \"auto\""),
            std::string::npos);
}

TEST(Cli, ConfigFileSetsOptionsAndCommandLineOverrides) {
  TempDir dir;
  const std::string db = small_db(dir);
  test::write_file(dir.file("c.toml"),
                   "[hmmsearch]\nE = 1e-30\n[run]\nh5 = \"" + dir.file("c.h5") + "\"\n");
  const auto a = test::run_command(kDuet + " hmmsearch --config " + dir.file("c.toml") + " " +
                                   kGlobins + " " + db);
  ASSERT_EQ(a.status, 0) << a.output;
  io::Hdf5Reader h5(dir.file("c.h5"));
  EXPECT_NE(h5.attribute_string("/run", "config_toml").find("1e-30"), std::string::npos);
  const auto b = test::run_command(kDuet + " hmmsearch --config " + dir.file("c.toml") + " --h5 " +
                                   dir.file("d.h5") + " -E 5 " + kGlobins + " " + db);
  ASSERT_EQ(b.status, 0) << b.output;
  io::Hdf5Reader h5b(dir.file("d.h5"));
  EXPECT_EQ(h5b.attribute_string("/run", "config_toml").find("1e-30"), std::string::npos);
}

TEST(Cli, SyntheticWorkloadsAreDeterministic) {
  TempDir dir;
  for (const char* name : {"a", "b"}) {
    const std::string d = dir.file(name);
    ASSERT_EQ(
        test::run_command(kDuet + " synth-model -L 60 -L 300 --seed 5 -o " + d + ".hmm").status, 0);
    ASSERT_EQ(test::run_command(kDuet + " synth-db --residues 3e5 --homologs 0.02 --model " + d +
                                ".hmm --seed 9 -o " + d + ".fa.gz")
                  .status,
              0);
  }
  EXPECT_EQ(test::read_file(dir.file("a.hmm")), test::read_file(dir.file("b.hmm")));
  EXPECT_EQ(test::run_command("zcat " + dir.file("a.fa.gz") + " | md5sum").output,
            test::run_command("zcat " + dir.file("b.fa.gz") + " | md5sum").output);
  // HMMER reads both files (a plain copy: it cannot rewind gzip for a second query).
  ASSERT_EQ(test::run_command("zcat " + dir.file("a.fa.gz") + " > " + dir.file("a.fa")).status, 0);
  const auto h =
      test::run_command("hmmsearch -o /dev/null " + dir.file("a.hmm") + " " + dir.file("a.fa"));
  EXPECT_EQ(h.status, 0) << h.output;
}

TEST(Cli, BenchSweepWritesSummary) {
  TempDir dir;
  test::write_file(
      dir.file("s.toml"),
      "name = \"t\"\n[workload]\nsynthetic_lengths = [40, 120]\nsynthetic_residues = 2e5\n"
      "[sweep]\ndevices = [\"cpu\"]\ncpu = [1, 2]\n");
  const auto r =
      test::run_command(kDuet + " bench " + dir.file("s.toml") + " -o " + dir.file("out"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto rows = io::read_csv(test::read_file(dir.file("out/summary.csv")));
  ASSERT_EQ(rows.size(), 5u);  // header + 2 models x 2 worker counts
  const auto& h = rows[0];
  auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(h.begin(), h.end(), name) - h.begin());
  };
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][col("status")], "ok");
    EXPECT_GT(std::stod(rows[i][col("gcups")]), 0.0);
    EXPECT_EQ(rows[i][col("M")], i <= 2 ? "40" : "120");
    EXPECT_TRUE(std::filesystem::exists(rows[i][col("result_file")]));
  }
  // A sweep asking for something this build cannot do records the failure and goes on.
  test::write_file(dir.file("g.toml"),
                   "[workload]\nsynthetic_lengths = [40]\nsynthetic_residues = "
                   "1e5\n[sweep]\ndevices = [\"gpu\"]\n");
  const auto g =
      test::run_command(kDuet + " bench " + dir.file("g.toml") + " -o " + dir.file("out2"));
  ASSERT_EQ(g.status, 0) << g.output;
  const auto grows = io::read_csv(test::read_file(dir.file("out2/summary.csv")));
  ASSERT_EQ(grows.size(), 2u);
  EXPECT_NE(grows[1][col("status")].find("failed"), std::string::npos);
}

// Targets of 2^24 and 2^24 + 1 residues (HMMER stops at 100,000; from 2^24 on its float
// null model gives log(0) or a wrong p1: a score of +inf and an E-value of 0 for the
// first): human beta globin in the middle of the same random residues, against globins4.
// Their scores in the table and the result file are finite, their E-values positive, and
// the two agree (the targets differ by one residue at the end).
TEST(Cli, TargetsOfTwoTo24ResiduesHaveFiniteScores) {
  TempDir dir;
  const std::string hbb = test::read_file("/usr/share/doc/hmmer/examples/tutorial/HBB_HUMAN");
  std::string globin;
  for (char c : hbb.substr(hbb.find('\n') + 1))
    if (std::isalpha(static_cast<unsigned char>(c))) globin += c;
  ASSERT_GT(globin.size(), 100u);
  constexpr std::int32_t kAt = 1 << 24, kPast = kAt + 1;
  const std::string amino = "ACDEFGHIKLMNPQRSTVWY";
  std::mt19937 rng(16);
  std::string residues(kPast, 'A');
  for (char& c : residues) c = amino[rng() % amino.size()];
  residues.replace(kAt / 2, globin.size(), globin);
  std::string fasta;
  for (const std::int32_t L : {kAt, kPast}) {
    fasta += ">L" + std::to_string(L) + "\n";
    for (std::int32_t i = 0; i < L; i += 60)
      fasta += residues.substr(i, std::min(60, L - i)) + "\n";
  }
  test::write_file(dir.file("db.fa"), fasta);

  const auto r =
      test::run_command(kDuet + " hmmsearch --quiet --tblout " + dir.file("t.tbl") + " --h5 " +
                        dir.file("r.h5") + " " + kGlobins + " " + dir.file("db.fa"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto table = test::read_tblout(dir.file("t.tbl"));
  for (const std::int32_t L : {kAt, kPast}) {
    const std::string name = "L" + std::to_string(L);
    ASSERT_EQ(table.count({"globins4", name}), 1u) << test::read_file(dir.file("t.tbl"));
    const test::TableRow row = table.at({"globins4", name});
    EXPECT_TRUE(std::isfinite(row.score) && row.score > 100.0) << name << " " << row.score;
    EXPECT_TRUE(std::isfinite(row.evalue) && row.evalue > 0.0) << name << " " << row.evalue;
  }
  io::Hdf5Reader h5(dir.file("r.h5"));
  const std::string g = "/results/hmmsearch/globins4";
  ASSERT_EQ(h5.read_int32(g + "/length"), (std::vector<std::int32_t>{kAt, kPast}));
  EXPECT_EQ(h5.read_uint8(g + "/reported"), (std::vector<std::uint8_t>{1, 1}));
  const auto evalue = h5.read_doubles(g + "/evalue");
  const auto bits = h5.read_floats(g + "/forward_bits");  // (MSV saturates: +inf by design)
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(std::isfinite(bits[i])) << bits[i];
    EXPECT_TRUE(std::isfinite(evalue[i]) && evalue[i] > 0.0) << evalue[i];
  }
  EXPECT_NEAR(bits[0], bits[1], 0.01);
}

// The CPU kernels of every ISA this CPU has give the same /results, bit for bit.
TEST(Cli, ResultsIdenticalAcrossIsas) {
  TempDir dir;
  test::run_command("zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz | head -n 8000 > " +
                    dir.file("db.fa"));
  const std::vector<std::string> isas = {"scalar", "sse4.1", "avx2", "avx512"};
  std::vector<std::string> ran;
  for (const auto& isa : isas) {
    const auto r = test::run_command(kDuet + " hmmsearch --quiet --isa " + isa +
                                     " -E 1000 --F3 0.5 --h5 " + dir.file(isa + ".h5") +
                                     " /usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm " +
                                     dir.file("db.fa"));
    if (r.status != 0) {
      EXPECT_NE(r.output.find(isa), std::string::npos)
          << r.output;  // this CPU lacks it: a clear error
      continue;
    }
    ran.push_back(isa);
    io::Hdf5Reader h5(dir.file(isa + ".h5"));
    EXPECT_EQ(h5.attribute_string("/run", "isa"), isa);
  }
  ASSERT_GE(ran.size(), 2u);
  io::Hdf5Reader first(dir.file(ran[0] + ".h5"));
  const std::string g = "/results/hmmsearch/Pkinase";
  for (std::size_t i = 1; i < ran.size(); ++i) {
    io::Hdf5Reader other(dir.file(ran[i] + ".h5"));
    for (const char* d : {"msv_bits", "viterbi_bits", "forward_bits"}) {
      const auto a = first.read_floats(g + "/" + d);
      const auto b = other.read_floats(g + "/" + d);
      ASSERT_EQ(a.size(), b.size()) << ran[i];
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
          << d << " differs with " << ran[i];
    }
    EXPECT_EQ(first.read_doubles(g + "/pvalue").size(), other.read_doubles(g + "/pvalue").size());
    EXPECT_EQ(first.read_uint8(g + "/stage"), other.read_uint8(g + "/stage")) << ran[i];
  }
}

}  // namespace
}  // namespace duet
