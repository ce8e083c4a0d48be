// The variant table's helpers, the ISA dispatcher and SimdFilterKernels; the contract is
// in simd_kernels.hpp. The raw results of the ISA kernels become scores here, with the
// references' own expressions, so the scores are the same bit for bit.
#include "host_simd/hmmsearch/simd_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "core/hmmsearch/msv_gate.hpp"
#include "core/hmmsearch/statistics.hpp"
#include "host_simd/hmmsearch/striped_profiles.hpp"

namespace duet::simd {

struct StripedProfiles {
  const IsaKernels* kernels = nullptr;
  StripedSsvProfile ssv;
  StripedMsvProfile msv;
  StripedViterbiProfile viterbi;
  StripedForwardProfile forward;
  StripedForwardProfile canonical;  // 4 lanes: the packed canonical Forward
};

struct DpRows {
  AlignedBuffer<std::uint8_t> msv;
  AlignedBuffer<std::int16_t> viterbi;
  AlignedBuffer<float> forward;
  AlignedBuffer<float> canonical;
};

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

const IsaKernels* isa_kernels_of(Isa isa) {
  switch (isa) {
    case Isa::sse41:
      return &sse41::isa_kernels();
    case Isa::avx2:
      return &avx2::isa_kernels();
    case Isa::avx512:
      return &avx512::isa_kernels();
    case Isa::scalar:
      break;
  }
  return nullptr;
}

// The packed canonical Forward and Backward kernels run one target per 128-bit group, so
// `count` targets leave groups of a wide vector idle: they take the narrowest of `isa` and
// the ISAs below it with a group for each target (the kernels give the same bits on every
// ISA). A 512-bit operation costs two 256-bit ones on the Xeons measured (bench/RESULTS.md,
// "Many models on the CPU: the kernels' floor on this hardware"), so idle groups are time
// lost.
const IsaKernels* packed_kernels_for(Isa isa, std::size_t count) {
  for (const Isa narrower : {Isa::sse41, Isa::avx2}) {
    if (narrower >= isa) break;
    const IsaKernels* kernels = isa_kernels_of(narrower);
    if (count <= static_cast<std::size_t>(kernels->vector_bytes / 16)) return kernels;
  }
  return isa_kernels_of(isa);
}

// SSV's shortcut can be conclusive only when an overflow implies a possible J state.
bool ssv_applicable(const MsvScores& msv, int tjb) {
  return tjb + msv.tbm + msv.tec + msv.bias < 127;
}

// ssv_decision (core/hmmsearch/reference_kernels.hpp) ends SSV from the largest diagonal cell.

FilterScore msv_score(const MsvScores& msv, int tjb, MsvRaw raw) {
  if (raw.overflow) return {kInf, true};
  return {msv_nats_of_xj(raw.xJ, tjb, msv.base, msv.scale), false};
}

FilterScore viterbi_score(const ViterbiScores& vit, int ncj_move, ViterbiRaw raw) {
  if (raw.overflow) return {kInf, true};
  if (raw.xC <= -32768) return {-kInf, false};
  float score =
      static_cast<float>(raw.xC) + static_cast<float>(ncj_move) - static_cast<float>(vit.base);
  score /= vit.scale;
  score -= 3.0f;
  return {score, false};
}

}  // namespace

std::string_view kernel_name(Kernel kernel) {
  switch (kernel) {
    case Kernel::ssv:
      return "ssv";
    case Kernel::msv:
      return "msv";
    case Kernel::viterbi:
      return "viterbi";
    case Kernel::forward:
      return "forward";
  }
  return "?";
}

const Variant& variant(Kernel kernel, Isa isa) {
  for (const Variant& v : kVariants) {
    if (v.kernel == kernel && v.isa == isa) return v;
  }
  throw UsageError("no " + std::string(kernel_name(kernel)) + " kernel for " +
                   std::string(isa_name(isa)));
}

int vector_bytes(Isa isa) {
  const IsaKernels* kernels = isa_kernels_of(isa);
  return kernels != nullptr ? kernels->vector_bytes : 1;
}

Isa best_isa() {
  static const Isa chosen = [] {
    for (Isa isa : kIsaPreference) {
      if (cpu_supports(isa)) return isa;
    }
    return Isa::scalar;
  }();
  return chosen;
}

Isa isa_from_name(std::string_view name) {
  if (name == "auto") return best_isa();
  for (Isa isa : kIsaPreference) {
    if (name != isa_name(isa)) continue;
    if (!cpu_supports(isa)) {
      throw UsageError("the ISA '" + std::string(name) +
                       "' is not supported by this CPU (best available: " +
                       std::string(isa_name(best_isa())) + ")");
    }
    return isa;
  }
  throw UsageError("unknown ISA '" + std::string(name) +
                   "' (expected auto, scalar, sse4.1, avx2 or avx512)");
}

float forward_margin(float simd_score) {
  return duet::forward_margin(simd_score, kForwardAbsoluteTolerance, kForwardRelativeTolerance);
}

// ---- SimdFilterKernels ----

