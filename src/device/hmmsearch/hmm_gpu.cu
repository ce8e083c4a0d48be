// HmmGpuEngine (hmm_gpu.hpp): the MSV and Viterbi filter kernels for Hopper, the RAII
// wrappers of CUDA objects they use, and the two-slot batch pipeline (the Forward kernels
// are in hmm_forward_gpu.cu and hmm_canonical_gpu.cu). The contract and
// the designs are described in hmm_gpu.hpp; the kernels' arithmetic is commented here.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "core/hmmsearch/length_terms.hpp"
#include "device/cuda_raii.cuh"
#include "device/hmmsearch/by_length.hpp"
#include "device/hmmsearch/hmm_canonical_gpu.cuh"
#include "device/hmmsearch/hmm_forward_gpu.cuh"
#include "device/hmmsearch/hmm_gpu.hpp"
#include "device/hmmsearch/jit_sources.hpp"
#include "device/hmmsearch/msv_exact_kernel.cuh"
#include "device/hmmsearch/target_order.hpp"
#include "device/nvrtc_jit.hpp"
#include "device/resident_store.cuh"

namespace duet::device {

namespace {

// ---------------------------------------------------------------- CUDA error checks, RAII
// (cuda_raii.cuh)

using detail::check;
using detail::check_launch;
using detail::DeviceBuffer;
using detail::PinnedBuffer;

using detail::Event;
using detail::Stream;

// ---------------------------------------------------------------- kernels

// Included inside this anonymous namespace: the kernels belong to this translation unit.
#include "device/hmmsearch/hmm_bias_kernel.cuh"
#include "device/hmmsearch/hmm_kernel_constants.cuh"
#include "device/hmmsearch/hmm_msv_kernels.cuh"
#include "device/hmmsearch/hmm_viterbi_kernels.cuh"

// ---------------------------------------------------------------- context setup

// cudaDeviceScheduleBlockingSync must be set before the device's primary context exists;
// done once per device per process.
void select_device(int device) {
  static std::mutex mutex;
  static std::vector<int> configured;
  std::lock_guard lock(mutex);
  check(cudaSetDevice(device), "cudaSetDevice");
  if (std::find(configured.begin(), configured.end(), device) != configured.end()) return;
  const cudaError_t status = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
  if (status == cudaErrorSetOnActiveProcess) {
    cudaGetLastError();  // context already active (created elsewhere): keep its flags
  } else {
    check(status, "cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync)");
  }
  configured.push_back(device);
}

// The MSV layout a model runs (its kernel choice resolved for its length): 16 nodes per
// thread instead of a chosen (not asked for) 32 where 32 would not fit in shared memory.
MsvDeviceLayout msv_layout_for(const MsvScores& msv, const GpuKernelChoice& choice,
                               std::size_t shared_optin) {
  const GpuKernelChoice resolved = resolve_kernel_choice(choice, msv.M);
  MsvDeviceLayout layout =
      build_msv_device_layout(msv, resolved.msv_group_threads, resolved.msv_nodes_per_thread);
  if (choice.msv_nodes_per_thread == 0 && resolved.msv_nodes_per_thread == 32 &&
      layout.bytes() > shared_optin) {
    // 16 nodes per thread pad less and may fit.
    layout = build_msv_device_layout(msv, resolved.msv_group_threads, 16);
  }
  return layout;
}

// A model's array copied to its device buffer (grown as needed), synchronously.
template <typename T, typename Host>
void upload(DeviceBuffer<T>& buffer, const Host& host) {
  buffer.reserve(host.size());
  check(
      cudaMemcpy(buffer.get(), host.data(), host.size() * sizeof(host[0]), cudaMemcpyHostToDevice),
      "cudaMemcpy model");
}

// A length table (ByLength) of values that depend on the target length and the score
// scale alone, shared by every model of that scale: found in `tables`, or made there.
template <typename T, typename Compute>
ByLength<T>* table_for_scale(std::vector<std::pair<float, std::unique_ptr<ByLength<T>>>>& tables,
                             float scale, Compute compute) {
  for (auto& [s, table] : tables) {
    if (s == scale) return table.get();
  }
  tables.emplace_back(scale, std::make_unique<ByLength<T>>(compute));
  return tables.back().second.get();
}

// A target's MSV score from the kernels' result code (the fast kernel's best cell, or the
// exact kernel's kMsvExact + xJ or kMsvOverflow) and its N->B cost `tjb`, finished as
// msv_filter_reference finishes it.
FilterScore finish_msv(const MsvScores& msv, int code, int tjb) {
  bool overflow = false;
  int xJ = 0;
  if (!msv_code_xj(code, msv.tec, msv.bias, overflow, xJ))
    throw std::logic_error("MSV kernel left a target without a score");
  if (overflow) return {std::numeric_limits<float>::infinity(), true};
  return {msv_nats_of_xj(xJ, tjb, msv.base, msv.scale), false};  // C -> T
}

// A gated launch's null scores: one per target.
void check_null_scores(const std::vector<float>* null_nats, std::size_t targets) {
  if (null_nats != nullptr && null_nats->size() != targets) {
    throw std::invalid_argument("gated MSV launch: " + std::to_string(null_nats->size()) +
                                " null scores for " + std::to_string(targets) + " targets");
  }
}

// A model's composition HMM as bias_composition_kernel reads it.
BiasDeviceModel bias_device_model(const BiasFilterModel& bias) {
  if (bias.odds.size() > static_cast<std::size_t>(kBiasMaxCodes)) {
    throw std::invalid_argument("bias filter: " + std::to_string(bias.odds.size()) +
                                " residue codes, the GPU's table holds " +
                                std::to_string(kBiasMaxCodes));
  }
  BiasDeviceModel d{};
  for (std::size_t x = 0; x < bias.odds.size(); ++x) {
    d.odds[x][0] = bias.odds[x][0];
    d.odds[x][1] = bias.odds[x][1];
  }
  d.pi0 = bias.pi0;
  d.pi1 = bias.pi1;
  d.t10 = bias.t10;
  d.t11 = bias.t11;
  return d;
}

// A target's Viterbi filter score from the kernel's result (xC, or kViterbiOverflow) and
// its N/C/J move `ncj`, finished as viterbi_filter_reference finishes it.
FilterScore finish_viterbi(const ViterbiScores& vit, int code, int ncj) {
  if (code == kViterbiOverflow) return {std::numeric_limits<float>::infinity(), true};
  if (code <= kNeg16) return {-std::numeric_limits<float>::infinity(), false};
  float score = static_cast<float>(code) + static_cast<float>(ncj) - static_cast<float>(vit.base);
  score /= vit.scale;
  score -= 3.0f;
  return {score, false};
}

}  // namespace

// ---------------------------------------------------------------- engine

struct HmmGpuEngine::Impl {
  GpuResidentStore* resident = nullptr;
  int device = 0;
  std::string name;
  GpuStrategy strategy = GpuStrategy::warp_groups;
  int multiprocessors = 0;
  std::size_t shared_optin = 0;  // shared memory a block may use at most
  MsvScores msv;                 // copies of the scores the host needs to finish the scores
  ViterbiScores vit;
  ForwardScores fwd;  // the Forward parser's model, made on first use
  MsvDeviceLayout msv_layout;
  ViterbiDeviceLayout vit_layout;
  bool msv_fast_fits = true;   // the profile fits in shared memory
  bool msv_all_exact = false;  // every target through the exact kernel (see above)
  DeviceBuffer<std::int16_t> msv_words;
  DeviceBuffer<std::uint8_t> msv_costs;
  DeviceBuffer<std::int16_t> vit_match;
  DeviceBuffer<std::int16_t> vit_nodes;
  DeviceBuffer<BiasDeviceModel> bias_model;  // one: the model's composition HMM
  int exact_blocks = 0;                      // msv_exact_rows's grid (its rows are per warp)
  int msv_exact_chunks = 0;                  // exact_chunks_bucket of the model (0: msv_exact_rows)
  int msv_exact_grid = 0;                    // the static exact kernel's grid
  int viterbi_warps_per_block = 0;           // > 0: Viterbi rows in shared memory
  int viterbi_resident_blocks = 0;           // blocks of viterbi_warp_kernel resident on the device
  int viterbi_strip = 0;                     // warp_strip: nodes per lane (0: viterbi_warp_kernel)
  DeviceBuffer<std::int32_t> vit_strip_emit;     // when viterbi_strip > 0: viterbi_strip_emissions
  DeviceBuffer<std::int16_t> vit_strip_records;  // and viterbi_strip_records
  int viterbi_strip_blocks = 0;  // blocks of that strip kernel resident on the device
  // N or J -> B -> Mk (MSV, wrapped to 8 bits as msv_filter_reference does) and N/C/J move
  // (Viterbi) by target length.
  // (set_model sets them.)
  ByLength<std::uint8_t> bjbm{[](int) { return std::uint8_t{0}; }};
  ByLength<std::int16_t> ncj{[](int) { return std::int16_t{0}; }};
  std::unique_ptr<detail::ForwardGpu> forward;  // the Forward parser (hmm_forward_gpu.cu)
  std::unique_ptr<detail::CanonicalForwardGpu> canonical;  // hmm_canonical_gpu.cu
  GpuJitInfo jit;
  jit::JitFunction msv_exact_jit;  // the specialised exact MSV kernel, when jit.used
  int msv_exact_jit_blocks = 0;    // its grid: as many blocks as are resident at once

