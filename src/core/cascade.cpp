// run_cascade: see cascade.hpp; follows p7_Pipeline() of HMMER 3.3.2 up to the Forward
// filter.
#include "core/cascade.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/statistics.hpp"

namespace duet {

double forward_pvalue(const SearchProfile& profile, double bits) {
  return std::exp(exponential_log_survival(bits, profile.forward_tau, profile.forward_lambda));
}

TargetScores run_filters(const SearchProfile& profile, const CascadeSettings& settings,
                         FilterKernels& kernels, const Residue* dsq, int L) {
  TargetScores out;
  if (L == 0) return out;  // HMMER skips empty targets silently
  const float nullsc = null_score(L);
  out.null_nats = nullsc;

  // MSV filter.
  FilterScore msv = kernels.msv(dsq, L);
  // HMMER's MSV stage runs SSV first: its begin score floors the reported score.
  float floor_nats;
  if (!msv.overflow && msv_ssv_floor(profile.msv, L, floor_nats))
    msv.nats = std::max(msv.nats, floor_nats);
  float seq_score = (msv.nats - nullsc) / static_cast<float>(kLog2);
  out.msv_bits = seq_score;
  double P = gumbel_survival(seq_score, profile.msv_mu, profile.msv_lambda);
  out.pvalue = P;
  out.stage = Stage::msv;
  if (P > settings.F1) return out;

  // Bias (composition) filter: the MSV score against a null that may absorb biased
  // composition.
  float filtersc = nullsc;
  out.stage = Stage::bias;
  if (settings.bias_filter) {
    filtersc = kernels.bias(profile.bias, dsq, L);
    seq_score = (msv.nats - filtersc) / static_cast<float>(kLog2);
    P = gumbel_survival(seq_score, profile.msv_mu, profile.msv_lambda);
    out.pvalue = P;
    if (P > settings.F1) return out;
  }
  out.filter_nats = filtersc;

  // Viterbi filter, unless the MSV P-value already meets its threshold.
  out.stage = Stage::viterbi;
  if (P > settings.F2) {
    const FilterScore vit = kernels.viterbi(dsq, L);
    seq_score = (vit.nats - filtersc) / static_cast<float>(kLog2);
    out.viterbi_bits = seq_score;
    P = gumbel_survival(seq_score, profile.viterbi_mu, profile.viterbi_lambda);
    out.pvalue = P;
    if (P > settings.F2) return out;
  }

  out.stage = Stage::forward;  // Forward comes next (run_forward_stage)
  return out;
}

namespace {

// The F3 decision and what the target keeps, from its Forward score (nats).
void finish_forward_stage(const SearchProfile& profile, const CascadeSettings& settings,
                          float fwdsc, TargetScores& out) {
  out.forward_run = true;
  const float seq_score = (fwdsc - out.filter_nats) / static_cast<float>(kLog2);
  const double P = exponential_survival(seq_score, profile.forward_tau, profile.forward_lambda);
  if (P > settings.F3) {
    // Rejected. A fast kernel may have decided this with a score that is not the
    // canonical one, so no Forward score or P-value is kept for rejected targets:
    // results stay identical whatever kernel or device ran the stage.
    out.forward_bits = TargetScores::kNotComputed;
    out.pvalue = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  // The reported score uses the plain null model (no null2: --nonull2 semantics).
  out.forward_bits = (fwdsc - out.null_nats) / static_cast<float>(kLog2);
  out.stage = Stage::passed;
  out.pvalue = forward_pvalue(profile, out.forward_bits);
}

}  // namespace

void run_forward_stage(const SearchProfile& profile, const CascadeSettings& settings,
                       FilterKernels& kernels, const Residue* dsq, int L, TargetScores& out) {
  finish_forward_stage(profile, settings, kernels.forward(dsq, L), out);
}

void run_forward_stages(const SearchProfile& profile, const CascadeSettings& settings,
                        FilterKernels& kernels, std::span<const ForwardTarget> targets,
                        std::span<TargetScores* const> outs) {
  std::vector<float> scores(targets.size());
  kernels.forward_many(targets, scores);
  for (std::size_t j = 0; j < targets.size(); ++j)
    finish_forward_stage(profile, settings, scores[j], *outs[j]);
}

TargetScores run_cascade(const SearchProfile& profile, const CascadeSettings& settings,
                         FilterKernels& kernels, const Residue* dsq, int L) {
  TargetScores out = run_filters(profile, settings, kernels, dsq, L);
  if (out.stage == Stage::forward) run_forward_stage(profile, settings, kernels, dsq, L, out);
  return out;
}

}  // namespace duet
