// Tests of the TOML configuration (src/io/config): defaults, a full file, every kind of
// error with its file and line, and the to_toml round trip (fixed and random configs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/config.hpp"
#include "io_temp_dir.hpp"

namespace duet::io {
namespace {

using testing::TempDir;

TEST(IoConfig, DefaultsAreHmmersearchDefaults) {
  const Config config;
  EXPECT_EQ(config.search.E, 10.0);
  EXPECT_FALSE(config.search.T.has_value());
  EXPECT_FALSE(config.search.Z.has_value());
  EXPECT_EQ(config.search.F1, 0.02);
  EXPECT_EQ(config.search.F2, 1e-3);
  EXPECT_EQ(config.search.F3, 1e-5);
  EXPECT_FALSE(config.search.max);
  EXPECT_FALSE(config.search.nobias);
  EXPECT_FALSE(config.search.nonull2);
  EXPECT_EQ(config.run.cpu, 0);
  EXPECT_EQ(config.run.h5, "duet.h5");
  EXPECT_EQ(config.run.tblout, "");
  EXPECT_EQ(config.run.isa, "auto");
  EXPECT_FALSE(config.run.quiet);
  EXPECT_EQ(config.scheduler.policy, "auto");
  EXPECT_EQ(config.scheduler.static_cpu_fraction, 0.5);
  EXPECT_EQ(config.scheduler.block_residues, 1 << 20);
  EXPECT_EQ(config.scheduler.queue_depth, 0);
  EXPECT_EQ(config.scheduler.gpu_batch_blocks, 0);  // the workload's own
  EXPECT_EQ(config.scheduler.gpu_batch_residues, 128 << 20);
  EXPECT_FALSE(config.scheduler.no_gpu);
  EXPECT_FALSE(config.scheduler.gpu_only);
  EXPECT_EQ(config.scheduler.reuse_memory, std::uint64_t{2} << 30);
  EXPECT_EQ(config.scheduler.reader_threads, 0);
  EXPECT_EQ(config.scheduler.gpu_min_database, std::uint64_t{1} << 30);
}

TEST(IoConfig, EmptyTextGivesDefaults) {
  EXPECT_EQ(parse_config("", "empty.toml"), Config{});
  EXPECT_EQ(parse_config("# only a comment\n\n", "empty.toml"), Config{});
  EXPECT_EQ(parse_config("[hmmsearch]\n[run]\n", "empty.toml"), Config{});
  EXPECT_EQ(parse_config("[scheduler]\n", "empty.toml"), Config{});
}

TEST(IoConfig, SchedulerTableIsRead) {
  const Config config = parse_config(R"([scheduler]
policy = "static"
static_cpu_fraction = 0.25
block_residues = 65536
queue_depth = 12
gpu_batch_blocks = 16
gpu_batch_residues = 33554432
gpu_only = true
no_gpu = false
reuse_memory = "512M"
reader_threads = 3
)",
                                     "sched.toml");
  const SchedulerConfig& s = config.scheduler;
  EXPECT_EQ(s.policy, "static");
  EXPECT_EQ(s.static_cpu_fraction, 0.25);
  EXPECT_EQ(s.block_residues, 65536);
  EXPECT_EQ(s.queue_depth, 12);
  EXPECT_EQ(s.gpu_batch_blocks, 16);
  EXPECT_EQ(s.gpu_batch_residues, 33554432);
  EXPECT_TRUE(s.gpu_only);
  EXPECT_FALSE(s.no_gpu);
  EXPECT_EQ(s.reuse_memory, std::uint64_t{512} << 20);
  EXPECT_EQ(s.reader_threads, 3);
  EXPECT_EQ(parse_config("[scheduler]\ngpu_min_database = \"256M\"\n", "s.toml")
                .scheduler.gpu_min_database,
            std::uint64_t{256} << 20);
  EXPECT_EQ(parse_config("[scheduler]\nreuse_memory = 1000\npolicy = \"adaptive\"\nno_gpu = true\n",
                         "s.toml")
                .scheduler,
            (SchedulerConfig{"adaptive", 0.5, 1 << 20, 0, 0, 128 << 20, true, false, 1000, 0}));
  EXPECT_EQ(parse_config("[scheduler]\nstatic_cpu_fraction = 1\n", "s.toml")
                .scheduler.static_cpu_fraction,
            1.0);
}

// [gpu] resident: "auto" (the default), an integer of bytes or a size; 0 turns it off.
TEST(IoConfig, GpuResident) {
  EXPECT_FALSE(Config{}.gpu.resident.has_value());
  EXPECT_FALSE(parse_config("[gpu]\nresident = \"auto\"\n", "g.toml").gpu.resident.has_value());
  EXPECT_EQ(parse_config("[gpu]\nresident = \"8G\"\n", "g.toml").gpu.resident,
            std::uint64_t{8} << 30);
  EXPECT_EQ(parse_config("[gpu]\nresident = 0\n", "g.toml").gpu.resident, std::uint64_t{0});
  EXPECT_EQ(parse_config("[gpu]\nresident = 12345\n", "g.toml").gpu.resident, std::uint64_t{12345});
  const auto automatic = parse_gpu_resident("auto");
  ASSERT_TRUE(automatic.has_value());
  EXPECT_FALSE(automatic->has_value());
  const auto size = parse_gpu_resident("512M");
  ASSERT_TRUE(size.has_value());
  EXPECT_EQ(*size, std::uint64_t{512} << 20);
  const auto off = parse_gpu_resident("0");
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(*off, std::uint64_t{0});
  EXPECT_FALSE(parse_gpu_resident("lots").has_value());
  EXPECT_FALSE(parse_gpu_resident("").has_value());
  EXPECT_FALSE(parse_gpu_resident("Auto").has_value());
}

TEST(IoConfig, MemorySizes) {
  EXPECT_EQ(parse_memory_size("0"), 0u);
  EXPECT_EQ(parse_memory_size("100000"), 100000u);
  EXPECT_EQ(parse_memory_size("4k"), 4096u);
  EXPECT_EQ(parse_memory_size("512M"), std::uint64_t{512} << 20);
  EXPECT_EQ(parse_memory_size("2GiB"), std::uint64_t{2} << 30);
  EXPECT_EQ(parse_memory_size("3GB"), std::uint64_t{3} << 30);
  EXPECT_EQ(parse_memory_size("1T"), std::uint64_t{1} << 40);
  EXPECT_EQ(parse_memory_size("10B"), 10u);
  for (const char* bad : {"", "G", "-1", "1.5G", "2 G", "2X", "2GG", "9999999999T", " 1"}) {
    EXPECT_FALSE(parse_memory_size(bad).has_value()) << bad;
  }
  for (const std::uint64_t bytes :
       {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1024}, std::uint64_t{1536} << 20,
        std::uint64_t{2} << 30, (std::uint64_t{1} << 40) + 1}) {
    EXPECT_EQ(parse_memory_size(format_memory_size(bytes)), bytes) << format_memory_size(bytes);
  }
  EXPECT_EQ(format_memory_size(std::uint64_t{2} << 30), "2G");
  EXPECT_EQ(format_memory_size(std::uint64_t{1536} << 20), "1536M");
}

