// The real GPU backend of the hmmsearch workload (CUDA builds only): a GpuBackend that
// runs MSV, the Viterbi filter and the canonical Forward on one GPU
// (src/device/hmmsearch/hmm_gpu.hpp), the bias filter and the cascade's decisions on the host. The
// GPU's Forward scores are the canonical ones bit for bit (the engine finishes them on the host,
// and computes the rare target rescaled too often for the GPU's record with forward_canonical);
// only targets too long for one GPU thread's row walk are computed on the host, in packs of similar
// length, in a host loop that runs while the GPU computes the others. A batch runs
// against every model of the pass in turn, and is split in two halves on the engine's two
// slots (streams), so that one half's kernels overlap the other half's host work and
// copies; the host work per target is shared with idle CPU workers through the
// scheduler's host loops.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "app/hmmsearch/search.hpp"
#include "core/hmmsearch/cascade.hpp"
#include "device/hmmsearch/hmm_gpu.hpp"
#include "io/kernel_table.hpp"
#include "scheduler/scheduler.hpp"

namespace duet::app {

// An engine of a GPU feeder and the model it holds, kept across passes (a feeder's
// engines outlive its backends: a pass's backends borrow them).
struct EngineSlot {
  std::unique_ptr<device::HmmGpuEngine> engine;
  std::size_t model = 0;        // GpuPassModel::id of the model it holds
  std::uint64_t model_set = 0;  // the backend whose models its model set holds (0: none)
};

// One model of the pass a backend serves: its profile and the kernels its engine runs.
struct GpuPassModel {
  std::size_t id = 0;  // the model's place in the run (its query number)
  const SearchProfile* profile = nullptr;
  device::GpuKernelChoice kernels;
};

class HmmsearchGpuBackend final : public scheduler::GpuBackend {
 public:
  // Receives a block's scores, one entry per model of the pass, once the whole batch has
  // succeeded for every model; each entry's `remains` marks the targets whose Viterbi
  // filter or Forward stage is left to the post-queue. Returns what the post stage needs
  // of the block, in parts (none: nothing remains).
  using Deliver =
      std::function<std::vector<PostStatePtr>(const Block&, std::vector<DeviceBlockScores>&&)>;

  // The Forward stage of some targets for model `model` of the pass on the calling thread,
  // with the CPU's kernels (run_forward_stages): called from host loops, on the feeder's
  // or a CPU worker's thread.
  using ForwardOnHost = std::function<void(std::size_t model, std::span<const ForwardTarget>,
                                           std::span<TargetScores* const>)>;

  // Nothing here starts CUDA; start() does, on the feeder's thread. `feeder`: which of the
  // GPU's feeder threads this is (0, 1...), for its name; each feeder has its own engines,
  // which run every batch against each model of `models` in turn, several models at once
  // on a small batch (an engine's buffers and streams are set up once; a model change
  // uploads only the model).
  // `resident`, when given (a store of `device` that outlives the backend, shared by the
  // GPU's feeders), keeps database blocks on the GPU across models: a block kept there is
  // not uploaded again.
  // `engines`: the feeder's engines (made here as needed, on the feeder's thread), which
  // outlive the backend and are used by one backend at a time.
  HmmsearchGpuBackend(int device, int feeder, std::vector<GpuPassModel> models,
                      const CascadeSettings& settings, Deliver deliver,
                      ForwardOnHost forward_on_host, std::vector<EngineSlot>& engines,
                      const io::GpuTuning& tuning, device::GpuResidentStore* resident = nullptr);
  // With DUET_TIMES set (timings_wanted), prints where the feeder's time went (for
  // bench/RESULTS.md).
  ~HmmsearchGpuBackend() override;
  std::string name() const override;
  Readiness readiness(std::string& problem) override;
  std::string stages() const override { return "msv+bias+viterbi+forward"; }
  // The kernels of model `model` of the pass (resolved for its length).
  device::GpuKernelChoice kernel_choice(std::size_t model) const { return models_[model].kernels; }
  // What an engine got of a run-time specialisation for model `model`; nullptr before an
  // engine ran it.
  const device::GpuJitInfo* jit_info(std::size_t model) const {
    return models_[model].jit_known ? &models_[model].jit : nullptr;
  }
  // Residues of model `model`'s batches so far: read from the resident store, and uploaded
  // (of which kept in the store for later models).
  struct Residency {
    std::int64_t resident = 0, uploaded = 0, kept = 0;
  };
  Residency residency(std::size_t model) const { return models_[model].residency; }
  // Creates the engine (CUDA context, first model's upload) on the feeder's thread, so
  // that the CPU workers start meanwhile; run() creates it if start() was not called.
  void start(const scheduler::HostLoopRunner& run_host_loop) override;
  std::vector<scheduler::GpuBlockOutcome> run(std::span<const BlockPtr> blocks,
                                              int worker) override;

