// The dynamic programming behind HMMER 3.3.2's domain definition, in probability space
// with HMMER's sparse rescaling: Forward and Backward (whole matrices, or parsers that keep
// only the special states of every row), posterior decoding, the optimal-accuracy
// alignment and its traceback, and stochastic traceback. As HMMER runs them, on vectors of
// 4 floats in the striped order (striped_layout.hpp), written with the compiler's vector
// extension: one implementation in one fixed order of operations, the same on every ISA;
// every device's survivors go through it on the CPU, so domains are the same whatever ran
// the filters. The DPs run in HMMER's denormal mode (flushed to zero, denormals.hpp),
// which each sets for itself.
//
// The recurrences and tie rules are HMMER's (p7_Forward, p7_Backward, p7_Decoding,
// p7_DomainDecoding, p7_OptimalAccuracy, p7_OATrace, p7_StochasticTrace). Where HMMER's
// SIMD code visits the model's nodes in its striped order and the order decides a result
// (a sampled exit node, a tie between exits), the same order is followed here: node
// r * Q + q + 1 for q = 0..Q-1, then lanes r = 0..3, where Q = max(2, ceil(M / 4)).
#pragma once

#include <cstdint>
#include <vector>

#include "core/alphabet.hpp"
#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/hmmer_random.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/striping.hpp"

namespace duet {

inline constexpr int kDpLanes = 4;

// A model as the DP reads it: its Forward scores by node (the tracebacks) and striped in
// kDpLanes lanes (the recursions). Keeps a reference to `scores`.
struct DpProfile {
  explicit DpProfile(const ForwardScores& forward);
  const ForwardScores& scores;
  StripedForwardProfile striped;
  // The optimal-accuracy DP's gates: open[j] is all bits set where
  // striped.transitions[j] > 0, else 0; dd_open_through[q * 4 + lane] (q = 0..Q) where
  // every D->D of the lane's vectors before q is possible.
  std::vector<std::int32_t> open, dd_open_through;
  // The match odds by node: match_by_node[k * Kp + x] = scores.match[x][k], k = 0..M.
  int Kp = 0;
  std::vector<float> match_by_node;
};

// The special states' probabilities of one configuration: local multihit (as the search
// scores targets) or unihit (as domain definition scores an envelope), for a target
// length L.
struct SpecialMoves {
  float n_loop = 0, n_move = 0, c_loop = 0, c_move = 0, j_loop = 0, j_move = 0;
  float e_move = 0, e_loop = 0;
  static SpecialMoves multihit(const ForwardScores& scores, int L);
  static SpecialMoves unihit(int L);
};

// One row of a DP matrix: its M, D and I values in the striped order (DpMatrix::at).
struct DpRow {
  float *m, *d, *i;
};
struct ConstDpRow {
  const float *m, *d, *i;
};

// A DP matrix: rows 0..L of nodes 0..M, each with M, D and I values, and per row the
// special states E, N, J, B, C and the row's rescaling factor (1 when not rescaled). A
// parser's matrix keeps the cells of two rows only. Its memory is reused from one reset
// to the next, not cleared: every DP writes each cell of a row before reading it.
class DpMatrix {
 public:
  enum Special { kE = 0, kN, kJ, kB, kC, kScale, kSpecials };

  void reset(int M, int L, bool full);
  int M() const { return M_; }
  int Q() const { return Q_; }
  // Where node k = 1..M is in a row's state array: vector (k-1) % Q, lane (k-1) / Q
  // (a table made by reset: the tracebacks ask at every step).
  std::size_t at(int k) const { return node_at_[static_cast<std::size_t>(k)]; }
  int L() const { return L_; }
  bool full() const { return full_; }
  // Row i's values of the M, D and I states, Q vectors each (padding lanes past M
  // included).
  float* mrow(int i) { return cells_.data() + row_offset(i); }
  float* drow(int i) { return mrow(i) + width(); }
  float* irow(int i) { return mrow(i) + 2 * width(); }
  const float* mrow(int i) const { return cells_.data() + row_offset(i); }
  const float* drow(int i) const { return mrow(i) + width(); }
  const float* irow(int i) const { return mrow(i) + 2 * width(); }
  std::size_t width() const { return static_cast<std::size_t>(Q_) * kDpLanes; }
  DpRow row(int i) { return {mrow(i), drow(i), irow(i)}; }
  ConstDpRow row(int i) const { return {mrow(i), drow(i), irow(i)}; }
  float& x(int i, Special s) { return specials_[static_cast<std::size_t>(i) * kSpecials + s]; }
  float x(int i, Special s) const { return specials_[static_cast<std::size_t>(i) * kSpecials + s]; }
  // A parser's special states of rows 0..L, instead of running its DP: the canonical
  // Forward's (forward_canonical.hpp: forward_dp's values in DpMatrix's order) or
  // backward_parser_states's; total_scale from the rescaling factors among them.
  void set_parser_states(const float* states);
  // Backward only: its rescaling factors are its own, not the Forward matrix's (a rare
  // overflow, as in HMMER).
  bool own_scales = false;
  float total_scale = 0;  // sum of the logarithms of the rescaling factors (nats)

