// The hmmsearch filter cascade for one target, with HMMER 3.3.2's rules: MSV (P <= F1),
// bias filter (P <= F1 again, on the composition-corrected MSV score), Viterbi filter
// (P <= F2; skipped when the MSV P-value already meets F2), Forward (P <= F3).
// Kernels are injected (FilterKernels) so that SIMD and GPU implementations run the same
// cascade; bias filter, null model and statistics are the scalar ones here.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/forward_canonical.hpp"
#include "core/profile.hpp"
#include "core/reference_kernels.hpp"

namespace duet {

struct CascadeSettings {
  double F1 = 0.02, F2 = 1e-3, F3 = 1e-5;
  bool bias_filter = true;
};

// Where a target stopped: the stage that rejected it, or `passed` (every filter passed).
enum class Stage : std::uint8_t {
  empty = 0,
  msv = 1,
  bias = 2,
  viterbi = 3,
  forward = 4,
  passed = 5
};

struct TargetScores {
  static constexpr float kNotComputed = std::numeric_limits<float>::quiet_NaN();
  Stage stage = Stage::empty;
  float null_nats = 0;                // null model score
  float filter_nats = 0;              // null score used by later stages (bias filter or null)
  float msv_bits = kNotComputed;      // MSV score, null-corrected (bits)
  float viterbi_bits = kNotComputed;  // NaN when not run (rejected before, or skipped)
  float forward_bits = kNotComputed;  // NaN unless the target passed every filter
  double pvalue = 1.0;       // P-value of the last stage run (NaN when Forward rejected it)
  bool forward_run = false;  // the Forward stage has run (see needs_forward)
};

// One target of a Forward stage run for several targets at once.
struct ForwardTarget {
  const Residue* dsq = nullptr;
  int L = 0;
};

// The kernels of one stage set, for one model; one object per worker thread.
class FilterKernels {
 public:
  virtual ~FilterKernels() = default;
  virtual FilterScore msv(const Residue* dsq, int L) = 0;
  virtual FilterScore viterbi(const Residue* dsq, int L) = 0;
  // Forward score in nats: the canonical score (forward_canonical.hpp) for every target
  // that passes F3; a faster, inexact score may decide a rejection.
  virtual float forward(const Residue* dsq, int L) = 0;
  // The Forward scores of several targets, scores[j] of targets[j], each under
  // forward()'s contract; a kernel may compute them together (the default calls
  // forward() on each in turn).
  virtual void forward_many(std::span<const ForwardTarget> targets, std::span<float> scores) {
    for (std::size_t j = 0; j < targets.size(); ++j)
      scores[j] = forward(targets[j].dsq, targets[j].L);
  }
  // The bias filter's null score (nats): bias_filter_score unless a caller already has it.
  virtual float bias(const BiasFilterModel& model, const Residue* dsq, int L) {
    return bias_filter_score(model, dsq, L);
  }
};

// The scalar references as a FilterKernels, with the canonical Forward (which the
// textbook forward_parser_reference approximates to a tolerance only).
class ReferenceKernels final : public FilterKernels {
 public:
  explicit ReferenceKernels(const SearchProfile& profile)
      : profile_(profile), forward_(profile.forward) {}
  FilterScore msv(const Residue* dsq, int L) override {
    return msv_filter_reference(profile_.msv, dsq, L);
  }
  FilterScore viterbi(const Residue* dsq, int L) override {
    return viterbi_filter_reference(profile_.viterbi, dsq, L);
  }
  float forward(const Residue* dsq, int L) override { return forward_.score(dsq, L); }

