// Tests of the GPU kernel-choice table (src/io/kernel_table): a good file, every kind of
// error with its file and line, the choice by model length at the row boundaries, the
// table made from timings (fastest per length, adjacent lengths merged), the to_toml round
// trip, and where the table comes from (--gpu-kernel-table, [gpu] kernel_table, defaults).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/config.hpp"
#include "io/kernel_table.hpp"
#include "io_temp_dir.hpp"

namespace duet::io {
namespace {

using testing::TempDir;

const char* kGood =
    "# a comment\n"
    "device = \"NVIDIA H100 80GB HBM3\"\n"
    "measured = \"2026-11-22T08:00:00Z\"\n"
    "command = \"duet tune -o t.toml\"\n"
    "\n"
    "[[row]]\n"
    "max_length = 128\n"
    "msv_group_threads = 8\n"
    "viterbi_strategy = \"warp\"\n"
    "\n"
    "[[row]]\n"
    "max_length = 300\n"
    "msv_group_threads = 16\n"
    "viterbi_strategy = \"thread\"\n"
    "\n"
    "[[row]]\n"
    "max_length = 1024\n"
    "msv_group_threads = 16\n"
    "viterbi_strategy = \"strip\"\n"
    "\n"
    "[[row]]\n"
    "max_length = 3000\n"
    "msv_group_threads = 32\n"
    "viterbi_strategy = \"warp\"\n";

TEST(IoKernelTable, ReadsAGoodFile) {
  const KernelTable t = parse_kernel_table(kGood, "k.toml");
  EXPECT_EQ(t.device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.measured, "2026-11-22T08:00:00Z");
  EXPECT_EQ(t.command, "duet tune -o t.toml");
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[0], (KernelTableRow{128, 8, "warp", ""}));
  EXPECT_EQ(t.rows[1], (KernelTableRow{300, 16, "thread", ""}));
  EXPECT_EQ(t.rows[2], (KernelTableRow{1024, 16, "strip", ""}));
  EXPECT_EQ(t.rows[3], (KernelTableRow{3000, 32, "warp", ""}));
  EXPECT_EQ(t.tuning, GpuTuning{});  // no [tuning]: the defaults
  const KernelTable tuned =
      parse_kernel_table(std::string(kGood) +
                             "[tuning]\nforward_max_steps = 5000\nmax_lanes = 4\n"
                             "pairhmm_cores_per_feeder = 0\npairhmm_feeders_per_gpu = 2\n",
                         "k.toml");
  GpuTuning want;
  want.forward_max_steps = 5000;
  want.max_lanes = 4;
  want.pairhmm_cores_per_feeder = 0;
  want.pairhmm_feeders_per_gpu = 2;
  EXPECT_EQ(tuned.tuning, want);
}

// [pairhmm_shapes]: the pair-HMM intra-task kernel's shapes and costs by arithmetic, each
// with its line; integers and floats alike.
TEST(IoKernelTable, ReadsPairhmmShapes) {
  const KernelTable none = parse_kernel_table(kGood, "k.toml");
  EXPECT_TRUE(none.pairhmm_shapes.empty());  // the built-in costs
  const KernelTable t = parse_kernel_table(
      std::string(kGood) +  // 24 lines
          "[pairhmm_shapes]\n"
          "ftz = [\n"
          "  { shape = \"8x4\", cycles_per_warp_step = 146, cycles_per_warp = 689, "
          "latency_per_step = 278 },\n"
          "  { shape = \"32x1\", cycles_per_warp_step = 66.5, cycles_per_warp = 0, "
          "latency_per_step = 2.75e2 },\n"
          "]\n"
          "ieee = [ { shape = \"4x4\", cycles_per_warp_step = 600, cycles_per_warp = 0, "
          "latency_per_step = 1500 } ]\n",
      "k.toml");
  ASSERT_EQ(t.pairhmm_shapes.ftz.size(), 2u);
  ASSERT_EQ(t.pairhmm_shapes.ieee.size(), 1u);
  EXPECT_EQ(t.pairhmm_shapes.ftz[0], (PairhmmShapeRow{8, 4, 146, 689, 278}));
  EXPECT_EQ(t.pairhmm_shapes.ftz[1], (PairhmmShapeRow{32, 1, 66.5, 0, 275}));
  EXPECT_EQ(t.pairhmm_shapes.ieee[0], (PairhmmShapeRow{4, 4, 600, 0, 1500}));
  EXPECT_EQ(t.pairhmm_shapes.ftz[0].line, 27);
  EXPECT_EQ(t.pairhmm_shapes.ftz[1].line, 28);
  EXPECT_EQ(t.pairhmm_shapes.ieee[0].line, 30);
  EXPECT_EQ(parse_kernel_table(to_toml(t), "again.toml"), t);
}

// The committed table (measured by `duet tune`) reads and round-trips.
TEST(IoKernelTable, CommittedTableIsValid) {
  const auto path =
      std::filesystem::path(__FILE__).parent_path().parent_path() / "configs" / "gpu-kernels.toml";
  KernelTable t;
  ASSERT_NO_THROW(t = load_kernel_table(path.string()));
  EXPECT_FALSE(t.rows.empty());
  EXPECT_EQ(parse_kernel_table(to_toml(t), "again.toml"), t);
}

TEST(IoKernelTable, ChoosesByLengthAtTheBoundaries) {
  const KernelTable t = parse_kernel_table(kGood, "k.toml");
  const std::vector<std::pair<int, int>> expected = {
      {1, 8},     {127, 8},   {128, 8},   {129, 16},  {300, 16},   {301, 16},
      {1024, 16}, {1025, 32}, {3000, 32}, {3001, 32}, {100000, 32}};
  for (const auto& [M, group] : expected)
    EXPECT_EQ(choose_kernels(t, M).msv_group_threads, group) << "M=" << M;
  EXPECT_EQ(choose_kernels(t, 200).viterbi_strategy, "thread");
  EXPECT_EQ(choose_kernels(t, 301).viterbi_strategy, "strip");
  EXPECT_EQ(choose_kernels(t, 1025).viterbi_strategy, "warp");
}

TEST(IoKernelTable, PlanTakesTheTableThenTheStrategyOption) {
  const KernelTable t = parse_kernel_table(kGood, "k.toml");
  EXPECT_EQ(plan_kernels(nullptr, 500, ""),
            (KernelTableRow{500, 0, "strip", ""}));  // built-in rule
  EXPECT_EQ(plan_kernels(nullptr, 500, "thread"), (KernelTableRow{500, 0, "thread", ""}));
  EXPECT_EQ(plan_kernels(&t, 200, ""), (KernelTableRow{200, 16, "thread", ""}));
  EXPECT_EQ(plan_kernels(&t, 200, "warp"),
            (KernelTableRow{200, 16, "warp", ""}));  // the option wins
  EXPECT_EQ(plan_kernels(&t, 50, "thread"), (KernelTableRow{50, 8, "thread", ""}));
}

struct TableErrorCase {
  const char* name;
  std::string text;
  std::int64_t line;
  const char* message;  // a prefix of what follows "k.toml:<line>: "
};
void PrintTo(const TableErrorCase& c, std::ostream* out) {
  *out << c.name;
}

class IoKernelTableError : public ::testing::TestWithParam<TableErrorCase> {};

TEST_P(IoKernelTableError, NamesFileAndLine) {
  const TableErrorCase& c = GetParam();
  try {
    parse_kernel_table(c.text, "k.toml");
    FAIL() << "no error for:\n" << c.text;
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "k.toml");
    EXPECT_EQ(error.line(), c.line) << error.what();
    const std::string expected = "k.toml:" + std::to_string(c.line) + ": " + c.message;
    EXPECT_EQ(std::string(error.what()).substr(0, expected.size()), expected) << error.what();
  }
}

