// The pair-HMM workload through the scheduler (see pairhmm_workload.hpp).
#include "app/pairhmm/pairhmm_workload.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>

#include "app/kit/cluster.hpp"
#include "app/kit/test_double_gpu.hpp"
#include "app/kit/wire.hpp"
#include "app/pairhmm/pairhmm_kernels.hpp"
#include "core/alphabet.hpp"
#include "core/error.hpp"
#include "device/gpu_info.hpp"
#include "host_simd/pairhmm/pairhmm_simd.hpp"
#include "scheduler/distributed_source.hpp"

namespace duet::app {

namespace {

// Input pairs grouped at once (group_pairs' window): sixteen of a kernel's own windows, a
// multiple of every variant's lanes. Small batches (tens of reads by a few haplotypes)
// bring many pair sizes into a window; a wider one finds each group pairs of closer sizes.
// On many small batches drawn from 10s.in, the lanes' idle cells were 8.5% of the cells
// run with windows of 1,024 pairs, 0.7% with 16,384 (1.5% and 0.2% on 10s.in itself).
constexpr std::size_t kWorkloadGroupingPairs = 16 * simd::pairhmm::kGroupingPairs;

// The pairs in grouped order and the blocks of whole groups the scheduler hands out (see
// pairhmm_workload.hpp). group_all() groups every window of kWorkloadGroupingPairs input
// pairs before the scheduler runs; next() cuts the grouped pairs into blocks.
class PairBlocks final : public BlockSource {
 public:
  PairBlocks(std::span<const pairhmm::Pair> pairs, int lanes, std::int64_t block_cells)
      : input_(pairs),
        lanes_(static_cast<std::size_t>(lanes)),
        block_units_(std::max<std::int64_t>(1, block_cells / kCellsPerUnit)),
        grouped_(pairs.size()),
        input_index_(pairs.size()) {}

  // Pair k of the grouped order, and its place in the input.
  std::span<const pairhmm::Pair> grouped() const { return grouped_; }
  std::span<const std::size_t> input_index() const { return input_index_; }

  // Groups the windows on oneTBB's threads (one thread grouping as blocks were asked for
  // was the bound of GPU-only runs, bench/RESULTS.md). Called once, before next().
  void group_all() {
    const std::size_t window = kWorkloadGroupingPairs;
    const std::size_t windows = (input_.size() + window - 1) / window;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, windows, 8),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        std::vector<std::size_t> order;
                        for (std::size_t w = range.begin(); w != range.end(); ++w)
                          group_window(w * window, order);
                      });
  }

  BlockPtr next() override {
    if (next_ == input_.size()) return nullptr;
    const auto start = Clock::now();
    auto block = std::make_shared<Block>();
    block->index = blocks_++;
    block->first_sequence = static_cast<std::int64_t>(next_);
    std::int64_t units = 0, cells = 0;
    while (next_ < input_.size() && units < block_units_) {
      // One group: `lanes_` pairs, fewer at the end of the input (windows hold whole groups).
      const std::size_t end = std::min(next_ + lanes_, input_.size());
      for (; next_ < end; ++next_) {
        units += std::max<std::int64_t>(
            1, (grouped_[next_].cells() + kCellsPerUnit / 2) / kCellsPerUnit);
        cells += grouped_[next_].cells();
        block->offsets.push_back(0);  // a pair per "sequence"; no residues
      }
    }
    block->work_units = units;
    block->work_cells = cells;
    done_ = static_cast<double>(next_) / static_cast<double>(input_.size());
    seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    return block;
  }
  double fraction_done() const override { return done_; }
  // About how many blocks next() will make: the pairs' work units over a block's (call
  // after group_all).
  std::int64_t expected_blocks() const {
    std::int64_t units = 0;
    for (const pairhmm::Pair& p : input_)
      units += std::max<std::int64_t>(1, (p.cells() + kCellsPerUnit / 2) / kCellsPerUnit);
    return std::max<std::int64_t>(1, units / block_units_);
  }
  // Time spent in next() (read once the scheduler is done).
  double seconds() const { return seconds_; }

 private:
  // The window of input pairs from `start` in grouped order (`order`: scratch).
  void group_window(std::size_t start, std::vector<std::size_t>& order) {
    const std::size_t n = std::min(kWorkloadGroupingPairs, input_.size() - start);
    const auto window = input_.subspan(start, n);
    order.resize(n);
    if (lanes_ > 1) {
      simd::pairhmm::group_pairs(window, static_cast<int>(lanes_), order);
    } else {
      std::iota(order.begin(), order.end(), std::size_t{0});
    }
    for (std::size_t k = 0; k < n; ++k) {
      grouped_[start + k] = window[order[k]];
      input_index_[start + k] = start + order[k];
    }
  }

  std::span<const pairhmm::Pair> input_;
  std::size_t lanes_;
  std::int64_t block_units_;
  std::vector<pairhmm::Pair> grouped_;
  std::vector<std::size_t> input_index_;
  std::size_t next_ = 0;  // next pair to hand out
  std::int64_t blocks_ = 0;
  double done_ = 0, seconds_ = 0;
  using Clock = std::chrono::steady_clock;
};