TEST(IoConfig, FullFileIsRead) {
  const Config config = parse_config(R"(# every key
[hmmsearch]
E = 0.5
T = 25.5
Z = 45638612
F1 = 0.05
F2 = 2e-3
F3 = 1e-6
max = true
nobias = true
nonull2 = true
domE = 1.5
domT = 12.5
domZ = 300
incE = 1e-4
incT = 30
incdomE = 1e-3
incdomT = 21
seed = 7
cut = "tc"

[run]
cpu = 8
h5 = "results/pfam.h5"
text = "results/pfam.out"
tblout = "hits.tbl"
domtblout = "domains.tbl"
noali = true
acc = true
textw = 200
isa = "avx2"
quiet = true
)",
                                     "full.toml");
  EXPECT_EQ(config.search.E, 0.5);
  EXPECT_EQ(config.search.T, 25.5);
  EXPECT_EQ(config.search.Z, 45638612.0);
  EXPECT_EQ(config.search.F1, 0.05);
  EXPECT_EQ(config.search.F2, 2e-3);
  EXPECT_EQ(config.search.F3, 1e-6);
  EXPECT_TRUE(config.search.max);
  EXPECT_TRUE(config.search.nobias);
  EXPECT_TRUE(config.search.nonull2);
  EXPECT_EQ(config.search.domE, 1.5);
  EXPECT_EQ(config.search.domT, 12.5);
  EXPECT_EQ(config.search.domZ, 300.0);
  EXPECT_EQ(config.search.incE, 1e-4);
  EXPECT_EQ(config.search.incT, 30.0);
  EXPECT_EQ(config.search.incdomE, 1e-3);
  EXPECT_EQ(config.search.incdomT, 21.0);
  EXPECT_EQ(config.search.seed, 7);
  EXPECT_EQ(config.search.cut, "tc");
  EXPECT_EQ(config.run.cpu, 8);
  EXPECT_EQ(config.run.h5, "results/pfam.h5");
  EXPECT_EQ(config.run.text, "results/pfam.out");
  EXPECT_EQ(config.run.tblout, "hits.tbl");
  EXPECT_EQ(config.run.domtblout, "domains.tbl");
  EXPECT_TRUE(config.run.noali);
  EXPECT_TRUE(config.run.acc);
  EXPECT_EQ(config.run.textw, 200);
  EXPECT_EQ(config.run.isa, "avx2");
  EXPECT_TRUE(config.run.quiet);
}