  // The set of models of set_models.
  struct SetModel {
    MsvScores msv;
    ViterbiScores vit;
    ByLength<std::int16_t>* ncj = nullptr;  // of ncj_by_scale
    int G = 0, N = 0;
    bool all_exact = false;  // too long for shared memory, or asked: the exact kernel only
    std::size_t shared = 0;  // bytes of its layout
    bool one_tile = true;
    ByLength<std::uint8_t>* tjb = nullptr;  // of tjb_by_scale
  };
  std::vector<std::unique_ptr<SetModel>> set;
  // MsvScores::tjb by length depends on the scale alone (the same for every model): one
  // table per scale, kept across sets, not one per model and set.
  std::vector<std::pair<float, std::unique_ptr<ByLength<std::uint8_t>>>> tjb_by_scale;
  // ViterbiScores::ncj_move likewise.
  std::vector<std::pair<float, std::unique_ptr<ByLength<std::int16_t>>>> ncj_by_scale;
  DeviceBuffer<std::int16_t> set_vit_match, set_vit_nodes;
  DeviceBuffer<ViterbiSetModel> set_vit_models;
  DeviceBuffer<std::int32_t> set_strip_emit;     // the models' viterbi_strip_emissions
  DeviceBuffer<std::int16_t> set_strip_records;  // and viterbi_strip_records
  std::vector<int> set_strip_of;  // per model of the set: its strip width (0: the warp kernel)
  // Blocks of viterbi_set_strip_kernel resident on the device, per kViterbiStripWidths.
  int set_strip_blocks[std::size(kViterbiStripWidths)] = {};
  int set_viterbi_warps_per_block = 0;  // > 0: rows in shared memory
  int set_viterbi_resident_blocks = 0;
  int set_longest = 0;
  // The set's models grouped by exact_chunks_bucket (set_exact_models: their indices, a
  // group after another): one exact kernel launch per group, of `blocks` blocks per model.
  struct ExactGroup {
    int chunks = 0;
    std::size_t first = 0, count = 0;
    int blocks = 0;
  };
  std::vector<ExactGroup> set_exact_groups;
  DeviceBuffer<int> set_exact_models;
  int set_longest_rows = 0;  // the longest model of the group of msv_exact_rows (chunks 0)
  DeviceBuffer<std::int16_t> set_words;
  DeviceBuffer<std::uint8_t> set_costs;
  DeviceBuffer<MsvSetModel> set_models;
  DeviceBuffer<MsvGate> set_gates;         // per model of the set: its MSV stage's pass test
  DeviceBuffer<BiasDeviceModel> set_bias;  // per model of the set: its composition HMM

  struct Slot {
    Stream stream;
    Event msv_start, msv_fast_done, msv_done, vit_start, vit_done, fwd_start, fwd_done;
    Event canonical_start, canonical_done;
    PinnedBuffer<std::uint8_t> residues, bjbm;
    PinnedBuffer<std::int64_t> offsets;
    PinnedBuffer<int> order, result, vit_list, vit_result, exact_count;
    PinnedBuffer<std::int16_t> ncj;
    PinnedBuffer<int> vit_order;
    DeviceBuffer<int> d_vit_order, d_vit_counter;
    DeviceBuffer<std::uint8_t> d_residues, d_bjbm;
    DeviceBuffer<std::int64_t> d_offsets;
    DeviceBuffer<int> d_order, d_result, d_exact_list, d_exact_count, d_vit_list, d_vit_result;
    DeviceBuffer<std::int16_t> d_boundary, d_ncj;
    DeviceBuffer<short4> d_vit_rows;
    DeviceBuffer<std::uint8_t> d_exact_rows;  // one per slot: the slots' streams run at once
    // Per target: where the kernels read its residues (the slot's device buffer or the
    // resident store), and where the host reads them (wait_canonical_forward).
    PinnedBuffer<const std::uint8_t*> target_residues;
    DeviceBuffer<const std::uint8_t*> d_target_residues;
    std::vector<const std::uint8_t*> host_residues;
    std::vector<const std::uint8_t*> stored;  // per target: its place in the store, or nullptr
    std::vector<char> served;                 // per target: read from the store as kept
    std::vector<std::int64_t> kept_blocks;    // blocks this slot's last submit put in the store
    bool kept_queued = false;                 // ... and their uploads were all queued
    int n = 0, vit_n = 0;
    std::vector<int> lengths;
    std::vector<std::int64_t> counts;  // order_longest_first's scratch
    std::vector<FilterScore> msv_scores, vit_scores;
    GpuKernelTimes times;
    // submit_msv_models: per model of the set, n values each (counts: one each).
    PinnedBuffer<std::uint8_t> set_bjbm;
    PinnedBuffer<int> set_result, set_exact_count;
    PinnedBuffer<int2> set_entries;
    DeviceBuffer<std::uint8_t> d_set_bjbm, d_set_rows;
    DeviceBuffer<int> d_set_result, d_set_exact_list, d_set_exact_count;
    DeviceBuffer<int2> d_set_entries;
    DeviceBuffer<std::int16_t> d_set_boundary;
    std::vector<FilterScore> set_scores;
    // A gated submit_msv or submit_msv_models (`gated`; `gated_set`: the latter): the
    // targets' null scores and null_p1, the model's gate (submit_msv), and the pairs that
    // passed (model, target, code, composition score's bits) with their count;
    // `passes_copied` of them are queued back with the count, the rest fetched by
    // wait_msv_passes.
    bool gated = false, gated_set = false;
    PinnedBuffer<float> null_nats, p1;
    DeviceBuffer<float> d_null_nats, d_p1;
    PinnedBuffer<MsvGate> gate;
    DeviceBuffer<MsvGate> d_gate;
    PinnedBuffer<int4> passes;
    PinnedBuffer<unsigned long long> pass_count;
    DeviceBuffer<int4> d_passes;
    DeviceBuffer<unsigned long long> d_pass_count;
    std::size_t passes_copied = 0;
    std::vector<MsvPass> msv_passes;
    // submit_viterbi_models: each item's model (its target, N/C/J move, order and result
    // are in the Viterbi filter's buffers above).
    PinnedBuffer<int> set_item_models;
    std::vector<int> run_order;  // submit_viterbi_models: the order in runs of one kernel
    DeviceBuffer<int> d_set_item_models;
    std::chrono::steady_clock::time_point staged_from;  // stage's start, after the wait
  };
  // Created once the device is selected: streams and events belong to the current device.
  std::unique_ptr<Slot> slots[kSlots];

  // The Viterbi filter's list of the slot's first vit_n entries of vit_list, ncj and
  // vit_order, uploaded with the work counter zeroed (submit_viterbi and
  // submit_viterbi_models).
  void queue_viterbi_list(Slot& s);
  // Its results back to vit_result.
  void queue_viterbi_results(Slot& s);
  // A gated MSV launch's end, after both MSV kernels on the slot's stream: the stage's
  // decision on each of `models` x s.n pairs (result codes and bjbm model-major, `gates`
  // and `bias` per model, the targets' `null_nats`), the passing pairs compacted with
  // their bias filter's composition scores, and their count and a first share of them
  // queued back (a few percent pass at HMMER's F1).
  void queue_msv_gate(Slot& s, const int* d_result, const std::uint8_t* d_bjbm,
                      const MsvGate* d_gates, const BiasDeviceModel* d_bias, std::size_t models,
                      const std::vector<float>& null_nats);

  // The first part of submit_msv and submit_msv_models: the slot takes the targets (their
  // lengths, offsets, order longest first and residue addresses), uploads the residues not
  // served from the resident store and queues the uploads of those arrays on its stream.
  void stage(Slot& s, const GpuTarget* targets, std::size_t count, const ParallelFor& parallel,
             const GpuBlockSpan* blocks, std::size_t block_count);

  // The blocks the slot's last submit put in the store are served from now on: the slot's
  // stream has been synchronised, their uploads are complete. Where that submit failed
  // before queuing them all, they are dropped from the store (their memory stays unused).
  void publish_kept(Slot& s) {
    if (s.kept_blocks.empty()) return;
    GpuResidentStore::Impl& r = resident->impl();
    std::lock_guard lock(r.mutex);
    for (std::int64_t index : s.kept_blocks) {
      if (s.kept_queued) {
        r.entries.at(index).ready = true;
      } else {
        r.entries.erase(index);
      }
    }
    s.kept_blocks.clear();
  }
};

HmmGpuEngine::HmmGpuEngine(int device, const SearchProfile& profile, GpuKernelChoice choice,
                           GpuResidentStore* resident)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (resident != nullptr && resident->device() != device) {
    throw std::invalid_argument("HmmGpuEngine: the resident store belongs to GPU " +
                                std::to_string(resident->device()) + ", not GPU " +
                                std::to_string(device));
  }
  m.resident = resident;
  m.device = device;
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0 || device >= count) {
    throw std::runtime_error("GPU " + std::to_string(device) + " does not exist (" +
                             std::to_string(count) + " CUDA devices)");
  }
  select_device(device);
  detail::keep_freed_device_memory(device);  // the slots' buffers regrow in stream order
  for (auto& slot : m.slots) slot = std::make_unique<Impl::Slot>();
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  m.name = prop.name;
  m.multiprocessors = prop.multiProcessorCount;
  m.shared_optin = static_cast<std::size_t>(prop.sharedMemPerBlockOptin);
  set_model(profile, choice);
}

