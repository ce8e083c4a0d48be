// The hmmsearch filters on a GPU, behind a plain C++ header (no CUDA types):
//   - device layouts of the MSV and Viterbi score systems, each built from the core score
//     arrays (src/core/hmmsearch/profile.hpp) in one named function, with the inverse for tests;
//   - HmmGpuEngine: one model on one GPU (and a set of models whose MSV and Viterbi filters
//     run together on a batch, one launch each: set_models); uploads batches of targets
//     and runs
//       MSV:     a thread group per target (8, 16 or 32 threads, several targets per warp
//                for short models), the model split into per-thread strips of 16 nodes,
//                anti-diagonal wavefront across the group, 16-bit lanes (two nodes per
//                register) with DPX add-and-min/max emulating HMMER's unsigned 8-bit
//                saturation exactly, the profile slice in shared memory laid out so a
//                warp's 16-byte reads never conflict. It runs with the begin score held
//                constant (no J state), as HMMER's SSV does; a target whose best cell
//                shows the J state could have been used is re-run by an exact
//                row-synchronous MSV kernel on the device (a warp per target). A gated
//                launch decides the MSV stage on the device, compacts the passing pairs
//                and runs their bias filter there (a thread per pair, the host's float
//                operations: hmm_bias_kernel.cuh).
//       Viterbi: a warp per target, row-synchronous, 16-bit saturation emulated in 32-bit
//                registers, HMMER's lazy-F decision (`Dmax + dd_bound > xB`) taken per row
//                exactly as the reference takes it; the delete-delete chain is a (max,+)
//                warp scan.
//       Forward: the float Forward parser (probability space, HMMER's sparse rescaling),
//                a warp per target, row by row, 4 nodes per lane, the D->D chain a linear
//                warp scan, the row in shared memory (hmm_forward_gpu.cu); a filter only:
//                its score is within kGpuForwardAbsoluteTolerance +
//                kGpuForwardRelativeTolerance * |score| nats of forward_parser_reference.
//       Canonical Forward: every float of core/hmmsearch/forward_canonical.hpp's parser, bit for
//                bit: four threads per target (thread j plays SIMD lane j, eight targets
//                per warp), the same IEEE operations in the same order (PTX mul, add and
//                div rounded to nearest with subnormals flushed, no fused multiply-add);
//                the host takes the logarithms (hmm_canonical_gpu.cu);
//     or, with GpuStrategy::thread_per_target (Walters et al. 2009), one thread per target
//     running the whole row in 32-bit integers for the Viterbi filter (same exact rules).
// Contract: for every target the MSV and Viterbi scores equal the scalar references'
// (msv_filter_reference, viterbi_filter_reference) bit for bit, overflow flags included;
// the canonical Forward scores equal CanonicalForward::score's bit for bit.
// Errors from CUDA are thrown as std::runtime_error naming the call and the device.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/hmmsearch/msv_gate.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"
#include "core/hmmsearch/striping.hpp"
#include "device/resident_store.hpp"