const std::string kHead = "device = \"gpu\"\nmeasured = \"today\"\n";  // lines 1-2
std::string row(const std::string& body) {
  return "[[row]]\n" + body;
}
const std::string kRow =
    row("max_length = 100\nmsv_group_threads = 8\nviterbi_strategy = \"warp\"\n");  // 4 lines

// A [pairhmm_shapes] section (from line 7, after kHead and kRow) with `entry` as ftz's one
// shape (line 8) and a good ieee list.
const std::string kShape =
    "{ shape = \"8x4\", cycles_per_warp_step = 1, cycles_per_warp = 0, latency_per_step = 1 }";
std::string shapes(const std::string& entry) {
  return "[pairhmm_shapes]\nftz = [" + entry + "]\nieee = [" + kShape + "]\n";
}

const TableErrorCase kTableErrors[] = {
    {"Syntax", kHead + "device = \n", 3, "TOML syntax error"},
    {"UnknownTopKey", kHead + "colour = \"red\"\n" + kRow, 3, "unknown key 'colour'"},
    {"DeviceNotString", "device = 3\nmeasured = \"x\"\n" + kRow, 1,
     "'device' must be a string, not an integer"},
    {"DeviceEmpty", "device = \"\"\nmeasured = \"x\"\n" + kRow, 1, "'device' must not be empty"},
    {"NoDevice", "measured = \"x\"\n" + kRow, 1, "kernel table lacks 'device'"},
    {"NoMeasured", "device = \"x\"\n" + kRow, 1, "kernel table lacks 'measured'"},
    {"NoRows", kHead, 1, "kernel table has no [[row]]"},
    {"RowNotArrayOfTables", kHead + "row = 3\n", 3, "'row' must be an array of tables"},
    {"UnknownRowKey", kHead + row("max_length = 100\nspeed = 1\n"), 5,
     "unknown key 'speed' in [[row]]"},
    {"LengthNotInteger", kHead + row("max_length = 1.5\n"), 4,
     "'max_length' must be an integer, not a floating"},
    {"LengthZero", kHead + row("max_length = 0\n"), 4,
     "'max_length' must be in [1, 100000], not 0"},
    {"LengthTooLong", kHead + row("max_length = 100001\n"), 4,
     "'max_length' must be in [1, 100000]"},
    {"GroupOutOfRange", kHead + row("max_length = 10\nmsv_group_threads = 64\n"), 5,
     "'msv_group_threads' must be in [8, 32], not 64"},
    {"GroupNotPowerOfTwo", kHead + row("max_length = 10\nmsv_group_threads = 12\n"), 5,
     "'msv_group_threads' must be 8, 16 or 32, not 12"},
    {"StrategyUnknown",
     kHead + row("max_length = 10\nmsv_group_threads = 8\nviterbi_strategy = \"block\"\n"), 6,
     "'viterbi_strategy' must be warp, thread or strip, not 'block'"},
    {"StrategyNotString",
     kHead + row("max_length = 10\nmsv_group_threads = 8\nviterbi_strategy = 1\n"), 6,
     "'viterbi_strategy' must be a string"},
    {"MissingLength", kHead + row("msv_group_threads = 8\nviterbi_strategy = \"warp\"\n"), 3,
     "[[row]] lacks 'max_length'"},
    {"MissingGroup", kHead + row("max_length = 10\nviterbi_strategy = \"warp\"\n"), 3,
     "[[row]] lacks 'msv_group_threads'"},
    {"MissingStrategy", kHead + kRow + row("max_length = 200\nmsv_group_threads = 8\n"), 7,
     "[[row]] lacks 'viterbi_strategy'"},
    {"TuningNotTable", kHead + "tuning = 3\n" + kRow, 3, "'tuning' must be a table"},
    {"TuningUnknownKey", kHead + kRow + "[tuning]\nspeed = 1\n", 8,
     "unknown key 'speed' in [tuning]"},
    {"TuningOutOfRange", kHead + kRow + "[tuning]\nmax_lanes = 0\n", 8,
     "'max_lanes' must be in [1, 64], not 0"},
    {"TuningStepsNotInteger", kHead + kRow + "[tuning]\nforward_max_steps = \"many\"\n", 8,
     "'forward_max_steps' must be an integer"},
    {"ShapesNotTable", kHead + "pairhmm_shapes = 3\n" + kRow, 3,
     "'pairhmm_shapes' must be a table"},
    {"ShapesUnknownArithmetic", kHead + kRow + "[pairhmm_shapes]\nfast = []\n", 8,
     "unknown key 'fast' in [pairhmm_shapes] (the keys are ftz and ieee)"},
    {"ShapesOneArithmetic", kHead + kRow + "[pairhmm_shapes]\nftz = [" + kShape + "]\n", 7,
     "[pairhmm_shapes] lacks 'ieee'"},
    {"ShapesEmptyList", kHead + kRow + "[pairhmm_shapes]\nftz = []\n", 8,
     "'ftz' must be a list of shapes"},
    {"ShapesNotTables", kHead + kRow + "[pairhmm_shapes]\nieee = [1, 2]\n", 8,
     "'ieee' must be a list of shapes"},
    {"ShapeUnknownKey", kHead + kRow + shapes("{ shape = \"8x4\", speed = 1 }"), 8,
     "unknown key 'speed' in a pair-HMM shape"},
    {"ShapeMissingCost", kHead + kRow + shapes("{ shape = \"8x4\", cycles_per_warp_step = 1 }"), 8,
     "a pair-HMM shape lacks 'cycles_per_warp'"},
    {"ShapeMissingShape", kHead + kRow + shapes("{ cycles_per_warp_step = 1 }"), 8,
     "a pair-HMM shape lacks 'shape'"},
    {"ShapeLanes", kHead + kRow + shapes("{ shape = \"6x4\" }"), 8,
     "'shape' must be lanes x rows per lane (lanes 4, 8, 16 or 32; rows 1, 2, 4 or 8), as "
     "\"8x4\", not '6x4'"},
    {"ShapeRows", kHead + kRow + shapes("{ shape = \"8x16\" }"), 8, "'shape' must be lanes x"},
    {"ShapeNoX", kHead + kRow + shapes("{ shape = \"84\" }"), 8, "'shape' must be lanes x"},
    {"ShapeNotString", kHead + kRow + shapes("{ shape = 84 }"), 8,
     "'shape' must be a string, not an integer"},
    {"ShapeNegativeWarp",
     kHead + kRow + shapes("{ shape = \"8x4\", cycles_per_warp_step = 1, cycles_per_warp = -1 }"),
     8, "'cycles_per_warp' must be in [0, 1e9], not -1"},
    {"ShapeZeroStep", kHead + kRow + shapes("{ shape = \"8x4\", cycles_per_warp_step = 0 }"), 8,
     "'cycles_per_warp_step' must be in (0, 1e9], not 0"},
    {"ShapeInfiniteLatency", kHead + kRow + shapes("{ shape = \"8x4\", latency_per_step = inf }"),
     8, "'latency_per_step' must be in (0, 1e9], not inf"},
    {"ShapeCostNotNumber", kHead + kRow + shapes("{ shape = \"8x4\", cycles_per_warp = \"1\" }"), 8,
     "'cycles_per_warp' must be a number, not a string"},
    {"ShapeTwice",
     kHead + kRow + "[pairhmm_shapes]\nieee = [" + kShape + "]\nftz = [\n" + kShape + ",\n" +
         kShape + "]\n",
     11, "shape 8x4 given twice in 'ftz' (line 10 first)"},
    {"LengthsNotIncreasing",
     kHead + kRow + row("max_length = 100\nmsv_group_threads = 8\nviterbi_strategy = \"warp\"\n"),
     8, "'max_length' must increase from row to row (100 follows 100)"},
};

