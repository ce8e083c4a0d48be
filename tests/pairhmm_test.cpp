// The pair-HMM workload: readers, model, the scalar reference against GKL's
// published expectations, the canonical float computation with its double fallback, and
// the `duet pairhmm` command (bad input, output layout, identical results whatever the
// split). Random tests print their seed; DUET_TEST_SEED replays one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "core/error.hpp"
#include "core/pairhmm/pairhmm_input.hpp"
#include "core/pairhmm/pairhmm_model.hpp"
#include "host_simd/pairhmm/pairhmm_simd.hpp"
#include "io/hdf5_file.hpp"
#include "pairhmm_test_support.hpp"
#include "test_support.hpp"

namespace duet::pairhmm {
namespace {

using test::TempDir;

TEST(PairhmmGkl, ReferenceMatchesGklExpectations) {
  const Input input = read_input(test::kGklTestData, Format::gkl);
  ASSERT_EQ(input.pairs(), 104);
  const Model model;
  const auto pairs = input.pair_list();
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_NEAR(reference_log10_likelihood(model, pairs[i]), input.expected[i], 1e-5)
        << "case " << i;
  }
}

TEST(PairhmmGkl, CanonicalMatchesGklExpectations) {
  const Input input = read_input(test::kGklTestData);
  EXPECT_EQ(input.format, Format::gkl);
  const Model model;
  const auto pairs = input.pair_list();
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const Likelihood l = finish_likelihood(model, pairs[i], forward_sum<float>(model, pairs[i]));
    EXPECT_NEAR(l.log10, input.expected[i], 1e-5) << "case " << i;
  }
}

TEST(PairhmmModel, MatchToMatchIsGatksApproximateTable) {
  const Model model;
  // 1 - (10^-4.5 + 10^-4.5) through the approximate log-sum: log10(2) from the table.
  EXPECT_NEAR(model.match_to_match(45, 45), 1 - 2 * std::pow(10.0, -4.5), 1e-9);
  EXPECT_EQ(model.match_to_match(30, 40), model.match_to_match(40, 30));
  // Beyond a difference of 8 in log10, the smaller term is dropped.
  EXPECT_EQ(model.match_to_match(10, 93), 1 - std::pow(10.0, -1.0));
  EXPECT_EQ(approximate_log10_sum(-1.0, -1.0), -1.0 + std::log10(1.0 + std::pow(10.0, 0.0)));
}

TEST(PairhmmModel, BaseQualityFloorIsConfigurable) {
  Input input = read_input(test::kGklTestData);
  Read& read = input.batches[0].reads[0];
  std::fill(read.base_quality.begin(), read.base_quality.end(), std::uint8_t{2});
  const Pair pair{&read, &input.batches[0].haplotypes[0]};
  const Model floor6, floor0(ModelOptions{0}), floor2(ModelOptions{2});
  Input raised = input;
  std::fill(raised.batches[0].reads[0].base_quality.begin(),
            raised.batches[0].reads[0].base_quality.end(), std::uint8_t{6});
  const Pair raised_pair{&raised.batches[0].reads[0], &raised.batches[0].haplotypes[0]};
  EXPECT_EQ(reference_log10_likelihood(floor6, pair),
            reference_log10_likelihood(floor0, raised_pair));
  EXPECT_EQ(reference_log10_likelihood(floor0, pair), reference_log10_likelihood(floor2, pair));
  EXPECT_NE(reference_log10_likelihood(floor0, pair), reference_log10_likelihood(floor6, pair));
}

