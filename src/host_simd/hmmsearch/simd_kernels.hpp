// CPU SIMD kernels for hmmsearch's filters: the variant table, the ISA dispatcher and the
// per-model kernel object (SimdFilterKernels, a duet::FilterKernels).
//
// Contract of every kernel (written once, here):
//   - Inputs: a SearchProfile's scores (core/hmmsearch/profile.hpp), striped for the ISA's vector
//     width by the functions of host_simd/hmmsearch/striped_profiles.hpp, and a target of L digital
//     residues (any code 0..Kp-1, degenerate, gap, '*' and '~' included); L = 0 is allowed.
//   - SSV, MSV and Viterbi return EXACTLY the score of the scalar reference of
//     core/hmmsearch/reference_kernels.hpp, bit for bit, overflow included: an MSV or Viterbi
//     overflow is FilterScore{+inf, overflow = true}; SSV also says, as the reference
//     does, when its shortcut is inconclusive and MSV must run.
//   - The SIMD Forward parser sums in another order than the reference and flushes
//     denormals to zero (as HMMER's vector code does; the caller's floating-point mode is
//     restored); its score (nats) is within kForwardAbsoluteTolerance +
//     kForwardRelativeTolerance * |score| of forward_parser_reference (the tests see under
//     a tenth of that). The SSE4.1 (4-lane) parser's order is the canonical one: its score
//     IS the canonical Forward score (core/hmmsearch/forward_canonical.hpp), bit for bit. The wider
//     parsers are only a filter: SimdFilterKernels::forward() reports the canonical score
//     for every target that might pass F3 (rule below).
//   - The packed canonical Forward (IsaKernels::forward_canonical_packed) computes the
//     canonical score itself, bit for bit, for vector_bytes / 16 targets at once (one per
//     128 bits, each in the 4-lane order): forward_canonical_many() and forward_many(),
//     which the search's CPU workers use for every target that reaches Forward.
//   - Kernels are reentrant; the DP rows belong to the SimdFilterKernels object.
//
// ISAs: each kernel source (kernels_impl.hpp) is compiled once per ISA, SSE4.1 (128-bit),
// AVX2 (256-bit) and AVX-512BW (512-bit), into duet::simd::sse41 / avx2 / avx512.
// "scalar" names the references themselves. The dispatcher picks, once, the first ISA of
// kIsaPreference that the CPU has; isa_from_name() forces one and throws UsageError for
// an unknown name or an ISA this CPU lacks.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/hmmsearch/cascade.hpp"
#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"
#include "host_simd/cpu_features.hpp"

namespace duet::simd {

enum class Kernel : std::uint8_t { ssv, msv, viterbi, forward };

// One row per (kernel, ISA): the vector lanes and their element width.
struct Variant {
  Kernel kernel;
  Isa isa;
  int lanes;
  int element_bits;
};

// Every variant; the dispatcher, the tests and the benchmark all read this table.
inline constexpr std::array<Variant, 16> kVariants{{
    {Kernel::ssv, Isa::scalar, 1, 8},
    {Kernel::ssv, Isa::sse41, 16, 8},
    {Kernel::ssv, Isa::avx2, 32, 8},
    {Kernel::ssv, Isa::avx512, 64, 8},
    {Kernel::msv, Isa::scalar, 1, 8},
    {Kernel::msv, Isa::sse41, 16, 8},
    {Kernel::msv, Isa::avx2, 32, 8},
    {Kernel::msv, Isa::avx512, 64, 8},
    {Kernel::viterbi, Isa::scalar, 1, 16},
    {Kernel::viterbi, Isa::sse41, 8, 16},
    {Kernel::viterbi, Isa::avx2, 16, 16},
    {Kernel::viterbi, Isa::avx512, 32, 16},
    {Kernel::forward, Isa::scalar, 1, 32},
    {Kernel::forward, Isa::sse41, 4, 32},
    {Kernel::forward, Isa::avx2, 8, 32},
    {Kernel::forward, Isa::avx512, 16, 32},
}};

// The order in which the dispatcher tries ISAs: fastest first (bench/simd_bench).
inline constexpr std::array<Isa, 4> kIsaPreference{Isa::avx512, Isa::avx2, Isa::sse41, Isa::scalar};

// Forward tolerance of the SIMD parser against forward_parser_reference, in nats.
inline constexpr double kForwardAbsoluteTolerance = 1e-4;
inline constexpr double kForwardRelativeTolerance = 1e-5;

std::string_view kernel_name(Kernel kernel);  // "ssv", "msv", "viterbi", "forward"
const Variant& variant(Kernel kernel, Isa isa);
int vector_bytes(Isa isa);  // 16, 32, 64 (1 for scalar)

// The ISA the dispatcher uses: the first of kIsaPreference this CPU has, decided once.
Isa best_isa();
// An ISA by name ("scalar", "sse4.1", "avx2", "avx512"); "auto" is best_isa(). Throws
// UsageError for an unknown name, or an ISA this CPU lacks.
Isa isa_from_name(std::string_view name);

// When SimdFilterKernels::forward() may report its own SIMD score instead of the
// reference's: only for a target that fails F3 even with the SIMD score raised by
// forward_margin(). With `enabled` false, every target gets the canonical score.
struct ForwardGate {
  bool enabled = false;
  double F3 = 1e-5;
  bool bias_filter = true;  // the cascade's null for the F3 test: bias filter or plain null
  static ForwardGate from(const CascadeSettings& settings) {
    return {true, settings.F3, settings.bias_filter};
  }
};
// The margin (nats) added to a SIMD Forward score before the F3 test: ten times the
// tolerance the tests enforce, plus 0.01 nats.
float forward_margin(float simd_score);

struct StripedProfiles;  // host_simd/hmmsearch/striped_profiles.hpp
struct DpRows;
struct CanonicalTarget;  // host_simd/hmmsearch/isa_kernels.hpp
struct BackwardTarget;

// The SIMD filters of one model for one ISA: striped profiles (read-only, shareable
// between the kernels of several threads: stripe_profiles) and DP rows (its own).
// Construct one per model per worker thread; not thread-safe; keeps a reference to
// `profile`, which must outlive it.
//
// forward() returns the canonical score (forward_canonical) except, when the gate is
// enabled, for a target whose SIMD score plus forward_margin() still fails F3 against the
// cascade's null score: then it returns the SIMD score, which differs from the canonical
// one in the last digits only and cannot change the F3 decision (and run_cascade keeps no
// Forward score for targets that F3 rejects). With SSE4.1 the gate's score is already the
// canonical one and is not computed twice; other ISAs recompute it with forward_canonical.
// The striped profiles of one model for one ISA, read-only once built: one set serves
// every worker's kernels of that model (stripe_profiles, then the constructor that takes
// them). nullptr for the scalar ISA, which needs none.
std::shared_ptr<const StripedProfiles> stripe_profiles(const SearchProfile& profile, Isa isa);

class SimdFilterKernels final : public FilterKernels {
 public:
  SimdFilterKernels(const SearchProfile& profile, Isa isa, ForwardGate gate = {});
  // With the model's striped profiles built already (stripe_profiles(profile, isa)):
  // only this worker's DP rows are made.
  SimdFilterKernels(const SearchProfile& profile, Isa isa, ForwardGate gate,
                    std::shared_ptr<const StripedProfiles> striped);
  ~SimdFilterKernels() override;
  SimdFilterKernels(const SimdFilterKernels&) = delete;
  SimdFilterKernels& operator=(const SimdFilterKernels&) = delete;