void HmmGpuEngine::set_model(const SearchProfile& profile, GpuKernelChoice choice) {
  Impl& m = *impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  // Both slots idle: their buffers and the profile's are free to be rewritten.
  for (auto& s : m.slots) {
    check(cudaStreamSynchronize(s->stream.get()), "cudaStreamSynchronize");
    m.publish_kept(*s);
  }
  m.strategy = choice.viterbi;
  m.msv_layout = msv_layout_for(profile.msv, choice, m.shared_optin);  // throws for a bad choice
  m.msv = profile.msv;
  m.vit = profile.viterbi;
  m.fwd = profile.forward;
  m.bjbm = ByLength<std::uint8_t>{
      [&m](int L) { return static_cast<std::uint8_t>((m.msv.tjb(L) + m.msv.tbm) & 0xff); }};
  m.ncj = ByLength<std::int16_t>{[&m](int L) { return m.vit.ncj_move(L); }};
  m.vit_layout = build_viterbi_device_layout(profile.viterbi);
  // Shared memory: the whole profile (all residues, all tiles).
  m.msv_fast_fits = m.msv_layout.bytes() <= m.shared_optin;
  m.msv_all_exact = !m.msv_fast_fits || choice.msv_exact_only;
  // A kernel's dynamic shared memory limit is the device's, not the engine's: engines of
  // other models (other feeders) launch the same kernels at the same time. Each launch
  // asks for what its model needs, up to the device's opt-in limit.
  const int optin = static_cast<int>(m.shared_optin);
  if (m.msv_fast_fits) {
    for_each_msv_shape([optin](auto g, auto n) {
      check(cudaFuncSetAttribute(msv_wavefront_kernel<g(), n()>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, optin),
            "cudaFuncSetAttribute");
    });
  }
  upload(m.msv_words, m.msv_layout.words);
  upload(m.msv_costs, m.msv_layout.costs);
  upload(m.vit_match, m.vit_layout.match);
  upload(m.vit_nodes, m.vit_layout.nodes);
  upload(m.bias_model, std::vector<BiasDeviceModel>{bias_device_model(profile.bias)});
  m.exact_blocks = 2 * m.multiprocessors;
  m.msv_exact_chunks = exact_chunks_bucket(profile.M);
  m.msv_exact_grid = m.exact_blocks;
  with_exact_bucket(m.msv_exact_chunks, [&m](auto chunks) {
    if constexpr (chunks() > 0) {
      // The row is in registers, not in a buffer sized by the grid: the grid is every
      // block that fits on the device at once.
      int per_sm = 0;
      check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, msv_exact_kernel<chunks()>,
                                                          kExactBlockThreads, 0),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      m.msv_exact_grid = std::max(m.exact_blocks, per_sm * m.multiprocessors);
    }
  });
  m.jit = GpuJitInfo{};
  m.msv_exact_jit = jit::JitFunction{};
  m.msv_exact_jit_blocks = 0;
  if (choice.jit) {
    m.jit.asked = true;
    if (profile.M > kMsvExactJitMaxLength) {
      m.jit.failure = "models longer than " + std::to_string(kMsvExactJitMaxLength) +
                      " nodes run the static exact MSV kernel";
    } else {
      try {
        const std::string M = std::to_string(profile.M);
        m.msv_exact_jit = jit::get_function(
            {msv_exact_kernel_source(), "msv_exact_kernel.cuh", "duet_msv_exact_jit"},
            {"-DDUET_JIT_M=" + M}, "M" + M);
        // Its row is in registers: the grid is every block that fits on the device at once.
        m.msv_exact_jit_blocks = std::max(
            m.exact_blocks,
            jit::max_active_blocks(m.msv_exact_jit, kExactBlockThreads, 0) * m.multiprocessors);
        m.jit.used = true;
        m.jit.origin = m.msv_exact_jit.origin;
        m.jit.seconds = m.msv_exact_jit.seconds;
      } catch (const std::exception& e) {
        m.jit.failure = e.what();
      }
    }
  }
  if (m.msv_exact_chunks == 0) {
    for (auto& s : m.slots) {
      s->d_exact_rows.reserve(
          static_cast<std::size_t>(m.exact_blocks) * (kExactBlockThreads / 32) * (profile.M + 1),
          s->stream.get());
    }
  }
  // Viterbi rows in shared memory: as many warps per block (up to 8) as fit.
  const std::size_t row_bytes = static_cast<std::size_t>(profile.M + 1) * sizeof(short4);
  m.viterbi_warps_per_block =
      static_cast<int>(std::min<std::size_t>(8, m.shared_optin / row_bytes));
  if (m.viterbi_warps_per_block > 0) {
    check(cudaFuncSetAttribute(viterbi_warp_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               optin),
          "cudaFuncSetAttribute");
  }
  int per_sm = 0;
  const int vit_threads =
      m.viterbi_warps_per_block > 0 ? m.viterbi_warps_per_block * 32 : kExactBlockThreads;
  const std::size_t vit_shared =
      m.viterbi_warps_per_block > 0 ? m.viterbi_warps_per_block * row_bytes : 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, viterbi_warp_kernel, vit_threads,
                                                      vit_shared),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  m.viterbi_resident_blocks = std::max(1, per_sm) * m.multiprocessors;
  m.viterbi_strip = 0;
  m.viterbi_strip_blocks = 0;
  if (m.strategy == GpuStrategy::warp_strip && viterbi_transitions_nonpositive(m.vit_layout)) {
    m.viterbi_strip = viterbi_strip_width(profile.M);
  }
  if (m.viterbi_strip > 0) {
    upload(m.vit_strip_emit, viterbi_strip_emissions(m.vit_layout, m.viterbi_strip));
    upload(m.vit_strip_records, viterbi_strip_records(m.vit_layout, m.viterbi_strip));
    int strip_per_sm = 0;
    with_strip_width(m.viterbi_strip, [&](auto S) {
      check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&strip_per_sm, viterbi_strip_kernel<S()>,
                                                          kExactBlockThreads, 0),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    });
    m.viterbi_strip_blocks = std::max(1, strip_per_sm) * m.multiprocessors;
  }
  // The Forward parser is made on first use (submit_forward); the canonical Forward keeps
  // its slots' buffers and takes the new model.
  m.forward.reset();
  if (m.canonical) {
    m.canonical->set_model(profile.forward);
  } else {
    m.canonical = std::make_unique<detail::CanonicalForwardGpu>(profile.forward, m.multiprocessors,
                                                                m.shared_optin);
  }
}

HmmGpuEngine::~HmmGpuEngine() {
  if (impl_) {
    cudaSetDevice(impl_->device);
    for (auto& s : impl_->slots) {
      if (s && cudaStreamSynchronize(s->stream.get()) == cudaSuccess) impl_->publish_kept(*s);
    }
  }
}

std::string HmmGpuEngine::device_name() const {
  return impl_->name;
}
int HmmGpuEngine::device() const {
  return impl_->device;
}
int HmmGpuEngine::viterbi_wave_targets() const {
  const Impl& m = *impl_;
  if (m.viterbi_strip > 0) return m.viterbi_strip_blocks * (kExactBlockThreads / 32);
  const int warps =
      m.viterbi_warps_per_block > 0 ? m.viterbi_warps_per_block : kExactBlockThreads / 32;
  return m.viterbi_resident_blocks * warps;
}
GpuKernelChoice HmmGpuEngine::kernel_choice() const {
  return {impl_->msv_layout.group_threads, impl_->strategy, impl_->msv_layout.nodes_per_thread,
          impl_->jit.used, impl_->msv_all_exact};
}
const GpuJitInfo& HmmGpuEngine::jit_info() const {
  return impl_->jit;
}