namespace duet::device {

// ---- device layouts (host-side data, copied verbatim to the GPU) ----

// MSV: nodes are padded to whole tiles of `group_threads` x `nodes_per_thread` (N = 16 or
// 32) nodes; thread t of a group owns the N nodes [t*N, t*N+N) of a tile, held as N/2
// registers of two 16-bit lanes: register j = (node t*N + j, node t*N + N/2 + j). The
// stored value per node is `bias - cost` (int16), and words are ordered
// [residue][tile][read][thread][4 words] (N/8 16-byte reads per thread and row) so that a
// warp's 16-byte reads land in distinct banks whatever residue each thread is on. Padding
// nodes, and every node of the extra residue row Kp (the kernel's rows outside a target),
// hold kMsvPadScore: a cell there can never raise the best cell (see hmm_gpu.cu).
struct MsvDeviceLayout {
  int M = 0, Kp = 0;
  int group_threads = 0;     // 8, 16 or 32
  int nodes_per_thread = 0;  // 16 or 32
  int tiles = 0;             // tile = group_threads * nodes_per_thread nodes
  std::uint8_t base = 0, bias = 0, tec = 0, tbm = 0;
  std::vector<std::int16_t> words;  // (Kp + 1) * tiles * group_threads * nodes_per_thread values
  // For the exact row-synchronous MSV kernel: plain costs cost[x * (M+1) + k].
  std::vector<std::uint8_t> costs;
  std::size_t bytes() const { return words.size() * sizeof(std::int16_t); }
};
// The node count per thread that the group-size rule assumes.
inline constexpr int kMsvNodesPerThread = 16;
inline constexpr std::int16_t kMsvPadScore = -16384;
// Group size chosen by model length (8 up to 128 nodes, 16 up to 256, else 32).
int msv_group_threads(int M);
// Nodes per thread chosen by model length and group size: 32 when that pads the model to at
// most 1.1 times the nodes that 16 per thread pad it to, else 16 (H100: at equal padding 32
// nodes ran 1.16x faster at M = 800; at 1.2 times the padding, M = 2500, 1.01x slower).
int msv_nodes_per_thread(int M, int group_threads);
MsvDeviceLayout build_msv_device_layout(const MsvScores& msv, int group_threads,
                                        int nodes_per_thread = kMsvNodesPerThread);
// Inverse of the layout: cost[x][k] (k = 1..M, index 0 is 255), for round-trip tests.
std::vector<std::vector<std::uint8_t>> msv_costs_from_device_layout(const MsvDeviceLayout& layout);

// Viterbi: match[x * (M+1) + k] (k = 0..M, k = 0 is -32768) and one 16-byte record per
// node k = 0..M: {bm, mm, im, dm, md, mi, ii, dd into k (= dd[k-1], -32768 for k <= 1)}.
struct ViterbiDeviceLayout {
  int M = 0, Kp = 0;
  std::int16_t base = 0, e_loop = 0, e_move = 0, dd_bound = 0;
  std::vector<std::int16_t> match;  // Kp * (M+1)
  std::vector<std::int16_t> nodes;  // 8 * (M+1)
};
inline constexpr int kViterbiNodeFields = 8;
// Throws std::invalid_argument when a D->D score is positive (never from a valid model:
// the delete-chain scan relies on it).
ViterbiDeviceLayout build_viterbi_device_layout(const ViterbiScores& vit);
// Inverse, for round-trip tests: the per-node arrays of ViterbiScores (scale, base,
// e_loop, e_move, dd_bound, match, bm..dd).
ViterbiScores viterbi_scores_from_device_layout(const ViterbiDeviceLayout& layout, float scale);
// The strip kernel's tables (GpuStrategy::warp_strip, S nodes per lane, lane l owning
// nodes l*S+1 .. l*S+S), interleaved across the 32 lanes so that a warp's loads coalesce:
// - emissions, int32: node k = l*S + 4q + t + 1 of residue x at ((x * S/4 + q) * 32 + l) * 4
//   + t; nodes past M kViterbiStripPadEmission;
// - node records (ViterbiDeviceLayout's 8 int16 fields): node l*S + j + 1 at
//   (j * 32 + l) * 8; nodes past M node 0's record (every field -32768).
inline constexpr std::int32_t kViterbiStripPadEmission = -(1 << 20);
std::vector<std::int32_t> viterbi_strip_emissions(const ViterbiDeviceLayout& layout,
                                                  int nodes_per_lane);
std::vector<std::int16_t> viterbi_strip_records(const ViterbiDeviceLayout& layout,
                                                int nodes_per_lane);
// Whether every transition score of the layout (bm mm im dm md mi ii dd) is <= 0, as the
// strip kernel's arithmetic needs (true of every model HMMER's scores come from).
bool viterbi_transitions_nonpositive(const ViterbiDeviceLayout& layout);

// Canonical Forward: the 4-lane striped profile of core/hmmsearch/striped_layout.hpp
// (stripe_forward_scores(fwd, kCanonicalForwardLanes)), each lane's eight transitions of
// vector q side by side so that one thread (one lane) reads them as two 16-byte words:
// nodes[(q * 4 + lane) * 8 + t], t = the seven ViterbiStripedTransition values then D->D
// (index kVitPerQ). match and dd_prefix keep the striped order
// (match[x * Q * 4 + q * 4 + lane], dd_prefix[q * 4 + lane], q = 0..Q).
struct CanonicalDeviceLayout {
  int M = 0, Kp = 0, Q = 0;
  float e_loop = 0, e_move = 0;
  std::vector<float> match;      // Kp * Q * 4
  std::vector<float> nodes;      // Q * 4 * 8
  std::vector<float> dd_prefix;  // (Q + 1) * 4
};
inline constexpr int kCanonicalNodeFields = kVitPerQ + 1;
// Throws std::invalid_argument unless `striped` has 4 lanes.
CanonicalDeviceLayout build_canonical_device_layout(const StripedForwardProfile& striped);
// Inverse, for round-trip tests: the striped profile the layout was built from.
StripedForwardProfile striped_profile_from_canonical_layout(const CanonicalDeviceLayout& layout);

// ---- engine ----

// The canonical Forward kernel records the xE of up to this many rescaled rows per target;
// the host computes a target with more on the CPU (forward_canonical), the same score.
inline constexpr int kCanonicalGpuRescalings = 256;

// Tolerance of the GPU Forward score against forward_parser_reference, in nats (it sums
// in its own order, with fused multiply-adds, and rescales a row when it is next read).
inline constexpr double kGpuForwardAbsoluteTolerance = 1e-3;
inline constexpr double kGpuForwardRelativeTolerance = 1e-4;

enum class GpuStrategy {
  warp_groups,        // MSV thread groups + Viterbi warp per target (default)
  thread_per_target,  // Walters et al.: one thread per target, 32-bit Viterbi filter
  warp_strip,         // MSV thread groups + Viterbi warp per target, nodes in registers
                      // (strips of consecutive nodes per lane; warp_groups past M = 1024
                      // and for a model with a positive transition score)
};
// The strip kernel holds a lane's nodes in registers: models up to this length.
inline constexpr int kViterbiStripMaxLength = 1024;
GpuStrategy parse_gpu_strategy(const std::string& name);  // "warp" | "thread" | "strip"; throws
std::string gpu_strategy_name(GpuStrategy s);

// The kernels an engine runs: the MSV thread-group size (8, 16 or 32; 0 = chosen by model
// length with msv_group_threads), the Viterbi strategy and the MSV nodes per thread (16 or
// 32; 0 = chosen with msv_nodes_per_thread). A kernel-choice table
// (src/io/kernel_table.hpp, written by `duet tune`) gives one per model length.
// `jit`: run the kernels that have a run-time specialisation on the model length
// (nvrtc_jit.hpp; now the exact MSV re-run, msv_exact_kernel.cuh, up to
// kMsvExactJitMaxLength nodes) from NVRTC instead of their static builds; where NVRTC
// fails the static kernel runs and GpuJitInfo says why. Scores are the same either way.
struct GpuKernelChoice {
  int msv_group_threads = 0;
  GpuStrategy viterbi = GpuStrategy::warp_groups;
  int msv_nodes_per_thread = 0;
  bool jit = false;
  // Every MSV target through the exact kernel, none through the fast one (the scores are
  // the same): to test and time the exact kernel on every target.
  bool msv_exact_only = false;
};
// Longest model whose exact MSV kernel is specialised (its row is held in registers).
inline constexpr int kMsvExactJitMaxLength = 3072;

// What an engine asked of NVRTC and got.
struct GpuJitInfo {
  bool asked = false;   // GpuKernelChoice::jit
  bool used = false;    // the specialised exact MSV kernel runs
  std::string origin;   // "compiled", "disk cache" or "memory" (nvrtc_jit.hpp)
  double seconds = 0;   // getting it: compile and load, or read and load
  std::string failure;  // asked, not used: why (the static kernel runs)
};
// The kernels an engine for a model of length M runs (msv_group_threads 0 resolved with
// msv_group_threads(M)); throws std::invalid_argument for a group other than 8, 16, 32.
GpuKernelChoice resolve_kernel_choice(GpuKernelChoice choice, int M);

// One target: residues (codes of the model's alphabet) and length.
struct GpuTarget {
  const Residue* residues = nullptr;
  int length = 0;
};

// Consecutive targets of a batch that are one whole database block, in order: `index`
// and `first_sequence` identify the block (core/block.hpp; a block of the same index
// but other sequences, or another residue count, is never served from the store).
struct GpuBlockSpan {
  std::int64_t index = 0;
  std::int64_t first_sequence = 0;
  std::size_t first_target = 0;  // into the batch's targets
  std::size_t targets = 0;
};

// Wall-clock spent in the kernels of the last completed batch of a slot (CUDA events).
struct GpuKernelTimes {
  float msv_ms = 0, msv_exact_ms = 0, viterbi_ms = 0, forward_ms = 0, canonical_ms = 0;
  std::int64_t msv_exact_targets = 0;
  // Targets of the last canonical Forward batch rescaled more than kCanonicalGpuRescalings
  // times, whose score the host computed on the CPU.
  std::int64_t canonical_cpu_targets = 0;
  // Host seconds of the last submit_msv: copying the residues into pinned memory, and the
  // rest (offsets, order longest first, queuing the uploads and kernels).
  double submit_copy_s = 0, submit_rest_s = 0;
  // Residues of the last submit_msv: read from the resident store (neither copied nor
  // uploaded), uploaded, and, of those uploaded, kept in the store for later batches.
  std::int64_t resident_residues = 0, uploaded_residues = 0, kept_residues = 0;
};

class HmmGpuEngine {
 public:
  // Two independent slots (stream, pinned and device buffers): two batches in flight.
  static constexpr int kSlots = 2;

