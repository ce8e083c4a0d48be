// HmmsearchGpuBackend: see gpu_backend.hpp.
#include "app/gpu_backend.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "device/gpu_info.hpp"

namespace duet::app {

namespace {

// FilterKernels answering with scores computed on the GPU. A Viterbi score not computed
// yet is recorded as requested (phase one); the cascade is then run again for those
// targets once the GPU has their Viterbi scores (phase two).
class DeviceScores final : public FilterKernels {
 public:
  FilterScore msv_score{}, viterbi_score{};
  bool have_viterbi = false, viterbi_requested = false;
  FilterScore msv(const Residue*, int) override { return msv_score; }
  FilterScore viterbi(const Residue*, int) override {
    if (!have_viterbi) viterbi_requested = true;
    return have_viterbi ? viterbi_score : FilterScore{std::numeric_limits<float>::infinity(), true};
  }
  float forward(const Residue*, int) override {
    throw std::logic_error("GPU backend: the canonical Forward score is the CPU's (post-queue)");
  }
};

// The GPU Forward score raised by its margin: run_forward_stage with it rejects only
// targets that the canonical score would reject too, and records them as it would.
class OptimisticForward final : public FilterKernels {
 public:
  float score = 0;
  FilterScore msv(const Residue*, int) override {
    throw std::logic_error("OptimisticForward: Forward only");
  }
  FilterScore viterbi(const Residue*, int) override {
    throw std::logic_error("OptimisticForward: Forward only");
  }
  float forward(const Residue*, int) override {
    return score + forward_margin(score, device::kGpuForwardAbsoluteTolerance,
                                  device::kGpuForwardRelativeTolerance);
  }
};

struct Half {
  std::vector<const scheduler::Block*> blocks;
  std::vector<device::GpuTarget> targets;
  std::vector<TargetScores> scores;
  std::vector<int> viterbi;  // targets (indices into `targets`) needing the Viterbi filter
  std::vector<int> forward;  // targets reaching the Forward stage
};

}  // namespace

HmmsearchGpuBackend::HmmsearchGpuBackend(int device, const SearchProfile& profile,
                                         const CascadeSettings& settings,
                                         device::GpuKernelChoice kernels, Deliver deliver)
    : profile_(profile),
      settings_(settings),
      deliver_(std::move(deliver)),
      engine_(device, profile, kernels) {}

std::string HmmsearchGpuBackend::name() const {
  return "GPU " + std::to_string(engine_.device()) + " (" + engine_.device_name() + ")";
}

std::vector<scheduler::GpuBlockOutcome> HmmsearchGpuBackend::run(
    std::span<const scheduler::BlockPtr> blocks, int) {
  // Two halves by residues, one per engine slot.
  std::int64_t total = 0;
  for (const auto& b : blocks) total += b->residue_count();
  Half halves[device::HmmGpuEngine::kSlots];
  std::int64_t so_far = 0;
  for (const auto& b : blocks) {
    Half& h =
        halves[(blocks.size() > 1 && so_far * 2 >= total && !halves[0].blocks.empty()) ? 1 : 0];
    so_far += b->residue_count();
    h.blocks.push_back(b.get());
    for (std::size_t i = 0; i < b->sequences(); ++i)
      h.targets.push_back({b->sequence(i), b->length(i)});
  }
  for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
    engine_.submit_msv(s, halves[s].targets.data(), halves[s].targets.size());
  }
  DeviceScores kernels;
  // Phase one per half (MSV, bias filter, Viterbi decisions) while the other half runs.
  for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
    Half& h = halves[s];
    const std::vector<FilterScore>& msv = engine_.wait_msv(s);
    h.scores.resize(h.targets.size());
    for (std::size_t i = 0; i < h.targets.size(); ++i) {
      kernels.msv_score = msv[i];
      kernels.have_viterbi = kernels.viterbi_requested = false;
      h.scores[i] =
          run_filters(profile_, settings_, kernels, h.targets[i].residues, h.targets[i].length);
      if (kernels.viterbi_requested) h.viterbi.push_back(static_cast<int>(i));
    }
    engine_.submit_viterbi(s, h.viterbi.data(), h.viterbi.size());
  }
  // Phase two: the cascade again for the targets that ran the Viterbi filter.
  for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
    Half& h = halves[s];
    const std::vector<FilterScore>& msv = engine_.wait_msv(s);
    const std::vector<FilterScore>& vit = engine_.wait_viterbi(s);
    for (std::size_t j = 0; j < h.viterbi.size(); ++j) {
      const int i = h.viterbi[j];
      kernels.msv_score = msv[i];
      kernels.viterbi_score = vit[j];
      kernels.have_viterbi = true;
      h.scores[i] =
          run_filters(profile_, settings_, kernels, h.targets[i].residues, h.targets[i].length);
    }
    // Forward on the GPU for every target that reached it (the Viterbi survivors, and
    // those whose MSV P-value skipped the Viterbi filter).
    for (std::size_t i = 0; i < h.targets.size(); ++i) {
      if (needs_forward(h.scores[i])) h.forward.push_back(static_cast<int>(i));
    }
    engine_.submit_forward(s, h.forward.data(), h.forward.size());
  }
  // Phase three: a target whose GPU Forward score plus the margin fails F3 is rejected
  // here; the others keep needing Forward, whose canonical score the CPU computes.
  OptimisticForward optimistic;
  for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
    Half& h = halves[s];
    const std::vector<float>& fwd = engine_.wait_forward(s);
    for (std::size_t j = 0; j < h.forward.size(); ++j) {
      const int i = h.forward[j];
      optimistic.score = fwd[j];
      TargetScores t = h.scores[i];
      run_forward_stage(profile_, settings_, optimistic, h.targets[i].residues, h.targets[i].length,
                        t);
      if (t.stage != Stage::passed) h.scores[i] = t;  // rejected, recorded as the cascade does
    }
  }
  // Every kernel succeeded: deliver, block by block.
  std::vector<scheduler::GpuBlockOutcome> outcomes;
  for (Half& h : halves) {
    std::size_t at = 0;
    for (const scheduler::Block* b : h.blocks) {
      std::vector<TargetScores> scores(h.scores.begin() + at,
                                       h.scores.begin() + at + b->sequences());
      std::vector<bool> deferred(b->sequences());
      scheduler::GpuBlockOutcome outcome;
      for (std::size_t i = 0; i < b->sequences(); ++i) {
        deferred[i] = needs_forward(scores[i]);
        if (deferred[i]) ++outcome.survivors;
      }
      at += b->sequences();
      outcome.needs_post = deliver_(*b, std::move(scores), std::move(deferred));
      outcomes.push_back(outcome);
    }
  }
  return outcomes;
}

std::vector<int> resolve_gpu_devices(const std::vector<int>& requested) {
  const device::GpuInventory inventory = device::list_gpus();
  if (requested.empty()) {
    std::vector<int> all;
    for (const auto& g : inventory.gpus) all.push_back(g.index);
    return all;
  }
  for (int d : requested) {
    const bool found = std::any_of(inventory.gpus.begin(), inventory.gpus.end(),
                                   [d](const auto& g) { return g.index == d; });
    if (!found) {
      throw UsageError("--gpus: GPU " + std::to_string(d) + " is not available (" +
                       std::to_string(inventory.gpus.size()) + " usable" +
                       (inventory.problem.empty() ? "" : ": " + inventory.problem) + ")");
    }
  }
  return requested;
}

}  // namespace duet::app
