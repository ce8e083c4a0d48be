// The pair-HMM of GATK's HaplotypeCaller (as Intel GKL computes it): transition and
// emission probabilities from a read's qualities, the scalar reference Forward in double,
// and the canonical computation of every reported likelihood.
//
// Model, per read position i (Phred qualities q, error probability err(q) = 10^(-q/10)):
//   match-to-match      = GATK's table: 1 - 10^(approximate_log10_sum(-ins/10, -del/10))
//   indel-to-match      = 1 - err(gcp)
//   match-to-insertion  = err(ins)     insertion extension = err(gcp)
//   match-to-deletion   = err(del)     deletion extension  = err(gcp)
//   emission            = 1 - err(b) when the read and haplotype bases match or either is N,
//                         err(b) / 3 otherwise; b = max(base quality, min_base_quality).
// Recurrence over rows r = 1..R (read) and columns c = 1..C (haplotype), with M (match),
// X (insertion: the read advances) and Y (deletion: the haplotype advances):
//   M[r][c] = ((M[r-1][c-1]*mm + X[r-1][c-1]*gm) + Y[r-1][c-1]*gm) * emission
//   X[r][c] = M[r-1][c]*mi + X[r-1][c]*ge
//   Y[r][c] = M[r][c-1]*md + Y[r][c-1]*ge
// Row 0: M = X = 0, Y = K / C in every column (K the initial constant); column 0 of rows
// r >= 1: all zero. The likelihood is log10(sum over c of M[R][c] + X[R][c]) - log10(K).
//
// The canonical computation: the recurrence in float with K = 2^120, in exactly the order
// written above (each product rounded to float, no fused multiply-add), the final sum
// accumulated left to right over c = 1..C as sum += (M + X), with flush to zero: a result
// tiny after rounding (below FLT_MIN) becomes zero (x86 FTZ; GKL runs with FTZ too; far
// from the optimal path values do become that small, and subnormal arithmetic is many times
// slower). Every kernel (scalar, SIMD, GPU) reproduces this float sum bit for bit. When the sum is
// below 1e-28 the pair is recomputed in double (K = 2^1020) by forward_sum<double>. The log10 is
// taken in double on the host by finish_likelihood, so reported values do not depend on the kernel.
// The probabilities are computed in double and rounded once to float for the float pass.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/pairhmm/pairhmm_input.hpp"

namespace duet::pairhmm {

struct ModelOptions {
  int min_base_quality = 6;  // base qualities below this are raised to it (GKL's harness)
};

// The parameters of one read row.
template <class T>
struct RowParameters {
  T match_to_match, indel_to_match, match_to_insertion, match_to_deletion, gap_extension;
  T emission_match, emission_mismatch;
};

inline constexpr float kFloatInitialConstant = 0x1p120f;
inline constexpr double kDoubleInitialConstant = 0x1p1020;
inline constexpr float kDoubleFallbackThreshold = 1e-28f;

class Model {
 public:
  static constexpr int kMaxQuality = 127;

  explicit Model(ModelOptions options = {});
  const ModelOptions& options() const { return options_; }

  double error_probability(int quality) const {
    return error_probability_[static_cast<std::size_t>(quality)];
  }
  // GATK's matchToMatchProb: from the table built with the approximate log-sum.
  double match_to_match(int insertion_quality, int deletion_quality) const;

  // Rows 1..R of a read (index 0 is row 1), in precision T (double values rounded once).
  template <class T>
  void rows(const Read& read, std::vector<RowParameters<T>>& out) const;

  // Row 0's deletion value, K / C, in precision T.
  static float initial_deletion_float(int haplotype_length) {
    return kFloatInitialConstant / static_cast<float>(haplotype_length);
  }
  static double initial_deletion_double(int haplotype_length) {
    return kDoubleInitialConstant / static_cast<double>(haplotype_length);
  }

 private:
  ModelOptions options_;
  std::vector<double> error_probability_;  // [0, kMaxQuality]
  std::vector<double> match_to_match_;     // triangular: [max*(max+1)/2 + min]
};

// GATK's approximateLog10SumLog10: max(a, b) + log10(1 + 10^-|a-b|) from a table with step
// 1e-4 (index rounded to nearest), exactly max(a, b) when |a-b| >= 8.
double approximate_log10_sum(double a, double b);

// One canonical float product or sum (flush to zero as defined above), for checking another
// arithmetic (a GPU's) against the definition.
float canonical_product(float a, float b);
float canonical_sum(float a, float b);

// The scalar reference: double, whole matrices, K = 2^1020, for clarity only. Returns the
// log10 likelihood.
double reference_log10_likelihood(const Model& model, const Pair& pair);

// The canonical Forward sum (scaled by K) in precision T, row by row with the order of
// operations written above. float: the sum every kernel must reproduce bit for bit.
template <class T>
T forward_sum(const Model& model, const Pair& pair);

// A kernel: the canonical float sum of every pair, sums[i] for pairs[i], bit for bit equal
// to forward_sum<float>. Safe to call from several threads at once.
using ForwardSumsFunction = void (*)(const Model& model, std::span<const Pair> pairs, float* sums);

// The scalar kernel: forward_sum<float> pair by pair.
void forward_sums_scalar(const Model& model, std::span<const Pair> pairs, float* sums);

struct Likelihood {
  double log10 = 0;
  bool in_double = false;  // the float sum was below 1e-28: recomputed in double
};

// The reported likelihood of a pair from its canonical float sum (from any kernel).
Likelihood finish_likelihood(const Model& model, const Pair& pair, float float_sum);

}  // namespace duet::pairhmm
