// The boundary between the ISA-independent code and the per-ISA kernel objects: plain
// views of the striped profiles (built in striped_profiles.cpp) and one table of kernel
// entry points per ISA namespace (defined by kernels_impl.hpp, compiled per ISA).
//
// This header is included by code compiled with ISA flags, so it holds only plain data
// and declarations: no inline code from the standard library may be instantiated in an
// ISA translation unit (the linker could keep an AVX-512 copy for every caller).
//
// The striped (Farrar) order is described in core/hmmsearch/striped_layout.hpp.
#pragma once

#include <cstdint>

#include "core/alphabet.hpp"
#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/striped_layout.hpp"

namespace duet::simd {

// MSV costs: cost[x * Q * n + element], unsigned biased costs (255 in padding).
struct MsvStripedView {
  int Q = 0;
  const std::uint8_t* cost = nullptr;
  std::uint8_t base = 0, bias = 0, tbm = 0, tec = 0;
};

// SSV steps: step[x * stride * n + p * n + lane] = min(cost - bias, 127) of vector
// p mod Q, for p = 0 .. Q + extension - 1 (the copies let a diagonal read past Q).
struct SsvStripedView {
  int Q = 0;
  int stride = 0;  // vectors per residue: Q + extension
  const std::int8_t* step = nullptr;
};

// Viterbi filter: match[x * Q * n + element]; transitions in the order of
// core/hmmsearch/striped_layout.hpp (ViterbiStripedTransition). Padding is -32768 everywhere.
struct ViterbiStripedView {
  int Q = 0;
  const std::int16_t* match = nullptr;
  const std::int16_t* transitions = nullptr;
  std::int16_t base = 0, e_loop = 0, e_move = 0, dd_bound = 0;
};

// Forward: ForwardStripedView (core/hmmsearch/striped_layout.hpp), shared with the canonical
// Forward.
using ::duet::ForwardStripedView;

// Raw results; the ISA-independent code turns them into scores exactly as the
// references do (simd_kernels.cpp).
struct MsvRaw {
  bool overflow = false;
  int xJ = 0;
};
struct ViterbiRaw {
  bool overflow = false;
  int xC = 0;
};

// One target of the packed canonical Forward: its residues, the N/C/J loop and move
// probabilities of its length (ForwardScores::ncj(L)), and where to write the parser's
// special states of its rows 0..L (core/hmmsearch/forward_canonical.hpp's kParserStates
// per row; null: not written).
struct CanonicalTarget {
  const Residue* dsq = nullptr;
  int L = 0;
  float loop = 0, move = 0;
  float* states = nullptr;
};

// One target of the packed Backward parser: domain definition's whole-target Backward
// (core/hmmsearch/posterior_dp.hpp's backward_dp on a parser matrix, multihit, in the
// canonical order: DeletePaths::scan), bit for bit.
// Its residues (L >= 1), the N/C/J loop and move probabilities of its length, the canonical
// Forward's parser states of its rows (their rescaling factors are the Backward's, until
// it takes factors of its own, as HMMER's does on overflow), where its own parser states
// go (rows 0..L, kParserStates each) and whether it took its own factors.
struct BackwardTarget {
  const Residue* dsq = nullptr;
  int L = 0;
  float loop = 0, move = 0;
  const float* forward_states = nullptr;
  float* states = nullptr;
  bool* own_scales = nullptr;
};

// One ISA's kernels. DP rows are caller-owned, 64-byte aligned, of the sizes below (in
// elements, for Q vectors): MSV Q*n bytes; Viterbi 3*Q*n int16; Forward 3*Q*n floats.
struct IsaKernels {
  int vector_bytes;
  int ssv_registers;  // vectors SSV keeps in registers: its profile's extension + 1
  // SSV: the largest cell of every diagonal, as an unsigned byte (ssv_filter_reference's xE).
  int (*ssv_max)(const SsvStripedView& profile, const Residue* dsq, int L);
  MsvRaw (*msv)(const MsvStripedView& profile, const Residue* dsq, int L, int tjb,
                std::uint8_t* row);
  ViterbiRaw (*viterbi)(const ViterbiStripedView& profile, const Residue* dsq, int L, int ncj_move,
                        std::int16_t* rows);
  // The Forward parser's DP score in nats, for the N/C/J loop and move probabilities ncj of
  // length L (the score: ncj.score() of it, ForwardScores::ncj).
  float (*forward)(const ForwardStripedView& profile, const Residue* dsq, int L, float loop,
                   float move, float* rows);
  // The canonical Forward (core/hmmsearch/forward_canonical.hpp) of `count` targets, scores[t]
  // equal bit for bit to forward_canonical's (the DP's score, before ncj.score()), several targets
  // at once: one per 128-bit group of the vector (vector_bytes / 16 at a time), each group running
  // forward_canonical's 4-lane order. `profile` is striped in kCanonicalForwardLanes (4) lanes;
  // `rows` holds 3 * Q * vector_bytes / 4 floats (Q of that profile). Targets enter the groups in
  // the order given, a finished target's group taking the next one (longest first wastes least).
  // Adds the number of rows rescaled (xE > 1e4) to *rescaled_rows.
  void (*forward_canonical_packed)(const ForwardStripedView& profile,
                                   const CanonicalTarget* targets, int count, float* scores,
                                   float* rows, std::int64_t* rescaled_rows);
  // The Backward parser of `count` targets (BackwardTarget), as forward_canonical_packed runs
  // the canonical Forward: one target per 128-bit group, in the 4-lane profile; `rows` holds
  // 6 * Q * vector_bytes / 4 floats.
  void (*backward_parser_packed)(const ForwardStripedView& profile, const BackwardTarget* targets,
                                 int count, float* rows);
};

namespace sse41 {
const IsaKernels& isa_kernels();
}
namespace avx2 {
const IsaKernels& isa_kernels();
}
namespace avx512 {
const IsaKernels& isa_kernels();
}

}  // namespace duet::simd