// Where results go: one slot per pair, each written once by whoever ran its block.
struct ResultSlots {
  const pairhmm::Model& model;
  std::span<const pairhmm::Pair> pairs;      // grouped order (blocks' numbering)
  std::span<const std::size_t> input_index;  // per pair of `pairs`: its input number
  std::vector<double> log10;                 // input order
  std::vector<std::uint8_t> in_double;

  // Turns the float sums of a block's pairs (pairs first, first + 1, ...) into reported
  // values.
  void finish(std::int64_t first, std::span<const float> sums) {
    for (std::size_t i = 0; i < sums.size(); ++i) {
      const auto k = static_cast<std::size_t>(first) + i;
      const pairhmm::Likelihood l = pairhmm::finish_likelihood(model, pairs[k], sums[i]);
      log10[input_index[k]] = l.log10;
      in_double[input_index[k]] = l.in_double ? 1 : 0;
    }
  }
};

class PairhmmWorkload final : public scheduler::Workload {
 public:
  PairhmmWorkload(ResultSlots& slots, const CpuKernel& kernel, int threads)
      : slots_(slots), kernel_(kernel), sums_(static_cast<std::size_t>(threads)) {}
  // Unused: every block gives its own cells (Block::work_cells).
  std::int64_t cells_per_residue() const override { return 1; }
  std::int64_t run_block(const Block& block, int worker) override {
    std::vector<float>& sums = sums_[static_cast<std::size_t>(worker)];
    const auto pairs =
        slots_.pairs.subspan(static_cast<std::size_t>(block.first_sequence), block.sequences());
    sums.resize(pairs.size());
    kernel_.grouped(slots_.model, pairs, sums.data());  // a block holds whole groups
    slots_.finish(block.first_sequence, sums);
    return static_cast<std::int64_t>(pairs.size());
  }
  // A device runs every stage of the pair-HMM: no block is ever posted.
  std::int64_t run_post(const Block&, PostState&, int) override {
    throw std::logic_error("pairhmm: a device left a block to the post stage");
  }

 private:
  ResultSlots& slots_;
  const CpuKernel& kernel_;
  std::vector<std::vector<float>> sums_;  // per worker
};

}  // namespace