  // Selects `device`, sets cudaDeviceScheduleBlockingSync before its context exists (a
  // waiting thread sleeps instead of spinning), uploads the model's layouts.
  // `choice.msv_group_threads` other than 0, 8, 16 or 32, or `choice.msv_nodes_per_thread`
  // other than 0, 16 or 32, throws std::invalid_argument.
  // `resident`, when given (a store of the same device), keeps and serves database blocks
  // (submit_msv's `blocks`).
  HmmGpuEngine(int device, const SearchProfile& profile, GpuKernelChoice choice,
               GpuResidentStore* resident = nullptr);
  HmmGpuEngine(int device, const SearchProfile& profile,
               GpuStrategy strategy = GpuStrategy::warp_groups)
      : HmmGpuEngine(device, profile, GpuKernelChoice{0, strategy}) {}
  ~HmmGpuEngine();
  HmmGpuEngine(const HmmGpuEngine&) = delete;
  HmmGpuEngine& operator=(const HmmGpuEngine&) = delete;

  // Takes another model, keeping the device, the slots (streams, pinned and device
  // buffers) and the resident store: a model is set up once per run, not per engine. Waits
  // for both slots' work; their scores of the old model are no longer valid.
  void set_model(const SearchProfile& profile, GpuKernelChoice choice);

