// The workload kit (src/app/kit): the run flags every command shares, and the run options
// they and the TOML file fill. One set of defaults: no flag given, an empty TOML file, the
// options' own defaults, the scheduler's and the reader's, and the help text all agree
// with io::Config.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "app/hmmsearch/report.hpp"
#include "app/hmmsearch/search.hpp"
#include "app/kit/run_flags.hpp"
#include "app/kit/run_options.hpp"
#include "app/pairhmm/pairhmm_workload.hpp"
#include "core/error.hpp"
#include "io/block_reader.hpp"
#include "io/config.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

// Parses `args` (after the command's name) with the shared flags registered on `command`.
io::Config parse(const std::vector<std::string>& args, std::size_t batch_blocks = 128) {
  CLI::App command{"test"};
  app::RunFlags flags(command, "residues", batch_blocks);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  command.parse(reversed);
  return flags.config();
}

void expect_same_shared(const app::RunOptions& a, const app::RunOptions& b, const char* what) {
  EXPECT_EQ(a.gpu, b.gpu) << what;
  EXPECT_EQ(a.policy, b.policy) << what;
  EXPECT_EQ(a.static_cpu_fraction, b.static_cpu_fraction) << what;
  EXPECT_EQ(a.queue_depth, b.queue_depth) << what;
  EXPECT_EQ(a.gpu_batch_blocks, b.gpu_batch_blocks) << what;
  EXPECT_EQ(a.worker_nice, b.worker_nice) << what;
}

TEST(RunKit, OneSetOfDefaults) {
  test::TempDir dir;
  const std::string empty = dir.file("empty.toml");
  test::write_file(empty, "");
  // No flag, and an empty TOML file, give io::Config's defaults.
  EXPECT_EQ(parse({}), io::Config{});
  EXPECT_EQ(parse({"--config", empty}), io::Config{});
  // Each workload's options default to what the configuration's defaults give.
  const app::RunOptions from_config = app::run_options(io::Config{});
  expect_same_shared(app::RunOptions{}, from_config, "RunOptions{}");
  expect_same_shared(app::HybridOptions{}, from_config, "HybridOptions{}");
  expect_same_shared(app::PairhmmRunOptions{}, from_config, "PairhmmRunOptions{}");
  const app::HybridOptions h = app::hybrid_options(io::Config{});
  const app::HybridOptions d;
  EXPECT_EQ(h.block_residues, d.block_residues);
  EXPECT_EQ(h.gpu_batch_residues, d.gpu_batch_residues);
  EXPECT_EQ(h.reader_threads, d.reader_threads);
  EXPECT_EQ(h.reuse_memory, d.reuse_memory);
  EXPECT_EQ(h.gpu_min_database, d.gpu_min_database);
  EXPECT_EQ(h.gpu_jit, d.gpu_jit);
  EXPECT_EQ(h.gpu_feeders, d.gpu_feeders);
  EXPECT_EQ(h.gpu_resident, d.gpu_resident);
  // The libraries' own options, for callers that set nothing (tools, tests), are the
  // configuration's defaults too.
  const scheduler::SchedulerOptions library;
  const io::SchedulerConfig c;
  EXPECT_EQ(library.static_cpu_fraction, c.static_cpu_fraction);
  EXPECT_EQ(static_cast<std::int64_t>(library.queue_depth), c.queue_depth);
  EXPECT_EQ(library.gpu_batch_blocks, app::kHmmsearchGpuBatchBlocks);
  EXPECT_EQ(library.gpu_batch_residues, c.gpu_batch_residues);
  EXPECT_EQ(library.worker_nice, c.worker_nice);
  // Policy "auto" is the workload's: the library's dynamic, adaptive for hmmsearch's command.
  EXPECT_EQ(library.policy, scheduler::SplitPolicy::dynamic);
  EXPECT_EQ(c.policy, "auto");
  EXPECT_EQ(h.policy, scheduler::SplitPolicy::adaptive);
  const io::ReaderOptions reader;
  EXPECT_EQ(static_cast<std::int64_t>(reader.block_residues), c.block_residues);
  EXPECT_EQ(reader.threads, c.reader_threads);
  // A batch size of 0 is the workload's own.
  EXPECT_EQ(app::scheduler_options(d, 1, app::kHmmsearchGpuBatchBlocks).gpu_batch_blocks,
            app::kHmmsearchGpuBatchBlocks);
  EXPECT_EQ(app::scheduler_options(app::PairhmmRunOptions{}, 1, app::kPairhmmGpuBatchBlocks)
                .gpu_batch_blocks,
            app::kPairhmmGpuBatchBlocks);
}