 private:
  struct Model {
    std::size_t id = 0;
    const SearchProfile* profile = nullptr;
    device::GpuKernelChoice kernels;
    float msv_pass_bits = 0;  // its MSV stage's pass test on the device (msv_pass_bits)
    device::GpuJitInfo jit;
    bool jit_known = false;
    Residency residency;
  };
  struct Half;
  struct Lane;
  // A batch (split in halves) through the cascades of the lanes' models, each on an engine
  // of its own, their kernels running at once: every target's scores in the lanes.
  void run_lanes(std::vector<Lane>& lanes, Half* halves);
  // A small batch through every model of the pass at once, on the first engine's model set:
  // the MSV filter of all models in one go, the bias filter and the decisions on the host,
  // then the Viterbi filter of every model's survivors in one launch; the Forward stage is
  // left to the CPU's post stage. A model with enough Viterbi targets to fill the GPU
  // instead runs through run_lanes (its Forward on the GPU). `done` gets one lane per model
  // of the pass.
  void run_set(Half* halves, std::vector<Lane>& done);
  // A slot's MSV-stage figures (kernel times, submit costs, residues read) into the
  // feeder's times and model `model`'s residency.
  void count_msv_stage(const device::GpuKernelTimes& k, std::size_t model);
  // Models run at once on a batch: at most tuning_.lane_residues / (its residues) of them
  // and tuning_.max_lanes (each engine's buffers hold the batch): a proteome-sized batch
  // leaves one model's kernels far from filling the GPU. Past tuning_.forward_max_steps
  // rows x striped vectors, a target's Forward runs on the host.
  io::GpuTuning tuning_;

  std::vector<Model> models_;
  CascadeSettings settings_;
  Deliver deliver_;
  ForwardOnHost forward_on_host_;
  int device_;
  int feeder_;
  device::GpuResidentStore* resident_;
  // The bias filter's scores from the device (MsvPass::bias_composition);
  // DUET_DEBUG_HOST_BIAS=1: every one on the host, for comparisons.
  bool device_bias_;
  std::string device_name_;
  scheduler::HostLoopRunner run_host_loop_;
  std::vector<EngineSlot>* engines_;
  std::uint64_t id_;  // this backend's model set on its engine (EngineSlot::model_set)
  // Lane `lane`'s engine, holding model `model` (made or given the model now).
  device::HmmGpuEngine& engine(std::size_t lane, std::size_t model);
  struct FeederTimes {
    std::int64_t batches = 0, targets = 0, viterbi_targets = 0, viterbi_to_cpu = 0,
                 forward_targets = 0, forward_cpu_targets = 0, forward_on_host = 0,
                 exact_targets = 0, model_changes = 0, set_batches = 0, set_to_lanes = 0,
                 msv_passes = 0;    // (model, target) pairs that passed MSV
    std::int64_t bias_on_host = 0;  // of those, the bias filters computed on the host
    double setup = 0, model_change = 0, submit = 0, wait_msv = 0, phase_one = 0, wait_viterbi = 0,
           phase_two = 0, wait_forward = 0, phase_three = 0, deliver = 0, submit_copy = 0,
           submit_rest = 0, forward_on_host_s = 0, set_upload = 0;
    double msv_kernel = 0, exact_kernel = 0, viterbi_kernel = 0, forward_kernel = 0;
    std::int64_t resident = 0, uploaded = 0, kept = 0;  // residues
  } times_;
};

// The GPUs a search uses: `requested` (from --gpus) or, when empty, every GPU the driver
// shows (device::gpus_shown_by_driver; the CUDA runtime's list without the driver's). Starts
// their warm-up (device::start_gpu_warmup). Throws UsageError for an index that does not
// exist.
std::vector<int> resolve_gpu_devices(const std::vector<int>& requested);

}  // namespace duet::app
