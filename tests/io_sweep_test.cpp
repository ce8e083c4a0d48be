// Sweep files for duet bench: strict parsing, expansion into runs, command-line
// arguments, and the CSV summary round trip.
#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"
#include "io/sweep.hpp"

namespace duet::io {
namespace {

const char* kSweep = R"(name = "split"
repeats = 2
[workload]
synthetic_lengths = [100, 400]
synthetic_residues = 1e6
[sweep]
devices = ["cpu", "gpu", "hybrid"]
policy = ["dynamic", "static"]
static_cpu_fraction = [0.25, 0.5]
cpu = [2]
)";

TEST(Sweep, ParsesAndExpands) {
  const SweepSpec spec = parse_sweep(kSweep, "s.toml");
  EXPECT_EQ(spec.name, "split");
  EXPECT_EQ(spec.repeats, 2);
  EXPECT_EQ(spec.synthetic_lengths, (std::vector<int>{100, 400}));
  ASSERT_EQ(spec.axes.size(), 4u);
  EXPECT_EQ(spec.axes[0].key, "devices");  // file order
  const auto points = expand_sweep(spec);
  // cpu: 1 (policy and fraction dropped); gpu: 1; hybrid: dynamic 1 + static x 2 fractions.
  ASSERT_EQ(points.size(), 5u);
  EXPECT_EQ(point_arguments(points[0]), (std::vector<std::string>{"--no-gpu", "--cpu", "2"}));
  EXPECT_EQ(point_arguments(points[1]), (std::vector<std::string>{"--gpu-only", "--cpu", "2"}));
  const auto last = point_arguments(points[4]);
  EXPECT_EQ(last, (std::vector<std::string>{"--cpu", "2", "--policy", "static",
                                            "--static-cpu-fraction", "0.5"}));
}

// The GPU's size (--gpu-sms) is a sweep axis of the GPU and hybrid runs; a CPU-only run
// has none.
TEST(Sweep, GpuSmsIsAnAxisOfGpuRuns) {
  const SweepSpec spec = parse_sweep(
      "[workload]\nmodels = [\"a.hmm\"]\ndatabase = \"d.fa\"\n[sweep]\n"
      "devices = [\"cpu\", \"gpu\", \"hybrid\"]\ngpu_sms = [8, 0]\n",
      "s.toml");
  const auto points = expand_sweep(spec);
  ASSERT_EQ(points.size(), 5u);  // cpu once; gpu and hybrid at 8 and 0 SMs
  EXPECT_EQ(point_arguments(points[0]), (std::vector<std::string>{"--no-gpu"}));
  EXPECT_EQ(point_arguments(points[1]), (std::vector<std::string>{"--gpu-only", "--gpu-sms", "8"}));
  EXPECT_EQ(point_arguments(points[4]), (std::vector<std::string>{"--gpu-sms", "0"}));
}

void expect_error(const std::string& text, int line, const std::string& fragment) {
  try {
    parse_sweep(text, "bad.toml");
    FAIL() << "no error for:\n" << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.toml"), std::string::npos) << e.what();
  }
}

TEST(Sweep, ErrorsNameFileAndLine) {
  const std::string work = "[workload]\nmodels = [\"a.hmm\"]\ndatabase = \"d.fa\"\n";
  expect_error(work + "[sweep]\nthreads = [1]\n", 5, "unknown sweep key 'threads'");
  expect_error(work + "[sweep]\ncpu = [\"two\"]\n", 5, "must be an integer");
  expect_error(work + "[sweep]\ncpu = []\n", 5, "must not be empty");
  expect_error(work + "[sweep]\ndevices = [\"tpu\"]\n", 5, "devices must be");
  expect_error(work + "[sweep]\nstatic_cpu_fraction = [1.5]\n", 5, "[0, 1]");
  expect_error("repeats = 0\n" + work, 1, "repeats");
  expect_error("[workload]\nmodel = [\"a\"]\n", 2, "unknown key 'model'");
  expect_error("[workload]\nmodels = [\"a\"]\n", 0, "exactly one of 'database'");
  expect_error("[workload]\nmodels = [\"a\"]\nsynthetic_lengths = [5]\ndatabase = \"x\"\n", 0,
               "exactly one of 'models'");
  expect_error("name = \"x\"\nrepeats = [\n", 2, "TOML syntax error");
}

TEST(Csv, RoundTripsQuotedFields) {
  const std::vector<std::string> header = {"a", "b", "c"};
  const std::vector<std::vector<std::string>> rows = {{"1", "x,y", "say \"hi\""},
                                                      {"", "line\nbreak", "z"}};
  std::ostringstream out;
  write_csv(out, header, rows);
  const auto back = read_csv(out.str());
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0], header);
  EXPECT_EQ(back[1], rows[0]);
  EXPECT_EQ(back[2], rows[1]);
}

}  // namespace
}  // namespace duet::io