void HmmGpuEngine::Impl::stage(Slot& s, const GpuTarget* targets, std::size_t count,
                               const ParallelFor& parallel, const GpuBlockSpan* blocks,
                               std::size_t block_count) {
  Impl& m = *this;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize");  // buffers free
  m.publish_kept(s);
  using Clock = std::chrono::steady_clock;
  const auto started = s.staged_from = Clock::now();
  const int n = static_cast<int>(count);
  s.n = n;
  s.lengths.resize(n);
  std::size_t residues = 0;
  for (int i = 0; i < n; ++i) {
    s.lengths[i] = targets[i].length;
    residues += static_cast<std::size_t>(targets[i].length);
  }
  s.residues.reserve(residues + 16);
  s.offsets.reserve(n + 1);
  s.order.reserve(n + 1);
  std::int64_t at = 0;
  for (int i = 0; i < n; ++i) {
    s.offsets[i] = at;
    at += targets[i].length;
  }
  s.offsets[n] = at;
  // The resident store: each whole block of the batch is served from it (kept earlier and
  // uploaded completely), or kept in it now (its upload goes to the store's memory), or,
  // when it does not fit, uploaded with the batch as without a store.
  s.stored.assign(n, nullptr);
  s.served.assign(n, 0);
  s.kept_queued = false;
  s.times.resident_residues = s.times.kept_residues = 0;
  if (m.resident != nullptr && block_count > 0) {
    GpuResidentStore::Impl& r = m.resident->impl();
    std::lock_guard lock(r.mutex);
    for (std::size_t b = 0; b < block_count; ++b) {
      const GpuBlockSpan& span = blocks[b];
      const std::size_t first = span.first_target, end = first + span.targets;
      if (end > count) throw std::invalid_argument("submit_msv: a block past the batch's targets");
      const std::int64_t block_residues = s.offsets[end] - s.offsets[first];
      const std::uint8_t* base = nullptr;
      bool served = false;
      const auto found = r.entries.find(span.index);
      if (found != r.entries.end()) {
        const GpuResidentStore::Impl::Entry& e = found->second;
        if (!e.ready || e.first_sequence != span.first_sequence || e.targets != span.targets ||
            e.residues != block_residues) {
          continue;  // another block of that index, or still uploading: the old way
        }
        base = e.data;
        served = true;
        s.times.resident_residues += block_residues;
      } else {
        std::uint8_t* room =
            r.take(static_cast<std::uint64_t>(block_residues) + GpuResidentStore::Impl::kPadding);
        if (room == nullptr) continue;  // does not fit: the old way
        r.entries.emplace(span.index,
                          GpuResidentStore::Impl::Entry{span.first_sequence, span.targets,
                                                        block_residues, room, false});
        s.kept_blocks.push_back(span.index);
        base = room;
        s.times.kept_residues += block_residues;
      }
      for (std::size_t i = first; i < end; ++i) {
        s.stored[i] = base + (s.offsets[i] - s.offsets[first]);
        s.served[i] = served;
      }
    }
  }
  s.times.uploaded_residues = static_cast<std::int64_t>(residues) - s.times.resident_residues;
  const auto copy = [&](std::size_t i) {
    if (targets[i].length > 0 && !s.served[i])
      std::memcpy(s.residues.get() + s.offsets[i], targets[i].residues, targets[i].length);
  };
  if (parallel) {
    parallel(static_cast<std::size_t>(n), 256, copy);
  } else {
    for (int i = 0; i < n; ++i) copy(static_cast<std::size_t>(i));
  }
  s.times.submit_copy_s = std::chrono::duration<double>(Clock::now() - started).count();
  order_longest_first(
      n, s.order.get(), [&](int i) { return s.lengths[i]; }, s.counts);
  s.d_residues.reserve(residues + 16, s.stream.get());
  s.target_residues.reserve(n + 1);
  s.d_target_residues.reserve(n + 1, s.stream.get());
  s.host_residues.resize(n);
  for (int i = 0; i < n; ++i) {
    s.target_residues[i] = s.stored[i] != nullptr ? s.stored[i] : s.d_residues.get() + s.offsets[i];
    s.host_residues[i] = s.served[i] ? targets[i].residues : s.residues.get() + s.offsets[i];
  }
  s.d_offsets.reserve(n + 1, s.stream.get());
  s.d_order.reserve(n + 1, s.stream.get());
  cudaStream_t st = s.stream.get();
  // The residues not served from the store, in runs that are contiguous both in the pinned
  // buffer and where they go (the slot's buffer, or a block's place in the store).
  {
    std::int64_t run_from = 0, run_bytes = 0;
    std::uint8_t* run_to = nullptr;
    const auto flush = [&] {
      if (run_bytes > 0) {
        check(cudaMemcpyAsync(run_to, s.residues.get() + run_from,
                              static_cast<std::size_t>(run_bytes), cudaMemcpyHostToDevice, st),
              "H2D residues");
      }
      run_bytes = 0;
    };
    for (int i = 0; i < n; ++i) {
      if (s.served[i]) {
        flush();
        continue;
      }
      auto* to = const_cast<std::uint8_t*>(s.target_residues[i]);
      if (run_bytes == 0 || to != run_to + run_bytes || s.offsets[i] != run_from + run_bytes) {
        flush();
        run_from = s.offsets[i];
        run_to = to;
      }
      run_bytes += s.lengths[i];
    }
    flush();
    s.kept_queued = true;
  }
  check(cudaMemcpyAsync(s.d_target_residues.get(), s.target_residues.get(),
                        n * sizeof(const std::uint8_t*), cudaMemcpyHostToDevice, st),
        "H2D residue addresses");
  check(cudaMemcpyAsync(s.d_offsets.get(), s.offsets.get(), (n + 1) * sizeof(std::int64_t),
                        cudaMemcpyHostToDevice, st),
        "H2D offsets");
  check(
      cudaMemcpyAsync(s.d_order.get(), s.order.get(), n * sizeof(int), cudaMemcpyHostToDevice, st),
      "H2D order");
}

void HmmGpuEngine::submit_msv(int slot_index, const GpuTarget* targets, std::size_t count,
                              const ParallelFor& parallel, const GpuBlockSpan* blocks,
                              std::size_t block_count, const std::vector<float>* null_nats,
                              float msv_pass_bits) {
  check_null_scores(null_nats, count);
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  m.stage(s, targets, count, parallel, blocks, block_count);
  const int n = s.n;
  std::size_t residues = static_cast<std::size_t>(s.offsets[n]);
  s.bjbm.reserve(n + 1);
  s.result.reserve(n + 1);
  s.exact_count.reserve(1);
  for (int i = 0; i < n; ++i) s.bjbm[i] = m.bjbm(s.lengths[i]);
  s.exact_count[0] = 0;
  if (m.msv_all_exact) {
    // The profile does not fit in shared memory, or the choice said so: every target takes
    // the exact kernel.
    std::copy(s.order.get(), s.order.get() + n, s.result.get());  // reused below as the list
    s.exact_count[0] = n;
  }
  s.d_bjbm.reserve(n + 1, s.stream.get());
  s.d_result.reserve(n + 1, s.stream.get());
  s.d_exact_list.reserve(n + 1, s.stream.get());
  s.d_exact_count.reserve(1, s.stream.get());
  s.d_boundary.reserve(2 * residues + 16, s.stream.get());
  cudaStream_t st = s.stream.get();
  check(cudaMemcpyAsync(s.d_bjbm.get(), s.bjbm.get(), n, cudaMemcpyHostToDevice, st), "H2D bjbm");
  check(cudaMemcpyAsync(s.d_exact_count.get(), s.exact_count.get(), sizeof(int),
                        cudaMemcpyHostToDevice, st),
        "H2D count");
  if (m.msv_all_exact) {
    check(cudaMemcpyAsync(s.d_exact_list.get(), s.result.get(), n * sizeof(int),
                          cudaMemcpyHostToDevice, st),
          "H2D list");
  }
  s.msv_start.record(st);  // kernel time only, after the uploads
  if (n > 0 && !m.msv_all_exact) {
    MsvFastArgs a{};
    a.profile = reinterpret_cast<const uint4*>(m.msv_words.get());
    a.profile_vec4 = static_cast<int>(m.msv_layout.bytes() / sizeof(uint4));
    a.tiles = m.msv_layout.tiles;
    a.pad_residue = m.msv_layout.Kp;
    a.target_residues = s.d_target_residues.get();
    a.offsets = s.d_offsets.get();
    a.order = s.d_order.get();
    a.n = n;
    a.bjbm = s.d_bjbm.get();
    a.base = m.msv.base;
    a.bias = m.msv.bias;
    a.tec = m.msv.tec;
    a.boundary = s.d_boundary.get();
    a.result = s.d_result.get();
    a.exact_list = s.d_exact_list.get();
    a.exact_count = s.d_exact_count.get();
    const int G = m.msv_layout.group_threads;
    const int groups_per_block = kMsvBlockThreads / G;
    const int blocks = (n + groups_per_block - 1) / groups_per_block;
    const std::size_t shared = m.msv_layout.bytes();
    with_msv_shape(G, m.msv_layout.nodes_per_thread, [&](auto g, auto n) {
      msv_wavefront_kernel<g(), n()><<<blocks, kMsvBlockThreads, shared, st>>>(a);
    });
    check_launch("msv_wavefront_kernel");
  }
  s.msv_fast_done.record(st);
  if (n > 0) {
    MsvExactArgs e{};
    e.cost = m.msv_costs.get();
    e.M = m.msv.M;
    e.target_residues = s.d_target_residues.get();
    e.offsets = s.d_offsets.get();
    e.bjbm = s.d_bjbm.get();
    e.base = m.msv.base;
    e.bias = m.msv.bias;
    e.tec = m.msv.tec;
    e.list = s.d_exact_list.get();
    e.count = s.d_exact_count.get();
    e.rows = s.d_exact_rows.get();
    e.result = s.d_result.get();
    if (m.jit.used) {
      jit::launch(m.msv_exact_jit, static_cast<unsigned>(m.msv_exact_jit_blocks),
                  kExactBlockThreads, 0, st, &e);
    } else {
      with_exact_bucket(m.msv_exact_chunks, [&](auto chunks) {
        msv_exact_kernel<chunks()><<<m.msv_exact_grid, kExactBlockThreads, 0, st>>>(e);
      });
      check_launch("msv_exact_kernel");
    }
  }
  s.msv_done.record(st);
  s.gated = null_nats != nullptr;
  s.gated_set = false;
  if (s.gated) {
    s.gate.reserve(1);
    s.d_gate.reserve(1, s.stream.get());
    s.gate[0] = msv_gate_of(m.msv, msv_pass_bits);
    check(
        cudaMemcpyAsync(s.d_gate.get(), s.gate.get(), sizeof(MsvGate), cudaMemcpyHostToDevice, st),
        "H2D gate");
    m.queue_msv_gate(s, s.d_result.get(), s.d_bjbm.get(), s.d_gate.get(), m.bias_model.get(), 1,
                     *null_nats);
  } else {
    check(cudaMemcpyAsync(s.result.get(), s.d_result.get(), n * sizeof(int), cudaMemcpyDeviceToHost,
                          st),
          "D2H result");
  }
  check(cudaMemcpyAsync(s.exact_count.get(), s.d_exact_count.get(), sizeof(int),
                        cudaMemcpyDeviceToHost, st),
        "D2H count");
  s.times.submit_rest_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.staged_from).count() -
      s.times.submit_copy_s;
}

