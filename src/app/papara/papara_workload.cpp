// PaPaRa's scoring through the scheduler (see papara_workload.hpp).
#include "app/papara/papara_workload.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "app/kit/test_double_gpu.hpp"
#include "app/papara/papara_kernels.hpp"
#include "core/error.hpp"

namespace duet::app {

namespace {

// The blocks: units made up front, handed out in order.
class UnitBlocks final : public BlockSource {
 public:
  UnitBlocks(const papara::ProfileView& profiles, const QueryResidues& queries,
             const PaparaRunOptions& o, std::int64_t block_cells) {
    const std::int64_t columns = profiles.columns;
    const int range =
        std::max(papara::kEdgeAlign, o.max_block_edges / papara::kEdgeAlign * papara::kEdgeAlign);
    for (int first = 0; first < profiles.edges; first += range) {
      ++edge_ranges_;
      const int edges = std::min(range, profiles.edges - first);
      std::size_t q = 0;
      while (q < queries.size()) {
        PaparaUnit u{static_cast<std::int64_t>(q), 0, first, edges};
        std::int64_t cells = 0;
        while (q < queries.size() && (cells == 0 || cells < block_cells)) {
          cells += static_cast<std::int64_t>(queries.query(q).size()) * columns * edges;
          ++q;
        }
        u.queries = static_cast<std::int64_t>(q) - u.first_query;
        units_.push_back(u);
        cells_.push_back(cells);
        total_ += cells;
      }
    }
  }
  std::span<const PaparaUnit> units() const { return units_; }
  int edge_ranges() const { return edge_ranges_; }
  std::int64_t total_cells() const { return total_; }

  BlockPtr next() override {
    if (next_ == units_.size()) return nullptr;
    auto block = std::make_shared<Block>();
    const PaparaUnit& u = units_[next_];
    block->index = static_cast<std::int64_t>(next_);
    block->first_sequence = u.first_query;
    block->offsets.assign(static_cast<std::size_t>(u.queries) + 1, 0);  // a query per "sequence"
    block->work_cells = cells_[next_];
    block->work_units = std::max<std::int64_t>(1, cells_[next_] / kCellsPerUnit);
    ++next_;
    return block;
  }
  double fraction_done() const override {
    return units_.empty() ? 1.0 : static_cast<double>(next_) / static_cast<double>(units_.size());
  }
  std::int64_t known_work() const override {
    std::int64_t w = 0;
    for (std::int64_t c : cells_) w += std::max<std::int64_t>(1, c / kCellsPerUnit);
    return w;
  }

  static constexpr std::int64_t kCellsPerUnit = 1 << 16;

 private:
  std::vector<PaparaUnit> units_;
  std::vector<std::int64_t> cells_;
  std::int64_t total_ = 0;
  int edge_ranges_ = 0;
  std::size_t next_ = 0;
};

// Each query's choice, merged from any block by any thread; once a query's last block is
// in, its final choice goes to `final_choice` (where given). A Choice (three int32) is
// merged under one of a few locks, striped by query: a block delivers its queries once,
// so two threads rarely meet on one lock.
struct ChoiceSlots {
  static constexpr std::size_t kLocks = 64;
  std::vector<papara::Choice> slots;
  std::vector<int> blocks_left;  // per query: blocks not yet delivered
  std::array<std::mutex, kLocks> locks;
  const FinalChoice& final_choice;
  ChoiceSlots(std::size_t queries, int blocks_per_query, const FinalChoice& final)
      : slots(queries), blocks_left(queries, blocks_per_query), final_choice(final) {}
  void deliver(const PaparaUnit& u, std::span<const papara::Choice> choices) {
    for (std::size_t k = 0; k < choices.size(); ++k) {
      const std::size_t q = static_cast<std::size_t>(u.first_query) + k;
      papara::Choice final;
      {
        std::lock_guard lock(locks[q % kLocks]);
        slots[q] = papara::merge(slots[q], choices[k]);
        if (--blocks_left[q] > 0 || !final_choice) continue;
        final = slots[q];
      }
      final_choice(q, final);
    }
  }
};

// Scratch of the scores of a unit: int16 (DNA) or int32 (protein).
struct ScoreScratch {
  std::vector<std::int16_t> dna;
  std::vector<std::int32_t> protein;
};

// The CPU's choices for a unit: the kernel over each query and the unit's edges.
std::vector<papara::Choice> cpu_choices(const PaparaCpuKernel& kernel,
                                        const papara::ProfileView& profiles,
                                        const QueryResidues& queries,
                                        const papara::Scoring& scoring, const PaparaUnit& u,
                                        ScoreScratch& scratch) {
  const auto run = [&](auto function, auto& scores) {
    scores.resize(static_cast<std::size_t>(u.queries) * static_cast<std::size_t>(u.edges));
    function(queries.residues.data(), queries.offsets.data() + u.first_query,
             static_cast<int>(u.queries), profiles, u.first_edge, u.edges, scoring, scores.data());
    return choices_of_scores(u, std::span(std::as_const(scores)));
  };
  return kernel.protein_function != nullptr ? run(kernel.protein_function, scratch.protein)
                                            : run(kernel.function, scratch.dna);
}

class PaparaWorkload final : public scheduler::Workload {
 public:
  PaparaWorkload(const PaparaCpuKernel& kernel, const papara::ProfileView& profiles,
                 const QueryResidues& queries, const papara::Scoring& scoring,
                 std::span<const PaparaUnit> units, ChoiceSlots& slots, int threads)
      : kernel_(kernel),
        profiles_(profiles),
        queries_(queries),
        scoring_(scoring),
        units_(units),
        slots_(slots),
        scores_(static_cast<std::size_t>(threads)) {}
  std::int64_t cells_per_residue() const override { return 1; }  // blocks give their cells
  std::int64_t run_block(const Block& block, int worker) override {
    const PaparaUnit& u = units_[static_cast<std::size_t>(block.index)];
    const auto choices = cpu_choices(kernel_, profiles_, queries_, scoring_, u,
                                     scores_[static_cast<std::size_t>(worker)]);
    slots_.deliver(u, choices);
    return u.queries;
  }
  std::int64_t run_post(const Block&, PostState&, int) override {
    throw std::logic_error("papara: a device left a block to the post stage");
  }

