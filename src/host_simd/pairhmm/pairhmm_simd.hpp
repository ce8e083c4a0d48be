// CPU SIMD kernels of the pair-HMM Forward and their run-time dispatch.
//
// Contract (every variant): the canonical float sum of each pair, bit for bit equal to
// pairhmm::forward_sum<float> (core/pairhmm/pairhmm_model.hpp); the caller turns sums into
// likelihoods with pairhmm::finish_likelihood (double fallback included). Thread-safe:
// scratch memory is per thread.
//
// Inter-pair vectorisation: pairs are grouped by size and taken W at a time (W = 8 floats
// for AVX2, 16 for AVX-512), one pair per lane, each lane running the whole recurrence.
// A kernel groups the pairs it is given, kGroupingPairs at a time (group_pairs). Its
// `grouped` form takes pairs a caller already grouped: groups of W consecutive pairs,
// as group_pairs orders them (the scheduler's blocks of pairs: grouped once, over more
// pairs than a block holds, so that fewer lanes idle).
//
// Other vectorisations, kept as studies to be measured and tested but never run by duet
// (rows of a strip skewed; one pair along anti-diagonals), are in bench/pairhmm_study.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/pairhmm/pairhmm_model.hpp"
#include "host_simd/cpu_features.hpp"

namespace duet::simd::pairhmm {

// One row per variant: tests, benchmarks and the dispatcher read this table.
struct PairhmmVariant {
  Isa isa;
  std::string_view name;  // "scalar", "avx2", "avx512"
  int lanes;              // pairs computed at once (1: the scalar kernel)
  int element_bits;       // 32: float
  duet::pairhmm::ForwardSumsFunction function;
  // The same kernel on pairs already grouped: pairs[k * lanes, k * lanes + lanes) is
  // group k (only the last may be partial). Same sums whatever the grouping.
  duet::pairhmm::ForwardSumsFunction grouped;
};

// Pairs grouped at once by a kernel (and by group_pairs' callers: a multiple of every
// variant's lanes, so that groups never straddle two of its windows).
inline constexpr std::size_t kGroupingPairs = 1024;

// The groups of `lanes` pairs the kernels form: order[g * lanes .. g * lanes + lanes) are
// group g's pairs (indices into `pairs`; only the last group may be partial). Pairs of
// one size (rows, columns) go together; a group starts with the largest size left, then
// takes the size that leaves the fewest idle cells, until it is full.
void group_pairs(std::span<const duet::pairhmm::Pair> pairs, int lanes,
                 std::vector<std::size_t>& order);

void forward_sums_avx2(const duet::pairhmm::Model& model,
                       std::span<const duet::pairhmm::Pair> pairs, float* sums);
void forward_sums_avx512(const duet::pairhmm::Model& model,
                         std::span<const duet::pairhmm::Pair> pairs, float* sums);
// The grouped forms (see PairhmmVariant::grouped).
void forward_sums_avx2_grouped(const duet::pairhmm::Model& model,
                               std::span<const duet::pairhmm::Pair> pairs, float* sums);
void forward_sums_avx512_grouped(const duet::pairhmm::Model& model,
                                 std::span<const duet::pairhmm::Pair> pairs, float* sums);

inline constexpr std::array<PairhmmVariant, 3> kPairhmmVariants{{
    {Isa::scalar, "scalar", 1, 32, &duet::pairhmm::forward_sums_scalar,
     &duet::pairhmm::forward_sums_scalar},
    {Isa::avx2, "avx2", 8, 32, &forward_sums_avx2, &forward_sums_avx2_grouped},
    {Isa::avx512, "avx512", 16, 32, &forward_sums_avx512, &forward_sums_avx512_grouped},
}};

// The driver of the inter-pair kernels, which forward_sums_avx2 and the others run (and
// the study kernels of bench/pairhmm_study): at most kGroupingPairs pairs at a time, formed
// into groups of W (or, kGrouped, taken as the caller grouped them: see
// PairhmmVariant::grouped), each group packed (pairhmm_isa_kernels.hpp) and given to
// `kernel`, with flush to zero on. Instantiated for W = 8 and 16.
struct PairGroupView;
using GroupKernel = void (*)(const PairGroupView&);
template <int W, bool kGrouped>
void forward_sums_inter_pair(GroupKernel kernel, const duet::pairhmm::Model& model,
                             std::span<const duet::pairhmm::Pair> pairs, float* sums);

// The fastest variant this CPU runs (AVX-512, then AVX2, then scalar), decided once.
const PairhmmVariant& best_pairhmm_variant();
// A variant by name ("auto" is the best); throws UsageError when unknown or unsupported.
const PairhmmVariant& pairhmm_variant(std::string_view name);

}  // namespace duet::simd::pairhmm