const std::vector<FilterScore>& HmmGpuEngine::wait_msv(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize msv");
  m.publish_kept(s);
  s.times.msv_ms = s.msv_fast_done.ms_since(s.msv_start);
  s.times.msv_exact_ms = s.msv_done.ms_since(s.msv_fast_done);
  s.times.msv_exact_targets = s.exact_count[0];
  if (s.gated) throw std::logic_error("wait_msv after a gated submit_msv");
  s.msv_scores.resize(s.n);
  for (int i = 0; i < s.n; ++i) {
    s.msv_scores[i] = finish_msv(m.msv, s.result[i], m.msv.tjb(s.lengths[i]));
  }
  return s.msv_scores;
}

// ---------------------------------------------------------------- MSV of a set of models

namespace {
// Boundary columns of one launch's models with more than one tile take at most this much
// device memory per slot; a launch with more such models is split.
constexpr std::size_t kSetBoundaryBytes = std::size_t{256} << 20;
constexpr int kMaxLaunchEntries = 65535;  // gridDim.y
}  // namespace

void HmmGpuEngine::set_models(const SetModel* models, std::size_t count) {
  Impl& m = *impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  for (auto& s : m.slots) {
    check(cudaStreamSynchronize(s->stream.get()), "cudaStreamSynchronize");
    m.publish_kept(*s);
  }
  m.set.clear();
  m.set_strip_of.clear();
  m.set_longest = 0;
  std::vector<std::int16_t> words;
  std::vector<std::uint8_t> costs;
  std::vector<MsvSetModel> descriptors;
  std::vector<MsvGate> gates;
  std::vector<BiasDeviceModel> bias;
  std::vector<std::int16_t> vit_match, vit_nodes, strip_records;
  std::vector<std::int32_t> strip_emit;
  std::vector<ViterbiSetModel> vit_descriptors;
  for (std::size_t i = 0; i < count; ++i) {
    const SearchProfile& profile = *models[i].profile;
    const MsvDeviceLayout layout = msv_layout_for(profile.msv, models[i].choice, m.shared_optin);
    auto model = std::make_unique<Impl::SetModel>();
    model->msv = profile.msv;
    model->G = layout.group_threads;
    model->N = layout.nodes_per_thread;
    model->shared = layout.bytes();
    model->all_exact = layout.bytes() > m.shared_optin || models[i].choice.msv_exact_only;
    model->one_tile = layout.tiles == 1;
    {
      MsvScores scale_only;
      scale_only.scale = profile.msv.scale;
      model->tjb = table_for_scale(m.tjb_by_scale, scale_only.scale,
                                   [scale_only](int L) { return scale_only.tjb(L); });
    }
    model->vit = profile.viterbi;
    {
      ViterbiScores scale_only;
      scale_only.scale = profile.viterbi.scale;
      model->ncj = table_for_scale(m.ncj_by_scale, scale_only.scale,
                                   [scale_only](int L) { return scale_only.ncj_move(L); });
    }
    const ViterbiDeviceLayout vit = build_viterbi_device_layout(profile.viterbi);
    ViterbiSetModel v;
    v.match_at = static_cast<std::int64_t>(vit_match.size());
    v.nodes_at = static_cast<std::int64_t>(vit_nodes.size() / kViterbiNodeFields);
    v.M = vit.M;
    v.base = vit.base;
    v.e_loop = vit.e_loop;
    v.e_move = vit.e_move;
    v.dd_bound = vit.dd_bound;
    vit_match.insert(vit_match.end(), vit.match.begin(), vit.match.end());
    vit_nodes.insert(vit_nodes.end(), vit.nodes.begin(), vit.nodes.end());
    const int strip = viterbi_transitions_nonpositive(vit) ? viterbi_strip_width(vit.M) : 0;
    if (strip > 0) {
      const std::vector<std::int32_t> e = viterbi_strip_emissions(vit, strip);
      const std::vector<std::int16_t> r = viterbi_strip_records(vit, strip);
      v.strip_emit_at = static_cast<std::int64_t>(strip_emit.size() / 4);
      v.strip_records_at = static_cast<std::int64_t>(strip_records.size() / kViterbiNodeFields);
      strip_emit.insert(strip_emit.end(), e.begin(), e.end());
      strip_records.insert(strip_records.end(), r.begin(), r.end());
    }
    vit_descriptors.push_back(v);
    m.set_strip_of.push_back(strip);
    MsvSetModel d;
    // 16-byte aligned starts: the fast kernel reads the words as uint4.
    words.resize((words.size() + 7) / 8 * 8);
    d.words_at = static_cast<std::int64_t>(words.size() / 8);
    d.costs_at = static_cast<std::int64_t>(costs.size());
    d.vec4 = static_cast<int>(layout.bytes() / sizeof(uint4));
    d.tiles = layout.tiles;
    d.Kp = layout.Kp;
    d.M = profile.M;
    d.base = profile.msv.base;
    d.bias = profile.msv.bias;
    d.tec = profile.msv.tec;
    words.insert(words.end(), layout.words.begin(), layout.words.end());
    costs.insert(costs.end(), layout.costs.begin(), layout.costs.end());
    descriptors.push_back(d);
    gates.push_back(msv_gate_of(profile.msv, models[i].msv_pass_bits));
    bias.push_back(bias_device_model(profile.bias));
    m.set_longest = std::max(m.set_longest, profile.M);
    m.set.push_back(std::move(model));
  }
  m.set_exact_groups.clear();
  m.set_longest_rows = 0;
  std::vector<int> exact_models(count);
  std::iota(exact_models.begin(), exact_models.end(), 0);
  const auto bucket = [&](int k) { return exact_chunks_bucket(descriptors[k].M); };
  std::stable_sort(exact_models.begin(), exact_models.end(),
                   [&](int x, int y) { return bucket(x) < bucket(y); });
  for (std::size_t j = 0; j < count; ++j) {
    const int chunks = bucket(exact_models[j]);
    if (m.set_exact_groups.empty() || m.set_exact_groups.back().chunks != chunks)
      m.set_exact_groups.push_back(Impl::ExactGroup{chunks, j, 0});
    ++m.set_exact_groups.back().count;
    if (chunks == 0)
      m.set_longest_rows = std::max(m.set_longest_rows, descriptors[exact_models[j]].M);
  }
  // A group's models share the blocks that fit on the device at once (the registers
  // bound them by bucket); msv_exact_rows's rows are per warp: 2 blocks per
  // multiprocessor, as the one-model kernel.
  for (Impl::ExactGroup& g : m.set_exact_groups) {
    int resident = m.exact_blocks;
    with_exact_bucket(g.chunks, [&](auto chunks) {
      if constexpr (chunks() > 0) {
        int per_sm = 0;
        check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, msv_set_exact_kernel<chunks()>,
                                                            kExactBlockThreads, 0),
              "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        resident = std::max(resident, per_sm * m.multiprocessors);
      }
    });
    const int models = static_cast<int>(g.count);
    g.blocks = std::max(2, (resident + models - 1) / models);
  }
  upload(m.set_exact_models, exact_models);
  const int optin = static_cast<int>(m.shared_optin);
  for_each_msv_shape([optin](auto g, auto n) {
    check(cudaFuncSetAttribute(msv_set_wavefront_kernel<g(), n()>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, optin),
          "cudaFuncSetAttribute");
  });
  upload(m.set_words, words);
  upload(m.set_costs, costs);
  upload(m.set_models, descriptors);
  upload(m.set_gates, gates);
  upload(m.set_bias, bias);
  upload(m.set_vit_match, vit_match);
  upload(m.set_vit_nodes, vit_nodes);
  upload(m.set_vit_models, vit_descriptors);
  upload(m.set_strip_emit, strip_emit);
  upload(m.set_strip_records, strip_records);
  for (std::size_t w = 0; w < std::size(kViterbiStripWidths); ++w) {
    with_strip_width(kViterbiStripWidths[w], [&](auto S) {
      int blocks_per_sm = 0;
      check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &blocks_per_sm, viterbi_set_strip_kernel<S()>, kExactBlockThreads, 0),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      m.set_strip_blocks[w] = std::max(1, blocks_per_sm) * m.multiprocessors;
    });
  }
  // Viterbi rows in shared memory: as many warps per block (up to 8) as fit the longest.
  const std::size_t row_bytes = static_cast<std::size_t>(m.set_longest + 1) * sizeof(short4);
  m.set_viterbi_warps_per_block =
      static_cast<int>(std::min<std::size_t>(8, m.shared_optin / row_bytes));
  if (m.set_viterbi_warps_per_block > 0) {
    check(cudaFuncSetAttribute(viterbi_set_warp_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               optin),
          "cudaFuncSetAttribute");
  }
  const int threads =
      m.set_viterbi_warps_per_block > 0 ? m.set_viterbi_warps_per_block * 32 : kExactBlockThreads;
  const std::size_t shared =
      m.set_viterbi_warps_per_block > 0 ? m.set_viterbi_warps_per_block * row_bytes : 0;
  int per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, viterbi_set_warp_kernel, threads,
                                                      shared),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  m.set_viterbi_resident_blocks = std::max(1, per_sm) * m.multiprocessors;
}

std::size_t HmmGpuEngine::set_model_count() const {
  return impl_->set.size();
}