 private:
  const SearchProfile& profile_;
  CanonicalForward forward_;
};

// The whole cascade for one target.
TargetScores run_cascade(const SearchProfile& profile, const CascadeSettings& settings,
                         FilterKernels& kernels, const Residue* dsq, int L);

// The cascade split where a device hands over to the CPU: run_filters stops before the
// Forward stage (a target that reaches it has stage == Stage::forward and no Forward
// score yet: `needs_forward`); run_forward_stage finishes it. Together they give exactly
// what run_cascade gives.
TargetScores run_filters(const SearchProfile& profile, const CascadeSettings& settings,
                         FilterKernels& kernels, const Residue* dsq, int L);
inline bool needs_forward(const TargetScores& t) {
  return t.stage == Stage::forward && !t.forward_run;
}
void run_forward_stage(const SearchProfile& profile, const CascadeSettings& settings,
                       FilterKernels& kernels, const Residue* dsq, int L, TargetScores& target);
// run_forward_stage for several targets, their scores computed together
// (FilterKernels::forward_many): targets[j] finishes *outs[j], exactly as
// run_forward_stage would.
void run_forward_stages(const SearchProfile& profile, const CascadeSettings& settings,
                        FilterKernels& kernels, std::span<const ForwardTarget> targets,
                        std::span<TargetScores* const> outs);

// A target's kernels as run_with_bias_together's two passes see them. First pass
// (bias_score null): MSV from `kernels`, its score kept in msv_score; the bias filter
// answered with +infinity and recorded in wants_bias. Second pass (the caller sets
// msv_score to the first pass' and bias_score): that MSV score, that bias score, the
// Viterbi filter from `kernels`. Forward is not a filter's: forward() throws.
class MsvThenBias final : public FilterKernels {
 public:
  explicit MsvThenBias(FilterKernels& kernels) : kernels_(kernels) {}
  FilterScore msv_score{};
  bool wants_bias = false;
  const float* bias_score = nullptr;
  FilterScore msv(const Residue* dsq, int L) override {
    if (bias_score == nullptr) msv_score = kernels_.msv(dsq, L);
    return msv_score;
  }
  float bias(const BiasFilterModel&, const Residue*, int) override {
    if (bias_score != nullptr) return *bias_score;
    wants_bias = true;
    return std::numeric_limits<float>::infinity();
  }
  FilterScore viterbi(const Residue* dsq, int L) override {
    if (bias_score == nullptr) throw std::logic_error("MsvThenBias: Viterbi before the bias");
    return kernels_.viterbi(dsq, L);
  }
  float forward(const Residue*, int) override {
    throw std::logic_error("MsvThenBias: Forward is the Forward stage's");
  }

 private:
  FilterKernels& kernels_;
};

// A target's kernels when its MSV score was computed elsewhere (a GPU) and its Viterbi
// filter may run elsewhere or later: MSV answers msv_score, the bias filter runs here (its
// score is then the result's filter_nats), and a Viterbi filter asked for is recorded in
// viterbi_requested and answered with an overflow. run_filters' result is final only
// when !viterbi_requested; otherwise the target resumes with MsvThenBias (msv_score, the
// result's filter_nats as the bias score) and the real Viterbi filter. Forward throws.
class StopBeforeViterbi final : public FilterKernels {
 public:
  explicit StopBeforeViterbi(FilterScore msv) : msv_score(msv) {}
  FilterScore msv_score;
  bool viterbi_requested = false;
  FilterScore msv(const Residue*, int) override { return msv_score; }
  FilterScore viterbi(const Residue*, int) override {
    viterbi_requested = true;
    return {std::numeric_limits<float>::infinity(), true};
  }
  float forward(const Residue*, int) override {
    throw std::logic_error("StopBeforeViterbi: Forward is the Forward stage's");
  }
};

// Several targets' cascades with their bias filters computed together (bias_filter_scores,
// bit for bit bias_filter_score, several targets interleaved). run(i, bias) runs target i's
// cascade: with bias == nullptr (the first pass) its bias filter must give +infinity and
// run must return whether the target asked for it, which stops the target there with a
// P-value of 1; with a score, its bias filter gives *bias (the second pass, only for the
// targets that asked). That stop is a rejection only when F1 < 1 with the bias filter on:
// callers use this when bias_together_applies, else run every target once with its own
// bias filter.
inline bool bias_together_applies(const CascadeSettings& settings) {
  return settings.bias_filter && settings.F1 < 1.0;
}

template <class Run>
void run_with_bias_together(const BiasFilterModel& model, std::size_t n, const Residue* const* dsq,
                            const int* L, Run&& run) {
  std::vector<std::size_t> asked;
  std::vector<const Residue*> asked_dsq;
  std::vector<int> asked_L;
  for (std::size_t i = 0; i < n; ++i) {
    if (!run(i, static_cast<const float*>(nullptr))) continue;
    asked.push_back(i);
    asked_dsq.push_back(dsq[i]);
    asked_L.push_back(L[i]);
  }
  std::vector<float> bias(asked.size());
  bias_filter_scores(model, asked_dsq.data(), asked_L.data(), asked.size(), bias.data());
  for (std::size_t j = 0; j < asked.size(); ++j) run(asked[j], &bias[j]);
}

// The margin (nats) added to an inexact Forward score (a SIMD or GPU parser known to be
// within absolute_tolerance + relative_tolerance * |score| of forward_parser_reference)
// before the F3 test that may reject a target without the canonical score: ten times the
// tolerance, plus 0.01 nats.
inline float forward_margin(float score, double absolute_tolerance, double relative_tolerance) {
  return static_cast<float>(0.01 +
                            10.0 * (absolute_tolerance + relative_tolerance * std::fabs(score)));
}

// Forward P-value of a bit score, and E-value for a search space of Z targets.
double forward_pvalue(const SearchProfile& profile, double bits);

}  // namespace duet
