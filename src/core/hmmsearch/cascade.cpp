// run_cascade: see cascade.hpp; follows p7_Pipeline() of HMMER 3.3.2 up to the Forward
// filter.
#include "core/hmmsearch/cascade.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/hmmsearch/length_terms.hpp"
#include "core/hmmsearch/msv_gate.hpp"
#include "core/hmmsearch/statistics.hpp"

namespace duet {

double forward_pvalue(const SearchProfile& profile, double bits) {
  return std::exp(exponential_log_survival(bits, profile.forward_tau, profile.forward_lambda));
}

// The MSV score in bits below which a target fails F1 beyond doubt: gumbel_survival(x) >
// F1 for every x below it, with no P-value computed. A many-model search rejects almost
// every (model, target) pair here, and the P-value costs two exponentials. The score
// where the survival function equals F1 is mu - ln(-ln(1 - F1)) / lambda; the margin
// below it (0.01 bits and a millionth of the score) moves the survival function by about
// lambda / 100 of its value, orders of magnitude more than the rounding of either side, so
// a pair below it is one that the P-value rejects too (tests/core_reference_test.cpp
// checks this at the boundary). Pairs at or above it get the P-value as before.
// -infinity where nothing can be rejected so (F1 at or above 1, or a degenerate lambda).
// Kept per thread for the last model and F1: a worker or host loop runs many targets
// against one model in turn.
double certain_msv_reject_below(const SearchProfile& profile, double F1) {
  struct Last {
    double mu = 0, lambda = 0, F1 = -1, below = 0;
  };
  thread_local Last last;
  if (last.mu == profile.msv_mu && last.lambda == profile.msv_lambda && last.F1 == F1)
    return last.below;
  double below = -std::numeric_limits<double>::infinity();
  if (F1 > 0.0 && F1 < 1.0 && profile.msv_lambda > 0.0 && std::isfinite(profile.msv_mu)) {
    const double edge = profile.msv_mu - std::log(-std::log1p(-F1)) / profile.msv_lambda;
    if (std::isfinite(edge)) below = edge - (0.01 + 1e-6 * std::fabs(edge));
  }
  last = {profile.msv_mu, profile.msv_lambda, F1, below};
  return below;
}

namespace {

// The MSV stage's test of a sequence score (bits) against F1, and its P-value where
// computed. Rejected without a P-value below certain_msv_reject_below (no record keeps a
// target that failed MSV).
bool msv_passes(const SearchProfile& profile, double F1, float seq_score, double& P) {
  if (seq_score < certain_msv_reject_below(profile, F1)) return false;
  P = gumbel_survival(seq_score, profile.msv_mu, profile.msv_lambda);
  return !(P > F1);
}

// After the bias filter (or without one): the Viterbi filter, unless the MSV P-value
// already meets its threshold.
NextStage viterbi_or_forward(const CascadeSettings& settings, double P, TargetScores& out) {
  out.stage = Stage::viterbi;
  if (P > settings.F2) return NextStage::viterbi;
  out.stage = Stage::forward;
  return NextStage::forward;
}

}  // namespace

NextStage decide_after_msv(const SearchProfile& profile, const CascadeSettings& settings, int L,
                           FilterScore& msv, TargetScores& out) {
  out = TargetScores{};
  if (L == 0) return NextStage::none;  // HMMER skips empty targets silently
  // HMMER's MSV stage runs SSV first: its begin score floors the MSV score.
  float floor_nats;
  if (!msv.overflow && msv_ssv_floor(profile.msv, L, floor_nats))
    msv.nats = std::max(msv.nats, floor_nats);
  const float nullsc = null_score(L);
  out.null_nats = nullsc;
  const float seq_score = msv_sequence_bits(msv.nats, nullsc);
  out.msv_bits = seq_score;
  out.stage = Stage::msv;
  double P = 1;  // not computed where the score is rejected without it
  const bool passes = msv_passes(profile, settings.F1, seq_score, P);
  out.pvalue = P;
  if (!passes) return NextStage::none;
  out.stage = Stage::bias;
  if (settings.bias_filter) return NextStage::bias;
  out.filter_nats = nullsc;
  return viterbi_or_forward(settings, P, out);
}

float msv_pass_bits(const SearchProfile& profile, const CascadeSettings& settings) {
  const auto passes = [&](float bits) {
    double P = 1;
    return msv_passes(profile, settings.F1, bits, P);
  };
  constexpr float kInfinity = std::numeric_limits<float>::infinity();
  if (passes(-kInfinity)) return -kInfinity;
  if (!passes(std::numeric_limits<float>::max())) return kInfinity;
  // Floats in order as integers: negative ones from -infinity up, then the others.
  const auto key = [](float f) {
    const auto u = std::bit_cast<std::uint32_t>(f);
    return (u & 0x80000000u) != 0 ? ~u : u | 0x80000000u;
  };
  const auto from_key = [](std::uint32_t k) {
    return std::bit_cast<float>((k & 0x80000000u) != 0 ? k & 0x7fffffffu : ~k);
  };
  // Bisection: lo fails, hi passes.
  std::uint32_t lo = key(-kInfinity), hi = key(std::numeric_limits<float>::max());
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    (passes(from_key(mid)) ? hi : lo) = mid;
  }
  return from_key(hi);
}

