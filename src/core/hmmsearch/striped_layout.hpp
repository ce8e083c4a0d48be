// The striped (Farrar) order of profile scores, as plain data shared by the scalar
// canonical Forward (core/hmmsearch/forward_canonical.hpp) and the per-ISA SIMD kernels
// (host_simd/hmmsearch/isa_kernels.hpp). Only plain data here: the SIMD kernel objects include
// this header, and no inline code of the standard library may be instantiated in them.
//
// A model of M nodes in vectors of n lanes uses Q = ceil(M / n) vectors per row (at least
// one); node k = 1..M sits in vector q = (k-1) % Q, lane (k-1) / Q, at element q * n + lane.
// Nodes past M are padding whose scores keep them at -infinity (probability 0).
#pragma once

namespace duet {

// The transitions of one striped vector q: seven vectors (B->M, M->M, I->M, D->M into
// node k; M->D, M->I, I->I out of node k), for every q in turn; then Q vectors of D->D
// out of node k. The Viterbi filter (int16) and Forward (float) share the order.
enum ViterbiStripedTransition {
  kVitBM = 0,
  kVitMM,
  kVitIM,
  kVitDM,
  kVitMD,
  kVitMI,
  kVitII,
  kVitPerQ
};

// Forward: match[x * Q * n + element] odds ratios and the transitions above, probabilities
// (0 in padding); and dd_prefix, Q + 1 vectors: vector q holds, per lane, the product of
// D->D over the lane's nodes in vectors 0 .. q-1 (1 for q = 0), what a D value entering
// the lane at vector 0 keeps at vector q; vector Q is the whole lane's product.
struct ForwardStripedView {
  int Q = 0;
  const float* match = nullptr;
  const float* transitions = nullptr;
  const float* dd_prefix = nullptr;
  // The Backward's D->D scan (posterior_dp.cpp, the packed Backward parser): per vector q
  // = 0..Q-1 and lane, the product of D->D from its node to its lane's last node, and the
  // recursion of 1 over the same nodes (1 + t(k) (1 + t(k+1) (...))).
  const float* dd_suffix = nullptr;
  const float* dd_ones = nullptr;
  float e_loop = 0, e_move = 0;
};

}  // namespace duet