INSTANTIATE_TEST_SUITE_P(All, IoKernelTableError, ::testing::ValuesIn(kTableErrors),
                         [](const ::testing::TestParamInfo<TableErrorCase>& p) {
                           return std::string(p.param.name);
                         });

TEST(IoKernelTable, MissingFileAndFolderAreInputErrors) {
  TempDir dir;
  EXPECT_THROW(load_kernel_table(dir.file("none.toml")), InputError);
  EXPECT_THROW(load_kernel_table(dir.path().string()), InputError);
  std::ofstream(dir.file("k.toml")) << kGood;
  EXPECT_EQ(load_kernel_table(dir.file("k.toml")).rows.size(), 4u);
}

TEST(IoKernelTable, RowsFromTimingsKeepTheFastestAndMerge) {
  // Given out of order; ties go to the smaller group and to warp.
  std::vector<KernelTimingPoint> points = {
      {64, {{8, 1.0}, {16, 2.0}, {32, 3.0}}, 5.0, 9.0},
      {16, {{8, 1.0}, {16, 1.5}, {32, 2.0}}, 4.0, 3.0},  // thread faster
      {32, {{8, 1.0}, {16, 1.0}, {32, 2.0}}, 4.0, 4.0},  // ties: 8, warp
      {128, {{8, 2.0}, {16, 1.0}, {32, 1.5}}, 6.0, 9.0},
      {256, {{8, 3.0}, {16, 1.0}, {32, 1.2}}, 7.0, 9.0},
      {3000, {{8, 9.0}, {16, 4.0}, {32, 2.0}}, 8.0, 90.0},
  };
  const std::vector<KernelTableRow> rows = rows_from_timings(points);
  const std::vector<KernelTableRow> expected = {
      {16, 8, "thread", ""}, {64, 8, "warp", ""}, {256, 16, "warp", ""}, {3000, 32, "warp", ""}};
  EXPECT_EQ(rows, expected);
  EXPECT_NE(rows[1].note.find("M=32"), std::string::npos) << rows[1].note;
  EXPECT_NE(rows[1].note.find("M=64"), std::string::npos) << rows[1].note;
  // One length: one row.
  EXPECT_EQ(rows_from_timings({{500, {{32, 1.0}}, 1.0, 2.0}}),
            (std::vector<KernelTableRow>{{500, 32, "warp", ""}}));
  EXPECT_THROW(rows_from_timings({}), std::invalid_argument);
  EXPECT_THROW(rows_from_timings({{10, {{8, 1.0}}, 1, 1}, {10, {{8, 1.0}}, 1, 1}}),
               std::invalid_argument);
  EXPECT_THROW(rows_from_timings({{10, {}, 1, 1}}), std::invalid_argument);
  // The strip kernel where it was timed and is fastest; untimed (infinity) it never wins;
  // ties with warp go to warp.
  const std::vector<KernelTableRow> with_strip =
      rows_from_timings({{100, {{8, 1.0}}, 4.0, 9.0, 2.0},
                         {200, {{8, 1.0}}, 4.0, 9.0, 4.0},
                         {2000, {{8, 1.0}}, 4.0, 9.0}});
  EXPECT_EQ(with_strip,
            (std::vector<KernelTableRow>{{100, 8, "strip", ""}, {2000, 8, "warp", ""}}));
  EXPECT_NE(with_strip[0].note.find("strip=2.000"), std::string::npos) << with_strip[0].note;
  EXPECT_EQ(
      with_strip[1].note.find("M=2000: MSV ms g8=1.000; Viterbi ms warp=4.000 thread=9.000\n"),
      std::string::npos);
  EXPECT_EQ(with_strip[1].note.find("strip=", with_strip[1].note.find("M=2000")), std::string::npos)
      << with_strip[1].note;
}