// The help text states the defaults that apply, taken from io::Config.
TEST(RunKit, HelpShowsTheConfigurationsDefaults) {
  CLI::App command{"test"};
  app::RunFlags flags(command, "cells", 256);
  const std::string help = command.help();
  const io::SchedulerConfig s;
  for (const std::string& expected : std::vector<std::string>{
           "(default " + io::RunConfig{}.h5 + ")", "(default " + s.policy + ")",
           "(default " + std::to_string(s.worker_nice) + ")", "blocks per GPU batch (default 256)",
           "share of the cells for the CPU (default 0.5)"}) {
    EXPECT_NE(help.find(expected), std::string::npos) << expected << "\n" << help;
  }
}

// Flags override the file; the file overrides the defaults; numbers are checked as the
// file's are.
TEST(RunKit, FlagsOverrideTheFile) {
  test::TempDir dir;
  const std::string path = dir.file("c.toml");
  test::write_file(path,
                   "[run]\ncpu = 3\nh5 = \"file.h5\"\n[scheduler]\npolicy = \"static\"\n"
                   "worker_nice = 5\ngpu_only = true\nqueue_depth = 9\n");
  const io::Config file = parse({"--config", path});
  EXPECT_EQ(file.run.cpu, 3);
  EXPECT_EQ(file.run.h5, "file.h5");
  EXPECT_EQ(file.scheduler.policy, "static");
  EXPECT_EQ(file.scheduler.worker_nice, 5);
  EXPECT_TRUE(file.scheduler.gpu_only);
  const io::Config both = parse({"--config",
                                 path,
                                 "--cpu",
                                 "2",
                                 "--h5",
                                 "flag.h5",
                                 "-o",
                                 "hits.txt",
                                 "--policy",
                                 "adaptive",
                                 "--worker-nice",
                                 "0",
                                 "--no-gpu",
                                 "--queue-depth",
                                 "4",
                                 "--gpu-batch-blocks",
                                 "7",
                                 "--static-cpu-fraction",
                                 "0.25",
                                 "--quiet"});
  EXPECT_EQ(both.run.cpu, 2);
  EXPECT_EQ(both.run.h5, "flag.h5");
  EXPECT_EQ(both.run.text, "hits.txt");
  EXPECT_TRUE(both.run.quiet);
  EXPECT_EQ(both.scheduler.policy, "adaptive");
  EXPECT_EQ(both.scheduler.worker_nice, 0);
  EXPECT_TRUE(both.scheduler.no_gpu);
  EXPECT_FALSE(both.scheduler.gpu_only);
  EXPECT_EQ(both.scheduler.queue_depth, 4);
  EXPECT_EQ(both.scheduler.gpu_batch_blocks, 7);
  EXPECT_EQ(both.scheduler.static_cpu_fraction, 0.25);
  const app::RunOptions r = app::run_options(both);
  EXPECT_EQ(r.gpu, app::RunOptions::Gpu::off);
  EXPECT_EQ(r.policy, scheduler::SplitPolicy::adaptive);
  const scheduler::SchedulerOptions s = app::scheduler_options(r, 2, 128);
  EXPECT_EQ(s.gpu_batch_blocks, 7u);
  EXPECT_EQ(s.queue_depth, 4u);
  EXPECT_EQ(s.worker_nice, 0);
  EXPECT_EQ(s.static_cpu_fraction, 0.25);
  EXPECT_FALSE(s.gpu_only);
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--worker-nice", "20"}, "--worker-nice must be in [0, 19], not 20"},
           {{"--static-cpu-fraction", "1.5"}, "--static-cpu-fraction must be in [0, 1]"},
           {{"--cpu", "-1"}, "--cpu must be"},
           // -o was the HDF5 file before --h5: such a name is refused with the way to it.
           {{"-o", "r.h5"},
            "-o names the text output file, as in HMMER; the HDF5 result file is "
            "--h5 r.h5"},
           {{"-o", "R.HDF5"}, "the HDF5 result file is --h5 R.HDF5"}}) {
    try {
      (void)parse(args);
      ADD_FAILURE() << args[0] << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// A query's HDF5 group: its name with '/' replaced, names HDF5 cannot hold prefixed, and
// the second, third... query of a name numbered; in one pass over the names (Pfam has
// about 20,000 models).
TEST(HmmsearchReport, QueryGroupNamesAreCleanedAndNumbered) {
  EXPECT_EQ(app::query_group_names({"a", "b/c", "", ".", "..", "a", "b_c", "a"}),
            (std::vector<std::string>{"a", "b_c", "_", "_.", "_..", "a#2", "b_c#2", "a#3"}));
  std::vector<std::string> many(20000, "same");
  const std::vector<std::string> groups = app::query_group_names(many);
  EXPECT_EQ(groups.front(), "same");
  EXPECT_EQ(groups.back(), "same#20000");
}

}  // namespace
}  // namespace duet