// The canonical float computation with its double fallback against the double reference,
// and the double pass bit for bit equal to the reference (same order of operations).
TEST(PairhmmModel, CanonicalAgreesWithReferenceOnRandomPairs) {
  std::mt19937_64 rng(test::test_seed());
  const Input input = test::random_input(rng, 60, 500);
  const Model model;
  int in_double = 0, in_float = 0;
  for (const Pair& pair : input.pair_list()) {
    const double reference = reference_log10_likelihood(model, pair);
    const Likelihood l = finish_likelihood(model, pair, forward_sum<float>(model, pair));
    const double double_pass =
        std::log10(forward_sum<double>(model, pair)) - std::log10(kDoubleInitialConstant);
    EXPECT_EQ(double_pass, reference) << pair.rows() << "x" << pair.columns();
    if (l.in_double) {
      ++in_double;
      EXPECT_EQ(l.log10, reference);
    } else {
      ++in_float;
      // Float relative error grows with the path length; 1e-4 in log10 is about 2e-4 relative.
      EXPECT_NEAR(l.log10, reference, 1e-4) << pair.rows() << "x" << pair.columns();
    }
  }
  std::cout << "[ pairs    ] " << in_float << " in float, " << in_double
            << " recomputed in double\n";
  EXPECT_GT(in_double, 0);
  EXPECT_GT(in_float, 0);
}

TEST(PairhmmModel, EdgeSizes) {
  const Model model;
  Read read;
  read.bases = {kA};
  read.base_quality = read.insertion_quality = read.deletion_quality = {40};
  read.gcp_quality = {10};
  Haplotype one{{kA}}, n{{kN}}, mismatch{{kC}};
  for (const Haplotype* h : {&one, &n, &mismatch}) {
    const Pair pair{&read, h};
    const double reference = reference_log10_likelihood(model, pair);
    EXPECT_NEAR(finish_likelihood(model, pair, forward_sum<float>(model, pair)).log10, reference,
                1e-6);
  }
  // 1x1: the only path starts in row 0's deletion state (K / C with C = 1) and enters the
  // match state through indel-to-match, 1 - 10^-1 for gap-continuation quality 10.
  EXPECT_NEAR(reference_log10_likelihood(model, Pair{&read, &one}), std::log10(0.9 * (1 - 1e-4)),
              1e-12);
  EXPECT_NEAR(reference_log10_likelihood(model, Pair{&read, &mismatch}), std::log10(0.9 * 1e-4 / 3),
              1e-12);
}

// ---- readers ----

void expect_input_error(const std::string& text, const std::string& expected,
                        Format format = Format::automatic) {
  TempDir dir;
  const std::string path = dir.file("pairs.txt");
  test::write_file(path, text);
  try {
    read_input(path, format);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":" + expected), std::string::npos) << e.what();
  }
}

TEST(PairhmmReaders, BatchFormat) {
  const Input tiny = read_input(test::kPairhmmData + "tiny.in");
  EXPECT_EQ(tiny.format, Format::batch);
  EXPECT_EQ(tiny.pairs(), 332);
  const Input ten = read_input(test::kPairhmmData + "10s.in", Format::batch);
  EXPECT_EQ(ten.pairs(), 3550);
  EXPECT_EQ(ten.cells(), 62380634);
  const auto pairs = ten.pair_list();
  // Input order: batch by batch, read by read, haplotype by haplotype.
  EXPECT_EQ(pairs[1].read, &ten.batches[0].reads[0]);
  EXPECT_EQ(pairs[1].haplotype, &ten.batches[0].haplotypes[1]);
  std::int64_t cells = 0;
  for (const Pair& p : pairs) cells += p.cells();
  EXPECT_EQ(cells, ten.cells());
}

TEST(PairhmmReaders, GklRoundTripsThroughBatchText) {
  std::mt19937_64 rng(test::test_seed());
  const Input input = test::random_input(rng, 5, 30);
  TempDir dir;
  test::write_file(dir.file("r.in"), test::batch_text(input));
  const Input back = read_input(dir.file("r.in"));
  ASSERT_EQ(back.pairs(), input.pairs());
  for (std::size_t b = 0; b < input.batches.size(); ++b) {
    EXPECT_EQ(back.batches[b].first_pair, input.batches[b].first_pair);
    for (std::size_t r = 0; r < input.batches[b].reads.size(); ++r) {
      EXPECT_EQ(back.batches[b].reads[r].bases, input.batches[b].reads[r].bases);
      EXPECT_EQ(back.batches[b].reads[r].gcp_quality, input.batches[b].reads[r].gcp_quality);
    }
  }
}