void HmmGpuEngine::submit_msv_models(int slot_index, const GpuTarget* targets, std::size_t count,
                                     const ParallelFor& parallel, const GpuBlockSpan* blocks,
                                     std::size_t block_count, const std::vector<float>* null_nats) {
  check_null_scores(null_nats, count);
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  m.stage(s, targets, count, parallel, blocks, block_count);
  const int n = s.n;
  const std::size_t models = m.set.size();
  const std::size_t values = models * static_cast<std::size_t>(n);
  const std::size_t residues = static_cast<std::size_t>(s.offsets[n]);
  s.set_bjbm.reserve(values + 1);
  s.set_result.reserve(values + 1);
  s.set_exact_count.reserve(models + 1);
  for (std::size_t k = 0; k < models; ++k) {
    Impl::SetModel& model = *m.set[k];
    std::uint8_t* bjbm = s.set_bjbm.get() + k * static_cast<std::size_t>(n);
    for (int i = 0; i < n; ++i) {
      bjbm[i] = static_cast<std::uint8_t>(((*model.tjb)(s.lengths[i]) + model.msv.tbm) & 0xff);
    }
    s.set_exact_count[k] = model.all_exact ? n : 0;
  }
  // The fast kernel's launches: the models by kernel shape, at most kSetBoundaryBytes of
  // boundary columns per launch. entries: (model, boundary slot).
  struct Launch {
    int G = 0, N = 0;
    std::size_t first = 0, count = 0, shared = 0;
  };
  std::vector<Launch> launches;
  const std::size_t boundary_values = 2 * residues + 16;
  const std::size_t slots_per_launch =
      std::max<std::size_t>(1, kSetBoundaryBytes / (boundary_values * sizeof(std::int16_t)));
  std::size_t entries = 0, slots_used = 0;
  s.set_entries.reserve(models + 1);
  for (const int G : {8, 16, 32}) {
    for (const int N : {16, 32}) {
      Launch launch{G, N, entries, 0, 0};
      int slot = 0;
      for (std::size_t k = 0; k < models; ++k) {
        const Impl::SetModel& model = *m.set[k];
        if (model.all_exact || model.G != G || model.N != N) continue;
        if (launch.count == kMaxLaunchEntries ||
            (!model.one_tile && static_cast<std::size_t>(slot) == slots_per_launch)) {
          launches.push_back(launch);
          launch = Launch{G, N, entries, 0, 0};
          slot = 0;
        }
        s.set_entries[entries++] = int2{static_cast<int>(k), model.one_tile ? -1 : slot++};
        slots_used = std::max(slots_used, static_cast<std::size_t>(slot));
        ++launch.count;
        launch.shared = std::max(launch.shared, model.shared);
      }
      if (launch.count > 0) launches.push_back(launch);
    }
  }
  s.d_set_bjbm.reserve(values + 1, s.stream.get());
  s.d_set_result.reserve(values + 1, s.stream.get());
  s.d_set_exact_list.reserve(values + 1, s.stream.get());
  s.d_set_exact_count.reserve(models + 1, s.stream.get());
  s.d_set_entries.reserve(entries + 1, s.stream.get());
  s.d_set_boundary.reserve(std::max<std::size_t>(1, slots_used) * boundary_values, s.stream.get());
  std::size_t row_warps = 0;  // msv_exact_rows's warps: their rows in d_set_rows
  for (const Impl::ExactGroup& g : m.set_exact_groups) {
    if (g.chunks == 0) row_warps = g.count * g.blocks * (kExactBlockThreads / 32);
  }
  s.d_set_rows.reserve(row_warps * static_cast<std::size_t>(m.set_longest_rows + 1) + 1,
                       s.stream.get());
  cudaStream_t st = s.stream.get();
  check(cudaMemcpyAsync(s.d_set_bjbm.get(), s.set_bjbm.get(), values, cudaMemcpyHostToDevice, st),
        "H2D bjbm");
  check(cudaMemcpyAsync(s.d_set_exact_count.get(), s.set_exact_count.get(), models * sizeof(int),
                        cudaMemcpyHostToDevice, st),
        "H2D counts");
  check(cudaMemcpyAsync(s.d_set_entries.get(), s.set_entries.get(), entries * sizeof(int2),
                        cudaMemcpyHostToDevice, st),
        "H2D entries");
  for (std::size_t k = 0; k < models; ++k) {
    if (!m.set[k]->all_exact || n == 0) continue;
    check(cudaMemcpyAsync(s.d_set_exact_list.get() + k * static_cast<std::size_t>(n),
                          s.d_order.get(), n * sizeof(int), cudaMemcpyDeviceToDevice, st),
          "D2D list");
  }
  MsvSetArgs a{};
  a.words = reinterpret_cast<const uint4*>(m.set_words.get());
  a.costs = m.set_costs.get();
  a.models = m.set_models.get();
  a.entries = s.d_set_entries.get();
  a.target_residues = s.d_target_residues.get();
  a.offsets = s.d_offsets.get();
  a.order = s.d_order.get();
  a.n = n;
  a.bjbm = s.d_set_bjbm.get();
  a.boundary = s.d_set_boundary.get();
  a.boundary_stride = static_cast<std::int64_t>(boundary_values);
  a.result = s.d_set_result.get();
  a.exact_list = s.d_set_exact_list.get();
  a.exact_count = s.d_set_exact_count.get();
  a.rows = s.d_set_rows.get();
  a.rows_stride = m.set_longest_rows + 1;
  s.msv_start.record(st);
  if (n > 0) {
    for (const Launch& l : launches) {
      MsvSetArgs la = a;
      la.entries = a.entries + l.first;
      la.entry_count = static_cast<int>(l.count);
      const int groups_per_block = kMsvBlockThreads / l.G;
      const auto grid = static_cast<unsigned>((n + groups_per_block - 1) / groups_per_block) *
                        static_cast<unsigned>(l.count);
      with_msv_shape(l.G, l.N, [&](auto g, auto n) {
        msv_set_wavefront_kernel<g(), n()><<<grid, kMsvBlockThreads, l.shared, st>>>(la);
      });
      check_launch("msv_set_wavefront_kernel");
    }
  }
  s.msv_fast_done.record(st);
  for (const Impl::ExactGroup& g : m.set_exact_groups) {
    if (n == 0) break;
    const dim3 grid(static_cast<unsigned>(g.blocks), static_cast<unsigned>(g.count));
    const int* group_models = m.set_exact_models.get() + g.first;
    with_exact_bucket(g.chunks, [&](auto chunks) {
      msv_set_exact_kernel<chunks()><<<grid, kExactBlockThreads, 0, st>>>(a, group_models);
    });
    check_launch("msv_set_exact_kernel");
  }
  s.msv_done.record(st);
  s.gated = null_nats != nullptr;
  s.gated_set = true;
  if (s.gated) {
    m.queue_msv_gate(s, s.d_set_result.get(), s.d_set_bjbm.get(), m.set_gates.get(),
                     m.set_bias.get(), models, *null_nats);
  } else {
    check(cudaMemcpyAsync(s.set_result.get(), s.d_set_result.get(), values * sizeof(int),
                          cudaMemcpyDeviceToHost, st),
          "D2H results");
  }
  check(cudaMemcpyAsync(s.set_exact_count.get(), s.d_set_exact_count.get(), models * sizeof(int),
                        cudaMemcpyDeviceToHost, st),
        "D2H counts");
  s.times.submit_rest_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.staged_from).count() -
      s.times.submit_copy_s;
}

const std::vector<FilterScore>& HmmGpuEngine::wait_msv_models(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize msv models");
  m.publish_kept(s);
  const std::size_t models = m.set.size();
  const auto n = static_cast<std::size_t>(s.n);
  s.times.msv_ms = s.msv_fast_done.ms_since(s.msv_start);
  s.times.msv_exact_ms = s.msv_done.ms_since(s.msv_fast_done);
  s.times.msv_exact_targets = 0;
  for (std::size_t k = 0; k < models; ++k) s.times.msv_exact_targets += s.set_exact_count[k];
  if (s.gated) throw std::logic_error("wait_msv_models after a gated submit_msv_models");
  s.set_scores.resize(models * n);
  for (std::size_t k = 0; k < models; ++k) {
    Impl::SetModel& model = *m.set[k];
    const int* result = s.set_result.get() + k * n;
    FilterScore* out = s.set_scores.data() + k * n;
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = finish_msv(model.msv, result[i], (*model.tjb)(s.lengths[i]));
    }
  }
  return s.set_scores;
}

