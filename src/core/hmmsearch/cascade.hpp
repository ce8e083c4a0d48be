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
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/posterior_dp.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"

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
  float forward_nats = kNotComputed;  // the canonical Forward score of forward_bits
  // P-value of the last stage run: NaN when Forward rejected the target, and not computed
  // (1) for one MSV rejected below certain_msv_reject_below.
  double pvalue = 1.0;
  bool forward_run = false;  // the Forward stage has run (see needs_forward)
};

// One target of a Forward stage run for several targets at once, and where to write the
// canonical Forward's parser states of its rows 0..L (forward_canonical.hpp's
// kParserStates per row, for domain definition; null: not written).
struct ForwardTarget {
  const Residue* dsq = nullptr;
  int L = 0;
  float* states = nullptr;
};

// One target of domain definition's whole-target Backward parser (posterior_dp.hpp's
// backward_dp, multihit; L >= 1), from the canonical Forward's parser states of its rows:
// its own states go to `states` (forward_canonical.hpp's layout), and whether it took
// rescaling factors of its own to `own_scales`.
struct BackwardParserTarget {
  const Residue* dsq = nullptr;
  int L = 0;
  const float* forward_states = nullptr;
  float* states = nullptr;
  bool* own_scales = nullptr;
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
  // The canonical Forward scores of several targets, scores[j] of targets[j], and their
  // parser states where asked (ForwardTarget::states); a kernel may compute them together.
  virtual void forward_many(std::span<const ForwardTarget> targets, std::span<float> scores) = 0;
  // The Backward parsers of several targets, bit for bit backward_parser_states's; a
  // kernel may run them together.
  virtual void backward_parsers(std::span<const BackwardParserTarget> targets) = 0;
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
  void forward_many(std::span<const ForwardTarget> targets, std::span<float> scores) override {
    for (std::size_t j = 0; j < targets.size(); ++j)
      scores[j] = forward_.score(targets[j].dsq, targets[j].L, targets[j].states);
  }
  void backward_parsers(std::span<const BackwardParserTarget> targets) override;

 private:
  const SearchProfile& profile_;
  CanonicalForward forward_;
  std::unique_ptr<DpProfile> backward_;  // made on first use
};

// The cascade's decisions: pure functions of a target's scores, with HMMER 3.3.2's rules,
// so that a CPU worker, a GPU feeder's host work and the post stage make the same
// decisions on the same scores in the same order, whatever computed them. Each records
// the stage reached in `out` (stage, bits, P-value) and says which stage runs next
// (none: the target stopped, out.stage says where).
enum class NextStage : std::uint8_t { none, bias, viterbi, forward };
// First: the MSV filter's score `msv` (nats, as the kernel returns it) of a target of L
// residues; HMMER's SSV floor is applied to it here, in place, for decide_after_bias.
// Resets `out`; an empty target stops.
NextStage decide_after_msv(const SearchProfile& profile, const CascadeSettings& settings, int L,
                           FilterScore& msv, TargetScores& out);
// decide_after_msv, then the bias filter (bias_filter_score) and decide_after_bias where
// it runs: the decisions on an MSV score computed elsewhere (a GPU). Returns none,
// viterbi or forward.
NextStage decide_through_bias(const SearchProfile& profile, const CascadeSettings& settings,
                              const Residue* dsq, int L, FilterScore msv, TargetScores& out);
// decide_through_bias for n targets, the bias filters of those that reach it computed
// together (bias_filter_scores: four targets interleaved, the same scores): next[i] gets
// target i's next stage. `composition`, when given, may hold target i's
// bias_composition_score, computed elsewhere (a GPU): that target's filter is not run
// again (a NaN: it is).
void decide_through_bias_together(const SearchProfile& profile, const CascadeSettings& settings,
                                  std::size_t n, const Residue* const* dsq, const int* L,
                                  const FilterScore* msv, TargetScores* out, NextStage* next,
                                  const float* composition = nullptr);
// After NextStage::bias: the MSV score as decide_after_msv left it (nats) and the bias
// filter's null score (nats).
NextStage decide_after_bias(const SearchProfile& profile, const CascadeSettings& settings,
                            float msv_nats, float bias_nats, TargetScores& out);
// After NextStage::viterbi: the Viterbi filter's score.
NextStage decide_after_viterbi(const SearchProfile& profile, const CascadeSettings& settings,
                               FilterScore viterbi, TargetScores& out);
// After NextStage::forward (needs_forward): the Forward score (nats).
void decide_after_forward(const SearchProfile& profile, const CascadeSettings& settings,
                          float forward_nats, TargetScores& out);

// The whole cascade for one target: the kernels run and the decisions above.
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

// run_filters for n targets, the bias filters of those that reach it computed together
// (bias_filter_scores: bit for bit bias_filter_score, several targets interleaved), then
// the rest of their filters: out[i] is what run_filters gives for target i.
void run_filters_together(const SearchProfile& profile, const CascadeSettings& settings,
                          FilterKernels& kernels, std::size_t n, const Residue* const* dsq,
                          const int* L, TargetScores* out);

// The margin (nats) added to an inexact Forward score (a SIMD or GPU parser known to be
// within absolute_tolerance + relative_tolerance * |score| of forward_parser_reference)
// before the F3 test that may reject a target without the canonical score: ten times the
// tolerance, plus 0.01 nats.
inline float forward_margin(float score, double absolute_tolerance, double relative_tolerance) {
  return static_cast<float>(0.01 +
                            10.0 * (absolute_tolerance + relative_tolerance * std::fabs(score)));
}

// The MSV score (bits) below which a target fails the F1 threshold whatever the rounding
// of its P-value, so that the P-value is not computed (cascade.cpp says why it is safe);
// -infinity where no score is rejected so.
double certain_msv_reject_below(const SearchProfile& profile, double F1);

// The smallest float sequence score (bits, decide_after_msv's msv_bits) that the MSV
// stage passes with the profile and F1, found by bisection over the floats with the
// stage's own test: a device that compares a pair's score with it (MsvGate::min_bits,
// msv_gate.hpp) decides as decide_after_msv. The test is monotone in the score (the
// P-value is 1 - exp(-exp(-lambda (x - mu))), and near any F1 of use one float's step
// moves it far more than its rounding; tests/core_msv_gate_test.cpp checks floats on
// both sides of the boundary). -infinity where every score passes, +infinity where none
// does.
float msv_pass_bits(const SearchProfile& profile, const CascadeSettings& settings);

// Forward P-value of a bit score, and E-value for a search space of Z targets.
double forward_pvalue(const SearchProfile& profile, double bits);

}  // namespace duet