// The reader scans fields eight bytes at a time: a separator (runs of spaces and tabs) and
// a bad character must be found at every offset, in fields of every length around 8.
TEST(PairhmmReaders, SeparatorsAndBadCharactersAtEveryOffset) {
  const std::string bases = "ACGTNACGTNACGTNACGTNACGTN";
  const std::string quals = "!+5?I~!+5?I~!+5?I~!+5?I~!";
  TempDir dir;
  for (std::size_t n = 1; n <= 20; ++n) {
    const std::string b = bases.substr(0, n), q = quals.substr(0, n);
    const std::string seps[] = {" ", "\t", " \t ", "\t\t"};
    const std::string& sep = seps[n % 4];
    test::write_file(dir.file("ok.in"), "1 1\n" + sep + b + sep + q + sep + q + sep + q + sep + q +
                                            sep + "\n" + b + "\n");
    const Input in = read_input(dir.file("ok.in"));
    ASSERT_EQ(in.pairs(), 1) << "length " << n;
    const Read& r = in.batches[0].reads[0];
    ASSERT_EQ(r.bases.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(base_symbol(r.bases[i]), b[i]) << "length " << n << " base " << i;
      EXPECT_EQ(r.gcp_quality[i], q[i] - 33) << "length " << n << " quality " << i;
    }
    EXPECT_EQ(in.batches[0].haplotypes[0].bases, r.bases);
    for (std::size_t at = 0; at < n; ++at) {
      std::string bad_bases = b, bad_quals = q;
      bad_bases[at] = 'x';
      bad_quals[at] = '\x7f';
      expect_input_error("1 1\n" + bad_bases + " " + q + " " + q + " " + q + " " + q + "\nA\n",
                         "2: illegal base 'x' in read");
      expect_input_error("1 1\n" + b + " " + q + " " + q + " " + bad_quals + " " + q + "\nA\n",
                         "2: illegal quality character in deletion qualities");
    }
  }
}

TEST(PairhmmReaders, BadInputNamesFileAndLine) {
  const std::string ok_gkl = "ACGT ACG III III III +++ -1.5\n";
  expect_input_error("", "", Format::gkl);  // empty: file named, no line
  expect_input_error("# comment\n" + ok_gkl + "ACGT ACG III III III\n",
                     "3: expected 6 or 7 columns");
  expect_input_error(ok_gkl + "ACGT AXG III III III +++\n", "2: illegal base 'X' in read");
  expect_input_error(ok_gkl + "ACGU ACG III III III +++\n", "2: illegal base 'U' in haplotype");
  expect_input_error(ok_gkl + "ACGT ACG II III III +++\n",
                     "2: base qualities has 2 characters for a read of 3");
  expect_input_error(ok_gkl + "ACGT ACG III III III ++\n",
                     "2: gap-continuation qualities has 2 characters");
  expect_input_error(ok_gkl + "ACGT ACG III I\x7fI III +++\n",
                     "2: illegal quality character in insertion qualities");
  expect_input_error(ok_gkl + "ACGT ACG III III III +++ -1.5x\n",
                     "2: expected log10 likelihood is not a number");
  const std::string read = "ACG III III III +++\n";
  expect_input_error("1 1\n" + read + "ACGT\n2 x\n",
                     "4: expected a positive number of haplotypes, found 'x'");
  expect_input_error("1 1\n" + read + "ACGT\n0 1\n", "4: expected a positive number of reads");
  expect_input_error("2 1\n" + read + "ACGT\n", "3: expected a read line with 5 columns");
  expect_input_error("1 2\n" + read + "ACGT\n",
                     "3: unexpected end of file: expected a haplotype line");
  expect_input_error("1 1\n" + read + "ACGT ACGT\n", "3: expected a haplotype line with 1 column");
  expect_input_error("1 1\nACG III III III\nACGT\n", "2: expected a read line with 5 columns");
  expect_input_error("1 1\n" + read + "ACGT\nACGT\n", "4: expected a batch header 'R H'");
  expect_input_error("1 1\nacg III III III +++\nACGT\n", "2: illegal base 'a' in read",
                     Format::batch);
  try {
    read_input("/nonexistent/pairs.txt");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/pairs.txt"), std::string::npos);
  }
}