NextStage decide_after_bias(const SearchProfile& profile, const CascadeSettings& settings,
                            float msv_nats, float bias_nats, TargetScores& out) {
  // The MSV score against a null that may absorb biased composition.
  const float seq_score = (msv_nats - bias_nats) / static_cast<float>(kLog2);
  const double P = gumbel_survival(seq_score, profile.msv_mu, profile.msv_lambda);
  out.pvalue = P;
  if (P > settings.F1) return NextStage::none;
  out.filter_nats = bias_nats;
  return viterbi_or_forward(settings, P, out);
}

NextStage decide_after_viterbi(const SearchProfile& profile, const CascadeSettings& settings,
                               FilterScore viterbi, TargetScores& out) {
  const float seq_score = (viterbi.nats - out.filter_nats) / static_cast<float>(kLog2);
  out.viterbi_bits = seq_score;
  const double P = gumbel_survival(seq_score, profile.viterbi_mu, profile.viterbi_lambda);
  out.pvalue = P;
  if (P > settings.F2) return NextStage::none;
  out.stage = Stage::forward;
  return NextStage::forward;
}

void decide_after_forward(const SearchProfile& profile, const CascadeSettings& settings,
                          float forward_nats, TargetScores& out) {
  out.forward_run = true;
  const float seq_score = (forward_nats - out.filter_nats) / static_cast<float>(kLog2);
  const double P = exponential_survival(seq_score, profile.forward_tau, profile.forward_lambda);
  if (P > settings.F3) {
    // Rejected. A fast kernel may have decided this with a score that is not the
    // canonical one, so no Forward score or P-value is kept for rejected targets:
    // results stay identical whatever kernel or device ran the stage.
    out.forward_bits = TargetScores::kNotComputed;
    out.pvalue = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  // The Forward score against the plain null model; domain definition corrects it for
  // null2 (domain_definition.hpp).
  out.forward_nats = forward_nats;
  out.forward_bits = (forward_nats - out.null_nats) / static_cast<float>(kLog2);
  out.stage = Stage::passed;
  out.pvalue = forward_pvalue(profile, out.forward_bits);
}

NextStage decide_through_bias(const SearchProfile& profile, const CascadeSettings& settings,
                              const Residue* dsq, int L, FilterScore msv, TargetScores& out) {
  const NextStage next = decide_after_msv(profile, settings, L, msv, out);
  if (next != NextStage::bias) return next;
  return decide_after_bias(profile, settings, msv.nats, bias_filter_score(profile.bias, dsq, L),
                           out);
}

void decide_through_bias_together(const SearchProfile& profile, const CascadeSettings& settings,
                                  std::size_t n, const Residue* const* dsq, const int* L,
                                  const FilterScore* msv, TargetScores* out, NextStage* next,
                                  const float* composition) {
  std::vector<FilterScore> floored(msv, msv + n);  // as decide_after_msv leaves them
  std::vector<std::size_t> at_bias;
  std::vector<const Residue*> bias_dsq;
  std::vector<int> bias_L;
  for (std::size_t i = 0; i < n; ++i) {
    next[i] = decide_after_msv(profile, settings, L[i], floored[i], out[i]);
    if (next[i] != NextStage::bias) continue;
    if (composition != nullptr && !std::isnan(composition[i])) {
      next[i] = decide_after_bias(profile, settings, floored[i].nats,
                                  bias_filter_with_length(composition[i], L[i]), out[i]);
      continue;
    }
    at_bias.push_back(i);
    bias_dsq.push_back(dsq[i]);
    bias_L.push_back(L[i]);
  }
  std::vector<float> bias(at_bias.size());
  bias_filter_scores(profile.bias, bias_dsq.data(), bias_L.data(), at_bias.size(), bias.data());
  for (std::size_t j = 0; j < at_bias.size(); ++j) {
    const std::size_t i = at_bias[j];
    next[i] = decide_after_bias(profile, settings, floored[i].nats, bias[j], out[i]);
  }
}

TargetScores run_filters(const SearchProfile& profile, const CascadeSettings& settings,
                         FilterKernels& kernels, const Residue* dsq, int L) {
  TargetScores out;
  if (L == 0) return out;
  const NextStage next = decide_through_bias(profile, settings, dsq, L, kernels.msv(dsq, L), out);
  if (next == NextStage::viterbi)
    decide_after_viterbi(profile, settings, kernels.viterbi(dsq, L), out);
  return out;
}

void ReferenceKernels::backward_parsers(std::span<const BackwardParserTarget> targets) {
  if (!backward_) backward_ = std::make_unique<DpProfile>(profile_.forward);
  for (const BackwardParserTarget& t : targets)
    backward_parser_states(*backward_, t.dsq, t.L, t.forward_states, t.states, *t.own_scales);
}

void run_forward_stage(const SearchProfile& profile, const CascadeSettings& settings,
                       FilterKernels& kernels, const Residue* dsq, int L, TargetScores& out) {
  decide_after_forward(profile, settings, kernels.forward(dsq, L), out);
}

void run_forward_stages(const SearchProfile& profile, const CascadeSettings& settings,
                        FilterKernels& kernels, std::span<const ForwardTarget> targets,
                        std::span<TargetScores* const> outs) {
  std::vector<float> scores(targets.size());
  kernels.forward_many(targets, scores);
  for (std::size_t j = 0; j < targets.size(); ++j)
    decide_after_forward(profile, settings, scores[j], *outs[j]);
}

TargetScores run_cascade(const SearchProfile& profile, const CascadeSettings& settings,
                         FilterKernels& kernels, const Residue* dsq, int L) {
  TargetScores out = run_filters(profile, settings, kernels, dsq, L);
  if (out.stage == Stage::forward) run_forward_stage(profile, settings, kernels, dsq, L, out);
  return out;
}

void run_filters_together(const SearchProfile& profile, const CascadeSettings& settings,
                          FilterKernels& kernels, std::size_t n, const Residue* const* dsq,
                          const int* L, TargetScores* out) {
  std::vector<FilterScore> msv(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (L[i] > 0) msv[i] = kernels.msv(dsq[i], L[i]);
  }
  std::vector<NextStage> next(n);
  decide_through_bias_together(profile, settings, n, dsq, L, msv.data(), out, next.data());
  for (std::size_t i = 0; i < n; ++i) {
    if (next[i] == NextStage::viterbi)
      decide_after_viterbi(profile, settings, kernels.viterbi(dsq[i], L[i]), out[i]);
  }
}

}  // namespace duet