TEST(IoKernelTable, ToTomlRoundTrips) {
  KernelTable t;
  t.device = "NVIDIA \"quoted\" \\ GPU";
  t.measured = "2026-11-22T08:00:00Z";
  t.command = "duet tune -o configs/gpu-kernels.toml";
  t.rows = rows_from_timings(
      {{16, {{8, 1.0}, {16, 2.0}}, 1.0, 2.0}, {512, {{8, 3.0}, {16, 2.0}}, 1.0, 2.0}});
  const std::string text = to_toml(t);
  EXPECT_NE(text.find("duet tune -o"), std::string::npos);  // how to regenerate it
  EXPECT_NE(text.find("# M=16: MSV ms"), std::string::npos) << text;
  EXPECT_EQ(parse_kernel_table(text, "t.toml"), t) << text;
  t.tuning.lane_residues = 12345;
  t.tuning.pairhmm_gpu_only_workers = 3;
  EXPECT_EQ(parse_kernel_table(to_toml(t), "t.toml"), t);
  t.command.clear();
  EXPECT_EQ(parse_kernel_table(to_toml(t), "t.toml"), t);
}

TEST(IoKernelTable, PathFromOptionThenConfigThenDefaults) {
  TempDir dir;
  const std::string installed = dir.file("installed.toml"), source = dir.file("source.toml");
  std::ofstream(source) << kGood;
  EXPECT_EQ(resolve_kernel_table_path("cli.toml", "cfg.toml", {installed, source}), "cli.toml");
  EXPECT_EQ(resolve_kernel_table_path("", "cfg.toml", {installed, source}), "cfg.toml");
  EXPECT_EQ(resolve_kernel_table_path("", "", {installed, source}),
            source);  // the first that exists
  std::ofstream(installed) << kGood;
  EXPECT_EQ(resolve_kernel_table_path("", "", {installed, source}), installed);
  EXPECT_EQ(resolve_kernel_table_path("", "", {dir.file("a"), dir.file("b")}),
            "");  // built-in rule
  EXPECT_EQ(resolve_kernel_table_path("", "", {dir.path().string()}),
            "");  // a folder is not a table
  // [gpu] kernel_table in the configuration.
  EXPECT_EQ(parse_config("[gpu]\nkernel_table = \"t.toml\"\n", "c.toml").gpu.kernel_table,
            "t.toml");
  EXPECT_EQ(parse_config("", "c.toml").gpu.kernel_table, "");
}

}  // namespace
}  // namespace duet::io