// A file over 8 MiB is read in parts on several threads: the same batches as its pieces
// read alone, and the same first error, line and message, as a reader of the whole file
// (a bad line may sit where a part would start, or look like a batch header).
TEST(PairhmmReaders, LargeFilesReadInPartsAsAWhole) {
  std::ifstream in(test::kPairhmmData + "10s.in");
  const std::string ten((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Input one = read_input(test::kPairhmmData + "10s.in");
  const auto lines = std::count(ten.begin(), ten.end(), '\n');
  constexpr int kCopies = 80;  // 10.4 MB
  std::string big = "# pairs\n\n";
  for (int k = 0; k < kCopies; ++k) big += ten;
  TempDir dir;
  test::write_file(dir.file("big.in"), big);
  const Input input = read_input(dir.file("big.in"));
  EXPECT_EQ(input.format, Format::batch);
  ASSERT_EQ(input.batches.size(), one.batches.size() * kCopies);
  ASSERT_EQ(input.pairs(), one.pairs() * kCopies);
  for (std::size_t b = 0; b < input.batches.size(); ++b) {
    const Batch& x = input.batches[b];
    const Batch& y = one.batches[b % one.batches.size()];
    ASSERT_EQ(x.first_pair,
              y.first_pair + one.pairs() * static_cast<std::int64_t>(b / one.batches.size()));
    ASSERT_EQ(x.reads.size(), y.reads.size());
    ASSERT_EQ(x.haplotypes.size(), y.haplotypes.size());
    for (std::size_t r = 0; r < x.reads.size(); ++r) {
      ASSERT_EQ(x.reads[r].bases, y.reads[r].bases);
      ASSERT_EQ(x.reads[r].deletion_quality, y.reads[r].deletion_quality);
    }
    for (std::size_t h = 0; h < x.haplotypes.size(); ++h)
      ASSERT_EQ(x.haplotypes[h].bases, y.haplotypes[h].bases);
  }
  // Bad lines deep in the file: in copy 50, its second line (the first read) replaced.
  const std::size_t second_line = ten.find('\n') + 1;
  const std::size_t second_end = ten.find('\n', second_line);
  const auto with_bad_read = [&](const std::string& bad) {
    std::string text = "# pairs\n\n";
    for (int k = 0; k < kCopies; ++k) {
      text += k == 50 ? ten.substr(0, second_line) + bad + ten.substr(second_end) : ten;
    }
    return text;
  };
  const std::string line = std::to_string(2 + 50 * lines + 2);
  expect_input_error(with_bad_read("ACG III III III"),
                     line + ": expected a read line with 5 columns");
  expect_input_error(with_bad_read("ACG III"),  // two fields: looks like a header
                     line + ": expected a read line with 5 columns");
  expect_input_error(with_bad_read("AXG III III III +++"), line + ": illegal base 'X' in read");
}

// ---- the command ----

const std::string kDuet = DUET_BINARY;

// Runs duet expecting failure: one error line naming `must_contain`, nothing left behind.
void expect_command_failure(const TempDir& dir, const std::string& args,
                            const std::string& must_contain) {
  const auto r = test::run_command(kDuet + " " + args);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("duet: error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(must_contain), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().extension(), ".in") << "left behind: " << e.path();
  }
}

TEST(PairhmmCommand, BadInput) {
  TempDir dir;
  test::write_file(dir.file("bad.in"),
                   "1 1\nACG III III III +++\nACGT\n1 1\nACG III III III +++\nAC#T\n");
  expect_command_failure(dir, "pairhmm --h5 " + dir.file("o.h5") + " " + dir.file("bad.in"),
                         dir.file("bad.in") + ":6: illegal base '#' in haplotype");
  expect_command_failure(dir, "pairhmm --h5 " + dir.file("o.h5") + " " + dir.file("missing.in"),
                         "missing.in");
  expect_command_failure(dir,
                         "pairhmm --format gkl --h5 " + dir.file("o.h5") + " " + dir.file("bad.in"),
                         dir.file("bad.in") + ":1: expected 6 or 7 columns");
  test::write_file(dir.file("ok.in"), "1 1\nACG III III III +++\nACGT\n");
  expect_command_failure(
      dir, "pairhmm --h5 " + dir.file("no/such/folder/o.h5") + " " + dir.file("ok.in"), "o.h5");
}

// The run settings come from the same TOML file as hmmsearch's ([run], [scheduler]); the
// flags override it; an ISA the file names that pairhmm lacks is an error.
TEST(PairhmmCommand, ConfigurationFile) {
  TempDir dir, configs;  // expect_command_failure wants only inputs in `dir`
  test::write_file(dir.file("ok.in"), "1 1\nACG III III III +++\nACGT\n");
  test::write_file(configs.file("c.toml"),
                   "[run]\ncpu = 2\nh5 = \"" + dir.file("from-file.h5") +
                       "\"\nquiet = true\n[scheduler]\nno_gpu = true\npolicy = \"static\"\n");
  auto r = test::run_command(kDuet + " pairhmm --config " + configs.file("c.toml") + " " +
                             dir.file("ok.in"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "");  // quiet
  {
    const io::Hdf5Reader h5(dir.file("from-file.h5"));
    EXPECT_EQ(h5.attribute_int("/run", "cpu_workers"), 2);
    EXPECT_EQ(h5.attribute_int("/run", "gpu_feeders"), 0);
  }
  r = test::run_command(kDuet + " pairhmm --config " + configs.file("c.toml") + " --cpu 1 --h5 " +
                        dir.file("from-flag.h5") + " " + dir.file("ok.in"));
  ASSERT_EQ(r.status, 0) << r.output;
  const io::Hdf5Reader h5(dir.file("from-flag.h5"));
  EXPECT_EQ(h5.attribute_int("/run", "cpu_workers"), 1);
  std::filesystem::remove(dir.file("from-file.h5"));
  std::filesystem::remove(dir.file("from-flag.h5"));
  test::write_file(configs.file("isa.toml"), "[run]\nisa = \"sse4.1\"\n");
  expect_command_failure(dir,
                         "pairhmm --config " + configs.file("isa.toml") + " --h5 " +
                             dir.file("o.h5") + " " + dir.file("ok.in"),
                         "isa = \"sse4.1\"");
}

// The workers beside the GPUs come from the kernel-choice table's [tuning] ([gpu]
// kernel_table of the configuration), here with test-double GPUs.
TEST(PairhmmCommand, WorkersBesideGpusFromTheTuningTable) {
  TempDir dir, files;
  test::write_file(dir.file("ok.in"), "1 1\nACG III III III +++\nACGT\n");
  test::write_file(files.file("k.toml"),
                   "device = \"gpu\"\nmeasured = \"today\"\n[[row]]\nmax_length = 100\n"
                   "msv_group_threads = 8\nviterbi_strategy = \"warp\"\n[tuning]\n"
                   "pairhmm_gpu_only_workers = 1\npairhmm_cores_per_feeder = 0\n");
  test::write_file(files.file("c.toml"),
                   "[gpu]\nkernel_table = \"" + files.file("k.toml") + "\"\n");
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const auto& [mode, workers] :
       std::vector<std::pair<std::string, int>>{{"", cores}, {"--gpu-only", 1}}) {
    const auto r = test::run_command("DUET_DEBUG_TEST_GPU=1 " + kDuet + " pairhmm --quiet " + mode +
                                     " --config " + files.file("c.toml") + " --h5 " +
                                     files.file("w.h5") + " " + dir.file("ok.in"));
    ASSERT_EQ(r.status, 0) << r.output;
    const io::Hdf5Reader h5(files.file("w.h5"));
    EXPECT_EQ(h5.attribute_int("/run", "cpu_workers"), workers) << mode;
    EXPECT_EQ(h5.attribute_int("/run", "gpu_feeders"), 1) << mode;
  }
}

// The intra-task kernel's shape costs come from the same table ([pairhmm_shapes]): a shape
// this build does not compile for its arithmetic is an error naming the table and the line,
// before anything is written.
TEST(PairhmmCommand, ShapeCostsFromTheKernelTable) {
  TempDir dir, files;
  test::write_file(dir.file("ok.in"), "1 1\nACG III III III +++\nACGT\n");
  const std::string head =
      "device = \"gpu\"\nmeasured = \"today\"\n[[row]]\nmax_length = 100\n"
      "msv_group_threads = 8\nviterbi_strategy = \"warp\"\n[pairhmm_shapes]\n";  // 7 lines
  const auto shape = [](const char* s) {
    return std::string("{ shape = \"") + s +
           "\", cycles_per_warp_step = 1, cycles_per_warp = 0, latency_per_step = 1 }";
  };
  test::write_file(files.file("c.toml"),
                   "[gpu]\nkernel_table = \"" + files.file("k.toml") + "\"\n");
  const std::string args = "pairhmm --config " + files.file("c.toml") + " --h5 " +
                           dir.file("o.h5") + " " + dir.file("ok.in");
  test::write_file(files.file("k.toml"), head + "ftz = [\n" + shape("8x4") + ",\n" + shape("16x8") +
                                             "]\nieee = [" + shape("8x4") + "]\n");
  expect_command_failure(
      dir, args,
      files.file("k.toml") + ":10: pair-HMM shape 16x8 is not compiled for ftz arithmetic");
  test::write_file(files.file("k.toml"),
                   head + "ftz = [" + shape("8x8") + "]\nieee = [" + shape("8x8") + "]\n");
  expect_command_failure(
      dir, args,
      files.file("k.toml") + ":9: pair-HMM shape 8x8 is not compiled for ieee arithmetic");
  // Shapes it compiles: the run goes on (on the CPU here when no GPU is found).
  test::write_file(files.file("k.toml"),
                   head + "ftz = [" + shape("8x8") + "]\nieee = [" + shape("8x2") + "]\n");
  const auto r = test::run_command(kDuet + " " + args);
  EXPECT_EQ(r.status, 0) << r.output;
}

// Feeder threads per GPU: --gpu-feeders, else [gpu] feeders (as hmmsearch reads it), else
// the kernel table's pairhmm_feeders_per_gpu; /run records the number, GPU or not.
TEST(PairhmmCommand, FeedersPerGpuFromFlagConfigOrTable) {
  TempDir dir, files;
  test::write_file(dir.file("ok.in"), "1 1\nACG III III III +++\nACGT\n");
  test::write_file(files.file("k.toml"),
                   "device = \"gpu\"\nmeasured = \"today\"\n[[row]]\nmax_length = 100\n"
                   "msv_group_threads = 8\nviterbi_strategy = \"warp\"\n[tuning]\n"
                   "pairhmm_feeders_per_gpu = 4\n");
  test::write_file(files.file("table.toml"),
                   "[gpu]\nkernel_table = \"" + files.file("k.toml") + "\"\n");
  test::write_file(files.file("both.toml"),
                   "[gpu]\nfeeders = 6\nkernel_table = \"" + files.file("k.toml") + "\"\n");
  for (const auto& [args, feeders] : std::vector<std::pair<std::string, int>>{
           {"--config " + files.file("table.toml"), 4},
           {"--config " + files.file("both.toml"), 6},
           {"--config " + files.file("both.toml") + " --gpu-feeders 2", 2}}) {
    const auto r =
        test::run_command("CUDA_VISIBLE_DEVICES=-1 " + kDuet + " pairhmm --quiet " + args +
                          " --h5 " + files.file("f.h5") + " " + dir.file("ok.in"));
    ASSERT_EQ(r.status, 0) << r.output;
    const io::Hdf5Reader h5(files.file("f.h5"));
    EXPECT_EQ(h5.attribute_int("/run", "gpu_feeders_per_gpu"), feeders) << args;
  }
}

// The default mode asked to start GPUs (--gpu-min-cells 0) where none is usable runs on the
// CPU and records no GPU kernel.
TEST(PairhmmCommand, DefaultModeWithoutAGpu) {
  TempDir dir;
  test::write_file(dir.file("ok.in"), "1 1\nACG III III III +++\nACGT\n");
  const auto r = test::run_command("CUDA_VISIBLE_DEVICES=-1 " + kDuet +
                                   " pairhmm --quiet --gpu-min-cells 0 --h5 " + dir.file("o.h5") +
                                   " " + dir.file("ok.in"));
  ASSERT_EQ(r.status, 0) << r.output;
  const io::Hdf5Reader h5(dir.file("o.h5"));
  EXPECT_EQ(h5.attribute_string("/run", "gpu_kernel"), "none");
  EXPECT_EQ(h5.attribute_int("/run", "gpu_feeders"), 0);
}

// /run's device figures have the same names in every workload (app/kit/run_record.hpp).
TEST(PairhmmCommand, RunAttributesAreSharedWithHmmsearch) {
  TempDir dir;
  test::write_file(dir.file("ok.in"), "1 1\nACG III III III +++\nACGT\n");
  test::write_file(dir.file("db.fa"), ">a\nMVLSPADKTNVKAAWGKVGAHAGEYGAEALERMFLSFPTTKTYFPHF\n");
  ASSERT_EQ(test::run_command(kDuet + " pairhmm --quiet --no-gpu --h5 " + dir.file("p.h5") + " " +
                              dir.file("ok.in"))
                .status,
            0);
  ASSERT_EQ(
      test::run_command(kDuet + " hmmsearch --quiet --no-gpu --h5 " + dir.file("h.h5") +
                        " /usr/share/doc/hmmer/examples/tutorial/globins4.hmm " + dir.file("db.fa"))
          .status,
      0);
  for (const std::string file : {"p.h5", "h.h5"}) {
    const io::Hdf5Reader h5(dir.file(file));
    for (const char* name :
         {"cpu_workers", "gpu_feeders", "test_double_output", "work_total", "post_cells",
          "gpu_faults", "blocks", "reused_blocks", "machine_cores"})
      EXPECT_GE(h5.attribute_int("/run", name), 0) << file << " " << name;
    for (const char* name :
         {"cpu_share", "gpu_share", "cpu_cells_per_second", "gpu_cells_per_second", "post_seconds",
          "scheduler_seconds", "idle_tail_seconds", "worker_idle_tail_seconds", "wall_seconds"})
      EXPECT_GE(h5.attribute_double("/run", name), 0.0) << file << " " << name;
    for (const char* name : {"program", "version", "command_line", "isa", "machine_host",
                             "machine_cpu", "started", "gpu_backend", "work_unit"})
      EXPECT_FALSE(h5.attribute_string("/run", name).empty()) << file << " " << name;
    EXPECT_EQ(h5.attribute_double("/run", "cpu_share"), 1.0) << file;  // CPU only
    EXPECT_GT(h5.attribute_int("/run", "work_total"), 0) << file;
  }
}

struct CommandResults {
  std::vector<double> log10;
  std::vector<std::uint8_t> in_double;
};

CommandResults run_and_read(const TempDir& dir, const std::string& args,
                            const std::string& env = "") {
  const std::string out = dir.file("out.h5");
  const auto r = test::run_command(env + " " + kDuet + " pairhmm --quiet --h5 " + out + " " + args);
  EXPECT_EQ(r.status, 0) << r.output;
  const io::Hdf5Reader h5(out);
  CommandResults results{h5.read_doubles("/results/pairhmm/log10_likelihood"),
                         h5.read_uint8("/results/pairhmm/computed_in_double")};
  std::filesystem::remove(out);
  return results;
}

TEST(PairhmmCommand, OutputLayoutAndGklValues) {
  TempDir dir;
  const std::string out = dir.file("gkl.h5");
  const auto r = test::run_command(kDuet + " pairhmm --h5 " + out + " " + test::kGklTestData);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("104 pairs"), std::string::npos) << r.output;
  const io::Hdf5Reader h5(out);
  const auto log10 = h5.read_doubles("/results/pairhmm/log10_likelihood");
  const auto expected = h5.read_doubles("/results/pairhmm/expected_log10_likelihood");
  ASSERT_EQ(log10.size(), 104u);
  for (std::size_t i = 0; i < log10.size(); ++i) EXPECT_NEAR(log10[i], expected[i], 1e-5) << i;
  EXPECT_EQ(h5.read_uint8("/results/pairhmm/computed_in_double").size(), 104u);
  EXPECT_EQ(h5.read_int64("/results/pairhmm/batch")[103], 103);
  EXPECT_EQ(h5.attribute_int("/results/pairhmm", "pairs"), 104);
  EXPECT_EQ(h5.attribute_string("/results/pairhmm", "format"), "gkl");
  EXPECT_EQ(h5.attribute_string("/run", "program"), "duet pairhmm");
  EXPECT_TRUE(h5.exists("/trace/pairhmm/start"));
  // Each block carries its exact DP cells: the trace's rows add up to the input's cells.
  const auto cells = h5.read_int64("/trace/pairhmm/cells");
  const auto failed = h5.read_uint8("/trace/pairhmm/failed");
  std::int64_t traced = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) traced += failed[i] ? 0 : cells[i];
  EXPECT_EQ(traced, h5.attribute_int("/results/pairhmm", "cells"));
}

