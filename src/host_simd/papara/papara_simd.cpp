// PaPaRa SIMD dispatch and the kernels' scratch memory (see papara_simd.hpp and
// papara_isa_kernels.hpp). Compiled without ISA flags.
#include "host_simd/papara/papara_simd.hpp"

#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "host_simd/papara/papara_isa_kernels.hpp"

namespace duet::simd::papara {

namespace {

using duet::papara::ProfileView;
using duet::papara::Scoring;

static_assert(kPaparaVariants[1].lanes == sse41::kLanes);
static_assert(kPaparaVariants[2].lanes == avx2::kLanes);
static_assert(kPaparaVariants[3].lanes == avx512::kLanes);

// The longest query of a block; an empty query has no score (PaPaRa 2.5 loops forever on
// one, SPEC.md §3.1), so it is refused here rather than given one.
std::int64_t longest_query(const std::int64_t* offsets, int queries) {
  std::int64_t longest = 0;
  for (int q = 0; q < queries; ++q) {
    const std::int64_t length = offsets[q + 1] - offsets[q];
    if (length <= 0) throw std::invalid_argument("PaPaRa kernel: an empty query");
    longest = length > longest ? length : longest;
  }
  return longest;
}

// The calling thread's kernel scratch, 64-byte aligned; it only grows.
void* thread_work(std::size_t bytes) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<void, Free> memory;
  thread_local std::size_t size = 0;
  if (bytes > size) {
    const std::size_t rounded = (bytes + kVectorBytes - 1) / kVectorBytes * kVectorBytes;
    memory.reset(std::aligned_alloc(kVectorBytes, rounded));
    if (!memory) throw std::bad_alloc();
    size = rounded;
  }
  return memory.get();
}

using IsaKernel = void (*)(const QueryBlockView&, const ProfileView&, int, int, const Scoring&,
                           std::int16_t*, void*);

void run_block(IsaKernel kernel, const std::uint8_t* residues, const std::int64_t* offsets,
               int queries, const ProfileView& profiles, int first_edge, int count,
               const Scoring& scoring, std::int16_t* out) {
  if (queries <= 0 || count <= 0) return;
  const QueryBlockView block{residues, offsets, queries, longest_query(offsets, queries)};
  kernel(block, profiles, first_edge, count, scoring, out, thread_work(work_bytes(block.longest)));
}

void run_one(IsaKernel kernel, std::span<const std::uint8_t> query, const ProfileView& profiles,
             int first_edge, int count, const Scoring& scoring, std::int16_t* out) {
  const std::int64_t offsets[2] = {0, static_cast<std::int64_t>(query.size())};
  run_block(kernel, query.data(), offsets, 1, profiles, first_edge, count, scoring, out);
}

}  // namespace

void score_edges_sse41(std::span<const std::uint8_t> query, const ProfileView& profiles,
                       int first_edge, int count, const Scoring& scoring, std::int16_t* out) {
  run_one(&sse41::score_block, query, profiles, first_edge, count, scoring, out);
}

void score_edges_avx2(std::span<const std::uint8_t> query, const ProfileView& profiles,
                      int first_edge, int count, const Scoring& scoring, std::int16_t* out) {
  run_one(&avx2::score_block, query, profiles, first_edge, count, scoring, out);
}

void score_edges_avx512(std::span<const std::uint8_t> query, const ProfileView& profiles,
                        int first_edge, int count, const Scoring& scoring, std::int16_t* out) {
  run_one(&avx512::score_block, query, profiles, first_edge, count, scoring, out);
}

void score_block_scalar(const std::uint8_t* residues, const std::int64_t* offsets, int queries,
                        const ProfileView& profiles, int first_edge, int count,
                        const Scoring& scoring, std::int16_t* out) {
  if (queries <= 0 || count <= 0) return;
  longest_query(offsets, queries);  // refuses empty queries, as the SIMD variants do
  for (int q = 0; q < queries; ++q) {
    const std::span<const std::uint8_t> query(
        residues + offsets[q], static_cast<std::size_t>(offsets[q + 1] - offsets[q]));
    duet::papara::score_edges_scalar(query, profiles, first_edge, count, scoring,
                                     out + static_cast<std::ptrdiff_t>(q) * count);
  }
}

void score_block_sse41(const std::uint8_t* residues, const std::int64_t* offsets, int queries,
                       const ProfileView& profiles, int first_edge, int count,
                       const Scoring& scoring, std::int16_t* out) {
  run_block(&sse41::score_block, residues, offsets, queries, profiles, first_edge, count, scoring,
            out);
}

void score_block_avx2(const std::uint8_t* residues, const std::int64_t* offsets, int queries,
                      const ProfileView& profiles, int first_edge, int count,
                      const Scoring& scoring, std::int16_t* out) {
  run_block(&avx2::score_block, residues, offsets, queries, profiles, first_edge, count, scoring,
            out);
}

void score_block_avx512(const std::uint8_t* residues, const std::int64_t* offsets, int queries,
                        const ProfileView& profiles, int first_edge, int count,
                        const Scoring& scoring, std::int16_t* out) {
  run_block(&avx512::score_block, residues, offsets, queries, profiles, first_edge, count, scoring,
            out);
}

const PaparaVariant& best_papara_variant() {
  // A pointer, not a reference: g++ 13 warns (-Wdangling-reference) on a reference
  // initialised from a lambda's returned reference.
  static const PaparaVariant* const best = []() -> const PaparaVariant* {
    for (auto it = kPaparaVariants.rbegin(); it != kPaparaVariants.rend(); ++it)
      if (cpu_supports(it->isa)) return &*it;
    return &kPaparaVariants.front();
  }();
  return *best;
}

const PaparaVariant& papara_variant(std::string_view name) {
  if (name == "auto") return best_papara_variant();
  for (const PaparaVariant& v : kPaparaVariants) {
    if (v.name != name) continue;
    if (!cpu_supports(v.isa))
      throw UsageError("--isa " + std::string(name) + ": this CPU lacks it");
    return v;
  }
  throw UsageError("--isa " + std::string(name) +
                   ": no such PaPaRa kernel (scalar, sse4.1, avx2, avx512)");
}

}  // namespace duet::simd::papara
