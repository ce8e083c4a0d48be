// HmmsearchGpuBackend: see gpu_backend.hpp.
#include "app/hmmsearch/gpu_backend.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <span>

#include "app/kit/run_context.hpp"
#include "app/kit/run_options.hpp"
#include "core/error.hpp"
#include "core/hmmsearch/length_terms.hpp"
#include "device/gpu_info.hpp"
#include "scheduler/cpu_pool.hpp"

namespace duet::app {

namespace {

std::string gpu_name(int device) {
  for (const auto& g : device::list_gpus().gpus) {
    if (g.index == device) return g.name;
  }
  return "?";
}

using Clock = std::chrono::steady_clock;

double since(Clock::time_point& t) {
  const Clock::time_point now = Clock::now();
  const double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}

// The targets' null scores (null_score of each length), for a gated MSV launch.
std::vector<float> null_scores(const std::vector<device::GpuTarget>& targets) {
  std::vector<float> out(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) out[i] = null_score(targets[i].length);
  return out;
}

// The MSV passes of one model's host work in one host-loop task.
constexpr std::size_t kPassChunk = 64;

// The decisions up to the Viterbi filter (decide_through_bias_together, with the bias
// filter's composition scores from the device; the few it left to the host computed four
// targets at a time) of MSV passes `passes` of one model against `targets`, into `scores`
// (one per pass); wants_viterbi[j]: pass j goes on to the Viterbi filter. `device_bias`
// false: every bias filter on the host.
void decide_passes(const SearchProfile& profile, const CascadeSettings& settings,
                   const std::vector<device::GpuTarget>& targets,
                   std::span<const device::HmmGpuEngine::MsvPass> passes, bool device_bias,
                   TargetScores* scores, char* wants_viterbi) {
  const std::size_t n = passes.size();
  std::vector<const Residue*> dsq(n);
  std::vector<int> L(n);
  std::vector<FilterScore> msv(n);
  std::vector<float> composition(n);
  for (std::size_t j = 0; j < n; ++j) {
    const device::GpuTarget& t = targets[static_cast<std::size_t>(passes[j].target)];
    dsq[j] = t.residues;
    L[j] = t.length;
    msv[j] = passes[j].score;
    composition[j] = passes[j].bias_composition;
  }
  std::vector<NextStage> next(n);
  decide_through_bias_together(profile, settings, n, dsq.data(), L.data(), msv.data(), scores,
                               next.data(), device_bias ? composition.data() : nullptr);
  for (std::size_t j = 0; j < n; ++j) wants_viterbi[j] = next[j] == NextStage::viterbi ? 1 : 0;
}

// The passes whose bias filter the host computes: none without the filter (--nobias),
// else those the device left, or every one.
std::int64_t bias_left_to_host(const std::vector<device::HmmGpuEngine::MsvPass>& passes,
                               const CascadeSettings& settings, bool device_bias) {
  if (!settings.bias_filter) return 0;
  if (!device_bias) return static_cast<std::int64_t>(passes.size());
  return std::ranges::count_if(passes, [](const device::HmmGpuEngine::MsvPass& p) {
    return std::isnan(p.bias_composition);
  });
}

}  // namespace

// A batch's targets on one engine slot: half of its blocks by residues.
struct HmmsearchGpuBackend::Half {
  std::vector<const Block*> blocks;
  std::vector<device::GpuBlockSpan> spans;  // the blocks' runs of targets
  std::vector<device::GpuTarget> targets;
};

// One model of the batch running on one engine, per half: the targets that passed MSV and
// their scores (nothing is kept of the others, which stopped there), and the targets
// needing the Viterbi filter and reaching the Forward stage on the GPU. Targets are
// indices into the half's targets.
struct HmmsearchGpuBackend::Lane {
  std::size_t model = 0;
  device::HmmGpuEngine* engine = nullptr;
  struct PerHalf {
    std::vector<int> past_msv;         // ascending
    std::vector<TargetScores> scores;  // per entry of past_msv
    std::vector<int> viterbi;
    std::vector<int> forward;
    // Too few targets need the Viterbi filter to fill the GPU: their later stages are left
    // to the CPU's post stage, their decisions made up to the Viterbi filter.
    bool to_cpu = false;
    // Targets whose Viterbi filter (and later stages) are left to the CPU's post stage:
    // all of `viterbi` when to_cpu, or (run_set) the longest pairs.
    std::vector<int> cpu_viterbi;
    // The scores of target `target` (one of past_msv).
    TargetScores& scores_of(int target) {
      const auto at = std::lower_bound(past_msv.begin(), past_msv.end(), target);
      return scores[static_cast<std::size_t>(at - past_msv.begin())];
    }
    // The MSV filter's passes `passes` (of this lane's model, in target order) as past_msv,
    // with room for their scores.
    void take_passes(std::span<const device::HmmGpuEngine::MsvPass> passes) {
      past_msv.resize(passes.size());
      for (std::size_t j = 0; j < passes.size(); ++j) past_msv[j] = passes[j].target;
      scores.assign(passes.size(), TargetScores{});
    }
  } halves[device::HmmGpuEngine::kSlots];
};

HmmsearchGpuBackend::~HmmsearchGpuBackend() {
  if (!timings_wanted()) return;
  const FeederTimes& t = times_;
  std::fprintf(
      stderr,
      "hmmsearch GPU %d feeder %d: set-up %.3f s, %lld model changes %.3f s; %lld batches "
      "(%lld with the models' MSV at once, model sets uploaded in %.3f s, %lld models moved "
      "to lanes), %lld targets (%lld passed MSV, %lld bias filters on the host, %lld "
      "Viterbi, %lld Viterbi left to the CPU, "
      "%lld Forward on the GPU of which %lld finished on the host, %lld Forward on the host in "
      "%.3f s, %lld exact MSV); feeder: "
      "pack+submit %.3f s (engine: copy %.3f s, rest %.3f s), MSV wait %.3f s, phase one "
      "%.3f s, Viterbi wait %.3f s, phase two %.3f s, Forward wait %.3f s, phase three "
      "%.3f s, deliver %.3f s; kernels: MSV %.3f s, exact MSV %.3f s, Viterbi %.3f s, "
      "Forward %.3f s; residues: %lld from the resident store, %lld uploaded (%lld kept)\n",
      device_, feeder_ + 1, t.setup, static_cast<long long>(t.model_changes), t.model_change,
      static_cast<long long>(t.batches), static_cast<long long>(t.set_batches), t.set_upload,
      static_cast<long long>(t.set_to_lanes), static_cast<long long>(t.targets),
      static_cast<long long>(t.msv_passes), static_cast<long long>(t.bias_on_host),
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
  const device::GpuBufferAllocations allocations = device::gpu_buffer_allocations();
  std::fprintf(stderr,
               "hmmsearch GPU %d: host loops so far (all feeders) %.3f s: feeders %.3f, "
               "CPU workers %.3f; buffer allocations so far (all GPUs) %lld device in %.3f s, "
               "%lld pinned in %.3f s\n",
               device_, loops.feeder + loops.workers, loops.feeder, loops.workers,
               allocations.device, allocations.device_seconds, allocations.pinned,
               allocations.pinned_seconds);
}

HmmsearchGpuBackend::HmmsearchGpuBackend(int device, int feeder, std::vector<GpuPassModel> models,
                                         const CascadeSettings& settings, Deliver deliver,
                                         ForwardOnHost forward_on_host,
                                         std::vector<EngineSlot>& engines,
                                         const io::GpuTuning& tuning,
                                         device::GpuResidentStore* resident)
    : tuning_(tuning),
      settings_(settings),
      deliver_(std::move(deliver)),
      forward_on_host_(std::move(forward_on_host)),
      device_(device),
      feeder_(feeder),
      resident_(resident),
      device_bias_(debug_setting("DUET_DEBUG_HOST_BIAS", 1) != 1),
      device_name_(),
      run_host_loop_(scheduler::run_host_loop_serially),
      engines_(&engines) {
  static std::atomic<std::uint64_t> backends{0};
  id_ = ++backends;
  for (const GpuPassModel& m : models) {
    Model model;
    model.id = m.id;
    model.profile = m.profile;
    model.kernels = device::resolve_kernel_choice(m.kernels, m.profile->M);
    model.msv_pass_bits = msv_pass_bits(*m.profile, settings);
    models_.push_back(std::move(model));
  }
}

std::string HmmsearchGpuBackend::name() const {
  std::string name = "GPU " + std::to_string(device_);
  if (!device_name_.empty()) name += " (" + device_name_ + ")";  // once started
  if (feeder_ > 0) name += ", feeder " + std::to_string(feeder_ + 1);
  return name;
}

scheduler::GpuBackend::Readiness HmmsearchGpuBackend::readiness(std::string& problem) {
  return warmup_readiness(device_, problem);
}

void HmmsearchGpuBackend::start(const scheduler::HostLoopRunner& run_host_loop) {
  run_host_loop_ = run_host_loop;
  engine(0, 0);
}

device::HmmGpuEngine& HmmsearchGpuBackend::engine(std::size_t lane, std::size_t model) {
  Model& m = models_[model];
  std::vector<EngineSlot>& engines = *engines_;
  if (engines.size() <= lane) engines.resize(lane + 1);
  EngineSlot& e = engines[lane];
  const auto t0 = Clock::now();
  if (!e.engine) {
    e.engine = std::make_unique<device::HmmGpuEngine>(device_, *m.profile, m.kernels, resident_);
    if (device_name_.empty()) device_name_ = gpu_name(device_);  // CUDA is started: quick
    times_.setup += std::chrono::duration<double>(Clock::now() - t0).count();
    phase_time("GPU engine ready");
  } else if (e.model != m.id) {
    e.engine->set_model(*m.profile, m.kernels);
    ++times_.model_changes;
    times_.model_change += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  e.model = m.id;
  if (!m.jit_known) {
    m.jit = e.engine->jit_info();
    m.jit_known = true;
  }
  return *e.engine;
}

std::vector<scheduler::GpuBlockOutcome> HmmsearchGpuBackend::run(std::span<const BlockPtr> blocks,
                                                                 int) {
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
  // Each block's scores per model of the pass.
  std::vector<std::vector<DeviceBlockScores>> per_block(blocks.size());
  for (auto& b : per_block) b.resize(models_.size());
  const std::size_t lanes = std::clamp<std::size_t>(
      static_cast<std::size_t>(tuning_.lane_residues / std::max<std::int64_t>(1, total)), 1,
      std::min(models_.size(), static_cast<std::size_t>(tuning_.max_lanes)));
  // Each model's scores of the batch, block by block: its targets that passed MSV, with
  // what remains of each (on the free CPU workers too).
  const auto assemble = [&](const std::vector<Lane>& running) {
    run_host_loop_(running.size(), 1, [&](std::size_t k) {
      const Lane& lane = running[k];
      std::size_t block = 0;
      for (int s = 0; s < device::HmmGpuEngine::kSlots; ++s) {
        const Half& h = halves[s];
        const Lane::PerHalf& l = lane.halves[s];
        std::vector<Remains> remains(l.past_msv.size(), Remains::nothing);
        for (std::size_t e = 0; e < remains.size(); ++e) {
          if (needs_forward(l.scores[e])) remains[e] = Remains::forward;
        }
        for (int i : l.cpu_viterbi) {
          const auto at = std::lower_bound(l.past_msv.begin(), l.past_msv.end(), i);
          remains[static_cast<std::size_t>(at - l.past_msv.begin())] = Remains::viterbi;
        }
        std::size_t e = 0, first = 0;  // first: the block's first target in the half
        for (const Block* b : h.blocks) {
          std::vector<ScoredTarget>& out = per_block[block++][lane.model].past_msv;
          out.clear();
          for (; e < l.past_msv.size() &&
                 static_cast<std::size_t>(l.past_msv[e]) < first + b->sequences();
               ++e) {
            out.push_back(
                {static_cast<std::uint32_t>(static_cast<std::size_t>(l.past_msv[e]) - first),
                 remains[e], l.scores[e]});
          }
          first += b->sequences();
        }
      }
    });
  };
  if (lanes > 1 && models_.size() > 1) {
    // A batch small enough that one model's kernels would not fill the GPU: every model's
    // MSV and Viterbi filters at once.
    std::vector<Lane> done(models_.size());
    run_set(halves, done);
    tick = Clock::now();
    assemble(done);
    times.deliver += since(tick);
  } else {
    // The models in turn, several at once on engines of their own (lanes) where the batch
    // is small. The first model keeps the batch's blocks in the resident store; the models
    // run after the first round of lanes read them there (those of the first round upload
    // them too).
    for (std::size_t first = 0; first < models_.size(); first += lanes) {
      const std::size_t count = std::min(lanes, models_.size() - first);
      std::vector<Lane> running(count);
      for (std::size_t k = 0; k < count; ++k) running[k].model = first + k;
      run_lanes(running, halves);
      tick = Clock::now();
      assemble(running);
      times.deliver += since(tick);
    }
  }
  // Every kernel succeeded for every model: deliver, block by block (on the free CPU
  // workers too: the sinks put each model's blocks in order).
  tick = Clock::now();
  std::vector<const Block*> in_order;
  for (const Half& h : halves) in_order.insert(in_order.end(), h.blocks.begin(), h.blocks.end());
  std::vector<scheduler::GpuBlockOutcome> outcomes(in_order.size());
  run_host_loop_(in_order.size(), 1, [&](std::size_t block) {
    scheduler::GpuBlockOutcome& outcome = outcomes[block];
    for (const DeviceBlockScores& m : per_block[block]) {
      for (const ScoredTarget& t : m.past_msv)
        outcome.survivors += t.remains != Remains::nothing ? 1 : 0;
    }
    outcome.post = deliver_(*in_order[block], std::move(per_block[block]));
  });
  times.deliver += since(tick);
  return outcomes;
}

void HmmsearchGpuBackend::count_msv_stage(const device::GpuKernelTimes& k, std::size_t model) {
  FeederTimes& times = times_;
  times.msv_kernel += k.msv_ms / 1e3;
  times.exact_kernel += k.msv_exact_ms / 1e3;
  times.exact_targets += k.msv_exact_targets;
  times.submit_copy += k.submit_copy_s;
  times.submit_rest += k.submit_rest_s;
  times.resident += k.resident_residues;
  times.uploaded += k.uploaded_residues;
  times.kept += k.kept_residues;
  Residency& r = models_[model].residency;
  r.resident += k.resident_residues;
  r.uploaded += k.uploaded_residues;
  r.kept += k.kept_residues;
}

void HmmsearchGpuBackend::run_set(Half* halves, std::vector<Lane>& done) {
  FeederTimes& times = times_;
  Clock::time_point tick = Clock::now();
  constexpr int kSlots = device::HmmGpuEngine::kSlots;
  device::HmmGpuEngine& engine = this->engine(0, 0);
  EngineSlot& slot = (*engines_)[0];
  if (slot.model_set != id_) {
    std::vector<device::HmmGpuEngine::SetModel> set;
    for (const Model& m : models_) set.push_back({m.profile, m.kernels, m.msv_pass_bits});
    engine.set_models(set.data(), set.size());
    slot.model_set = id_;
    times.set_upload += since(tick);
  }
  ++times.set_batches;
  const std::size_t models = models_.size();
  for (int s = 0; s < kSlots; ++s) {
    // The MSV stage's decision on the device (a gated launch): only the pairs that pass
    // it come back.
    const Half& h = halves[s];
    const std::vector<float> null_nats = null_scores(h.targets);
    engine.submit_msv_models(s, h.targets.data(), h.targets.size(), run_host_loop_, h.spans.data(),
                             h.spans.size(), &null_nats);
    times.targets += static_cast<std::int64_t>(models * h.targets.size());
  }
  times.submit += since(tick);
  for (std::size_t k = 0; k < models; ++k) done[k].model = k;
  // The bias filter and the decisions up to the Viterbi filter of the pairs that passed MSV,
  // spread over the free CPU workers. Only those pairs get scores on the host (Lane's
  // past_msv): nothing downstream reads more of a target stopped at MSV than that it did
  // not pass (add_block counts every target and records those past MSV).
  bool to_lanes = false;
  const std::int64_t wave = engine.viterbi_wave_targets();
  const std::int64_t set_wave = std::max(1, engine.set_viterbi_wave_targets());
  std::vector<device::HmmGpuEngine::SetItem> items[kSlots];  // the Viterbi filter's pairs
  for (int s = 0; s < kSlots; ++s) {
    const Half& h = halves[s];
    const std::vector<device::HmmGpuEngine::MsvPass>& passes = engine.wait_msv_passes(s);
    times.wait_msv += since(tick);
    times.msv_passes += static_cast<std::int64_t>(passes.size());
    times.bias_on_host += bias_left_to_host(passes, settings_, device_bias_);
    // Each model's passes (sorted by model, then target) and where they start.
    std::vector<std::size_t> first_pass(models + 1, passes.size());
    for (std::size_t j = passes.size(); j-- > 0;)
      first_pass[static_cast<std::size_t>(passes[j].model)] = j;
    for (std::size_t k = models; k-- > 0;)
      first_pass[k] = std::min(first_pass[k], first_pass[k + 1]);
    for (std::size_t k = 0; k < models; ++k) {
      done[k].halves[s].take_passes(
          std::span(passes).subspan(first_pass[k], first_pass[k + 1] - first_pass[k]));
    }
    // Tasks of up to kPassChunk passes of one model: (model, first pass).
    std::vector<std::pair<std::size_t, std::size_t>> tasks;
    for (std::size_t k = 0; k < models; ++k) {
      for (std::size_t j = first_pass[k]; j < first_pass[k + 1]; j += kPassChunk)
        tasks.emplace_back(k, j);
    }
    std::vector<char> wants_viterbi(passes.size(), 0);
    run_host_loop_(tasks.size(), 1, [&](std::size_t task) {
      const auto [k, j] = tasks[task];
      const std::size_t count = std::min(kPassChunk, first_pass[k + 1] - j);
      decide_passes(*models_[k].profile, settings_, h.targets, std::span(passes).subspan(j, count),
                    device_bias_, done[k].halves[s].scores.data() + (j - first_pass[k]),
                    wants_viterbi.data() + j);
    });
    for (std::size_t j = 0; j < passes.size(); ++j) {  // by model, then target
      if (!wants_viterbi[j]) continue;
      Lane::PerHalf& l = done[static_cast<std::size_t>(passes[j].model)].halves[s];
      l.viterbi.push_back(passes[j].target);
      items[s].push_back({passes[j].model, passes[j].target});
    }
    for (const Lane& lane : done) to_lanes = to_lanes || std::ssize(lane.halves[s].viterbi) >= wave;
    // A pair holds its warp for about L * ceil(M / 32) steps, so one long pair can outlast
    // all the others: pairs above twice a warp's fair share of the half's steps (and above
    // kViterbiAlwaysGpu steps) go to the CPU's post stage instead.
    {
      constexpr std::int64_t kViterbiAlwaysGpu = 20000;
      const auto steps = [&](const device::HmmGpuEngine::SetItem& item) {
        return static_cast<std::int64_t>(h.targets[static_cast<std::size_t>(item.target)].length) *
               ((models_[static_cast<std::size_t>(item.model)].profile->M + 31) / 32);
      };
      std::int64_t total = 0;
      for (const auto& item : items[s]) total += steps(item);
      const std::int64_t limit = std::max(kViterbiAlwaysGpu, 2 * total / set_wave);
      std::erase_if(items[s], [&](const device::HmmGpuEngine::SetItem& item) {
        if (steps(item) <= limit) return false;
        done[static_cast<std::size_t>(item.model)].halves[s].cpu_viterbi.push_back(item.target);
        ++times.viterbi_to_cpu;
        return true;
      });
    }
    // Every model's Viterbi filter of this half in one launch, while the host takes the
    // other half's MSV scores.
    engine.submit_viterbi_models(s, items[s].data(), items[s].size());
    times.viterbi_targets += static_cast<std::int64_t>(items[s].size());
    // The kernels' figures; the residues were read once for all models: the first model
    // counts them as the slot read them (store or upload), the others as on the device.
    const device::GpuKernelTimes k = engine.kernel_times(s);
    count_msv_stage(k, 0);
    for (std::size_t m = 1; m < models; ++m)
      models_[m].residency.resident += k.resident_residues + k.uploaded_residues;
    times.phase_one += since(tick);
  }
  // The decisions after the Viterbi filter; the Forward stage of the targets that reach it
  // is left to the CPU's post stage.
  for (int s = 0; s < kSlots; ++s) {
    const std::vector<FilterScore>& vit = engine.wait_viterbi_models(s);
    times.wait_viterbi += since(tick);
    times.viterbi_kernel += engine.kernel_times(s).viterbi_ms / 1e3;
    run_host_loop_(items[s].size(), 128, [&](std::size_t j) {
      const device::HmmGpuEngine::SetItem& item = items[s][j];
      const auto k = static_cast<std::size_t>(item.model);
      decide_after_viterbi(*models_[k].profile, settings_, vit[j],
                           done[k].halves[s].scores_of(item.target));
    });
    times.phase_two += since(tick);
  }
  // A model with enough Viterbi targets in a half to fill the GPU: its whole cascade on
  // engines of their own, as for a large batch (its MSV filter again, and its Forward on
  // the GPU; rare: a small database rich in its hits).
  std::vector<Lane> again;
  if (to_lanes) {
    for (std::size_t k = 0; k < models; ++k) {
      bool fills = false;
      for (int s = 0; s < kSlots; ++s)
        fills = fills || std::ssize(done[k].halves[s].viterbi) >= wave;
      if (!fills) continue;
      again.emplace_back();
      again.back().model = k;
    }
    const std::size_t lanes =
        std::clamp<std::size_t>(static_cast<std::size_t>(tuning_.max_lanes), 1, again.size());
    for (std::size_t first = 0; first < again.size(); first += lanes) {
      std::vector<Lane> running(
          again.begin() + static_cast<std::ptrdiff_t>(first),
          again.begin() + static_cast<std::ptrdiff_t>(std::min(again.size(), first + lanes)));
      run_lanes(running, halves);
      for (Lane& lane : running) done[lane.model] = std::move(lane);
    }
    times.set_to_lanes += static_cast<std::int64_t>(again.size());
  }
}

void HmmsearchGpuBackend::run_lanes(std::vector<Lane>& lanes, Half* halves) {
  FeederTimes& times = times_;
  Clock::time_point tick = Clock::now();
  constexpr int kSlots = device::HmmGpuEngine::kSlots;
  // Gated MSV launches: the device decides the MSV stage, and only the targets that pass
  // it come back.
  std::vector<float> null_nats[kSlots];
  for (int s = 0; s < kSlots; ++s) null_nats[s] = null_scores(halves[s].targets);
  for (std::size_t k = 0; k < lanes.size(); ++k) {
    lanes[k].engine = &engine(k, lanes[k].model);
    for (int s = 0; s < kSlots; ++s) {
      const Half& h = halves[s];
      // The targets' residues stay valid until delivery (the blocks are held): a block
      // read from the resident store is read on the host from there
      // (wait_canonical_forward).
      lanes[k].engine->submit_msv(s, h.targets.data(), h.targets.size(), run_host_loop_,
                                  h.spans.data(), h.spans.size(), &null_nats[s],
                                  models_[lanes[k].model].msv_pass_bits);
      times.targets += static_cast<std::int64_t>(h.targets.size());
    }
  }
  times.submit += since(tick);
  // The cascade's host work on the targets that passed MSV (the bias filter above all) is
  // spread over the CPU workers that are free (run_host_loop_); each target's scores
  // depend on it alone. Only they get scores on the host (see run_set).
  // Phase one per lane and half (the bias filter, Viterbi decisions) while the others'
  // kernels run.
  for (Lane& lane : lanes) {
    const SearchProfile& profile = *models_[lane.model].profile;
    for (int s = 0; s < kSlots; ++s) {
      const Half& h = halves[s];
      Lane::PerHalf& l = lane.halves[s];
      const std::vector<device::HmmGpuEngine::MsvPass>& passes = lane.engine->wait_msv_passes(s);
      times.wait_msv += since(tick);
      times.msv_passes += static_cast<std::int64_t>(passes.size());
      times.bias_on_host += bias_left_to_host(passes, settings_, device_bias_);
      l.take_passes(std::span(passes));
      std::vector<char> wants_viterbi(passes.size(), 0);
      run_host_loop_((passes.size() + kPassChunk - 1) / kPassChunk, 1, [&](std::size_t task) {
        const std::size_t j = task * kPassChunk;
        decide_passes(profile, settings_, h.targets,
                      std::span(passes).subspan(j, std::min(kPassChunk, passes.size() - j)),
                      device_bias_, l.scores.data() + j, wants_viterbi.data() + j);
      });
      for (std::size_t j = 0; j < passes.size(); ++j) {  // in target order
        if (wants_viterbi[j]) l.viterbi.push_back(passes[j].target);
      }
      // A handful of Viterbi targets (one model against a small batch: a proteome) would
      // hold the GPU for their longest one while most of it idles; the CPU's post stage
      // takes them, and the half's Forward stage with them.
      l.to_cpu = !l.viterbi.empty() && std::ssize(l.viterbi) < lane.engine->viterbi_wave_targets();
      if (l.to_cpu) {
        l.cpu_viterbi = l.viterbi;
        times.viterbi_to_cpu += static_cast<std::int64_t>(l.viterbi.size());
      } else {
        lane.engine->submit_viterbi(s, l.viterbi.data(), l.viterbi.size());
        times.viterbi_targets += static_cast<std::int64_t>(l.viterbi.size());
      }
      times.phase_one += since(tick);
    }
  }
  // Phase two: the cascade again for the targets that ran the Viterbi filter, then the
  // canonical Forward on the GPU for the targets that reached it (the Viterbi survivors,
  // and those whose MSV P-value skipped the Viterbi filter), except long ones: a GPU
  // thread walks each row's striped vectors in sequence, so a target of L rows holds its
  // launch for about L x Q steps (Q = ceil(M / 4)); past tuning_.forward_max_steps the host
  // computes it, where a core takes some milliseconds for it.
  for (Lane& lane : lanes) {
    const SearchProfile& profile = *models_[lane.model].profile;
    struct HostTarget {
      int half, i;
      std::size_t entry;  // in the half's past_msv
    };
    std::vector<HostTarget> on_host;
    for (int s = 0; s < kSlots; ++s) {
      const Half& h = halves[s];
      Lane::PerHalf& l = lane.halves[s];
      if (l.to_cpu) continue;
      const std::vector<FilterScore>& vit = lane.engine->wait_viterbi(s);
      times.wait_viterbi += since(tick);
      run_host_loop_(l.viterbi.size(), 64, [&](std::size_t j) {
        decide_after_viterbi(profile, settings_, vit[j], l.scores_of(l.viterbi[j]));
      });
      const std::int64_t vectors =
          (profile.M + kCanonicalForwardLanes - 1) / kCanonicalForwardLanes;
      for (std::size_t e = 0; e < l.past_msv.size(); ++e) {
        if (!needs_forward(l.scores[e])) continue;
        const int i = l.past_msv[e];
        if (h.targets[static_cast<std::size_t>(i)].length * vectors > tuning_.forward_max_steps) {
          on_host.push_back({s, i, e});
        } else {
          l.forward.push_back(i);
        }
      }
      lane.engine->submit_canonical_forward(s, l.forward.data(), l.forward.size());
      times.forward_targets += static_cast<std::int64_t>(l.forward.size());
      times.phase_two += since(tick);
    }
    // The long targets' Forward on the host while the GPU computes the others': packs of
    // similar length (the CPU kernels compute a pack's targets side by side), shared with
    // the free CPU workers.
    if (on_host.empty()) continue;
    std::stable_sort(on_host.begin(), on_host.end(), [&](const HostTarget& a, const HostTarget& b) {
      return halves[a.half].targets[a.i].length > halves[b.half].targets[b.i].length;
    });
    constexpr std::size_t kPack = 4;
    const std::size_t packs = (on_host.size() + kPack - 1) / kPack;
    run_host_loop_(packs, 1, [&](std::size_t p) {
      std::vector<ForwardTarget> targets;
      std::vector<TargetScores*> outs;
      for (std::size_t j = p * kPack; j < std::min(on_host.size(), p * kPack + kPack); ++j) {
        const HostTarget& t = on_host[j];
        const device::GpuTarget& target = halves[t.half].targets[t.i];
        targets.push_back({target.residues, target.length});
        outs.push_back(&lane.halves[t.half].scores[t.entry]);
      }
      forward_on_host_(lane.model, targets, outs);
    });
    times.forward_on_host += static_cast<std::int64_t>(on_host.size());
    times.forward_on_host_s += since(tick);
  }
  // Phase three: the Forward stage with the canonical scores (the engine computed a target
  // rescaled too often for the GPU's record on this thread, the same score).
  for (Lane& lane : lanes) {
    const SearchProfile& profile = *models_[lane.model].profile;
    for (int s = 0; s < kSlots; ++s) {
      Lane::PerHalf& l = lane.halves[s];
      const std::vector<float> none;
      const std::vector<float>& fwd = l.to_cpu ? none : lane.engine->wait_canonical_forward(s);
      times.wait_forward += since(tick);
      const device::GpuKernelTimes k = lane.engine->kernel_times(s);
      count_msv_stage(k, lane.model);
      if (!l.to_cpu) {
        times.viterbi_kernel += k.viterbi_ms / 1e3;
        times.forward_kernel += k.canonical_ms / 1e3;
        times.forward_cpu_targets += k.canonical_cpu_targets;
      }
      for (std::size_t j = 0; j < l.forward.size(); ++j)
        decide_after_forward(profile, settings_, fwd[j], l.scores_of(l.forward[j]));
      times.phase_three += since(tick);
    }
  }
}

std::vector<int> resolve_gpu_devices(const std::vector<int>& requested) {
  // The GPUs the driver shows, without starting CUDA on this thread: their set-up runs on the
  // warm-up thread (started here) while the CPU workers start; only without the driver's
  // listing does this thread ask CUDA.
  const int shown = device::gpus_shown_by_driver();
  const device::GpuInventory inventory = shown < 0 ? device::list_gpus() : device::GpuInventory{};
  std::vector<int> usable;
  if (shown < 0) {
    for (const auto& g : inventory.gpus) usable.push_back(g.index);
  } else {
    for (int d = 0; d < shown; ++d) usable.push_back(d);
  }
  for (int d : requested) {
    if (std::find(usable.begin(), usable.end(), d) == usable.end()) {
      throw UsageError("--gpus: GPU " + std::to_string(d) + " is not available (" +
                       std::to_string(usable.size()) + " usable" +
                       (inventory.problem.empty() ? "" : ": " + inventory.problem) + ")");
    }
  }
  const std::vector<int>& devices = requested.empty() ? usable : requested;
  if (!devices.empty()) device::start_gpu_warmup();
  return devices;
}

}  // namespace duet::app