void HmmGpuEngine::Impl::queue_msv_gate(Slot& s, const int* d_result, const std::uint8_t* d_bjbm,
                                        const MsvGate* d_gates, const BiasDeviceModel* d_bias,
                                        std::size_t models, const std::vector<float>& null_nats) {
  const auto n = static_cast<std::size_t>(s.n);
  const std::size_t pairs = models * n;
  s.passes_copied = std::min(pairs, std::max<std::size_t>(4096, pairs / 16));
  s.null_nats.reserve(n + 1);
  s.d_null_nats.reserve(n + 1, s.stream.get());
  s.p1.reserve(n + 1);
  s.d_p1.reserve(n + 1, s.stream.get());
  s.passes.reserve(s.passes_copied + 1);
  s.d_passes.reserve(pairs + 1, s.stream.get());
  s.pass_count.reserve(1);
  s.d_pass_count.reserve(1, s.stream.get());
  cudaStream_t st = s.stream.get();
  std::copy(null_nats.begin(), null_nats.end(), s.null_nats.get());
  check(cudaMemcpyAsync(s.d_null_nats.get(), s.null_nats.get(), n * sizeof(float),
                        cudaMemcpyHostToDevice, st),
        "H2D null scores");
  for (std::size_t i = 0; i < n; ++i) s.p1[i] = null_p1(s.lengths[i]);
  check(cudaMemcpyAsync(s.d_p1.get(), s.p1.get(), n * sizeof(float), cudaMemcpyHostToDevice, st),
        "H2D null_p1");
  check(cudaMemsetAsync(s.d_pass_count.get(), 0, sizeof(unsigned long long), st),
        "memset pass count");
  if (pairs > 0) {
    MsvGateArgs g{};
    g.result = d_result;
    g.bjbm = d_bjbm;
    g.gates = d_gates;
    g.null_nats = s.d_null_nats.get();
    g.offsets = s.d_offsets.get();
    g.n = s.n;
    g.pairs = static_cast<std::int64_t>(pairs);
    g.passes = s.d_passes.get();
    g.count = s.d_pass_count.get();
    constexpr unsigned kGateThreads = 256;
    const auto blocks = static_cast<unsigned>(std::min<std::size_t>(
        (pairs + kGateThreads - 1) / kGateThreads, static_cast<std::size_t>(multiprocessors) * 16));
    msv_gate_kernel<<<blocks, kGateThreads, 0, st>>>(g);
    check_launch("msv_gate_kernel");
    // A thread per pass; the passes are not known here: enough threads for a few percent
    // of the pairs, each looping on.
    BiasArgs b{};
    b.passes = s.d_passes.get();
    b.count = s.d_pass_count.get();
    b.models = d_bias;
    b.target_residues = s.d_target_residues.get();
    b.offsets = s.d_offsets.get();
    b.p1 = s.d_p1.get();
    constexpr unsigned kBiasThreads = 128;
    const auto bias_blocks = static_cast<unsigned>(std::clamp<std::size_t>(
        pairs / 32 / kBiasThreads, 1, static_cast<std::size_t>(multiprocessors) * 16));
    bias_composition_kernel<<<bias_blocks, kBiasThreads, 0, st>>>(b);
    check_launch("bias_composition_kernel");
  }
  check(cudaMemcpyAsync(s.pass_count.get(), s.d_pass_count.get(), sizeof(unsigned long long),
                        cudaMemcpyDeviceToHost, st),
        "D2H pass count");
  check(cudaMemcpyAsync(s.passes.get(), s.d_passes.get(), s.passes_copied * sizeof(int4),
                        cudaMemcpyDeviceToHost, st),
        "D2H passes");
}

const std::vector<HmmGpuEngine::MsvPass>& HmmGpuEngine::wait_msv_passes(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize msv passes");
  m.publish_kept(s);
  if (!s.gated) throw std::logic_error("wait_msv_passes after an ungated MSV launch");
  s.times.msv_ms = s.msv_fast_done.ms_since(s.msv_start);
  s.times.msv_exact_ms = s.msv_done.ms_since(s.msv_fast_done);
  s.times.msv_exact_targets = 0;
  if (s.gated_set) {
    for (std::size_t k = 0; k < m.set.size(); ++k)
      s.times.msv_exact_targets += s.set_exact_count[k];
  } else {
    s.times.msv_exact_targets = s.exact_count[0];
  }
  const std::size_t count = *s.pass_count.get();
  if (count > s.passes_copied) {  // more than the share queued with the count: all again
    s.passes.reserve(count);
    check(
        cudaMemcpy(s.passes.get(), s.d_passes.get(), count * sizeof(int4), cudaMemcpyDeviceToHost),
        "D2H passes");
  }
  s.msv_passes.resize(count);
  for (std::size_t j = 0; j < count; ++j) {
    const int4 p = s.passes[j];
    const int L = s.lengths[static_cast<std::size_t>(p.y)];
    float composition = 0;
    std::memcpy(&composition, &p.w, sizeof composition);
    s.msv_passes[j] = {p.x, p.y,
                       s.gated_set ? finish_msv(m.set[static_cast<std::size_t>(p.x)]->msv, p.z,
                                                (*m.set[static_cast<std::size_t>(p.x)]->tjb)(L))
                                   : finish_msv(m.msv, p.z, m.msv.tjb(L)),
                       composition};
  }
  // The device appended them in no particular order.
  std::sort(s.msv_passes.begin(), s.msv_passes.end(), [](const MsvPass& a, const MsvPass& b) {
    return a.model != b.model ? a.model < b.model : a.target < b.target;
  });
  return s.msv_passes;
}

void HmmGpuEngine::Impl::queue_viterbi_list(Slot& s) {
  const int n = s.vit_n;
  s.d_vit_order.reserve(n + 1, s.stream.get());
  s.d_vit_counter.reserve(kViterbiCounters, s.stream.get());
  s.d_vit_list.reserve(n + 1, s.stream.get());
  s.d_vit_result.reserve(n + 1, s.stream.get());
  s.d_ncj.reserve(n + 1, s.stream.get());
  if (n == 0) return;
  cudaStream_t st = s.stream.get();
  check(cudaMemcpyAsync(s.d_vit_list.get(), s.vit_list.get(), n * sizeof(int),
                        cudaMemcpyHostToDevice, st),
        "H2D list");
  check(cudaMemcpyAsync(s.d_ncj.get(), s.ncj.get(), n * sizeof(std::int16_t),
                        cudaMemcpyHostToDevice, st),
        "H2D ncj");
  check(cudaMemcpyAsync(s.d_vit_order.get(), s.vit_order.get(), n * sizeof(int),
                        cudaMemcpyHostToDevice, st),
        "H2D order");
  check(cudaMemsetAsync(s.d_vit_counter.get(), 0, kViterbiCounters * sizeof(int), st),
        "cudaMemsetAsync");
}

void HmmGpuEngine::Impl::queue_viterbi_results(Slot& s) {
  if (s.vit_n == 0) return;
  check(cudaMemcpyAsync(s.vit_result.get(), s.d_vit_result.get(), s.vit_n * sizeof(int),
                        cudaMemcpyDeviceToHost, s.stream.get()),
        "D2H viterbi");
}

void HmmGpuEngine::submit_viterbi_models(int slot_index, const SetItem* items, std::size_t count) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  const int n = static_cast<int>(count);
  s.vit_n = n;
  s.vit_list.reserve(count + 1);
  s.ncj.reserve(count + 1);
  s.vit_order.reserve(count + 1);
  s.vit_result.reserve(count + 1);
  s.set_item_models.reserve(count + 1);
  for (int i = 0; i < n; ++i) {
    const SetItem& item = items[i];
    if (item.model < 0 || static_cast<std::size_t>(item.model) >= m.set.size() || item.target < 0 ||
        item.target >= s.n) {
      throw std::invalid_argument("submit_viterbi_models: an item outside the set or the batch");
    }
    s.vit_list[i] = item.target;
    s.set_item_models[i] = item.model;
    s.ncj[i] = (*m.set[static_cast<std::size_t>(item.model)]->ncj)(s.lengths[item.target]);
  }
  order_longest_first(
      n, s.vit_order.get(), [&](int i) { return s.lengths[items[i].target]; }, s.counts);
  // The order in runs of one kernel each, longest first within a run: the strip kernel of
  // each width (kViterbiStripWidths), then the warp kernel (models without strips).
  constexpr std::size_t kRuns = std::size(kViterbiStripWidths) + 1;
  static_assert(kRuns <= kViterbiCounters);
  const auto run_of = [&](int i) {
    const int strip = m.set_strip_of[static_cast<std::size_t>(items[i].model)];
    for (std::size_t w = 0; w < kRuns - 1; ++w) {
      if (kViterbiStripWidths[w] == strip) return w;
    }
    return kRuns - 1;
  };
  std::array<int, kRuns + 1> run_start{};
  for (int i = 0; i < n; ++i) ++run_start[run_of(i) + 1];
  for (std::size_t r = 1; r <= kRuns; ++r) run_start[r] += run_start[r - 1];
  {
    std::array<int, kRuns> at{};
    std::copy_n(run_start.begin(), kRuns, at.begin());
    s.run_order.resize(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
      const int i = s.vit_order[k];
      s.run_order[static_cast<std::size_t>(at[run_of(i)]++)] = i;
    }
    std::copy(s.run_order.begin(), s.run_order.end(), s.vit_order.get());
  }
  m.queue_viterbi_list(s);
  s.d_set_item_models.reserve(count + 1, s.stream.get());
  cudaStream_t st = s.stream.get();
  if (n > 0) {
    check(cudaMemcpyAsync(s.d_set_item_models.get(), s.set_item_models.get(), count * sizeof(int),
                          cudaMemcpyHostToDevice, st),
          "H2D item models");
  }
  s.vit_start.record(st);
  if (n > 0) {
    ViterbiSetArgs a{};
    a.match = m.set_vit_match.get();
    a.nodes = reinterpret_cast<const uint4*>(m.set_vit_nodes.get());
    a.models = m.set_vit_models.get();
    a.target_residues = s.d_target_residues.get();
    a.offsets = s.d_offsets.get();
    a.list = s.d_vit_list.get();
    a.item_models = s.d_set_item_models.get();
    a.ncj_move = s.d_ncj.get();
    a.rows_stride = m.set_longest + 1;
    a.result = s.d_vit_result.get();
    a.strip_emit = reinterpret_cast<const int4*>(m.set_strip_emit.get());
    a.strip_records = reinterpret_cast<const uint4*>(m.set_strip_records.get());
    for (std::size_t r = 0; r + 1 < kRuns; ++r) {
      const int items_in_run = run_start[r + 1] - run_start[r];
      if (items_in_run == 0) continue;
      a.item_order = s.d_vit_order.get() + run_start[r];
      a.count = items_in_run;
      a.next_item = s.d_vit_counter.get() + r;
      constexpr int per_block = kExactBlockThreads / 32;
      const int blocks =
          std::min(m.set_strip_blocks[r], (items_in_run + per_block - 1) / per_block);
      with_strip_width(kViterbiStripWidths[r], [&](auto S) {
        viterbi_set_strip_kernel<S()><<<blocks, kExactBlockThreads, 0, st>>>(a);
      });
      check_launch("viterbi_set_strip_kernel");
    }
    a.item_order = s.d_vit_order.get() + run_start[kRuns - 1];
    a.count = run_start[kRuns] - run_start[kRuns - 1];
    a.next_item = s.d_vit_counter.get() + (kRuns - 1);
    const int warp_items = a.count;
    const std::size_t row_bytes = static_cast<std::size_t>(a.rows_stride) * sizeof(short4);
    if (warp_items > 0 && m.set_viterbi_warps_per_block > 0) {
      const int per_block = m.set_viterbi_warps_per_block;
      const int blocks =
          std::min(m.set_viterbi_resident_blocks, (warp_items + per_block - 1) / per_block);
      a.rows = nullptr;
      viterbi_set_warp_kernel<<<blocks, per_block * 32, per_block * row_bytes, st>>>(a);
      check_launch("viterbi_set_warp_kernel");
    } else if (warp_items > 0) {
      const int blocks = std::min(m.set_viterbi_resident_blocks,
                                  (warp_items * 32 + kExactBlockThreads - 1) / kExactBlockThreads);
      s.d_vit_rows.reserve(static_cast<std::size_t>(blocks) * (kExactBlockThreads / 32) *
                               static_cast<std::size_t>(a.rows_stride),
                           s.stream.get());
      a.rows = s.d_vit_rows.get();
      viterbi_set_warp_kernel<<<blocks, kExactBlockThreads, 0, st>>>(a);
      check_launch("viterbi_set_warp_kernel");
    }
  }
  s.vit_done.record(st);
  m.queue_viterbi_results(s);
}