std::shared_ptr<const StripedProfiles> stripe_profiles(const SearchProfile& profile, Isa isa) {
  if (!cpu_supports(isa)) {
    throw UsageError("the ISA '" + std::string(isa_name(isa)) + "' is not supported by this CPU");
  }
  const IsaKernels* kernels = isa_kernels_of(isa);
  if (kernels == nullptr) return nullptr;  // scalar: the references need nothing more
  auto striped = std::make_shared<StripedProfiles>();
  striped->kernels = kernels;
  striped->ssv =
      stripe_ssv_steps(profile.msv, variant(Kernel::ssv, isa).lanes, kernels->ssv_registers - 1);
  striped->msv = stripe_msv_scores(profile.msv, variant(Kernel::msv, isa).lanes);
  striped->viterbi = stripe_viterbi_scores(profile.viterbi, variant(Kernel::viterbi, isa).lanes);
  striped->forward = stripe_forward_scores(profile.forward, variant(Kernel::forward, isa).lanes);
  striped->canonical = stripe_forward_scores(profile.forward, kCanonicalForwardLanes);
  return striped;
}

SimdFilterKernels::SimdFilterKernels(const SearchProfile& profile, Isa isa, ForwardGate gate)
    : SimdFilterKernels(profile, isa, gate, stripe_profiles(profile, isa)) {}

SimdFilterKernels::SimdFilterKernels(const SearchProfile& profile, Isa isa, ForwardGate gate,
                                     std::shared_ptr<const StripedProfiles> striped)
    : profile_(profile), isa_(isa), gate_(gate), striped_(std::move(striped)) {
  if (!cpu_supports(isa)) {
    throw UsageError("the ISA '" + std::string(isa_name(isa)) + "' is not supported by this CPU");
  }
  if (striped_ ? striped_->kernels != isa_kernels_of(isa) : isa_kernels_of(isa) != nullptr)
    throw std::invalid_argument("SimdFilterKernels: striped profiles of another ISA");
  if (!striped_) return;  // scalar
  rows_ = std::make_unique<DpRows>();
  rows_->msv.resize(static_cast<std::size_t>(striped_->msv.Q) * striped_->msv.lanes);
  rows_->viterbi.resize(3 * static_cast<std::size_t>(striped_->viterbi.Q) *
                        striped_->viterbi.lanes);
  rows_->forward.resize(3 * static_cast<std::size_t>(striped_->forward.Q) *
                        striped_->forward.lanes);
  rows_->canonical.resize(3 * static_cast<std::size_t>(striped_->canonical.Q) *
                          static_cast<std::size_t>(striped_->kernels->vector_bytes / 4));
}

CanonicalForward& SimdFilterKernels::canonical() {
  // The canonical Forward is the SSE4.1 parser itself; other ISAs recompute it in core.
  if (!canonical_) canonical_ = std::make_unique<CanonicalForward>(profile_.forward);
  return *canonical_;
}

SimdFilterKernels::~SimdFilterKernels() = default;

bool SimdFilterKernels::ssv_only(const Residue* dsq, int L, FilterScore& score) {
  if (isa_ == Isa::scalar) return ssv_filter_reference(profile_.msv, dsq, L, score);
  const int tjb = profile_.msv.tjb(L);
  if (!ssv_applicable(profile_.msv, tjb)) return false;
  const int xE = striped_->kernels->ssv_max(striped_->ssv.view(), dsq, L);
  return ssv_decision(profile_.msv, tjb, xE, score);
}

FilterScore SimdFilterKernels::msv_only(const Residue* dsq, int L) {
  if (isa_ == Isa::scalar) return msv_filter_reference(profile_.msv, dsq, L);
  const int tjb = profile_.msv.tjb(L);
  return msv_score(profile_.msv, tjb,
                   striped_->kernels->msv(striped_->msv.view(), dsq, L, tjb, rows_->msv.data()));
}

FilterScore SimdFilterKernels::msv(const Residue* dsq, int L) {
  if (isa_ == Isa::scalar) return msv_filter_reference(profile_.msv, dsq, L);
  const int tjb = profile_.msv.tjb(L);
  if (ssv_applicable(profile_.msv, tjb)) {
    // SSV's xE starts at the begin score (128). Only a diagonal that rises above it gives
    // MSV's score: when none does (L = 0, or tiny targets), MSV's best cell is lower.
    const int xE = striped_->kernels->ssv_max(striped_->ssv.view(), dsq, L);
    FilterScore score;
    if (xE > 128 && ssv_decision(profile_.msv, tjb, xE, score)) return score;
  }
  return msv_score(profile_.msv, tjb,
                   striped_->kernels->msv(striped_->msv.view(), dsq, L, tjb, rows_->msv.data()));
}

FilterScore SimdFilterKernels::viterbi(const Residue* dsq, int L) {
  if (isa_ == Isa::scalar) return viterbi_filter_reference(profile_.viterbi, dsq, L);
  const int ncj_move = profile_.viterbi.ncj_move(L);
  return viterbi_score(profile_.viterbi, ncj_move,
                       striped_->kernels->viterbi(striped_->viterbi.view(), dsq, L, ncj_move,
                                                  rows_->viterbi.data()));
}

