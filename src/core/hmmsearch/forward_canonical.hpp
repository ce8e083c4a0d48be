// The canonical Forward score of duet: the score every search reports, the same bit for
// bit whatever the ISA, worker count or device mix.
//
// Definition: the Forward parser (p7_ForwardParser's recurrence, as forward_parser_reference
// writes it) computed in a fixed order, that of the striped parser in 4 float lanes
// (host_simd/hmmsearch/kernels_impl.hpp's forward_parser, SSE4.1 instance), with denormals flushed
// to zero and read as zero. forward_canonical below is that computation written with
// vectors of 4 floats (the GCC/Clang vector extension), one operation where the SIMD
// parser has one vector instruction; the SSE4.1 kernel equals it bit for bit
// (tests/simd_kernels_test.cpp), and so does the packed kernel that runs this order for
// several targets at once, one per 128 bits of a vector (host_simd/hmmsearch/isa_kernels.hpp's
// forward_canonical_packed, tests/forward_packed_test.cpp): the search's CPU workers use it.
// forward_parser_reference stays the textbook reference: the canonical score is within
// the SIMD Forward tolerance of it (host_simd/hmmsearch/simd_kernels.hpp).
//
// The order, per target row i (Q = ceil(M / 4) vectors; node k in vector (k-1) % Q, lane
// (k-1) / Q; striped_layout.hpp):
//   - for q = 0..Q-1: M = ((B*tBM + M'*tMM) + I'*tIM) + D'*tDM, then * match odds, where
//     M', I', D' are the previous row's vector q-1 (for q = 0 its vector Q-1 moved one lane
//     up, lane 0 = 0); sum += M + Din; I = M'*tMI + I'*tII (previous row's vector q);
//     D(q) = Din; Din = M*tMD + Din*tDD.
//   - the lane carry: C = Din moved one lane up; U = the lanes' whole D->D products moved
//     one lane up; C += U * (C moved 1 lane up), U *= (U moved 1 lane up); C += U * (C moved
//     2 lanes up). Then for every q: add = C * (D->D product of the lane up to q);
//     D(q) += add; sum += add.
//   - E = (sum0 + sum2) + (sum1 + sum3); the N, C, J, B updates and the sparse rescaling
//     (E > 1e4) of the reference; the DP's score is float(scale + log(double(C * move))),
//     and the canonical score ForwardScores::ncj(L).score of it (the N/C/J loops that
//     targets of 2^24 residues or more take out of the DP: core/hmmsearch/length_terms.hpp).
// Denormal mode: MXCSR FTZ and DAZ set while it runs, the caller's mode restored after
// (x86-64; the scalar SSE arithmetic obeys them as the vector arithmetic does).
#pragma once

#include <cstddef>

#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/striping.hpp"

namespace duet {

inline constexpr int kCanonicalForwardLanes = 4;

// The parser's special states, per row i = 0..L, kParserStates floats at states[i *
// kParserStates], in this order: E, N, J, B, C (as the row left them, after its
// rescaling), and the row's rescaling factor (its E before the rescaling; 1 where the row
// was not rescaled). Domain definition starts from them (posterior_dp.hpp's DpMatrix keeps
// the same values in the same order).
inline constexpr int kParserStates = 6;
inline constexpr int kParserScale = 5;  // the rescaling factor's place in a row's states
// HMMER's sparse rescaling: a parser row is rescaled where its E (Forward) or B (Backward)
// passes kParserRescaleAbove; the Backward takes factors of its own (instead of the
// Forward's) from the first row whose B passes kBackwardOwnScalesAbove.
inline constexpr float kParserRescaleAbove = 1.0e4f;
inline constexpr float kBackwardOwnScalesAbove = 1.0e16f;
inline void put_parser_states(float* states, int i, float xE, float xN, float xJ, float xB,
                              float xC, float scale) {
  float* const x = states + static_cast<std::size_t>(i) * kParserStates;
  x[0] = xE;
  x[1] = xN;
  x[2] = xJ;
  x[3] = xB;
  x[4] = xC;
  x[5] = scale;
}

// The canonical DP's score of a target of L residues (L = 0 allowed), in nats, from a
// profile striped in kCanonicalForwardLanes lanes (stripe_forward_scores), the N/C/J loop
// and move probabilities of ncj = ForwardScores::ncj(L), and caller-owned rows of
// 3 * Q * 4 floats. The canonical score is ncj.score() of it (CanonicalForward::score).
// Writes the special states of rows 0..L into `states` where it is not null.
float forward_canonical(const ForwardStripedView& profile, const Residue* dsq, int L, float loop,
                        float move, float* rows, float* states = nullptr);

// The logarithms of the canonical score, written once: forward_canonical ends with them,
// and so does the GPU canonical Forward (src/device/hmmsearch/hmm_gpu.hpp), whose kernel computes
// every float of the parser and records the xE of each rescaled row and the final C * move
// for the host to finish. After a row rescaled by 1/xE (xE > 1e4), the running scale is
// canonical_forward_rescaled(scale, xE) = float(scale + log(double(xE))); the DP's score is
// canonical_forward_final(scale, C * move) = float(scale + log(double(C * move))) (glibc's
// log in double). Both run under the canonical denormal mode (the caller sets it).
float canonical_forward_rescaled(float total_scale, float xE);
float canonical_forward_final(float total_scale, float c_move);
// The whole finish, setting the denormal mode itself: the score of a target whose rows were
// rescaled by rescale_xe[0 .. events-1] in order and whose last row left C * move = c_move.
// Equal bit for bit to forward_canonical's result for the same floats.
float canonical_forward_finish(const float* rescale_xe, int events, float c_move);

// The same from the unstriped scores (stripes them on every call: for tests and one-off
// scores; a search keeps a CanonicalForward per model and thread).
float forward_canonical(const ForwardScores& fwd, const Residue* dsq, int L);

// The canonical Forward of one model: its 4-lane striped profile and DP rows, built once.
// Not thread-safe (the rows); keeps a reference to `fwd`, which must outlive it.
class CanonicalForward {
 public:
  explicit CanonicalForward(const ForwardScores& fwd);
  float score(const Residue* dsq, int L, float* states = nullptr);

 private:
  const ForwardScores& fwd_;
  StripedForwardProfile striped_;
  AlignedBuffer<float> rows_;
};

}  // namespace duet
