// Kernel selection for PaPaRa's workload (see papara_kernels.hpp).
#include "app/papara/papara_kernels.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "app/kit/run_options.hpp"
#include "app/papara/papara_workload.hpp"
#include "core/error.hpp"
#include "host_simd/papara/papara_simd.hpp"
#ifdef DUET_HAVE_CUDA
#include "device/gpu_info.hpp"
#include "device/papara/papara_gpu.hpp"
#endif

namespace duet::app {

const PaparaCpuKernel& select_papara_cpu_kernel(const std::string& isa, papara::Alphabet alphabet) {
  const simd::papara::PaparaVariant& v = simd::papara::papara_variant(isa);
  static std::mutex mutex;
  static std::map<std::pair<std::string, papara::Alphabet>, PaparaCpuKernel> kernels;
  std::lock_guard lock(mutex);
  const std::string name(v.name);
  auto it = kernels.find({name, alphabet});
  if (it == kernels.end()) {
    const bool protein = alphabet == papara::Alphabet::protein;
    const int lanes = protein ? v.protein_lanes : v.lanes;
    const std::string bits = protein ? "int32" : "int16";
    const std::string description =
        lanes == 1 ? "scalar " + bits : name + " " + bits + " x" + std::to_string(lanes) + " edges";
    PaparaCpuKernel kernel{description, protein ? nullptr : v.block,
                           protein ? v.protein_block : nullptr};
    it = kernels.emplace(std::pair{name, alphabet}, std::move(kernel)).first;
  }
  return it->second;
}

std::vector<std::string> papara_isa_names() {
  std::vector<std::string> names = {"auto"};
  for (const auto& v : simd::papara::kPaparaVariants) names.emplace_back(v.name);
  return names;
}

namespace {

template <class Score>
std::vector<papara::Choice> choices_of(const PaparaUnit& u, std::span<const Score> scores) {
  std::vector<papara::Choice> choices(static_cast<std::size_t>(u.queries));
  for (std::size_t q = 0; q < choices.size(); ++q)
    choices[q] = papara::choose(scores.data() + q * static_cast<std::size_t>(u.edges), u.first_edge,
                                u.edges);
  return choices;
}

}  // namespace

std::vector<papara::Choice> choices_of_scores(const PaparaUnit& u,
                                              std::span<const std::int16_t> scores) {
  return choices_of(u, scores);
}

std::vector<papara::Choice> choices_of_scores(const PaparaUnit& u,
                                              std::span<const std::int32_t> scores) {
  return choices_of(u, scores);
}

#ifdef DUET_HAVE_CUDA
namespace {

// A GPU as a scheduler backend: the profiles resident on it; a batch's blocks of one edge
// range and consecutive queries go in one call (one or a few launches); its choices are
// delivered once all of the batch succeeded. The profiles' alphabet picks the kernel: int16
// scores for DNA, int32 for protein (PaparaGpu::score's two forms).
class PaparaGpuBackend final : public scheduler::GpuBackend {
 public:
  // Touches no CUDA: the device is set up by the warm-up thread and start().
  PaparaGpuBackend(int device, const papara::ProfileView& profiles, const QueryResidues& queries,
                   const papara::Scoring& scoring, std::span<const PaparaUnit> units,
                   ChoiceConsumer consumer)
      : device_(device),
        profiles_(profiles),
        queries_(queries),
        scoring_(scoring),
        units_(units),
        consumer_(std::move(consumer)) {}
  std::string name() const override {
    return "GPU " + std::to_string(device_) + (gpu_ ? " (" + gpu_->name() + ")" : "");
  }
  std::string stages() const override { return "all"; }
  Readiness readiness(std::string& problem) override { return warmup_readiness(device_, problem); }
  void start(const scheduler::HostLoopRunner&) override {
    gpu_ = std::make_unique<device::papara::PaparaGpu>(device_, profiles_);
  }
  std::vector<scheduler::GpuBlockOutcome> run(std::span<const BlockPtr> blocks, int) override {
    std::vector<std::vector<papara::Choice>> choices(blocks.size());
    std::size_t b = 0;
    while (b < blocks.size()) {
      // A run of blocks with one edge range and consecutive queries.
      const PaparaUnit& first = unit(*blocks[b]);
      std::size_t end = b + 1;
      std::int64_t queries = first.queries;
      while (end < blocks.size()) {
        const PaparaUnit& u = unit(*blocks[end]);
        if (u.first_edge != first.first_edge || u.first_query != first.first_query + queries) break;
        queries += u.queries;
        ++end;
      }
      const auto score_run = [&](auto& scores) {
        scores.resize(static_cast<std::size_t>(queries) * static_cast<std::size_t>(first.edges));
        gpu_->score(queries_.residues.data(), queries_.offsets.data() + first.first_query,
                    static_cast<std::size_t>(queries), first.first_edge, first.edges, scoring_,
                    scores.data());
        std::size_t offset = 0;
        for (std::size_t k = b; k < end; ++k) {
          const PaparaUnit& u = unit(*blocks[k]);
          const std::size_t n =
              static_cast<std::size_t>(u.queries) * static_cast<std::size_t>(u.edges);
          choices[k] = choices_of_scores(u, std::span(std::as_const(scores)).subspan(offset, n));
          offset += n;
        }
      };
      if (profiles_.alphabet() == papara::Alphabet::protein) {
        score_run(protein_scores_);
      } else {
        score_run(scores_);
      }
      b = end;
    }
    std::vector<scheduler::GpuBlockOutcome> outcomes;
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      consumer_(unit(*blocks[k]), choices[k]);
      outcomes.push_back({{}, static_cast<std::int64_t>(choices[k].size())});
    }
    return outcomes;
  }

 private:
  const PaparaUnit& unit(const Block& b) const { return units_[static_cast<std::size_t>(b.index)]; }

  int device_;
  papara::ProfileView profiles_;  // a view: copied
  const QueryResidues& queries_;
  const papara::Scoring& scoring_;
  std::span<const PaparaUnit> units_;
  ChoiceConsumer consumer_;
  std::unique_ptr<device::papara::PaparaGpu> gpu_;
  std::vector<std::int16_t> scores_;          // DNA
  std::vector<std::int32_t> protein_scores_;  // protein
};

}  // namespace

std::vector<std::unique_ptr<scheduler::GpuBackend>> make_papara_gpu_backends(
    const papara::ProfileView& profiles, const QueryResidues& queries,
    const papara::Scoring& scoring, std::span<const PaparaUnit> units, ChoiceConsumer consumer,
    bool required) {
  int devices = device::gpus_shown_by_driver();
  if (devices < 0) devices = static_cast<int>(device::list_gpus().gpus.size());
  if (devices == 0) {
    if (required) throw UsageError("--gpu-only: no CUDA device found");
    return {};
  }
  device::start_gpu_warmup();
  std::vector<std::unique_ptr<scheduler::GpuBackend>> backends;
  for (int d = 0; d < devices; ++d)
    backends.push_back(
        std::make_unique<PaparaGpuBackend>(d, profiles, queries, scoring, units, consumer));
  return backends;
}
#else
std::vector<std::unique_ptr<scheduler::GpuBackend>> make_papara_gpu_backends(
    const papara::ProfileView&, const QueryResidues&, const papara::Scoring&,
    std::span<const PaparaUnit>, ChoiceConsumer, bool required) {
  if (required) throw UsageError("--gpu-only: no GPU available (this build has no CUDA backend)");
  return {};
}
#endif

}  // namespace duet::app