float SimdFilterKernels::forward_simd(const Residue* dsq, int L) {
  if (isa_ == Isa::scalar) return forward_parser_reference(profile_.forward, dsq, L);
  const ForwardScores::Length ncj = profile_.forward.ncj(L);
  return ncj.score(striped_->kernels->forward(striped_->forward.view(), dsq, L, ncj.loop, ncj.move,
                                              rows_->forward.data()));
}

float SimdFilterKernels::forward(const Residue* dsq, int L) {
  if (isa_ != Isa::scalar && gate_.enabled) {
    const float fast = forward_simd(dsq, L);
    if (std::isfinite(fast)) {
      // The cascade's F3 test (run_cascade), on the SIMD score raised by the margin.
      const float null =
          gate_.bias_filter ? bias_filter_score(profile_.bias, dsq, L) : null_score(L);
      const float optimistic = fast + forward_margin(fast);
      const float bits = (optimistic - null) / static_cast<float>(kLog2);
      const double P = exponential_survival(bits, profile_.forward_tau, profile_.forward_lambda);
      if (P > gate_.F3) return fast;  // fails F3 whatever the exact score
    }
    if (isa_ == Isa::sse41) {  // the 4-lane parser's score is the canonical one
      ++forward_canonical_calls_;
      return fast;
    }
  }
  ++forward_canonical_calls_;
  if (isa_ == Isa::sse41) return forward_simd(dsq, L);
  return canonical().score(dsq, L);
}

void SimdFilterKernels::forward_many(std::span<const ForwardTarget> targets,
                                     std::span<float> scores) {
  forward_canonical_many(targets, scores);
}

void SimdFilterKernels::forward_canonical_many(std::span<const ForwardTarget> targets,
                                               std::span<float> scores) {
  const std::size_t count = targets.size();
  forward_canonical_calls_ += static_cast<std::int64_t>(count);
  if (isa_ == Isa::scalar) {
    for (std::size_t j = 0; j < count; ++j)
      scores[j] = canonical().score(targets[j].dsq, targets[j].L, targets[j].states);
    return;
  }
  // Longest first: a group that finishes early takes a shorter target, so the groups
  // end close together.
  canonical_order_.resize(count);
  std::iota(canonical_order_.begin(), canonical_order_.end(), std::size_t{0});
  std::stable_sort(canonical_order_.begin(), canonical_order_.end(),
                   [&](std::size_t a, std::size_t b) { return targets[a].L > targets[b].L; });
  canonical_targets_.resize(count);
  canonical_scores_.resize(count);
  for (std::size_t j = 0; j < count; ++j) {
    const ForwardTarget& t = targets[canonical_order_[j]];
    const ForwardScores::Length ncj = profile_.forward.ncj(t.L);
    canonical_targets_[j] = {t.dsq, t.L, ncj.loop, ncj.move, t.states};
  }
  packed_kernels_for(isa_, count)
      ->forward_canonical_packed(striped_->canonical.view(), canonical_targets_.data(),
                                 static_cast<int>(count), canonical_scores_.data(),
                                 rows_->canonical.data(), &canonical_rescaled_rows_);
  for (std::size_t j = 0; j < count; ++j) {
    const ForwardTarget& t = targets[canonical_order_[j]];
    scores[canonical_order_[j]] = profile_.forward.ncj(t.L).score(canonical_scores_[j]);
  }
}

void SimdFilterKernels::backward_parsers(std::span<const BackwardParserTarget> targets) {
  if (isa_ == Isa::scalar) {
    if (!backward_profile_) backward_profile_ = std::make_unique<DpProfile>(profile_.forward);
    for (const BackwardParserTarget& t : targets)
      backward_parser_states(*backward_profile_, t.dsq, t.L, t.forward_states, t.states,
                             *t.own_scales);
    return;
  }
  backward_targets_.clear();
  for (const BackwardParserTarget& t : targets) {
    const SpecialMoves moves = SpecialMoves::multihit(profile_.forward, t.L);
    backward_targets_.push_back(
        {t.dsq, t.L, moves.n_loop, moves.n_move, t.forward_states, t.states, t.own_scales});
  }
  std::stable_sort(backward_targets_.begin(), backward_targets_.end(),
                   [](const BackwardTarget& a, const BackwardTarget& b) { return a.L > b.L; });
  const ForwardStripedView view = striped_->canonical.view();
  const IsaKernels* kernels = packed_kernels_for(isa_, backward_targets_.size());
  const std::size_t rows = 6 * static_cast<std::size_t>(view.Q) * kernels->vector_bytes / 4;
  if (backward_rows_.size() < rows) backward_rows_.resize(rows);
  kernels->backward_parser_packed(view, backward_targets_.data(),
                                  static_cast<int>(backward_targets_.size()),
                                  backward_rows_.data());
}

}  // namespace duet::simd
