// The scalar reference kernels: HMMER 3.3.2's filter cascade written for clarity, in
// the precision of HMMER's optimized filters. They are the ground truth that every SIMD
// and GPU kernel is tested against; they are never optimised.
//
// Contract shared by every implementation of a stage (reference, SIMD, GPU):
//   - `dsq` holds L digital residues (codes of the profile's alphabet), 0-based.
//   - Scores are raw, in nats, before the null model is subtracted, exactly as HMMER's
//     p7_MSVFilter / p7_ViterbiFilter / p7_ForwardParser return them.
//   - The integer filters report saturation: an MSV or Viterbi overflow means the score
//     is +infinity and the target passes (HMMER's eslERANGE).
//   - L = 0 is allowed (the pipeline skips such targets, as HMMER does).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/hmmsearch/length_terms.hpp"  // null_score
#include "core/hmmsearch/profile.hpp"

namespace duet {

struct FilterScore {
  float nats = 0;         // raw score in nats (+inf when overflowed)
  bool overflow = false;  // the 8- or 16-bit range was exceeded
};

// MSV: multiple ungapped local segments, 8-bit saturating arithmetic (p7_MSVFilter).
FilterScore msv_filter_reference(const MsvScores& msv, const Residue* dsq, int L);

// SSV: the single best ungapped diagonal, HMMER's shortcut for MSV. Returns true and
// sets `score` when the shortcut is conclusive; false when MSV must be run (the J state
// could have been used, or saturation is ambiguous). L >= 1. A conclusive score equals
// MSV's, except where no diagonal rises above the begin score: SSV then reports the begin
// score itself (msv_ssv_floor), MSV its lower best cell.

bool ssv_filter_reference(const MsvScores& msv, const Residue* dsq, int L, FilterScore& score);

// The end of SSV (HMMER's p7_SSVFilter after its diagonals): from the largest diagonal
// cell xE (an unsigned byte, 128 = the begin score), the score or "run MSV" (false).
bool ssv_decision(const MsvScores& msv, int tjb, int xE, FilterScore& result);

// HMMER's p7_MSVFilter tries SSV first, so the MSV score it reports is never below SSV's
// begin-score floor when SSV applies. True and the floor (nats) when it applies for L.
bool msv_ssv_floor(const MsvScores& msv, int L, float& floor_nats);

// Viterbi filter: 16-bit saturating local Viterbi with HMMER's lazy evaluation of
// delete-delete paths (p7_ViterbiFilter), whose skipping rule is part of the result.
FilterScore viterbi_filter_reference(const ViterbiScores& vit, const Residue* dsq, int L);

// Forward parser: probability-space float Forward with sparse rescaling
// (p7_ForwardParser), in node order: the textbook reference. The score duet reports is
// the canonical Forward (forward_canonical.hpp), within a small tolerance of this one.
float forward_parser_reference(const ForwardScores& fwd, const Residue* dsq, int L);

// Bias filter: Forward score of the two-state composition HMM plus the null length
// model (p7_bg_FilterScore), in nats: bias_filter_with_length (length_terms.hpp) of the
// composition score for L >= 1.
float bias_filter_score(const BiasFilterModel& bias, const Residue* dsq, int L);
// The composition HMM's Forward score alone (nats), for L >= 1.
float bias_composition_score(const BiasFilterModel& bias, const Residue* dsq, int L);
// bias_filter_score of n targets (dsq[j], L[j]) into out[j], bit for bit: the same
// operations per target, several targets interleaved so that their recurrences (each a
// chain of divisions, with a double logarithm per residue) overlap in the CPU.
void bias_filter_scores(const BiasFilterModel& bias, const Residue* const* dsq, const int* L,
                        std::size_t n, float* out);

}  // namespace duet