// Identical results, bit for bit, whatever the worker count, block size, ISA or split with
// a (test-double) GPU, faults included; they equal the canonical computation.
TEST(PairhmmCommand, IdenticalWhateverTheSplit) {
  std::mt19937_64 rng(test::test_seed());
  const Input input = test::random_input(rng, 40, 300, 6, 6);
  TempDir dir;
  const std::string path = dir.file("pairs.in");
  test::write_file(path, test::batch_text(input));
  const Model model;
  std::vector<double> canonical;
  std::vector<std::uint8_t> canonical_double;
  for (const Pair& p : input.pair_list()) {
    const Likelihood l = finish_likelihood(model, p, forward_sum<float>(model, p));
    canonical.push_back(l.log10);
    canonical_double.push_back(l.in_double ? 1 : 0);
  }
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"--cpu 1 --block-cells 1000000000", ""},
      {"--cpu 2 --block-cells 5000", ""},
      {"--cpu 2 --block-cells 7000 --isa " +
           std::string(simd::cpu_supports(simd::Isa::avx2) ? "avx2" : "scalar"),
       ""},
      {"--cpu 3 --block-cells 20000 --isa scalar", ""},
      {"--cpu 2 --block-cells 9000 --isa " +
           std::string(simd::cpu_supports(simd::Isa::avx512) ? "avx512" : "scalar"),
       ""},
      {"--cpu 2 --block-cells 10000", "DUET_DEBUG_TEST_GPU=1"},
      {"--cpu 1 --block-cells 10000 --gpu-batch-blocks 3",
       "DUET_DEBUG_TEST_GPU=2 DUET_DEBUG_GPU_FAULT_EVERY=2"},
      {"--cpu 1 --block-cells 30000 --policy static --static-cpu-fraction 0.3",
       "DUET_DEBUG_TEST_GPU=1"},
      {"--block-cells 30000 --gpu-only", "DUET_DEBUG_TEST_GPU=1"},
  };
  for (const auto& [args, env] : runs) {
    const CommandResults r = run_and_read(dir, args + " " + path, env);
    ASSERT_EQ(r.log10.size(), canonical.size()) << args;
    EXPECT_EQ(std::memcmp(r.log10.data(), canonical.data(), canonical.size() * sizeof(double)), 0)
        << env << " " << args;
    EXPECT_EQ(r.in_double, canonical_double) << args;
  }
}

}  // namespace
}  // namespace duet::pairhmm