TEST(IoConfig, MissingKeysKeepDefaults) {
  const Config config = parse_config("[hmmsearch]\nT = 20\n[run]\ncpu = 2\n", "part.toml");
  Config expected;
  expected.search.T = 20.0;
  expected.run.cpu = 2;
  EXPECT_EQ(config, expected);
}

TEST(IoConfig, IntegersAreAcceptedForNumbers) {
  const Config config = parse_config("[hmmsearch]\nE = 5\nT = -3\nZ = 1000\nF1 = 1\n", "int.toml");
  EXPECT_EQ(config.search.E, 5.0);
  EXPECT_EQ(config.search.T, -3.0);
  EXPECT_EQ(config.search.Z, 1000.0);
  EXPECT_EQ(config.search.F1, 1.0);
}

TEST(IoConfig, EveryIsaNameIsAccepted) {
  for (const std::string isa : {"auto", "scalar", "sse4.1", "avx2", "avx512"}) {
    EXPECT_EQ(parse_config("[run]\nisa = \"" + isa + "\"\n", "isa.toml").run.isa, isa);
  }
}

TEST(IoConfig, InlineTablesAreTables) {
  const Config config =
      parse_config("hmmsearch = { E = 1e-3 }\nrun = { cpu = 4 }\n", "inline.toml");
  EXPECT_EQ(config.search.E, 1e-3);
  EXPECT_EQ(config.run.cpu, 4);
}

// ---- errors ----

struct ConfigErrorCase {
  const char* name;
  const char* text;
  std::int64_t line;    // the line the error must name
  const char* message;  // what follows "cfg.toml:<line>: " (a prefix of it)
};

void PrintTo(const ConfigErrorCase& error_case, std::ostream* out) {
  *out << error_case.name;
}

class IoConfigError : public ::testing::TestWithParam<ConfigErrorCase> {};

TEST_P(IoConfigError, NamesFileAndLine) {
  const ConfigErrorCase& error_case = GetParam();
  try {
    parse_config(error_case.text, "cfg.toml");
    FAIL() << "no error for:\n" << error_case.text;
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), "cfg.toml");
    EXPECT_EQ(error.line(), error_case.line) << error.what();
    const std::string expected =
        "cfg.toml:" + std::to_string(error_case.line) + ": " + error_case.message;
    EXPECT_EQ(std::string(error.what()).substr(0, expected.size()), expected) << error.what();
  }
}

