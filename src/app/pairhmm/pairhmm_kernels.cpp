// Kernel selection for the pair-HMM workload (see pairhmm_kernels.hpp).
#include "app/pairhmm/pairhmm_kernels.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "app/kit/cluster.hpp"
#include "app/kit/run_context.hpp"
#include "app/kit/run_options.hpp"
#include "core/error.hpp"
#include "device/pairhmm/pairhmm_shapes.hpp"
#include "host_simd/pairhmm/pairhmm_simd.hpp"
#include "scheduler/helper_team.hpp"
#ifdef DUET_HAVE_CUDA
#include "device/gpu_info.hpp"
#include "device/pairhmm/pairhmm_gpu_feed.hpp"
#endif

namespace duet::app {

const CpuKernel& select_cpu_kernel(const std::string& isa) {
  const simd::pairhmm::PairhmmVariant& v = simd::pairhmm::pairhmm_variant(isa);
  static std::mutex mutex;
  static std::map<std::string, CpuKernel> kernels;
  std::lock_guard lock(mutex);
  const std::string name(v.name);
  auto it = kernels.find(name);
  if (it == kernels.end()) {
    const std::string description =
        v.lanes == 1 ? "scalar float" : name + " inter-pair x" + std::to_string(v.lanes) + " float";
    it = kernels.emplace(name, CpuKernel{description, name, v.lanes, v.function, v.grouped}).first;
  }
  return it->second;
}

void check_pairhmm_shapes(const io::PairhmmShapeTable& shapes, const std::string& file) {
  using device::pairhmm::Arithmetic;
  for (const auto& [arithmetic, rows] :
       {std::pair{Arithmetic::ftz, &shapes.ftz}, std::pair{Arithmetic::ieee, &shapes.ieee}}) {
    for (const io::PairhmmShapeRow& r : *rows) {
      if (!device::pairhmm::intra_shape_compiled({r.lanes, r.rows_per_lane}, arithmetic)) {
        throw InputError(file, r.line,
                         "pair-HMM shape " + std::to_string(r.lanes) + "x" +
                             std::to_string(r.rows_per_lane) + " is not compiled for " +
                             device::pairhmm::arithmetic_name(arithmetic) + " arithmetic");
      }
    }
  }
}

io::PairhmmShapeTable measured_pairhmm_shapes() {
  using device::pairhmm::Arithmetic;
  io::PairhmmShapeTable table;
  for (const auto& [arithmetic, rows] :
       {std::pair{Arithmetic::ftz, &table.ftz}, std::pair{Arithmetic::ieee, &table.ieee}}) {
    for (const device::pairhmm::ShapeCost& c : device::pairhmm::measured_shape_costs(arithmetic)) {
      rows->push_back({c.shape.lanes, c.shape.rows_per_lane, c.cycles_per_warp_step,
                       c.cycles_per_warp, c.latency_per_step, 0});
    }
  }
  return table;
}

#ifdef DUET_HAVE_CUDA
namespace {

std::vector<device::pairhmm::ShapeCost> shape_costs(const std::vector<io::PairhmmShapeRow>& rows) {
  std::vector<device::pairhmm::ShapeCost> costs;
  for (const io::PairhmmShapeRow& r : rows) {
    costs.push_back({{r.lanes, r.rows_per_lane},
                     r.cycles_per_warp_step,
                     r.cycles_per_warp,
                     r.latency_per_step});
  }
  return costs;
}

// A GPU as a scheduler backend: the pairs of all blocks of a batch, cut into parts of about
// equal cells that go round the GPU's slots, two batches in flight (the host packs and
// stages a part while the GPU runs the ones before); a batch's sums are delivered only once
// all of it succeeded.
class PairhmmGpuBackend final : public scheduler::GpuBackend {
 public:
  // Touches no CUDA: the device is set up by the warm-up thread and start().
  PairhmmGpuBackend(const pairhmm::Model& model, device::pairhmm::Kernel kernel,
                    device::pairhmm::Arithmetic arithmetic, int device, int feeder, int parts,
                    int helpers, SumsConsumer consumer, std::span<const pairhmm::Pair> pairs,
                    const io::PairhmmShapeTable& shapes)
      : packer_(model),
        kernel_(kernel),
        arithmetic_(arithmetic),
        device_(device),
        feeder_(feeder),
        parts_(parts),
        helpers_(helpers),
        consumer_(std::move(consumer)),
        pairs_(pairs),
        shapes_(shapes) {}
  // The intra-task kernel's arithmetic on this GPU, once started (it probes the device).
  std::optional<device::pairhmm::Arithmetic> arithmetic() const {
    if (!gpu_) return std::nullopt;
    return gpu_->arithmetic_used();
  }
  std::string name() const override {
    return "GPU " + std::to_string(device_) + (gpu_ ? " (" + gpu_->name() + ")" : "");
  }
  std::string stages() const override { return "all"; }
  Readiness readiness(std::string& problem) override { return warmup_readiness(device_, problem); }
  // The device's buffers and streams, and the arithmetic probe, on the feeder's thread.
  // Packing runs on the feeder's helper threads where it has them (a hybrid run: the CPU
  // workers are busy with blocks), else on the CPU workers that are free (a GPU-only run).
  void start(const scheduler::HostLoopRunner& run_host_loop) override {
    // Two slots a batch for two batches in flight (at most 8).
    gpu_ = std::make_unique<device::pairhmm::PairhmmGpu>(device_, std::min(8, 2 * parts_));
    gpu_->set_arithmetic(arithmetic_);
    if (!shapes_.empty()) {
      gpu_->set_shape_costs(device::pairhmm::Arithmetic::ftz, shape_costs(shapes_.ftz));
      gpu_->set_shape_costs(device::pairhmm::Arithmetic::ieee, shape_costs(shapes_.ieee));
    }
    if (kernel_ == device::pairhmm::Kernel::intra_task) (void)gpu_->arithmetic_used();
    pipeline_ = std::make_unique<device::pairhmm::PartPipeline>(*gpu_, packer_, kernel_);
    if (helpers_ > 0) {
      team_ = std::make_unique<scheduler::HelperTeam>(helpers_);
      run_host_loop_ = [team = team_.get()](std::size_t n, std::size_t chunk,
                                            const std::function<void(std::size_t)>& body) {
        team->run(n, chunk, body);
      };
    } else {
      run_host_loop_ = run_host_loop;
    }
  }
  // Two batches in flight: the next batch's parts are packed while the GPU runs this one's.
  int batches_in_flight() const override { return 2; }
  void submit(std::span<const BlockPtr> blocks, int) override {
    const auto t0 = Clock::now();
    InFlight& f = flight_.emplace_back();
    f.blocks.assign(blocks.begin(), blocks.end());
    for (const BlockPtr& b : blocks) {
      const auto part = pairs_.subspan(static_cast<std::size_t>(b->first_sequence), b->sequences());
      f.pairs.insert(f.pairs.end(), part.begin(), part.end());
    }
    const std::vector<std::size_t> ends = device::pairhmm::split_by_cells(f.pairs, parts_);
    pipeline_->submit(f.pairs, ends, &feed_, run_host_loop_, 4096);
    forward_ += seconds(Clock::now() - t0);
  }
  std::vector<scheduler::GpuBlockOutcome> finish(int) override {
    const auto t0 = Clock::now();
    const std::vector<float> sums = pipeline_->collect(&feed_);
    const InFlight f = std::move(flight_.front());
    flight_.pop_front();
    const auto t1 = Clock::now();
    // The blocks' likelihoods (a log10 each, and the double pass of any pair that needs
    // it) on the free CPU workers too: disjoint blocks write disjoint result slots.
    std::vector<scheduler::GpuBlockOutcome> outcomes;
    std::vector<std::size_t> starts;
    std::size_t at = 0;
    for (const BlockPtr& b : f.blocks) {
      starts.push_back(at);
      at += b->sequences();
      outcomes.push_back({{}, static_cast<std::int64_t>(b->sequences())});
    }
    const auto deliver = [&](std::size_t k) {
      const BlockPtr& b = f.blocks[k];
      consumer_(b->first_sequence, std::span<const float>(sums).subspan(starts[k], b->sequences()));
    };
    if (run_host_loop_) {
      run_host_loop_(f.blocks.size(), 1, deliver);
    } else {
      for (std::size_t k = 0; k < f.blocks.size(); ++k) deliver(k);
    }
    batches_ += 1;
    forward_ += seconds(t1 - t0);
    results_ += seconds(Clock::now() - t1);
    return outcomes;
  }
  void abandon() noexcept override {
    if (pipeline_) pipeline_->abandon();
    flight_.clear();
  }
  std::vector<scheduler::GpuBlockOutcome> run(std::span<const BlockPtr> blocks,
                                              int worker) override {
    submit(blocks, worker);
    return finish(worker);
  }
  // DUET_TIMES=1 (timings_wanted): where the feeder's time went, on stderr.
  // The GPU's kernel and transfer times are summed over parts, which overlap.
  ~PairhmmGpuBackend() override {
    if (!timings_wanted()) return;
    std::fprintf(stderr,
                 "pairhmm GPU %d feeder %d: %lld batches, %lld parts; feeder %.3f s: pack %.3f s, "
                 "submit %.3f s (shape choice %.3f s, staging %.3f s), waiting for the GPU "
                 "%.3f s, rest %.3f s; results %.3f s; GPU events: kernels %.3f s, copies and "
                 "staging %.3f s; %.1f MB uploaded\n",
                 device_, feeder_, static_cast<long long>(batches_),
                 static_cast<long long>(feed_.parts), forward_, feed_.pack, feed_.submit,
                 feed_.choice, feed_.staging, feed_.wait,
                 forward_ - feed_.pack - feed_.submit - feed_.wait, results_, feed_.kernel,
                 feed_.transfer, static_cast<double>(feed_.upload_bytes) / 1e6);
  }

