// The pair-HMM workload through the scheduler (see pairhmm_workload.hpp).
#include "app/pairhmm_workload.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "app/pairhmm_kernels.hpp"
#include "core/alphabet.hpp"
#include "core/error.hpp"

namespace duet::app {

namespace {

// The temporary FASTA file of the work-unit adapter: one record per pair, in input order,
// of max(1, round(cells / kCellsPerUnit)) placeholder residues. Removed on destruction.
class WorkUnitFile {
 public:
  explicit WorkUnitFile(std::span<const pairhmm::Pair> pairs) {
    static std::atomic<int> counter{0};
    path_ =
        (std::filesystem::temp_directory_path() /
         ("duet-pairhmm-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".fa"))
            .string();
    std::ofstream out(path_, std::ios::binary);
    std::string record;
    for (const pairhmm::Pair& p : pairs) {
      const std::int64_t units =
          std::max<std::int64_t>(1, (p.cells() + kCellsPerUnit / 2) / kCellsPerUnit);
      record.assign(">p\n");
      record.append(static_cast<std::size_t>(units), 'A');
      record.push_back('\n');
      out << record;
    }
    out.flush();
    if (!out) {
      std::filesystem::remove(path_);
      throw std::runtime_error("cannot write the temporary work-unit file " + path_);
    }
  }
  ~WorkUnitFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  WorkUnitFile(const WorkUnitFile&) = delete;
  WorkUnitFile& operator=(const WorkUnitFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Where results go: one slot per pair, each written once by whoever ran its block.
struct ResultSlots {
  const pairhmm::Model& model;
  std::span<const pairhmm::Pair> pairs;
  std::vector<double> log10;
  std::vector<std::uint8_t> in_double;

  // Turns the float sums of a block's pairs into reported values.
  void finish(std::int64_t first, std::span<const float> sums) {
    for (std::size_t i = 0; i < sums.size(); ++i) {
      const auto k = static_cast<std::size_t>(first) + i;
      const pairhmm::Likelihood l = pairhmm::finish_likelihood(model, pairs[k], sums[i]);
      log10[k] = l.log10;
      in_double[k] = l.in_double ? 1 : 0;
    }
  }
};

class PairhmmWorkload final : public scheduler::Workload {
 public:
  PairhmmWorkload(ResultSlots& slots, const CpuKernel& kernel, int threads)
      : slots_(slots), kernel_(kernel), sums_(static_cast<std::size_t>(threads)) {}
  std::int64_t cells_per_residue() const override { return kCellsPerUnit; }
  std::int64_t run_block(const scheduler::Block& block, int worker) override {
    std::vector<float>& sums = sums_[static_cast<std::size_t>(worker)];
    const auto pairs =
        slots_.pairs.subspan(static_cast<std::size_t>(block.first_sequence), block.sequences());
    sums.resize(pairs.size());
    kernel_.function(slots_.model, pairs, sums.data());
    slots_.finish(block.first_sequence, sums);
    return static_cast<std::int64_t>(pairs.size());
  }
  // A device runs every stage of the pair-HMM: nothing is left for the CPU afterwards.
  std::int64_t run_post(const scheduler::Block& block, int) override {
    return static_cast<std::int64_t>(block.sequences());
  }

 private:
  ResultSlots& slots_;
  const CpuKernel& kernel_;
  std::vector<std::vector<float>> sums_;  // per worker
};

// TEST DOUBLE of a GPU (debug setting DUET_DEBUG_TEST_GPU only): the scalar kernel on the
// feeder's thread, exercising the feeder path (batches, fault requeue).
class TestDoubleGpu final : public scheduler::GpuBackend {
 public:
  TestDoubleGpu(ResultSlots& slots, int number) : slots_(slots), number_(number) {}
  std::string name() const override { return "test-double GPU " + std::to_string(number_); }
  bool test_double() const override { return true; }
  std::string stages() const override { return "all"; }
  std::vector<scheduler::GpuBlockOutcome> run(std::span<const scheduler::BlockPtr> blocks,
                                              int) override {
    std::vector<std::vector<float>> sums(blocks.size());
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const auto pairs = slots_.pairs.subspan(static_cast<std::size_t>(blocks[b]->first_sequence),
                                              blocks[b]->sequences());
      sums[b].resize(pairs.size());
      pairhmm::forward_sums_scalar(slots_.model, pairs, sums[b].data());
    }
    // Results are delivered only once the whole batch has succeeded.
    std::vector<scheduler::GpuBlockOutcome> outcomes;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      slots_.finish(blocks[b]->first_sequence, sums[b]);
      outcomes.push_back({false, static_cast<std::int64_t>(sums[b].size())});
    }
    return outcomes;
  }

 private:
  ResultSlots& slots_;
  int number_;
};

}  // namespace

PairhmmRun run_pairhmm(const pairhmm::Input& input, const pairhmm::Model& model,
                       const PairhmmRunOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const std::vector<pairhmm::Pair> pairs = input.pair_list();

  std::vector<std::unique_ptr<scheduler::GpuBackend>> devices;
  std::string gpu_kernel;
  ResultSlots slots{model, pairs, std::vector<double>(pairs.size()),
                    std::vector<std::uint8_t>(pairs.size())};
  if (options.gpu != PairhmmRunOptions::Gpu::off) {
    if (options.test_gpus > 0) {
      for (int g = 0; g < options.test_gpus; ++g)
        devices.push_back(std::make_unique<TestDoubleGpu>(slots, g));
      gpu_kernel = "test-double (scalar)";
    } else {
      GpuBackends found = make_gpu_backends(
          model, options.gpu_kernel, options.gpu_parts, options.gpu == PairhmmRunOptions::Gpu::only,
          [&slots](std::int64_t first, std::span<const float> sums) { slots.finish(first, sums); },
          pairs);
      devices = std::move(found.backends);
      gpu_kernel = found.kernel;
    }
  }
  if (options.gpu == PairhmmRunOptions::Gpu::only && devices.empty()) {
    throw UsageError("--gpu-only: no GPU available");
  }
  const int gpus = static_cast<int>(devices.size());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const CpuKernel& kernel = select_cpu_kernel(options.isa);

  scheduler::SchedulerOptions s;
  s.cpu_workers = options.cpu_workers > 0 ? options.cpu_workers : std::max(1, cores - gpus);
  s.block_residues =
      static_cast<std::size_t>(std::max<std::int64_t>(1, options.block_cells / kCellsPerUnit));
  s.queue_depth = options.queue_depth;
  s.gpu_batch_blocks = options.gpu_batch_blocks;
  s.gpu_batch_residues = std::int64_t{1} << 40;  // batches bounded by their number of blocks
  s.policy = options.policy;
  s.static_cpu_fraction = options.static_cpu_fraction;
  s.gpu_only = options.gpu == PairhmmRunOptions::Gpu::only;
  s.fault_every = options.fault_every;
  s.progress = options.progress;
  s.stop = options.stop;

  PairhmmRun run;
  run.pairs = static_cast<std::int64_t>(pairs.size());
  run.cells = input.cells();
  run.cpu_kernel = kernel.name;
  run.gpu_kernel = gpu_kernel;
  PairhmmWorkload workload(slots, kernel, s.cpu_workers + gpus);
  std::vector<scheduler::GpuBackend*> backends;
  for (auto& d : devices) backends.push_back(d.get());
  if (!pairs.empty()) {
    const WorkUnitFile units(pairs);
    run.schedule = scheduler::run_blocks(units.path(), Alphabet::dna(), workload, backends, s);
  }
  run.stopped = run.schedule.stopped;
  run.log10_likelihood = std::move(slots.log10);
  run.in_double = std::move(slots.in_double);
  for (std::uint8_t d : run.in_double) run.pairs_in_double += d;
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return run;
}

}  // namespace duet::app