PairhmmRun run_pairhmm(const pairhmm::Input& input, const pairhmm::Model& model,
                       const PairhmmRunOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const std::vector<pairhmm::Pair> input_pairs = input.pair_list();
  const CpuKernel& kernel = select_cpu_kernel(options.isa);
  std::int64_t block_cells = options.block_cells;
  if (options.cluster != nullptr) {
    // Every rank must cut the same blocks (the chunks are block numbers): rank 0's size,
    // and the same grouping of pairs (the kernel's lanes).
    block_cells = options.cluster->agree(block_cells);
    if (options.cluster->agree(kernel.lanes) != kernel.lanes) {
      throw UsageError("the ranks' CPU kernels group pairs differently (" + kernel.name +
                       " here): give every rank the same --isa");
    }
  }
  PairBlocks blocks(input_pairs, kernel.lanes, block_cells);
  const auto grouping = Clock::now();
  blocks.group_all();
  const double grouping_seconds = std::chrono::duration<double>(Clock::now() - grouping).count();
  const std::span<const pairhmm::Pair> pairs = blocks.grouped();

  std::vector<std::unique_ptr<scheduler::GpuBackend>> devices;
  std::function<std::string()> gpu_kernel = [] { return std::string(); };
  ResultSlots slots{model, pairs, blocks.input_index(), std::vector<double>(pairs.size()),
                    std::vector<std::uint8_t>(pairs.size())};
  const int cores = usable_cores();
  const int feeders_per_gpu =
      options.gpu_feeders > 0 ? options.gpu_feeders : options.tuning.pairhmm_feeders_per_gpu;
  // The default mode leaves the GPUs alone when the CPU alone would end about as soon as a
  // GPU starts (0.2 to 0.3 s; bench/RESULTS.md): a run must not be slower because a GPU exists.
  const std::int64_t gpu_min_cells =
      options.gpu_min_cells >= 0 ? options.gpu_min_cells
                                 : options.tuning.pairhmm_gpu_min_cells_per_worker *
                                       (options.cpu_workers > 0 ? options.cpu_workers : cores);
  const bool small_input = options.gpu == PairhmmRunOptions::Gpu::auto_detect &&
                           options.test_gpus == 0 && input.cells() < gpu_min_cells;
  if (small_input) {
    // Said where a GPU is there to be left alone.
    if (device::gpus_shown_by_driver() > 0) {
      gpu_kernel = [gpu_min_cells] {
        return "none (a small input: under " + std::to_string(gpu_min_cells) + " cells)";
      };
    }
  } else if (options.gpu != PairhmmRunOptions::Gpu::off) {
    if (options.test_gpus > 0) {
      // The scalar kernel on the feeder's thread (kit/test_double_gpu.hpp).
      for (int g = 0; g < options.test_gpus; ++g) {
        devices.push_back(std::make_unique<TestDoubleGpu<std::vector<float>>>(
            g, "all",
            [&slots](const Block& b, const scheduler::HostLoopRunner&) {
              const auto block_pairs =
                  slots.pairs.subspan(static_cast<std::size_t>(b.first_sequence), b.sequences());
              std::vector<float> sums(block_pairs.size());
              pairhmm::forward_sums_scalar(slots.model, block_pairs, sums.data());
              return sums;
            },
            [&slots](const Block& b, std::vector<float>&& sums) {
              slots.finish(b.first_sequence, sums);
              return scheduler::GpuBlockOutcome{{}, static_cast<std::int64_t>(sums.size())};
            }));
      }
      gpu_kernel = [] { return std::string("test-double (scalar)"); };
    } else {
      // Hybrid: the cores left to each feeder (pairhmm_cores_per_feeder) pack for it.
      const bool gpu_only = options.gpu == PairhmmRunOptions::Gpu::only;
      const int helpers = gpu_only ? 0 : std::max(0, options.tuning.pairhmm_cores_per_feeder - 1);
      GpuBackends found = make_gpu_backends(
          model, options.gpu_kernel, options.gpu_parts, feeders_per_gpu, helpers, gpu_only,
          [&slots](std::int64_t first, std::span<const float> sums) { slots.finish(first, sums); },
          pairs, options.shapes);
      devices = std::move(found.backends);
      if (found.kernel) gpu_kernel = std::move(found.kernel);  // none without a GPU
    }
  }
  if (options.gpu == PairhmmRunOptions::Gpu::only && devices.empty()) {
    throw UsageError("--gpu-only: no GPU available");
  }
  const int gpus = static_cast<int>(devices.size());

  // GPU-only: the CPU workers only help the feeders' host loops and redo failed batches;
  // more of them made the run slower. Hybrid: cores left to each feeder for its packing.
  // Both from the tuning table (configs/gpu-kernels.toml, measured: bench/RESULTS.md).
  const io::GpuTuning& t = options.tuning;
  const int default_workers = options.gpu == PairhmmRunOptions::Gpu::only
                                  ? std::min(t.pairhmm_gpu_only_workers, cores)
                                  : std::max(1, cores - t.pairhmm_cores_per_feeder * gpus);
  scheduler::SchedulerOptions s =
      scheduler_options(options, options.cpu_workers > 0 ? options.cpu_workers : default_workers,
                        kPairhmmGpuBatchBlocks);
  s.gpu_batch_residues = std::int64_t{1} << 40;  // batches bounded by their number of blocks

  PairhmmRun run;
  run.pairs = static_cast<std::int64_t>(pairs.size());
  run.cells = input.cells();
  run.cpu_kernel = kernel.name;
  run.gpu_feeders_per_gpu = feeders_per_gpu;
  run.test_double_gpus = options.test_gpus > 0 && !devices.empty();
  PairhmmWorkload workload(slots, kernel, s.cpu_workers + gpus);
  std::vector<scheduler::GpuBackend*> backends;
  for (auto& d : devices) backends.push_back(d.get());
  // A rank of a job scores the chunks it is handed, and notes the others' pairs.
  std::vector<std::uint8_t> others(options.cluster != nullptr ? pairs.size() : 0, 0);
  std::optional<scheduler::DistributedSource> share;
  if (options.cluster != nullptr) {
    share.emplace(blocks, options.cluster->chunks(), 0, blocks.expected_blocks(),
                  [&others](const Block& b) {
                    const auto first = others.begin() + b.first_sequence;
                    std::fill(first, first + static_cast<std::ptrdiff_t>(b.sequences()), 1);
                  });
  }
  if (!pairs.empty()) {
    BlockSource& source = share ? static_cast<BlockSource&>(*share) : blocks;
    run.schedule = scheduler::run_blocks(source, workload, backends, s);
  }
  if (options.cluster != nullptr) {
    run.scored.assign(pairs.size(), 0);
    for (std::size_t k = 0; k < pairs.size(); ++k)
      run.scored[blocks.input_index()[k]] = others[k] ? 0 : 1;
  }
  run.gpu_kernel = gpu_kernel();
  run.block_seconds = blocks.seconds();
  run.grouping_seconds = grouping_seconds;
  run.stopped = run.schedule.stopped;
  run.log10_likelihood = std::move(slots.log10);
  run.in_double = std::move(slots.in_double);
  for (std::uint8_t d : run.in_double) run.pairs_in_double += d;
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return run;
}