 private:
  device::pairhmm::PairPacker packer_;
  device::pairhmm::Kernel kernel_;
  device::pairhmm::Arithmetic arithmetic_;
  std::unique_ptr<device::pairhmm::PairhmmGpu> gpu_;  // made by start()
  int device_, feeder_, parts_, helpers_;             // feeder_: this backend's number on its GPU
  std::unique_ptr<scheduler::HelperTeam> team_;       // the feeder's helper threads, if any
  SumsConsumer consumer_;
  std::span<const pairhmm::Pair> pairs_;
  io::PairhmmShapeTable shapes_;  // empty: the built-in costs
  // A batch submitted and not yet finished: its blocks and their pairs (which the
  // pipeline reads until then).
  struct InFlight {
    std::vector<BlockPtr> blocks;
    std::vector<pairhmm::Pair> pairs;
  };
  std::deque<InFlight> flight_;
  std::unique_ptr<device::pairhmm::PartPipeline> pipeline_;  // made by start(), after gpu_
  scheduler::HostLoopRunner run_host_loop_;
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  std::int64_t batches_ = 0;
  double forward_ = 0, results_ = 0;
  device::pairhmm::FeedTimes feed_;
};

}  // namespace

GpuBackends make_gpu_backends(const pairhmm::Model& model, const std::string& kernel, int parts,
                              int feeders, int helpers, bool required, SumsConsumer consumer,
                              std::span<const pairhmm::Pair> pairs,
                              const io::PairhmmShapeTable& shapes) {
  // The GPUs the driver shows, without starting CUDA on this thread: their set-up runs on
  // the warm-up thread while the CPU workers start.
  int devices = device::gpus_shown_by_driver();
  if (devices < 0) devices = static_cast<int>(device::list_gpus().gpus.size());
  if (devices == 0) {
    if (required) throw UsageError("--gpu-only: no CUDA device found");
    return {};
  }
  device::start_gpu_warmup();
  // The default is the intra-task kernel (lanes of a warp per pair), the faster one measured,
  // in the GPU's own flush-to-zero arithmetic where the device passes the probe.
  const auto k =
      kernel == "inter" ? device::pairhmm::Kernel::inter_task : device::pairhmm::Kernel::intra_task;
  const auto arithmetic = kernel == "intra-ieee" ? device::pairhmm::Arithmetic::ieee
                                                 : device::pairhmm::Arithmetic::automatic;
  GpuBackends found;
  std::vector<const PairhmmGpuBackend*> made;
  // A rank of a job shares its host's GPUs with the host's other ranks.
  std::vector<int> all(static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) all[static_cast<std::size_t>(d)] = d;
  for (const int d : rank_gpus(all)) {
    for (int f = 0; f < feeders; ++f) {
      auto backend = std::make_unique<PairhmmGpuBackend>(model, k, arithmetic, d, f, parts, helpers,
                                                         consumer, pairs, shapes);
      made.push_back(backend.get());
      found.backends.push_back(std::move(backend));
    }
  }
  // Named after the run: the arithmetic is known once a device started.
  found.kernel = [k, made] {
    std::string name = std::string(device::pairhmm::kernel_name(k)) + "-task float";
    if (k != device::pairhmm::Kernel::intra_task) return name;
    for (const PairhmmGpuBackend* b : made) {
      if (const auto a = b->arithmetic()) {
        return name + ", " + device::pairhmm::arithmetic_name(*a) + " arithmetic";
      }
    }
    return name + " (no GPU started: the CPU finished first)";
  };
  return found;
}
#else
GpuBackends make_gpu_backends(const pairhmm::Model&, const std::string&, int, int, int,
                              bool required, SumsConsumer, std::span<const pairhmm::Pair>,
                              const io::PairhmmShapeTable&) {
  if (required) throw UsageError("--gpu-only: no GPU available (this build has no CUDA backend)");
  return {};
}
#endif

}  // namespace duet::app