  std::string device_name() const;
  int device() const;
  // Targets the Viterbi filter kernel of the current model runs at once (a warp each; the
  // warp kernels' figure for thread_per_target): a batch with fewer leaves most of the GPU
  // idle for the length of its longest target.
  int viterbi_wave_targets() const;
  // The kernels in use (msv_group_threads and msv_nodes_per_thread resolved: never 0;
  // jit true only where a specialised kernel runs).
  GpuKernelChoice kernel_choice() const;
  const GpuJitInfo& jit_info() const;

  // Copies the targets into the slot's pinned buffer, uploads them and starts MSV;
  // returns at once. `parallel`, when given, runs the copies (body(i) for i < n, in
  // chunks) on several threads. `blocks` (with a resident store) names the runs of targets
  // that are whole database blocks: a block kept in the store is read from there (not
  // copied, not uploaded); one that fits is kept after its upload. The targets' memory
  // may be reused after the call, except that of targets in `blocks`, which must stay
  // valid until the slot's next submit_msv (wait_canonical_forward may read it).
  using ParallelFor = std::function<void(std::size_t n, std::size_t chunk,
                                         const std::function<void(std::size_t)>& body)>;
  // With `null_nats` (one per target: null_score of its length; given even for no
  // targets) the launch is gated, as submit_msv_models's: the device also decides the MSV stage
  // with the model's `msv_pass_bits` (the cascade's msv_pass_bits) and only the targets that pass
  // come back (wait_msv_passes, model 0), not every score.
  void submit_msv(int slot, const GpuTarget* targets, std::size_t count,
                  const ParallelFor& parallel = {}, const GpuBlockSpan* blocks = nullptr,
                  std::size_t block_count = 0, const std::vector<float>* null_nats = nullptr,
                  float msv_pass_bits = 0);
  // Waits (sleeping) for the slot's ungated MSV and returns one score per target, in
  // order (valid until the slot's next submit).
  const std::vector<FilterScore>& wait_msv(int slot);
  // Starts the Viterbi filter on some of the slot's uploaded targets (indices into the
  // last submit_msv's list); the residues are already on the device.
  void submit_viterbi(int slot, const int* which, std::size_t count);
  // Waits for it and returns one score per index of `which`, in order.
  const std::vector<FilterScore>& wait_viterbi(int slot);
  // Starts the Forward parser on some of the slot's uploaded targets, as submit_viterbi
  // (it may run after or instead of the Viterbi filter).
  void submit_forward(int slot, const int* which, std::size_t count);
  // Waits for it and returns one raw Forward score (nats) per index of `which`, in order.
  const std::vector<float>& wait_forward(int slot);
  // Starts the canonical Forward (core/hmmsearch/forward_canonical.hpp) on some of the slot's
  // uploaded targets, as submit_forward.
  void submit_canonical_forward(int slot, const int* which, std::size_t count);
  // Waits for it and returns one canonical score (nats) per index of `which`, in order,
  // equal bit for bit to CanonicalForward::score of the target: the host finishes each
  // score (the logarithms, canonical_forward_finish) and computes a target rescaled more
  // than kCanonicalGpuRescalings times with forward_canonical. Valid until the slot's next
  // submit_msv (the slot's host copy of the residues, or for a target read from the
  // resident store the caller's residues, serves those targets).
  const std::vector<float>& wait_canonical_forward(int slot);
  GpuKernelTimes kernel_times(int slot) const;