  Isa isa() const { return isa_; }

  // FilterKernels. msv() runs SSV first and MSV only where SSV cannot give MSV's score:
  // where ssv_filter_reference is inconclusive, and where no diagonal rises above the
  // begin score (then SSV reports the begin score, MSV its lower best cell).
  FilterScore msv(const Residue* dsq, int L) override;
  FilterScore viterbi(const Residue* dsq, int L) override;
  float forward(const Residue* dsq, int L) override;
  // Every target's canonical score (forward_canonical_many), whatever the gate.
  void forward_many(std::span<const ForwardTarget> targets, std::span<float> scores) override;
  // The ISA's packed Backward parser (one target per 128 bits, longest first); scalar:
  // backward_parser_states on each in turn.
  void backward_parsers(std::span<const BackwardParserTarget> targets) override;

  // The canonical Forward (forward_canonical) of several targets, bit for bit, computed
  // together: the ISA's packed kernel (one target per 128 bits of the vector, longest
  // targets first); scalar: forward_canonical on each in turn. Counted in
  // forward_canonical_calls().
  void forward_canonical_many(std::span<const ForwardTarget> targets, std::span<float> scores);

  // Each kernel alone, as the tests and the benchmark call them.
  bool ssv_only(const Residue* dsq, int L, FilterScore& score);  // ssv_filter_reference's contract
  FilterScore msv_only(const Residue* dsq, int L);
  // The SIMD parser's own score (scalar: forward_parser_reference).
  float forward_simd(const Residue* dsq, int L);
  // Number of targets given the canonical Forward score by forward() (not decided by the
  // gate alone), forward_many() and forward_canonical_many().
  std::int64_t forward_canonical_calls() const { return forward_canonical_calls_; }
  // Rows the packed canonical kernel rescaled (xE > 1e4), over every call so far.
  std::int64_t canonical_rescaled_rows() const { return canonical_rescaled_rows_; }

 private:
  const SearchProfile& profile_;
  Isa isa_;
  ForwardGate gate_;
  // The canonical Forward of one target at a time (every ISA but SSE4.1), made on first use.
  CanonicalForward& canonical();

  std::shared_ptr<const StripedProfiles> striped_;
  std::unique_ptr<DpRows> rows_;
  std::unique_ptr<CanonicalForward> canonical_;
  std::int64_t forward_canonical_calls_ = 0;
  std::int64_t canonical_rescaled_rows_ = 0;
  // forward_canonical_many's order (longest first), packed targets and their scores.
  std::vector<std::size_t> canonical_order_;
  std::vector<CanonicalTarget> canonical_targets_;
  std::vector<float> canonical_scores_;
  // backward_parsers': the packed targets, the kernel's rows, and the scalar DP's profile
  // (made on first use).
  std::vector<BackwardTarget> backward_targets_;
  AlignedBuffer<float> backward_rows_;
  std::unique_ptr<DpProfile> backward_profile_;
};

}  // namespace duet::simd