const ConfigErrorCase kConfigErrors[] = {
    // unknown names
    {"unknown_key_hmmsearch", "[hmmsearch]\nE = 1.0\nF4 = 0.1\n", 3,
     "unknown key 'F4' in [hmmsearch]"},
    {"unknown_key_run", "[run]\ncpu = 1\n\nthreads = 4\n", 4, "unknown key 'threads' in [run]"},
    {"unknown_table", "[hmmsearch]\nE = 1.0\n[output]\nfile = \"x\"\n", 3,
     "unknown table [output]"},
    {"unknown_subtable", "[hmmsearch]\nE = 1.0\n[hmmsearch.extra]\nx = 1\n", 3,
     "unknown key 'extra' in [hmmsearch]"},
    {"key_outside_table", "E = 1.0\n[hmmsearch]\n", 1, "unknown key 'E' outside a table"},
    {"unknown_key_gpu", "[gpu]\nkernel_table = \"t.toml\"\nstrategy = \"warp\"\n", 3,
     "unknown key 'strategy' in [gpu]"},
    {"gpu_kernel_table_not_string", "[gpu]\nkernel_table = 3\n", 2,
     "'kernel_table' must be a string"},
    {"gpu_jit_not_boolean", "[gpu]\njit = \"yes\"\n", 2, "'jit' must be a boolean"},
    {"gpu_feeders_zero", "[gpu]\njit = true\nfeeders = 0\n", 3,
     "'feeders' must be in [1, 8], not 0"},
    {"gpu_feeders_not_integer", "[gpu]\nfeeders = 1.5\n", 2, "'feeders' must be an integer"},
    {"gpu_resident_bad_text", "[gpu]\nresident = \"lots\"\n", 2,
     "'resident' must be \"auto\" or a size such as \"512M\" or \"4G\", not 'lots'"},
    {"gpu_resident_negative", "[gpu]\nresident = -1\n", 2, "'resident' must be >= 0, not -1"},
    {"gpu_resident_boolean", "[gpu]\nresident = true\n", 2,
     "'resident' must be an integer (bytes) or a string such as \"4G\", not a boolean"},
    {"first_problem_in_file_order", "[hmmsearch]\nnobias = 1\nE = \"x\"\n", 2,
     "'nobias' must be a boolean"},
    // wrong types
    {"string_for_number", "[hmmsearch]\nE = \"1e-3\"\n", 2, "'E' must be a number, not a string"},
    {"boolean_for_number", "[hmmsearch]\n\nT = true\n", 3, "'T' must be a number, not a boolean"},
    {"array_for_number", "[hmmsearch]\nZ = [1, 2]\n", 2, "'Z' must be a number, not an array"},
    {"float_for_integer", "[run]\ncpu = 2.5\n", 2,
     "'cpu' must be an integer, not a floating-point number"},
    {"integer_for_boolean", "[run]\nquiet = 1\n", 2,
     "'quiet' must be a boolean (true or false), not an integer"},
    {"string_for_boolean", "[hmmsearch]\nmax = \"yes\"\n", 2,
     "'max' must be a boolean (true or false), not a string"},
    {"integer_for_string", "[run]\nh5 = 5\n", 2, "'h5' must be a string, not an integer"},
    {"out_renamed", "[run]\nout = \"x.h5\"\n", 2, "'out' is now 'h5'"},
    {"date_for_string", "[run]\ntblout = 2024-01-01\n", 2, "'tblout' must be a string, not a date"},
    {"number_for_table", "hmmsearch = 3\n", 1, "'hmmsearch' must be a table, not an integer"},
    // out of range
    {"E_zero", "[hmmsearch]\nE = 0\n", 2, "'E' must be > 0, not 0"},
    {"E_negative", "[hmmsearch]\nE = -1.5\n", 2, "'E' must be > 0, not -1.5"},
    {"E_infinite", "[hmmsearch]\nE = inf\n", 2, "'E' must be a finite number"},
    {"E_nan", "[hmmsearch]\nE = nan\n", 2, "'E' must be a finite number"},
    {"T_infinite", "[hmmsearch]\nT = -inf\n", 2, "'T' must be a finite number"},
    {"Z_zero", "[hmmsearch]\nZ = 0.0\n", 2, "'Z' must be > 0, not 0"},
    {"F1_zero", "[hmmsearch]\nF1 = 0\n", 2, "'F1' must be in (0, 1], not 0"},
    {"F2_above_one", "[hmmsearch]\nF2 = 1.5\n", 2, "'F2' must be in (0, 1], not 1.5"},
    {"F3_negative", "[hmmsearch]\nF3 = -1e-5\n", 2, "'F3' must be in (0, 1], not -1e-05"},
    {"domE_zero", "[hmmsearch]\ndomE = 0\n", 2, "'domE' must be > 0, not 0"},
    {"incdomT_infinite", "[hmmsearch]\nincdomT = inf\n", 2, "'incdomT' must be a finite number"},
    {"seed_zero", "[hmmsearch]\nseed = 0\n", 2, "'seed' must be in [1, 4294967295], not 0"},
    {"seed_fraction", "[hmmsearch]\nseed = 1.5\n", 2,
     "'seed' must be an integer, not a floating-point number"},
    {"cut_unknown", "[hmmsearch]\ncut = \"GA\"\n", 2,
     "'cut' must be one of ga, nc, tc or \"\", not 'GA'"},
    {"textw_negative", "[run]\ntextw = -1\n", 2, "'textw' must be in [0, 1048576], not -1"},
    {"cpu_negative", "[run]\ncpu = -1\n", 2, "'cpu' must be in [0, 1024], not -1"},
    {"cpu_too_large", "[run]\ncpu = 3000000000\n", 2, "'cpu' must be in [0, 1024], not 3000000000"},
    {"cpu_above_limit", "[run]\ncpu = 1025\n", 2, "'cpu' must be in [0, 1024], not 1025"},
    {"isa_unknown", "[run]\nisa = \"neon\"\n", 2,
     "'isa' must be one of auto, scalar, sse4.1, avx2, avx512, not 'neon'"},
    {"isa_wrong_case", "[run]\nisa = \"AVX2\"\n", 2, "'isa' must be one of"},
    {"h5_empty", "[run]\nh5 = \"\"\n", 2, "'h5' must not be empty"},
    // [scheduler]
    {"scheduler_unknown_key", "[scheduler]\npolicy = \"static\"\nsplit = 0.5\n", 3,
     "unknown key 'split' in [scheduler]"},
    {"policy_unknown", "[scheduler]\npolicy = \"greedy\"\n", 2,
     "'policy' must be one of auto, dynamic, static, adaptive, not 'greedy'"},
    {"policy_not_string", "[scheduler]\npolicy = 1\n", 2,
     "'policy' must be a string, not an integer"},
    {"fraction_above_one", "[scheduler]\nstatic_cpu_fraction = 1.5\n", 2,
     "'static_cpu_fraction' must be in [0, 1], not 1.5"},
    {"fraction_negative", "[scheduler]\nstatic_cpu_fraction = -0.1\n", 2,
     "'static_cpu_fraction' must be in [0, 1], not -0.1"},
    {"fraction_string", "[scheduler]\nstatic_cpu_fraction = \"half\"\n", 2,
     "'static_cpu_fraction' must be a number, not a string"},
    {"block_residues_zero", "[scheduler]\nblock_residues = 0\n", 2,
     "'block_residues' must be in [1, 4294967296], not 0"},
    {"block_residues_float", "[scheduler]\nblock_residues = 1e6\n", 2,
     "'block_residues' must be an integer, not a floating-point number"},
    {"queue_depth_negative", "[scheduler]\nqueue_depth = -1\n", 2,
     "'queue_depth' must be in [0, 1048576], not -1"},
    {"gpu_batch_blocks_negative", "[scheduler]\n\ngpu_batch_blocks = -1\n", 3,
     "'gpu_batch_blocks' must be in [0, 1048576], not -1"},
    {"gpu_batch_residues_huge", "[scheduler]\ngpu_batch_residues = 2000000000000\n", 2,
     "'gpu_batch_residues' must be in [1, 1099511627776]"},
    {"no_gpu_not_boolean", "[scheduler]\nno_gpu = 1\n", 2,
     "'no_gpu' must be a boolean (true or false), not an integer"},
    {"no_gpu_and_gpu_only", "[scheduler]\ngpu_only = true\npolicy = \"dynamic\"\nno_gpu = true\n",
     4, "'no_gpu' and 'gpu_only' cannot both be true"},
    {"reuse_memory_bad_text", "[scheduler]\nreuse_memory = \"lots\"\n", 2,
     "'reuse_memory' must be a size such as \"512M\" or \"4G\", not 'lots'"},
    {"reuse_memory_negative", "[scheduler]\nreuse_memory = -5\n", 2,
     "'reuse_memory' must be >= 0, not -5"},
    {"reuse_memory_boolean", "[scheduler]\nreuse_memory = true\n", 2,
     "'reuse_memory' must be an integer (bytes) or a string such as \"4G\", not a boolean"},
    {"reader_threads_too_many", "[scheduler]\nreader_threads = 1000\n", 2,
     "'reader_threads' must be in [0, 256], not 1000"},
    {"worker_nice_too_large", "[scheduler]\nworker_nice = 20\n", 2,
     "'worker_nice' must be in [0, 19], not 20"},
    {"scheduler_not_table", "scheduler = \"dynamic\"\n", 1,
     "'scheduler' must be a table, not a string"},
    // TOML syntax
    {"syntax_missing_value", "[hmmsearch]\nE = 1.0\nF1 =\n", 3, "TOML syntax error"},
    {"syntax_unterminated_string", "[run]\nh5 = \"x.h5\nquiet = true\n", 2, "TOML syntax error"},
    {"syntax_bad_header", "[hmmsearch\nE = 1.0\n", 1, "TOML syntax error"},
    {"syntax_duplicate_key", "[hmmsearch]\nE = 1.0\nE = 2.0\n", 3, "TOML syntax error"},
    {"syntax_duplicate_table", "[run]\ncpu = 1\n[run]\nquiet = true\n", 3, "TOML syntax error"},
};

