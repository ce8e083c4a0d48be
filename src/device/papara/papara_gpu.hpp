// PaPaRa's scoring kernel on the GPU (SPEC.md §3.1), behind a plain C++ header: no CUDA
// types, and C++17 (the CUDA source includes it), so the core types are only declared here;
// papara_gpu.cpp, compiled as C++20, reads them.
//
// Contract: the scores of core/papara/papara_kernel.hpp, exactly those the scalar reference
// gives, for every (query, edge) and every scoring:
// - DNA profiles: score_edges_scalar's (16-bit wrapping sums, signed maxima, the score
//   starting at kNegative). Query residues are states 1..15; profile cells are read as the
//   scalar reads them (bits 0-3 the state, bit 4 the flag, other bits ignored);
// - protein profiles: score_edges_protein_scalar's (the same in 32 bits). Query residues are
//   amino acids 0..19; profile words as the scalar reads them (bits 0-19 the state set, bit
//   20 the flag, other bits ignored).
//
// Design (papara_gpu.cu): inter-task. DNA: one thread per (query, 2 edges), the two edges'
// values packed in one 32-bit register as two int16 lanes and combined with Hopper's DPX
// instructions (add then max per 16-bit lane, wrapping); a warp's task is one query against
// 64 consecutive edges. Protein: one thread per (query, edge), plain int32 cells; a task is
// one query against 32 edges. A warp takes tasks from a counter, longest queries first; it
// sweeps the profile in strips of `strip_width` columns held in registers, each strip over
// all of the query's rows, and keeps the strip's left boundary (H and L of the column before
// it, 8 bytes per row and thread in both alphabets) in a global scratch that each resident
// warp owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace duet::papara {
struct ProfileView;
struct Scoring;
}  // namespace duet::papara

namespace duet::device::papara {

// The kernels (papara_gpu.cu). The two DNA kernels are alike but for how they form inc(i, j):
// - base_rows: per column, inc for each of the four bases in registers; a row whose residue
//   is one base reads its register, others take the max of their bases' (a branch per row,
//   uniform over the warp). Exact when match >= 0 and match + match_cgap <= 32767;
// - match_mask: per column, which residues the lane pair's states meet, as a bit mask; inc is
//   a shift, a mask and a multiply-add per cell. Exact for every scoring.
// The protein kernel: int32 cells, one edge per thread; per column the 20-bit state set, a row's
// inc is a bit test of its amino acid and a select. Exact for every scoring.
// automatic: on DNA profiles base_rows where it is exact, else match_mask; on protein
// profiles protein.
enum class Kernel { automatic, base_rows, match_mask, protein };
const char* kernel_name(Kernel kernel);  // "auto", "base-rows", "match-mask", "protein"

// The kernel a score call runs when `requested` is set (set_kernel), on protein profiles or
// DNA ones, with this scoring's match and match_cgap: automatic resolved as above. Throws
// std::invalid_argument for a kernel of the other alphabet, or base_rows where it is not
// exact.
Kernel resolve_kernel(Kernel requested, bool protein, std::int16_t match, std::int16_t match_cgap);

// The strip widths compiled (columns a thread keeps in registers), for every kernel.
inline constexpr int kStripWidths[] = {12, 16, 20, 24};

// The boundary scratch of all resident warps together: 8 bytes per query row per thread.
// Queries longer than this allows for every warp the GPU holds get fewer warps, in a launch
// of their own (see score).
inline constexpr std::size_t kDefaultScratchBytes = std::size_t{512} << 20;

// One GPU with every edge's profile resident (copied once, at construction). Calls from one
// thread at a time. Every CUDA failure throws std::runtime_error.
class PaparaGpu {
 public:
  // DNA or protein profiles, as `profiles` holds (ProfileView::alphabet). Throws
  // std::invalid_argument for a layout that breaks ProfileView's rules (edge_stride a
  // multiple of kEdgeAlign, at least `edges`).
  PaparaGpu(int device, const duet::papara::ProfileView& profiles,
            std::size_t scratch_bytes = kDefaultScratchBytes);
  ~PaparaGpu();
  PaparaGpu(const PaparaGpu&) = delete;
  PaparaGpu& operator=(const PaparaGpu&) = delete;

  std::string name() const;  // the device's name
  bool protein() const;      // whether the resident profiles are protein ones

  // Scores `queries` queries against edges [first_edge, first_edge + count): out[q * count + k]
  // is query q's score against edge first_edge + k. Query q is residues[offsets[q],
  // offsets[q + 1]) (offsets: queries + 1 entries, need not start at 0). DNA profiles give
  // int16 scores, protein profiles int32: the call of the other alphabet throws
  // std::invalid_argument, as do an empty query, a residue outside 1..15 (DNA) or 0..19
  // (protein) and an edge range outside the profiles. Returns when the scores are in `out`;
  // the wait sleeps (blocking-sync events).
  void score(const std::uint8_t* residues, const std::int64_t* offsets, std::size_t queries,
             int first_edge, int count, const duet::papara::Scoring& scoring, std::int16_t* out);
  void score(const std::uint8_t* residues, const std::int64_t* offsets, std::size_t queries,
             int first_edge, int count, const duet::papara::Scoring& scoring, std::int32_t* out);

  // Seconds the last score call's kernels took (CUDA events), and how many launches it made.
  double last_kernel_seconds() const;
  int last_launches() const;

  // The kernel and strip width to run with (for tests and benchmarks; the defaults suit
  // every input). strip width 0: the kernel's default; otherwise one of kStripWidths
  // (std::invalid_argument otherwise). Forcing a kernel that resolve_kernel refuses makes
  // score throw std::invalid_argument.
  void set_kernel(Kernel kernel, int strip_width = 0);
  // The kernel and strip width the last score call ran with (automatic resolved).
  Kernel last_kernel() const;
  int last_strip_width() const;

 private:
  // The CUDA side (papara_gpu.cu); the constructor and score (papara_gpu.cpp) check their
  // arguments and unpack the core types into these.
  struct State;
  static State* create_state(int device, std::size_t scratch_bytes);
  static void destroy_state(State* state) noexcept;
  // cells (DNA) or protein_cells (protein, `protein` set); the other null, both with no
  // columns.
  void upload(bool protein, const std::uint8_t* cells, const std::uint32_t* protein_cells,
              int columns, int edges, int edge_stride);
  // Scores into dna_out (DNA profiles) or protein_out (protein profiles), the other null.
  void score_packed(const std::uint8_t* residues, const std::int64_t* offsets, std::size_t queries,
                    int first_edge, int count, const std::int16_t scoring[4], std::int16_t* dna_out,
                    std::int32_t* protein_out);
  State* state_;
};

}  // namespace duet::device::papara
