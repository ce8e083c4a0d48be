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

// FilterKernels answering with the MSV and Viterbi scores computed on the GPU and the
// bias filter's score of phase one (StopBeforeViterbi): the cascade again for a target
// that ran the Viterbi filter on the GPU.
class GpuViterbi final : public FilterKernels {
 public:
  GpuViterbi(FilterScore msv, float bias, FilterScore viterbi)
      : msv_(msv), bias_(bias), viterbi_(viterbi) {}
  float bias(const BiasFilterModel&, const Residue*, int) override { return bias_; }
  FilterScore msv(const Residue*, int) override { return msv_; }
  FilterScore viterbi(const Residue*, int) override { return viterbi_; }
  float forward(const Residue*, int) override {
    throw std::logic_error(
        "GPU backend: Forward scores come from the canonical kernel (phase three)");
  }

 private:
  FilterScore msv_;
  float bias_;
  FilterScore viterbi_;
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

struct HmmsearchGpuBackend::Half {
  std::vector<const scheduler::Block*> blocks;
  std::vector<device::GpuBlockSpan> spans;  // the blocks' runs of targets
  std::vector<device::GpuTarget> targets;
  // The model being run: its scores, and the targets (indices into `targets`) needing the
  // Viterbi filter and reaching the Forward stage on the GPU.
  std::vector<TargetScores> scores;
  std::vector<int> viterbi;
  std::vector<int> forward;
  // Too few targets need the Viterbi filter to fill the GPU: their later stages are left
  // to the CPU's post stage, from their MSV scores (kept here) and bias filter scores.
  bool to_cpu = false;
  std::vector<FilterScore> msv;
};

HmmsearchGpuBackend::~HmmsearchGpuBackend() {
  if (std::getenv("DUET_GPU_TIMES") == nullptr) return;
  const FeederTimes& t = times_;
  std::fprintf(
      stderr,
      "hmmsearch GPU %d feeder %d: set-up %.3f s, %lld model changes %.3f s; %lld batches, %lld "
      "targets (%lld Viterbi, %lld Viterbi left to the CPU, %lld "
      "Forward on the GPU of which %lld finished on the host, %lld Forward on the host in "
      "%.3f s, %lld exact MSV); feeder: "
      "pack+submit %.3f s (engine: copy %.3f s, rest %.3f s), MSV wait %.3f s, phase one "
      "%.3f s, Viterbi wait %.3f s, phase two %.3f s, Forward wait %.3f s, phase three "
      "%.3f s, deliver %.3f s; kernels: MSV %.3f s, exact MSV %.3f s, Viterbi %.3f s, "
      "Forward %.3f s; residues: %lld from the resident store, %lld uploaded (%lld kept)\n",
      device_, feeder_ + 1, t.setup, static_cast<long long>(t.model_changes), t.model_change,
      static_cast<long long>(t.batches), static_cast<long long>(t.targets),
      static_cast<long long>(t.viterbi_targets), static_cast<long long>(t.viterbi_to_cpu),
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

HmmsearchGpuBackend::HmmsearchGpuBackend(int device, int feeder, std::vector<GpuPassModel> models,
                                         const CascadeSettings& settings, Deliver deliver,
                                         ForwardOnHost forward_on_host,
                                         device::GpuResidentStore* resident)
    : settings_(settings),
      deliver_(std::move(deliver)),
      forward_on_host_(std::move(forward_on_host)),
      device_(device),
      feeder_(feeder),
      resident_(resident),
      device_name_(),
      run_host_loop_(scheduler::run_host_loop_serially) {
  for (const GpuPassModel& m : models) {
    Model model;
    model.profile = m.profile;
    model.kernels = device::resolve_kernel_choice(m.kernels, m.profile->M);
    models_.push_back(std::move(model));
  }
}

std::string HmmsearchGpuBackend::name() const {
  std::string name = "GPU " + std::to_string(device_);
  if (!device_name_.empty()) name += " (" + device_name_ + ")";  // once started
  if (feeder_ > 0) name += ", feeder " + std::to_string(feeder_ + 1);
  return name;
}

void HmmsearchGpuBackend::start(const scheduler::HostLoopRunner& run_host_loop) {
  run_host_loop_ = run_host_loop;
  engine(engine_model_);
}

device::HmmGpuEngine& HmmsearchGpuBackend::engine(std::size_t model) {
  Model& m = models_[model];
  if (!engine_) {
    const auto t0 = Clock::now();
    engine_ = std::make_unique<device::HmmGpuEngine>(device_, *m.profile, m.kernels, resident_);
    device_name_ = gpu_name(device_);  // CUDA is started now: listing is quick
    times_.setup += std::chrono::duration<double>(Clock::now() - t0).count();
    phase_time("GPU engine ready");
  } else if (engine_model_ != model) {
    const auto t0 = Clock::now();
    engine_->set_model(*m.profile, m.kernels);
    ++times_.model_changes;
    times_.model_change += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  engine_model_ = model;
  if (!m.jit_known) {
    m.jit = engine_->jit_info();
    m.jit_known = true;
  }
  return *engine_;
}

std::vector<scheduler::GpuBlockOutcome> HmmsearchGpuBackend::run(
    std::span<const scheduler::BlockPtr> blocks, int) {
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
  times.submit += since(tick);
  // Every model in turn (in order: the first keeps the batch's blocks in the resident
  // store, the others read them there); each block's scores per model of the pass.
  std::vector<std::vector<DeviceBlockScores>> per_block(blocks.size());
  for (auto& b : per_block) b.resize(models_.size());
  for (std::size_t model = 0; model < models_.size(); ++model) {
    run_model(model, halves);
    tick = Clock::now();
    std::size_t block = 0;
    for (Half& h : halves) {
      std::size_t at = 0;
      for (const scheduler::Block* b : h.blocks) {
        DeviceBlockScores& out = per_block[block++][model];
        out.scores.assign(h.scores.begin() + at, h.scores.begin() + at + b->sequences());
        out.remains.assign(b->sequences(), Remains::nothing);
        for (std::size_t i = 0; i < b->sequences(); ++i) {
          if (needs_forward(out.scores[i])) out.remains[i] = Remains::forward;
        }
        if (h.to_cpu) {
          out.msv.assign(h.msv.begin() + at, h.msv.begin() + at + b->sequences());
          for (int i : h.viterbi) {
            const std::size_t in_block = static_cast<std::size_t>(i) - at;
            if (static_cast<std::size_t>(i) >= at && in_block < b->sequences())
              out.remains[in_block] = Remains::viterbi;
          }
        }
        at += b->sequences();
      }
    }
    times.deliver += since(tick);
  }
  // Every kernel succeeded for every model: deliver, block by block.
  std::vector<scheduler::GpuBlockOutcome> outcomes;
  std::size_t block = 0;
  for (Half& h : halves) {
    for (const scheduler::Block* b : h.blocks) {
      scheduler::GpuBlockOutcome outcome;
      for (const DeviceBlockScores& m : per_block[block]) {
        outcome.survivors += static_cast<std::int64_t>(
            m.remains.size() - std::count(m.remains.begin(), m.remains.end(), Remains::nothing));
      }
      outcome.needs_post = deliver_(*b, std::move(per_block[block]));
      outcomes.push_back(outcome);
      ++block;
    }
  }
  times.deliver += since(tick);
  return outcomes;
}

void HmmsearchGpuBackend::run_model(std::size_t model, Half* halves) {
  device::HmmGpuEngine& engine = this->engine(model);
  const SearchProfile& profile = *models_[model].profile;
  FeederTimes& times = times_;
  Clock::time_point tick = Clock::now();
  for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
    Half& h = halves[s];
    h.scores.clear();
    h.viterbi.clear();
    h.forward.clear();
    h.to_cpu = false;
    h.msv.clear();
    // The targets' residues stay valid until delivery (the blocks are held): a block read
    // from the resident store is read on the host from there (wait_canonical_forward).
    engine.submit_msv(s, h.targets.data(), h.targets.size(), run_host_loop_, h.spans.data(),
                      h.spans.size());
    times.targets += static_cast<std::int64_t>(h.targets.size());
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
      StopBeforeViterbi kernels(msv[i]);
      h.scores[i] =
          run_filters(profile, settings_, kernels, h.targets[i].residues, h.targets[i].length);
      wants_viterbi[i] = kernels.viterbi_requested;
    });
    for (std::size_t i = 0; i < h.targets.size(); ++i) {
      if (wants_viterbi[i]) h.viterbi.push_back(static_cast<int>(i));
    }
    // A handful of Viterbi targets (one model against a small batch: a proteome) would
    // hold the GPU for their longest one while most of it idles; the CPU's post stage
    // takes them, and the half's Forward stage with them.
    h.to_cpu = !h.viterbi.empty() && std::ssize(h.viterbi) < engine.viterbi_wave_targets();
    if (h.to_cpu) {
      h.msv = msv;
      times.viterbi_to_cpu += static_cast<std::int64_t>(h.viterbi.size());
    } else {
      engine.submit_viterbi(s, h.viterbi.data(), h.viterbi.size());
      times.viterbi_targets += static_cast<std::int64_t>(h.viterbi.size());
    }
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
    if (h.to_cpu) continue;
    const std::vector<FilterScore>& msv = engine.wait_msv(s);
    const std::vector<FilterScore>& vit = engine.wait_viterbi(s);
    times.wait_viterbi += since(tick);
    run_host_loop_(h.viterbi.size(), kChunk / 4, [&](std::size_t j) {
      const int i = h.viterbi[j];
      // Phase one ran the bias filter (if on) and kept its score as filter_nats.
      const float bias_score = h.scores[i].filter_nats;
      GpuViterbi kernels(msv[i], bias_score, vit[j]);
      h.scores[i] =
          run_filters(profile, settings_, kernels, h.targets[i].residues, h.targets[i].length);
    });
    // The canonical Forward on the GPU for the targets that reached it (the Viterbi
    // survivors, and those whose MSV P-value skipped the Viterbi filter), except long ones:
    // a GPU thread walks each row's striped vectors in sequence, so a target of L rows
    // holds its launch for about L x Q steps (Q = ceil(M / 4)); past gpu_forward_max_steps()
    // the host computes it (below), where a core takes some milliseconds for it.
    const std::int64_t vectors = (profile.M + kCanonicalForwardLanes - 1) / kCanonicalForwardLanes;
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
      forward_on_host_(model, targets, outs);
    });
    times.forward_on_host += static_cast<std::int64_t>(on_host.size());
    times.forward_on_host_s += since(tick);
  }
  // Phase three: the Forward stage with the canonical scores (the engine computed a target
  // rescaled too often for the GPU's record on this thread, the same score).
  CanonicalScore canonical;
  for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
    Half& h = halves[s];
    const std::vector<float>& fwd =
        h.to_cpu ? std::vector<float>{} : engine.wait_canonical_forward(s);
    times.wait_forward += since(tick);
    const device::GpuKernelTimes k = engine.kernel_times(s);
    times.msv_kernel += k.msv_ms / 1e3;
    times.submit_copy += k.submit_copy_s;
    times.submit_rest += k.submit_rest_s;
    times.resident += k.resident_residues;
    times.uploaded += k.uploaded_residues;
    times.kept += k.kept_residues;
    Residency& r = models_[model].residency;
    r.resident += k.resident_residues;
    r.uploaded += k.uploaded_residues;
    r.kept += k.kept_residues;
    times.exact_kernel += k.msv_exact_ms / 1e3;
    times.exact_targets += k.msv_exact_targets;
    if (!h.to_cpu) {
      times.viterbi_kernel += k.viterbi_ms / 1e3;
      times.forward_kernel += k.canonical_ms / 1e3;
      times.forward_cpu_targets += k.canonical_cpu_targets;
    }
    for (std::size_t j = 0; j < h.forward.size(); ++j) {
      const int i = h.forward[j];
      canonical.score = fwd[j];
      run_forward_stage(profile, settings_, canonical, h.targets[i].residues, h.targets[i].length,
                        h.scores[i]);
    }
    times.phase_three += since(tick);
  }
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