INSTANTIATE_TEST_SUITE_P(Cases, IoConfigError, ::testing::ValuesIn(kConfigErrors),
                         [](const ::testing::TestParamInfo<ConfigErrorCase>& param_info) {
                           return std::string(param_info.param.name);
                         });

// ---- files ----

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

TEST(IoConfig, LoadsFile) {
  const TempDir folder;
  const std::string path = folder.file("duet.toml");
  write_text(path, "[hmmsearch]\nE = 0.01\n[run]\ncpu = 3\nisa = \"scalar\"\n");
  const Config config = load_config(path);
  EXPECT_EQ(config.search.E, 0.01);
  EXPECT_EQ(config.run.cpu, 3);
  EXPECT_EQ(config.run.isa, "scalar");
}

void expect_round_trip(const Config& config);

// Every example configuration in configs/ reads without error and round-trips (the
// GPU kernel-choice table there is not a configuration: io_kernel_table_test reads it).
TEST(IoConfig, ExampleConfigsAreValid) {
  const auto folder = std::filesystem::path(__FILE__).parent_path().parent_path() / "configs";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".toml" || entry.path().filename() == "gpu-kernels.toml")
      continue;
    ++files;
    Config config;
    ASSERT_NO_THROW(config = load_config(entry.path().string())) << entry.path();
    expect_round_trip(config);
  }
  EXPECT_GE(files, 5);
  EXPECT_TRUE(load_config((folder / "cpu-only.toml").string()).scheduler.no_gpu);
  EXPECT_TRUE(load_config((folder / "gpu-only.toml").string()).scheduler.gpu_only);
  EXPECT_EQ(load_config((folder / "static-split.toml").string()).scheduler.policy, "static");
  EXPECT_EQ(load_config((folder / "hmmsearch-defaults.toml").string()), Config{});
}