std::string pack_pairhmm_rank(const PairhmmRun& run) {
  WireWriter out;
  out.value(run.stopped);
  out.text(run.gpu_kernel);
  std::vector<std::int64_t> index;
  std::vector<double> log10;
  std::vector<std::uint8_t> in_double;
  for (std::size_t i = 0; i < run.scored.size(); ++i) {
    if (!run.scored[i]) continue;
    index.push_back(static_cast<std::int64_t>(i));
    log10.push_back(run.log10_likelihood[i]);
    in_double.push_back(run.in_double[i]);
  }
  out.values(index);
  out.values(log10);
  out.values(in_double);
  write_run_summary(out, run.schedule);
  return out.take();
}

PairhmmRun merge_pairhmm_ranks(PairhmmRun own, const std::vector<std::string>& ranks) {
  PairhmmRun job = std::move(own);
  const std::size_t pairs = job.log10_likelihood.size();
  std::vector<std::uint8_t> scored = std::move(job.scored);  // rank 0's own
  scored.resize(pairs, 0);
  std::vector<scheduler::RunSummary> schedules;
  schedules.push_back(std::move(job.schedule));
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    WireReader in(ranks[r]);
    job.stopped = in.value<bool>() || job.stopped;
    const std::string gpu_kernel = in.text();
    if (job.gpu_kernel.empty() || job.gpu_kernel.rfind("none", 0) == 0) {
      if (!gpu_kernel.empty() && gpu_kernel.rfind("none", 0) != 0) job.gpu_kernel = gpu_kernel;
    }
    const auto index = in.values<std::int64_t>();
    const auto log10 = in.values<double>();
    const auto in_double = in.values<std::uint8_t>();
    schedules.push_back(read_run_summary(in));
    if (!in.done() || log10.size() != index.size() || in_double.size() != index.size())
      throw std::runtime_error("a rank's pair-HMM results are malformed");
    for (std::size_t k = 0; k < index.size(); ++k) {
      const auto i = static_cast<std::size_t>(index[k]);
      if (i >= pairs || scored[i]++ != 0)
        throw std::logic_error("pair " + std::to_string(i) +
                               " was scored twice or is not an input pair");
      job.log10_likelihood[i] = log10[k];
      job.in_double[i] = in_double[k];
    }
  }
  for (std::size_t i = 0; i < pairs; ++i) {
    if (!scored[i] && !job.stopped)
      throw std::logic_error("pair " + std::to_string(i) + " was scored by no rank");
  }
  job.scored.clear();
  job.pairs_in_double = 0;
  for (const std::uint8_t d : job.in_double) job.pairs_in_double += d;
  job.schedule = scheduler::merge_run_summaries(std::move(schedules));
  return job;
}

}  // namespace duet::app