 private:
  const PaparaCpuKernel& kernel_;
  papara::ProfileView profiles_;  // a view: copied
  const QueryResidues& queries_;
  const papara::Scoring& scoring_;
  std::span<const PaparaUnit> units_;
  ChoiceSlots& slots_;
  std::vector<ScoreScratch> scores_;  // per worker
};

}  // namespace

std::int64_t papara_block_cells(std::int64_t block_cells, papara::Alphabet alphabet) {
  if (block_cells > 0) return block_cells;
  return alphabet == papara::Alphabet::protein ? kPaparaProteinBlockCells : kPaparaBlockCells;
}

PaparaRun run_papara(const papara::ProfileView& profiles, const QueryResidues& queries,
                     const papara::Scoring& scoring, const PaparaRunOptions& options,
                     const FinalChoice& final_choice) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const PaparaCpuKernel& kernel = select_papara_cpu_kernel(options.isa, profiles.alphabet());
  PaparaRun run;
  run.block_cells = papara_block_cells(options.block_cells, profiles.alphabet());
  UnitBlocks blocks(profiles, queries, options, run.block_cells);
  ChoiceSlots slots(queries.size(), blocks.edge_ranges(), final_choice);
  const auto deliver = [&slots](const PaparaUnit& u, std::span<const papara::Choice> c) {
    slots.deliver(u, c);
  };

  std::vector<std::unique_ptr<scheduler::GpuBackend>> devices;
  if (options.gpu != PaparaRunOptions::Gpu::off) {
    if (options.test_gpus > 0) {
      // The CPU kernel on the feeder's thread (kit/test_double_gpu.hpp).
      const auto units = blocks.units();
      for (int g = 0; g < options.test_gpus; ++g) {
        devices.push_back(std::make_unique<TestDoubleGpu<std::vector<papara::Choice>>>(
            g, "all",
            [&, units](const Block& b, const scheduler::HostLoopRunner&) {
              ScoreScratch scores;
              return cpu_choices(kernel, profiles, queries, scoring,
                                 units[static_cast<std::size_t>(b.index)], scores);
            },
            [&, units](const Block& b, std::vector<papara::Choice>&& c) {
              deliver(units[static_cast<std::size_t>(b.index)], c);
              return scheduler::GpuBlockOutcome{{}, static_cast<std::int64_t>(c.size())};
            }));
      }
      run.gpu_kernel = "test-double (" + kernel.name + ")";
      run.test_double_gpus = true;
    } else {
      devices = make_papara_gpu_backends(profiles, queries, scoring, blocks.units(), deliver,
                                         options.gpu == PaparaRunOptions::Gpu::only);
      if (!devices.empty()) run.gpu_kernel = devices.front()->name();
    }
  }
  if (options.gpu == PaparaRunOptions::Gpu::only && devices.empty())
    throw UsageError("--gpu-only: no GPU available");
  const int gpus = static_cast<int>(devices.size());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int default_workers =
      options.gpu == PaparaRunOptions::Gpu::only ? 1 : std::max(1, cores - gpus);
  scheduler::SchedulerOptions s =
      scheduler_options(options, options.cpu_workers > 0 ? options.cpu_workers : default_workers,
                        kPaparaGpuBatchBlocks);
  s.gpu_batch_residues = std::int64_t{1} << 40;  // batches bounded by their number of blocks

  run.cells = blocks.total_cells();
  run.cpu_kernel = kernel.name;
  PaparaWorkload workload(kernel, profiles, queries, scoring, blocks.units(), slots,
                          s.cpu_workers + gpus);
  std::vector<scheduler::GpuBackend*> backends;
  for (auto& d : devices) backends.push_back(d.get());
  if (queries.size() > 0) run.schedule = scheduler::run_blocks(blocks, workload, backends, s);
  run.stopped = run.schedule.stopped;
  run.choices = std::move(slots.slots);
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return run;
}

}  // namespace duet::app