 private:
  std::size_t row_offset(int i) const {
    return static_cast<std::size_t>(full_ ? i : (i & 1)) * 3 * width();
  }
  int M_ = 0, Q_ = 1, L_ = 0;
  bool full_ = true;
  ScratchBuffer<float> cells_;
  std::vector<float> specials_;
  std::vector<std::uint32_t> node_at_;  // at(k), k = 0..M (0 unused)
};

// How the Forward and Backward add the D->D paths of a row, which decides their floats' last
// bits: `scan`, the canonical Forward's order (forward_canonical.hpp: within each lane's
// segment, then across the lanes), whose parser states the Forward filter leaves, and the
// faster; `passes`, HMMER's order (impl_sse/fwdback.c: a pass over the row, then up to
// three more carrying the paths across the lanes; in the Forward of a model of 100 nodes or
// more, until a pass changes no D), HMMER's floats bit for bit, for the Forward of a region
// whose traces are sampled and for the whole-target parsers where a decision of domain
// definition lies within their difference of its threshold (domain_definition.cpp). With
// every DP of domain definition in passes, 1,000 models against 5,000 proteins took 12 to
// 17% longer (bench/RESULTS.md).
enum class DeletePaths { passes, scan };

// Forward over dsq[0..L-1] into `mx` (full or parser as reset): the score in nats.
float forward_dp(const DpProfile& profile, const SpecialMoves& moves, const Residue* dsq, int L,
                 DpMatrix& mx, DeletePaths paths = DeletePaths::scan);
// Backward with the Forward matrix's rescaling factors: the score in nats.
float backward_dp(const DpProfile& profile, const SpecialMoves& moves, const Residue* dsq, int L,
                  const DpMatrix& fwd, DpMatrix& bck, DeletePaths paths = DeletePaths::scan);
// The whole-target Backward parser of domain definition (multihit) from the canonical
// Forward's parser states `forward_states` of rows 0..L, in the canonical order
// (DeletePaths::scan): its own states into `states` (forward_canonical.hpp's layout) and
// whether it took rescaling factors of its own.
void backward_parser_states(const DpProfile& profile, const Residue* dsq, int L,
                            const float* forward_states, float* states, bool& own_scales);
// Posterior probabilities of every emitting cell (M, I; N, J, C per row; D is 0) from two
// full matrices; `pp` may be `bck` (decoded in place). False where the rescaling
// overflows (HMMER's eslERANGE).
bool decode_posteriors(const SpecialMoves& moves, const DpMatrix& fwd, const DpMatrix& bck,
                       DpMatrix& pp);
// Per row i = 0..L of the whole target, from the parsers' special states: the expected
// number of domains begun (btot) and ended (etot) at or before i, and the probability
// that residue i is emitted by the model's core (mocc). False on overflow.
bool decode_domain_boundaries(const SpecialMoves& moves, const DpMatrix& fwd, const DpMatrix& bck,
                              std::vector<float>& btot, std::vector<float>& etot,
                              std::vector<float>& mocc);

// A state path, in order from S to T. i is the residue a state emits (0 for none), k the
// node (0 outside the model).
enum class TraceState : std::uint8_t { M, D, I, N, B, E, C, J, S, T };
struct TraceStep {
  TraceState state;
  int k = 0, i = 0;
  float pp = 0;  // the posterior probability of the emission (optimal-accuracy traces)
};
using Trace = std::vector<TraceStep>;

// The optimal-accuracy alignment's score (expected correctly aligned residues) of the
// posteriors `pp`, its matrix in `oa`, and the traceback of it.
float optimal_accuracy(const DpProfile& profile, const SpecialMoves& moves, const DpMatrix& pp,
                       DpMatrix& oa);
Trace optimal_accuracy_trace(const ForwardScores& scores, const SpecialMoves& moves,
                             const DpMatrix& pp, const DpMatrix& oa);
// A path sampled from a full Forward matrix, into `trace` (its memory reused: a region's
// 200 samples are drawn in turn).
void stochastic_trace(HmmerRandom& random, const ForwardScores& scores, const SpecialMoves& moves,
                      const DpMatrix& fwd, Trace& trace);

}  // namespace duet