TEST(IoConfig, FileErrorNamesPathAndLine) {
  const TempDir folder;
  const std::string path = folder.file("bad.toml");
  write_text(path, "[hmmsearch]\nE = 1e-3\n\n[run]\nisa = \"sse2\"\n");
  try {
    load_config(path);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), path);
    EXPECT_EQ(error.line(), 5);
    EXPECT_EQ(std::string(error.what()).rfind(path + ":5: 'isa' must be one of", 0), 0u)
        << error.what();
  }
}

TEST(IoConfig, SyntaxErrorInFileNamesPathAndLine) {
  const TempDir folder;
  const std::string path = folder.file("syntax.toml");
  write_text(path, "[run]\ncpu = 2\nh5 = = \"x\"\n");
  try {
    load_config(path);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), path);
    EXPECT_EQ(error.line(), 3);
    EXPECT_NE(std::string(error.what()).find(path + ":3: TOML syntax error"), std::string::npos)
        << error.what();
  }
}

TEST(IoConfig, MissingFileIsInputError) {
  const TempDir folder;
  const std::string path = folder.file("absent.toml");
  try {
    load_config(path);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), path);
    EXPECT_EQ(error.line(), 0);
    EXPECT_EQ(std::string(error.what()),
              path + ": cannot read configuration file: No such file or directory");
  }
}

