// Kernel selection for the pair-HMM workload (see pairhmm_kernels.hpp).
#include "app/pairhmm_kernels.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "core/error.hpp"
#include "host_simd/pairhmm_simd.hpp"
#ifdef DUET_PAIRHMM_GPU
#include "device/pairhmm_gpu_layout.hpp"
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
    it = kernels.emplace(name, CpuKernel{description, name, v.function}).first;
  }
  return it->second;
}

#ifdef DUET_PAIRHMM_GPU
namespace {

// A GPU as a scheduler backend: the pairs of all blocks of a batch in one launch; the sums
// are delivered only once the whole batch succeeded.
class PairhmmGpuBackend final : public scheduler::GpuBackend {
 public:
  PairhmmGpuBackend(const pairhmm::Model& model, device::pairhmm::Kernel kernel, int device,
                    SumsConsumer consumer, std::span<const pairhmm::Pair> pairs)
      : model_(model),
        kernel_(kernel),
        gpu_(device),
        device_(device),
        consumer_(std::move(consumer)),
        pairs_(pairs) {}
  std::string name() const override {
    return "GPU " + std::to_string(device_) + " (" + gpu_.name() + ")";
  }
  bool test_double() const override { return false; }
  std::string stages() const override { return "all"; }
  std::vector<scheduler::GpuBlockOutcome> run(std::span<const scheduler::BlockPtr> blocks,
                                              int) override {
    std::vector<pairhmm::Pair> batch;
    for (const scheduler::BlockPtr& b : blocks) {
      const auto part = pairs_.subspan(static_cast<std::size_t>(b->first_sequence), b->sequences());
      batch.insert(batch.end(), part.begin(), part.end());
    }
    const auto t0 = Clock::now();
    const device::pairhmm::PairBatch packed = device::pairhmm::pack_pairs(model_, batch);
    const auto t1 = Clock::now();
    double kernel = 0, transfer = 0;
    const std::vector<float> sums = gpu_.forward_sums(packed, kernel_, &kernel, &transfer);
    const auto t2 = Clock::now();
    std::vector<scheduler::GpuBlockOutcome> outcomes;
    std::size_t at = 0;
    for (const scheduler::BlockPtr& b : blocks) {
      consumer_(b->first_sequence, std::span<const float>(sums).subspan(at, b->sequences()));
      at += b->sequences();
      outcomes.push_back({false, static_cast<std::int64_t>(b->sequences())});
    }
    const auto t3 = Clock::now();
    times_.batches += 1;
    times_.pack += seconds(t1 - t0);
    times_.forward += seconds(t2 - t1);
    times_.kernel += kernel;
    times_.transfer += transfer;
    times_.results += seconds(t3 - t2);
    times_.upload_bytes += packed.parameters.size() * sizeof(float) + packed.read_bases.size() +
                           packed.haplotype_bases.size() + packed.pairs() * 36;
    return outcomes;
  }
  // DUET_PAIRHMM_GPU_TIMES=1: where the feeder's time went, on stderr (for bench/RESULTS.md).
  ~PairhmmGpuBackend() override {
    if (std::getenv("DUET_PAIRHMM_GPU_TIMES") == nullptr) return;
    std::fprintf(stderr,
                 "pairhmm GPU %d: %lld batches; pack %.3f s; forward_sums %.3f s (kernel %.3f s, "
                 "staging and copies %.3f s, rest %.3f s); results %.3f s; %.1f MB uploaded\n",
                 device_, static_cast<long long>(times_.batches), times_.pack, times_.forward,
                 times_.kernel, times_.transfer, times_.forward - times_.kernel - times_.transfer,
                 times_.results, static_cast<double>(times_.upload_bytes) / 1e6);
  }

 private:
  const pairhmm::Model& model_;
  device::pairhmm::Kernel kernel_;
  device::pairhmm::PairhmmGpu gpu_;
  int device_;
  SumsConsumer consumer_;
  std::span<const pairhmm::Pair> pairs_;
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  struct Times {
    std::int64_t batches = 0;
    double pack = 0, forward = 0, kernel = 0, transfer = 0, results = 0;
    std::size_t upload_bytes = 0;
  } times_;
};

}  // namespace

GpuBackends make_gpu_backends(const pairhmm::Model& model, const std::string& kernel, bool required,
                              SumsConsumer consumer, std::span<const pairhmm::Pair> pairs) {
  const int devices = device::pairhmm::device_count();
  if (devices == 0) {
    if (required) throw UsageError("--gpu-only: no CUDA device found");
    return {};
  }
  // The default is the intra-task kernel (a warp per pair), the faster one measured.
  const auto k =
      kernel == "inter" ? device::pairhmm::Kernel::inter_task : device::pairhmm::Kernel::intra_task;
  GpuBackends found;
  found.kernel = std::string(device::pairhmm::kernel_name(k)) + "-task float";
  for (int d = 0; d < devices; ++d) {
    found.backends.push_back(std::make_unique<PairhmmGpuBackend>(model, k, d, consumer, pairs));
  }
  return found;
}
#else
GpuBackends make_gpu_backends(const pairhmm::Model&, const std::string&, bool required,
                              SumsConsumer, std::span<const pairhmm::Pair>) {
  if (required) throw UsageError("--gpu-only: no GPU available (this build has no CUDA backend)");
  return {};
}
#endif

}  // namespace duet::app