  // ---- the MSV and Viterbi filters of many models at once (a pass's models on a small
  // batch) ----
  // One model of a set: its profile (which must outlive the set) and the MSV kernel shape
  // it runs (msv_group_threads and msv_nodes_per_thread, resolved as for an engine of it;
  // msv_exact_only sends all its targets to the exact kernel).
  struct SetModel {
    const SearchProfile* profile = nullptr;
    GpuKernelChoice choice;
    // The MSV stage's pass test for a gated submit_msv_models: the smallest sequence score
    // that passes (MsvGate::min_bits; the cascade's msv_pass_bits).
    float msv_pass_bits = -std::numeric_limits<float>::infinity();
  };
  // Uploads the MSV and Viterbi score systems of `models` (the model set), kept beside the
  // engine's own model (submit_msv, submit_viterbi and the Forward kernels still run that
  // one) until the next call. Waits for both slots.
  void set_models(const SetModel* models, std::size_t count);
  std::size_t set_model_count() const;
  // As submit_msv (the targets are uploaded, or read from the resident store, the same
  // way, and stay the slot's uploaded targets), but every model of the set runs against
  // every target: one launch of the fast kernel per kernel shape among the models, then one
  // launch of the exact kernel for the targets of every model that need it.
  // With `null_nats` (one per target: null_score of its length; given even for no
  // targets) the launch is gated: the
  // device also takes the MSV stage's decision on every pair (msv_gate_passes with the
  // model's SetModel::msv_pass_bits) and only the pairs that pass come back
  // (wait_msv_passes), not every score.
  void submit_msv_models(int slot, const GpuTarget* targets, std::size_t count,
                         const ParallelFor& parallel = {}, const GpuBlockSpan* blocks = nullptr,
                         std::size_t block_count = 0,
                         const std::vector<float>* null_nats = nullptr);
  // Waits for an ungated submit_msv_models and returns the scores, model by model: score
  // [m * count + i] is model m's for target i, equal to the engine's msv() for that model
  // (valid until the slot's next submit). The slot's kernel_times cover the whole set.
  const std::vector<FilterScore>& wait_msv_models(int slot);
  // Waits for a gated submit_msv or submit_msv_models and returns the pairs that passed
  // the MSV stage, by model then target, with their scores as wait_msv_models would give
  // them: exactly the pairs that decide_after_msv does not stop (never an empty target).
  // Each comes with its bias filter's composition score, computed on the device:
  // bias_composition_score of the pair bit for bit, or NaN where the device could not be
  // sure of rounding a logarithm as the host does (at most about one pair in 30,000 of 450
  // residues: the host computes those). Valid until the slot's next submit.
  struct MsvPass {
    int model = 0, target = 0;
    FilterScore score;
    float bias_composition = std::numeric_limits<float>::quiet_NaN();
  };
  const std::vector<MsvPass>& wait_msv_passes(int slot);
  // The Viterbi filter of pairs (model of the set, target of the slot's last submit), a warp
  // per pair: one launch of the strip kernel for each strip width among the models (up to
  // 1,024 nodes) and one of the warp kernel for longer models, longest targets first in each.
  struct SetItem {
    int model = 0;
    int target = 0;
  };
  void submit_viterbi_models(int slot, const SetItem* items, std::size_t count);
  // Pairs that launch runs at once (a warp each): a pair of L residues and M nodes holds its
  // warp for about L * ceil(M / 32) steps.
  int set_viterbi_wave_targets() const;
  // Waits for it and returns one score per item, in order, equal to the engine's viterbi()
  // for that model (valid until the slot's next submit).
  const std::vector<FilterScore>& wait_viterbi_models(int slot);

  // Synchronous conveniences (slot 0), for tests and benchmarks.
  std::vector<FilterScore> msv(const std::vector<GpuTarget>& targets);
  std::vector<FilterScore> viterbi(const std::vector<GpuTarget>& targets);
  std::vector<float> forward(const std::vector<GpuTarget>& targets);
  std::vector<float> canonical_forward(const std::vector<GpuTarget>& targets);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace duet::device