TEST(IoConfig, FolderIsInputError) {
  const TempDir folder;
  try {
    load_config(folder.path().string());
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), folder.path().string());
    EXPECT_EQ(error.line(), 0);
    EXPECT_NE(std::string(error.what()).find("cannot read configuration file"), std::string::npos);
  }
}

// ---- to_toml ----

void expect_round_trip(const Config& config) {
  const std::string text = to_toml(config);
  Config read_back;
  ASSERT_NO_THROW(read_back = parse_config(text, "round_trip.toml")) << text;
  EXPECT_EQ(read_back, config) << text;
}

TEST(IoConfig, ToTomlRoundTripsDefaults) {
  expect_round_trip(Config{});
}

TEST(IoConfig, ToTomlRoundTripsEveryField) {
  Config config;
  config.search.E = 0.1;
  config.search.T = -12.375;
  config.search.Z = 123456789012345678.0;  // more digits than an int64 literal may hold
  config.search.F1 = 1.0;
  config.search.F2 = 1.0 / 3.0;
  config.search.F3 = 4.9406564584124654e-324;  // smallest subnormal
  config.search.max = true;
  config.search.nobias = true;
  config.search.nonull2 = true;
  config.search.domE = 0.25;
  config.search.domT = -3.5;
  config.search.domZ = 17.0;
  config.search.incE = 1e-300;
  config.search.incT = 1e9;
  config.search.incdomE = 2.0 / 3.0;
  config.search.incdomT = 0.0;
  config.search.seed = 4294967295;
  config.search.cut = "ga";
  config.run.cpu = kMaxCpuWorkers;
  config.run.domtblout = "d.tbl";
  config.run.text = "hits.txt";
  config.run.noali = true;
  config.run.acc = true;
  config.run.textw = 0;
  config.run.h5 = "dir with space/\"quoted\" \\ back\tslash\x01\x7f.h5";
  config.run.tblout = "r\xC3\xA9sultats/\xCE\xB1\xCE\xB2.tbl";  // UTF-8
  config.run.isa = "sse4.1";
  config.run.quiet = true;
  config.scheduler = {
      "adaptive", 1.0 / 3.0, std::int64_t{1} << 32,        7,  1 << 20, std::int64_t{1} << 40,
      false,      true,      (std::uint64_t{3} << 30) + 5, 256};
  expect_round_trip(config);
  config.scheduler.reuse_memory = 0;
  config.scheduler.static_cpu_fraction = 0;
  expect_round_trip(config);
  config.gpu.resident = 0;
  expect_round_trip(config);
  config.gpu.resident = (std::uint64_t{5} << 30) + 7;
  expect_round_trip(config);
}

