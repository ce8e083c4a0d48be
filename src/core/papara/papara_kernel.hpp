// PaPaRa 2.5's scoring kernel (SPEC.md §3.1): the score of a query against one edge's
// ancestral profile, and the data every variant (scalar, CPU SIMD, GPU) reads. Kernels
// know data, not threads.
//
// Profile: for each column j of the reference (after all-gap columns are removed) a state
// set A_j (4 bits: A=1, C=2, G=4, T=8; 15 is the gap state) and a gap flag F_j. Query
// residues are state sets too (1..15, never 0).
//
// Recurrence, for rows i < m (query) and columns j < n, with
//   inc(i, j) = (A_j & q_i ? match : 0) + (F_j ? match_cgap : 0)
//   go_j = F_j ? 0 : gap_open,  ge_j = F_j ? 0 : gap_extend
//   L(i,j) = max(H(i,j-1) + go_j, L(i,j-1) + ge_j)
//   U(i,j) = max(H(i-1,j) + gap_open, U(i-1,j) + gap_extend)
//   H(i,j) = max(H(i-1,j-1) + inc(i,j), L(i,j), U(i,j))
// and boundaries H(-1, j) = H(i, -1) = 0, L(i, -1) = U(-1, j) = kNegative, the score is
// max(max_j H(m-1, j), max_i H(i, n-1)). DNA: every sum wraps in 16 bits, as PaPaRa's
// int16 lanes do: every variant gives the same int16 score. Protein: PaPaRa's lanes are
// int32, and every sum wraps in 32 bits (no real input comes near).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace duet::papara {

// The residues of the inputs: PaPaRa's default, or its protein mode (-a).
enum class Alphabet { dna, protein };

// The scoring scheme of -p o:e:ma:mc (mismatch is 0). match + match_cgap < 0.
struct Scoring {
  std::int16_t gap_open = -3, gap_extend = -1, match = 2, match_cgap = -3;
};

inline constexpr std::int16_t kNegative = -32000;

// One byte per (column, edge): bits 0-3 the state set, bit 4 the gap flag.
inline constexpr std::uint8_t kStateMask = 0x0f;
inline constexpr std::uint8_t kFlagBit = 0x10;
// Protein: one 32-bit word per (column, edge): bits 0-19 the state set, bit 20 the gap flag.
inline constexpr std::uint32_t kProteinStateMask = 0xfffff;
inline constexpr std::uint32_t kProteinFlagBit = 1u << 20;

// Edges per group of the layout: the stride is a multiple of it, and padding edges repeat
// the last edge, so that a kernel may read whole vectors (64 int8 lanes) at any group.
inline constexpr int kEdgeAlign = 64;

// The profiles of every edge, interleaved by edge: cells[j * edge_stride + e] is column j
// of edge e. edge_stride >= edges, a multiple of kEdgeAlign; edges >= `edges` repeat the
// last edge. DNA profiles have `cells`, protein profiles `protein_cells` (the other null;
// both may be null with no columns, and then `kind` says which).
struct ProfileView {
  int columns = 0;
  int edges = 0;
  int edge_stride = 0;
  const std::uint8_t* cells = nullptr;
  const std::uint32_t* protein_cells = nullptr;
  Alphabet kind = Alphabet::dna;
  Alphabet alphabet() const { return protein_cells != nullptr ? Alphabet::protein : kind; }
};

// Scores of one query (states 1..15, at least one residue) against edges
// [first_edge, first_edge + count): out[k] is edge first_edge + k's. Every variant
// (papara_variants.hpp in host_simd, the GPU kernel) gives these values exactly.
void score_edges_scalar(std::span<const std::uint8_t> query, const ProfileView& profiles,
                        int first_edge, int count, const Scoring& scoring, std::int16_t* out);

using ScoreEdgesFunction = void (*)(std::span<const std::uint8_t> query,
                                    const ProfileView& profiles, int first_edge, int count,
                                    const Scoring& scoring, std::int16_t* out);

// The same for protein profiles (query residues 0..19), in int32.
void score_edges_protein_scalar(std::span<const std::uint8_t> query, const ProfileView& profiles,
                                int first_edge, int count, const Scoring& scoring,
                                std::int32_t* out);

using ProteinScoreEdgesFunction = void (*)(std::span<const std::uint8_t> query,
                                           const ProfileView& profiles, int first_edge, int count,
                                           const Scoring& scoring, std::int32_t* out);

}  // namespace duet::papara