int HmmGpuEngine::set_viterbi_wave_targets() const {
  const Impl& m = *impl_;
  const int warps =
      m.set_viterbi_warps_per_block > 0 ? m.set_viterbi_warps_per_block : kExactBlockThreads / 32;
  return m.set_viterbi_resident_blocks * warps;
}

const std::vector<FilterScore>& HmmGpuEngine::wait_viterbi_models(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize viterbi models");
  s.times.viterbi_ms = s.vit_done.ms_since(s.vit_start);
  s.vit_scores.resize(static_cast<std::size_t>(s.vit_n));
  for (int i = 0; i < s.vit_n; ++i) {
    const Impl::SetModel& model = *m.set[static_cast<std::size_t>(s.set_item_models[i])];
    s.vit_scores[i] = finish_viterbi(model.vit, s.vit_result[i], s.ncj[i]);
  }
  return s.vit_scores;
}

void HmmGpuEngine::submit_viterbi(int slot_index, const int* which, std::size_t count) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  const int n = static_cast<int>(count);
  s.vit_n = n;
  s.vit_list.reserve(n + 1);
  s.vit_result.reserve(n + 1);
  s.ncj.reserve(n + 1);
  s.vit_order.reserve(n + 1);
  for (int i = 0; i < n; ++i) {
    s.vit_list[i] = which[i];
    s.ncj[i] = m.ncj(s.lengths[which[i]]);
  }
  order_longest_first(
      n, s.vit_order.get(), [&](int i) { return s.lengths[which[i]]; }, s.counts);
  m.queue_viterbi_list(s);
  cudaStream_t st = s.stream.get();
  s.vit_start.record(st);
  if (n > 0) {
    ViterbiArgs a{};
    a.match = m.vit_match.get();
    a.nodes = reinterpret_cast<const uint4*>(m.vit_nodes.get());
    a.M = m.vit.M;
    a.base = m.vit.base;
    a.e_loop = m.vit.e_loop;
    a.e_move = m.vit.e_move;
    a.dd_bound = m.vit.dd_bound;
    a.target_residues = s.d_target_residues.get();
    a.offsets = s.d_offsets.get();
    a.list = s.d_vit_list.get();
    a.ncj_move = s.d_ncj.get();
    a.count = n;
    a.item_order = s.d_vit_order.get();
    a.next_item = s.d_vit_counter.get();
    a.result = s.d_vit_result.get();
    if (m.viterbi_strip > 0) {
      constexpr int per_block = kExactBlockThreads / 32;
      const int blocks = std::min(m.viterbi_strip_blocks, (n + per_block - 1) / per_block);
      a.rows = nullptr;
      a.strip_emit = reinterpret_cast<const int4*>(m.vit_strip_emit.get());
      a.strip_records = reinterpret_cast<const uint4*>(m.vit_strip_records.get());
      with_strip_width(m.viterbi_strip, [&](auto S) {
        viterbi_strip_kernel<S()><<<blocks, kExactBlockThreads, 0, st>>>(a);
      });
      check_launch("viterbi_strip_kernel");
    } else if (m.strategy != GpuStrategy::thread_per_target) {
      const std::size_t row_bytes = static_cast<std::size_t>(m.vit.M + 1) * sizeof(short4);
      if (m.viterbi_warps_per_block > 0) {
        const int per_block = m.viterbi_warps_per_block;
        const int blocks = std::min(m.viterbi_resident_blocks, (n + per_block - 1) / per_block);
        a.rows = nullptr;
        viterbi_warp_kernel<<<blocks, per_block * 32, per_block * row_bytes, st>>>(a);
      } else {
        const int blocks = std::min(m.viterbi_resident_blocks,
                                    (n * 32 + kExactBlockThreads - 1) / kExactBlockThreads);
        s.d_vit_rows.reserve(
            static_cast<std::size_t>(blocks) * (kExactBlockThreads / 32) * (m.vit.M + 1),
            s.stream.get());
        a.rows = s.d_vit_rows.get();
        viterbi_warp_kernel<<<blocks, kExactBlockThreads, 0, st>>>(a);
      }
      check_launch("viterbi_warp_kernel");
    } else {
      constexpr int threads = 128;
      const int blocks = std::min(std::max(1, 16384 / threads), (n + threads - 1) / threads);
      s.d_vit_rows.reserve(static_cast<std::size_t>(blocks) * threads * (m.vit.M + 2),
                           s.stream.get());
      a.rows = s.d_vit_rows.get();
      viterbi_thread_kernel<<<blocks, threads, 0, st>>>(a);
      check_launch("viterbi_thread_kernel");
    }
  }
  s.vit_done.record(st);
  m.queue_viterbi_results(s);
}

const std::vector<FilterScore>& HmmGpuEngine::wait_viterbi(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize viterbi");
  s.times.viterbi_ms = s.vit_done.ms_since(s.vit_start);
  s.vit_scores.resize(s.vit_n);
  for (int i = 0; i < s.vit_n; ++i)
    s.vit_scores[i] = finish_viterbi(m.vit, s.vit_result[i], s.ncj[i]);
  return s.vit_scores;
}

void HmmGpuEngine::submit_forward(int slot_index, const int* which, std::size_t count) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  if (!m.forward)
    m.forward = std::make_unique<detail::ForwardGpu>(m.fwd, m.multiprocessors, m.shared_optin);
  m.forward->submit(slot_index, s.stream.get(), s.d_target_residues.get(), s.d_offsets.get(),
                    s.lengths, which, static_cast<int>(count), s.fwd_start.get(), s.fwd_done.get());
}

const std::vector<float>& HmmGpuEngine::wait_forward(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize forward");
  s.times.forward_ms = s.fwd_done.ms_since(s.fwd_start);
  return m.forward->scores(slot_index);
}

void HmmGpuEngine::submit_canonical_forward(int slot_index, const int* which, std::size_t count) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  m.canonical->submit(slot_index, s.stream.get(), s.d_target_residues.get(), s.d_offsets.get(),
                      s.lengths, which, static_cast<int>(count), s.canonical_start.get(),
                      s.canonical_done.get());
}

const std::vector<float>& HmmGpuEngine::wait_canonical_forward(int slot_index) {
  Impl& m = *impl_;
  Impl::Slot& s = *m.slots[slot_index];
  check(cudaSetDevice(m.device), "cudaSetDevice");
  check(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize canonical forward");
  s.times.canonical_ms = s.canonical_done.ms_since(s.canonical_start);
  const std::vector<float>& scores =
      m.canonical->scores(slot_index, s.host_residues.data(), s.lengths);
  s.times.canonical_cpu_targets = m.canonical->cpu_targets(slot_index);
  return scores;
}

GpuKernelTimes HmmGpuEngine::kernel_times(int slot) const {
  return impl_->slots[slot]->times;
}

std::vector<FilterScore> HmmGpuEngine::msv(const std::vector<GpuTarget>& targets) {
  submit_msv(0, targets.data(), targets.size());
  return wait_msv(0);
}

std::vector<FilterScore> HmmGpuEngine::viterbi(const std::vector<GpuTarget>& targets) {
  submit_msv(0, targets.data(), targets.size());
  wait_msv(0);
  std::vector<int> all(targets.size());
  std::iota(all.begin(), all.end(), 0);
  submit_viterbi(0, all.data(), all.size());
  return wait_viterbi(0);
}

std::vector<float> HmmGpuEngine::forward(const std::vector<GpuTarget>& targets) {
  submit_msv(0, targets.data(), targets.size());
  wait_msv(0);
  std::vector<int> all(targets.size());
  std::iota(all.begin(), all.end(), 0);
  submit_forward(0, all.data(), all.size());
  return wait_forward(0);
}

std::vector<float> HmmGpuEngine::canonical_forward(const std::vector<GpuTarget>& targets) {
  submit_msv(0, targets.data(), targets.size());
  wait_msv(0);
  std::vector<int> all(targets.size());
  std::iota(all.begin(), all.end(), 0);
  submit_canonical_forward(0, all.data(), all.size());
  return wait_canonical_forward(0);
}

}  // namespace duet::device