TEST(IoConfig, ToTomlRoundTripsLargeAndWholeNumbers) {
  for (const double value : {1.0, 10.0, 1e15, 1e16, 1e17, 1e22, 1.7976931348623157e308, 2e-308}) {
    Config config;
    config.search.E = value;
    config.search.Z = value;
    config.search.T = -value;
    expect_round_trip(config);
  }
}

TEST(IoConfig, ToTomlRoundTripsRandomConfigs) {
  // A fresh seed each run unless DUET_TEST_SEED replays one.
  const char* replay = std::getenv("DUET_TEST_SEED");
  const auto seed = replay != nullptr ? static_cast<std::uint32_t>(std::stoul(replay))
                                      : static_cast<std::uint32_t>(std::random_device{}());
  RecordProperty("seed", std::to_string(seed));
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (replay with DUET_TEST_SEED=" + std::to_string(seed) + ")");
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> exponent(-300.0, 300.0);
  std::uniform_real_distribution<double> fraction_exponent(-300.0, 0.0);
  std::bernoulli_distribution coin(0.5);
  const auto positive = [&] { return std::pow(10.0, exponent(random)); };
  const auto fraction = [&] { return std::pow(10.0, fraction_exponent(random)); };
  for (int i = 0; i < 500; ++i) {
    Config config;
    config.search.E = positive();
    if (coin(random)) config.search.T = (coin(random) ? 1.0 : -1.0) * positive();
    if (coin(random)) config.search.Z = positive();
    config.search.F1 = fraction();
    config.search.F2 = fraction();
    config.search.F3 = fraction();
    config.search.max = coin(random);
    config.search.nobias = coin(random);
    config.search.nonull2 = coin(random);
    config.search.domE = positive();
    if (coin(random)) config.search.domT = (coin(random) ? 1.0 : -1.0) * positive();
    if (coin(random)) config.search.domZ = positive();
    config.search.incE = positive();
    if (coin(random)) config.search.incT = (coin(random) ? 1.0 : -1.0) * positive();
    config.search.incdomE = positive();
    if (coin(random)) config.search.incdomT = (coin(random) ? 1.0 : -1.0) * positive();
    config.search.seed = std::uniform_int_distribution<std::int64_t>(1, 4294967295)(random);
    config.run.cpu = std::uniform_int_distribution<int>(0, kMaxCpuWorkers)(random);
    config.run.h5 = "out" + std::to_string(i) + ".h5";
    config.run.quiet = coin(random);
    config.scheduler.policy = coin(random) ? "static" : "dynamic";
    config.scheduler.static_cpu_fraction = std::uniform_real_distribution<double>(0.0, 1.0)(random);
    config.scheduler.block_residues =
        std::uniform_int_distribution<std::int64_t>(1, std::int64_t{1} << 32)(random);
    config.scheduler.gpu_batch_residues =
        std::uniform_int_distribution<std::int64_t>(1, std::int64_t{1} << 40)(random);
    config.scheduler.no_gpu = coin(random);
    config.scheduler.reuse_memory =
        std::uniform_int_distribution<std::uint64_t>(0, std::uint64_t{1} << 50)(random) &
        ~((std::uint64_t{1} << (random() % 40)) - 1);
    if (coin(random)) config.gpu.kernel_table = "tables/k" + std::to_string(i) + ".toml";
    config.gpu.jit = coin(random);
    config.gpu.feeders = std::uniform_int_distribution<int>(1, 8)(random);
    config.scheduler.worker_nice = std::uniform_int_distribution<int>(0, 19)(random);
    if (coin(random)) {
      config.gpu.resident =
          std::uniform_int_distribution<std::uint64_t>(0, std::uint64_t{1} << 50)(random);
    }
    expect_round_trip(config);
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace duet::io
