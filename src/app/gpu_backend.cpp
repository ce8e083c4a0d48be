// HmmsearchGpuBackend: see gpu_backend.hpp.
#include "app/gpu_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "app/run_context.hpp"
#include "core/error.hpp"
#include "device/gpu_info.hpp"
#include "scheduler/block_queue.hpp"

namespace duet::app {

namespace {

// FilterKernels answering with scores computed on the GPU. A Viterbi score not computed
// yet is recorded as requested (phase one); the cascade is then run again for those
// targets once the GPU has their Viterbi scores (phase two).
class DeviceScores final : public FilterKernels {
 public:
  FilterScore msv_score{}, viterbi_score{};
  bool have_viterbi = false, viterbi_requested = false;
  const float* bias_score = nullptr;  // phase two: the bias filter's score from phase one
  float bias(const BiasFilterModel& model, const Residue* dsq, int L) override {
    return bias_score ? *bias_score : bias_filter_score(model, dsq, L);
  }
  FilterScore msv(const Residue*, int) override { return msv_score; }
  FilterScore viterbi(const Residue*, int) override {
    if (!have_viterbi) viterbi_requested = true;
    return have_viterbi ? viterbi_score : FilterScore{std::numeric_limits<float>::infinity(), true};
  }
  float forward(const Residue*, int) override {
    throw std::logic_error(
        "GPU backend: Forward scores come from the canonical kernel (phase three)");
  }
};

// The canonical Forward score the GPU computed (bit for bit CanonicalForward::score):
// run_forward_stage with it decides and records exactly what a CPU worker would.
class CanonicalScore final : public FilterKernels {
 public:
  float score = 0;
  FilterScore msv(const Residue*, int) override {
    throw std::logic_error("CanonicalScore: Forward only");
  }
  FilterScore viterbi(const Residue*, int) override {
    throw std::logic_error("CanonicalScore: Forward only");
  }
  float forward(const Residue*, int) override { return score; }
};

struct Half {
  std::vector<const scheduler::Block*> blocks;
  std::vector<device::GpuBlockSpan> spans;  // the blocks' runs of targets
  std::vector<device::GpuTarget> targets;
  std::vector<TargetScores> scores;
  std::vector<int> viterbi;  // targets (indices into `targets`) needing the Viterbi filter
  std::vector<int> forward;  // targets reaching the Forward stage, for the GPU
};

std::string gpu_name(int device) {
  for (const auto& g : device::list_gpus().gpus) {
    if (g.index == device) return g.name;
  }
  return "?";
}

// Rows x striped vectors of the longest target the GPU's canonical Forward takes (about
// 5 ms of one launch on an H100; measured 24 ms for 8,081 rows of 65 vectors); a longer
// one is computed on the host. DUET_GPU_FORWARD_MAX_STEPS (a positive integer) sets
// another limit, for measurements.
std::int64_t gpu_forward_max_steps() {
  static const std::int64_t steps = [] {
    const char* value = std::getenv("DUET_GPU_FORWARD_MAX_STEPS");
    if (value == nullptr || *value == 0) return std::int64_t{100000};
    char* end = nullptr;
    const long long n = std::strtoll(value, &end, 10);
    if (*end != 0 || n < 1)
      throw UsageError("DUET_GPU_FORWARD_MAX_STEPS must be a positive integer");
    return static_cast<std::int64_t>(n);
  }();
  return steps;
}

using Clock = std::chrono::steady_clock;
double since(Clock::time_point& t) {
  const Clock::time_point now = Clock::now();
  const double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}

}  // namespace

HmmsearchGpuBackend::~HmmsearchGpuBackend() {
  if (std::getenv("DUET_GPU_TIMES") == nullptr) return;
  const FeederTimes& t = times_;
  std::fprintf(
      stderr,
      "hmmsearch GPU %d feeder %d: set-up %.3f s; %lld batches, %lld targets (%lld Viterbi, %lld "
      "Forward on the GPU of which %lld finished on the host, %lld Forward on the host in "
      "%.3f s, %lld exact MSV); feeder: "
      "pack+submit %.3f s (engine: copy %.3f s, rest %.3f s), MSV wait %.3f s, phase one "
      "%.3f s, Viterbi wait %.3f s, phase two %.3f s, Forward wait %.3f s, phase three "
      "%.3f s, deliver %.3f s; kernels: MSV %.3f s, exact MSV %.3f s, Viterbi %.3f s, "
      "Forward %.3f s; residues: %lld from the resident store, %lld uploaded (%lld kept)\n",
      device_, feeder_ + 1, t.setup, static_cast<long long>(t.batches),
      static_cast<long long>(t.targets), static_cast<long long>(t.viterbi_targets),
      static_cast<long long>(t.forward_targets), static_cast<long long>(t.forward_cpu_targets),
      static_cast<long long>(t.forward_on_host), t.forward_on_host_s,
      static_cast<long long>(t.exact_targets), t.submit, t.submit_copy, t.submit_rest, t.wait_msv,
      t.phase_one, t.wait_viterbi, t.phase_two, t.wait_forward, t.phase_three, t.deliver,
      t.msv_kernel, t.exact_kernel, t.viterbi_kernel, t.forward_kernel,
      static_cast<long long>(t.resident), static_cast<long long>(t.uploaded),
      static_cast<long long>(t.kept));
  // Every feeder's host loops together (scheduler::host_loop_seconds), by who ran them.
  const scheduler::HostLoopSeconds loops = scheduler::host_loop_seconds();
  std::fprintf(stderr,
               "hmmsearch GPU %d: host loops so far (all feeders) %.3f CPU-s: feeders %.3f, "
               "workers between targets %.3f, workers as tasks %.3f\n",
               device_, loops.feeder + loops.inside_tasks + loops.as_tasks, loops.feeder,
               loops.inside_tasks, loops.as_tasks);
}

HmmsearchGpuBackend::HmmsearchGpuBackend(int device, int feeder, const SearchProfile& profile,
                                         const CascadeSettings& settings,
                                         device::GpuKernelChoice kernels, Deliver deliver,
                                         ForwardOnHost forward_on_host,
                                         device::GpuResidentStore* resident)
    : profile_(profile),
      settings_(settings),
      deliver_(std::move(deliver)),
      forward_on_host_(std::move(forward_on_host)),
      device_(device),
      feeder_(feeder),
      kernels_(device::resolve_kernel_choice(kernels, profile.M)),
      resident_(resident),
      device_name_(),
      run_host_loop_(scheduler::run_host_loop_serially) {}

std::string HmmsearchGpuBackend::name() const {
  std::string name = "GPU " + std::to_string(device_);
  if (!device_name_.empty()) name += " (" + device_name_ + ")";  // once started
  if (feeder_ > 0) name += ", feeder " + std::to_string(feeder_ + 1);
  return name;
}

void HmmsearchGpuBackend::start(const scheduler::HostLoopRunner& run_host_loop) {
  run_host_loop_ = run_host_loop;
  engine();
}

device::HmmGpuEngine& HmmsearchGpuBackend::engine() {
  if (!engine_) {
    const auto t0 = Clock::now();
    engine_ = std::make_unique<device::HmmGpuEngine>(device_, profile_, kernels_, resident_);
    device_name_ = gpu_name(device_);  // CUDA is started now: listing is quick
    times_.setup += std::chrono::duration<double>(Clock::now() - t0).count();
    phase_time("GPU engine ready");
  }
  return *engine_;
}

std::vector<scheduler::GpuBlockOutcome> HmmsearchGpuBackend::run(
    std::span<const scheduler::BlockPtr> blocks, int) {
  device::HmmGpuEngine& engine = this->engine();
  // Two halves by residues, one per engine slot.
  FeederTimes& times = times_;
  Clock::time_point tick = Clock::now();
  ++times.batches;
  std::int64_t total = 0;
  for (const auto& b : blocks) total += b->residue_count();
  Half halves[device::HmmGpuEngine::kSlots];
  std::int64_t so_far = 0;
  for (const auto& b : blocks) {
    Half& h =
        halves[(blocks.size() > 1 && so_far * 2 >= total && !halves[0].blocks.empty()) ? 1 : 0];
    so_far += b->residue_count();
    h.blocks.push_back(b.get());
    h.spans.push_back(
        {static_cast<std::int64_t>(b->index), b->first_sequence, h.targets.size(), b->sequences()});
    for (std::size_t i = 0; i < b->sequences(); ++i)
      h.targets.push_back({b->sequence(i), b->length(i)});
  }
  for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
    // The targets' residues stay valid until delivery (the blocks are held): a block read
    // from the resident store is read on the host from there (wait_canonical_forward).
    engine.submit_msv(s, halves[s].targets.data(), halves[s].targets.size(), run_host_loop_,
                      halves[s].spans.data(), halves[s].spans.size());
    times.targets += static_cast<std::int64_t>(halves[s].targets.size());
  }
  times.submit += since(tick);
  // The cascade's host work per target (the bias filter above all) is spread over the CPU
  // workers that are free (run_host_loop_); each target's scores depend on it alone.
  constexpr std::size_t kChunk = 256;
  // Phase one per half (MSV, bias filter, Viterbi decisions) while the other half runs.
  for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
    Half& h = halves[s];
    const std::vector<FilterScore>& msv = engine.wait_msv(s);
    times.wait_msv += since(tick);
    h.scores.resize(h.targets.size());
    std::vector<char> wants_viterbi(h.targets.size(), 0);
    run_host_loop_(h.targets.size(), kChunk, [&](std::size_t i) {
      DeviceScores kernels;
      kernels.msv_score = msv[i];
      h.scores[i] =
          run_filters(profile_, settings_, kernels, h.targets[i].residues, h.targets[i].length);
      wants_viterbi[i] = kernels.viterbi_requested;
    });
    for (std::size_t i = 0; i < h.targets.size(); ++i) {
      if (wants_viterbi[i]) h.viterbi.push_back(static_cast<int>(i));
    }
    engine.submit_viterbi(s, h.viterbi.data(), h.viterbi.size());
    times.viterbi_targets += static_cast<std::int64_t>(h.viterbi.size());
    times.phase_one += since(tick);
  }
  // Phase two: the cascade again for the targets that ran the Viterbi filter.
  struct HostTarget {
    Half* half;
    int i;
  };
  std::vector<HostTarget> on_host;  // Forward on the host: too long for the GPU's kernel
  for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
    Half& h = halves[s];
    const std::vector<FilterScore>& msv = engine.wait_msv(s);
    const std::vector<FilterScore>& vit = engine.wait_viterbi(s);
    times.wait_viterbi += since(tick);
    run_host_loop_(h.viterbi.size(), kChunk / 4, [&](std::size_t j) {
      const int i = h.viterbi[j];
      DeviceScores kernels;
      kernels.msv_score = msv[i];
      kernels.viterbi_score = vit[j];
      kernels.have_viterbi = true;
      // Phase one ran the bias filter (if on) and kept its score as filter_nats.
      const float bias_score = h.scores[i].filter_nats;
      if (settings_.bias_filter) kernels.bias_score = &bias_score;
      h.scores[i] =
          run_filters(profile_, settings_, kernels, h.targets[i].residues, h.targets[i].length);
    });
    // The canonical Forward on the GPU for the targets that reached it (the Viterbi
    // survivors, and those whose MSV P-value skipped the Viterbi filter), except long ones:
    // a GPU thread walks each row's striped vectors in sequence, so a target of L rows
    // holds its launch for about L x Q steps (Q = ceil(M / 4)); past gpu_forward_max_steps()
    // the host computes it (below), where a core takes some milliseconds for it.
    const std::int64_t vectors = (profile_.M + kCanonicalForwardLanes - 1) / kCanonicalForwardLanes;
    for (std::size_t i = 0; i < h.targets.size(); ++i) {
      if (!needs_forward(h.scores[i])) continue;
      if (h.targets[i].length * vectors > gpu_forward_max_steps()) {
        on_host.push_back({&h, static_cast<int>(i)});
      } else {
        h.forward.push_back(static_cast<int>(i));
      }
    }
    engine.submit_canonical_forward(s, h.forward.data(), h.forward.size());
    times.forward_targets += static_cast<std::int64_t>(h.forward.size());
    times.phase_two += since(tick);
  }
  // The long targets' Forward on the host while the GPU computes the others': packs of
  // similar length (the CPU kernels compute a pack's targets side by side), shared with
  // the free CPU workers.
  if (!on_host.empty()) {
    std::stable_sort(on_host.begin(), on_host.end(), [](const HostTarget& a, const HostTarget& b) {
      return a.half->targets[a.i].length > b.half->targets[b.i].length;
    });
    constexpr std::size_t kPack = 4;
    const std::size_t packs = (on_host.size() + kPack - 1) / kPack;
    run_host_loop_(packs, 1, [&](std::size_t p) {
      std::vector<ForwardTarget> targets;
      std::vector<TargetScores*> outs;
      for (std::size_t j = p * kPack; j < std::min(on_host.size(), p * kPack + kPack); ++j) {
        const HostTarget& t = on_host[j];
        targets.push_back({t.half->targets[t.i].residues, t.half->targets[t.i].length});
        outs.push_back(&t.half->scores[t.i]);
      }
      forward_on_host_(targets, outs);
    });
    times.forward_on_host += static_cast<std::int64_t>(on_host.size());
    times.forward_on_host_s += since(tick);
  }
  // Phase three: the Forward stage with the canonical scores (the engine computed a target
  // rescaled too often for the GPU's record on this thread, the same score).
  CanonicalScore canonical;
  for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
    Half& h = halves[s];
    const std::vector<float>& fwd = engine.wait_canonical_forward(s);
    times.wait_forward += since(tick);
    const device::GpuKernelTimes k = engine.kernel_times(s);
    times.msv_kernel += k.msv_ms / 1e3;
    times.submit_copy += k.submit_copy_s;
    times.submit_rest += k.submit_rest_s;
    times.resident += k.resident_residues;
    times.uploaded += k.uploaded_residues;
    times.kept += k.kept_residues;
    times.exact_kernel += k.msv_exact_ms / 1e3;
    times.viterbi_kernel += k.viterbi_ms / 1e3;
    times.forward_kernel += k.canonical_ms / 1e3;
    times.exact_targets += k.msv_exact_targets;
    times.forward_cpu_targets += k.canonical_cpu_targets;
    for (std::size_t j = 0; j < h.forward.size(); ++j) {
      const int i = h.forward[j];
      canonical.score = fwd[j];
      run_forward_stage(profile_, settings_, canonical, h.targets[i].residues, h.targets[i].length,
                        h.scores[i]);
    }
    times.phase_three += since(tick);
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
  times.deliver += since(tick);
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
