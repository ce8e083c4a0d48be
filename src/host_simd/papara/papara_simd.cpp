// PaPaRa SIMD dispatch, the kernels' scratch memory, and the traceback's grouping of
// queries and walk back (see papara_simd.hpp and papara_isa_kernels.hpp). Compiled without
// ISA flags.
#include "host_simd/papara/papara_simd.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "host_simd/papara/papara_isa_kernels.hpp"

namespace duet::simd::papara {

namespace {

using duet::papara::ProfileView;
using duet::papara::Scoring;

static_assert(kPaparaVariants[1].lanes == sse41::kLanes);
static_assert(kPaparaVariants[2].lanes == avx2::kLanes);
static_assert(kPaparaVariants[3].lanes == avx512::kLanes);
static_assert(kPaparaVariants[1].protein_lanes == sse41::kProteinLanes);
static_assert(kPaparaVariants[2].protein_lanes == avx2::kProteinLanes);
static_assert(kPaparaVariants[3].protein_lanes == avx512::kProteinLanes);
static_assert(kPaparaVariants[1].traceback_lanes == sse41::kTracebackLanes);
static_assert(kPaparaVariants[2].traceback_lanes == avx2::kTracebackLanes);
static_assert(kPaparaVariants[3].traceback_lanes == avx512::kTracebackLanes);

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

// An ISA's block kernel, with int16 (DNA) or int32 (protein) scores.
template <class Score>
using IsaKernel = void (*)(const QueryBlockView&, const ProfileView&, int, int, const Scoring&,
                           Score*, void*);

// The profiles must be of the kernel's alphabet.
void check_alphabet(const ProfileView& profiles, bool protein) {
  if (protein ? profiles.cells != nullptr : profiles.protein_cells != nullptr)
    throw std::invalid_argument(protein ? "PaPaRa kernel: protein scoring of DNA profiles"
                                        : "PaPaRa kernel: DNA scoring of protein profiles");
}

template <class Score>
void run_block(IsaKernel<Score> kernel, const std::uint8_t* residues, const std::int64_t* offsets,
               int queries, const ProfileView& profiles, int first_edge, int count,
               const Scoring& scoring, Score* out) {
  check_alphabet(profiles, sizeof(Score) == 4);
  if (queries <= 0 || count <= 0) return;
  const QueryBlockView block{residues, offsets, queries, longest_query(offsets, queries)};
  kernel(block, profiles, first_edge, count, scoring, out, thread_work(work_bytes(block.longest)));
}

template <class Score>
void run_one(IsaKernel<Score> kernel, std::span<const std::uint8_t> query,
             const ProfileView& profiles, int first_edge, int count, const Scoring& scoring,
             Score* out) {
  const std::int64_t offsets[2] = {0, static_cast<std::int64_t>(query.size())};
  run_block(kernel, query.data(), offsets, 1, profiles, first_edge, count, scoring, out);
}

// ---- traceback ----

using duet::papara::Trace;
using Queries = std::span<const std::span<const std::uint8_t>>;
using TracebackKernel = void (*)(const TracebackGroupView&, const ProfileView&, const Scoring&,
                                 TracebackEnd*, void*);
constexpr int kMaxTracebackLanes = avx512::kTracebackLanes;

void check_tracebacks(const ProfileView& profiles, Queries queries, std::span<const int> edges,
                      std::span<const Trace> out) {
  if (edges.size() != queries.size() || out.size() != queries.size())
    throw std::invalid_argument("PaPaRa traceback: queries, edges and traces differ in number");
  for (std::size_t q = 0; q < queries.size(); ++q) {
    if (queries[q].empty()) throw std::invalid_argument("PaPaRa traceback: an empty query");
    if (edges[q] < 0 || edges[q] >= profiles.edges)
      throw std::invalid_argument("PaPaRa traceback: edge " + std::to_string(edges[q]) +
                                  " outside the profiles");
  }
}

constexpr std::size_t round_up(std::size_t bytes) {
  return (bytes + kVectorBytes - 1) / kVectorBytes * kVectorBytes;
}

// papara::traceback's walk back for one lane of a group: trailing columns, trailing bases,
// then the choices from the end cell, staying in L or U while they extend.
void walk_back(const std::uint8_t* choices, int rows, int lanes, int lane, int columns, int m,
               const TracebackEnd& end, Trace& t) {
  using duet::papara::kBaseOnly;
  using duet::papara::kColumnAndBase;
  using duet::papara::kColumnOnly;
  // Choice b of cell (i, j): bit `lane` of word (4 * j + b) * rows + i (little-endian).
  const std::size_t word_bytes = traceback_choice_word_bytes(lanes);
  const auto choice = [&](int i, int j, int b) {
    const std::size_t word = (4 * static_cast<std::size_t>(j) + static_cast<std::size_t>(b)) *
                                 static_cast<std::size_t>(rows) +
                             static_cast<std::size_t>(i);
    return (choices[word * word_bytes + static_cast<std::size_t>(lane >> 3)] >> (lane & 7) & 1) !=
           0;
  };
  enum Choice { kFromU = 0, kFromL = 1, kLExtends = 2, kUExtends = 3 };
  t.score = end.score;
  std::vector<std::uint8_t>& codes = t.codes;  // built backwards, reversed at the end
  codes.clear();
  codes.reserve(static_cast<std::size_t>(columns) + static_cast<std::size_t>(m));
  for (int j = columns - 1; j > end.column; --j) codes.push_back(kColumnOnly);
  for (int i = m - 1; i > end.row; --i) codes.push_back(kBaseOnly);
  int i = end.row, j = end.column;
  enum { in_h, in_l, in_u } state = in_h;
  while (i >= 0 && j >= 0) {
    if (state == in_h) {
      if (choice(i, j, kFromU)) {
        state = in_u;
      } else if (choice(i, j, kFromL)) {
        state = in_l;
      } else {
        codes.push_back(kColumnAndBase);
        --i;
        --j;
        continue;
      }
    }
    if (state == in_l) {
      codes.push_back(kColumnOnly);
      if (!choice(i, j, kLExtends)) state = in_h;
      --j;
    } else {
      codes.push_back(kBaseOnly);
      if (!choice(i, j, kUExtends)) state = in_h;
      --i;
    }
  }
  for (; j >= 0; --j) codes.push_back(kColumnOnly);
  for (; i >= 0; --i) codes.push_back(kBaseOnly);
  std::reverse(codes.begin(), codes.end());
}

// The queries sorted by length, in groups of `lanes` (the last group repeats its longest
// query in its spare lanes), each group's DP by `kernel`, then each query's walk back.
void run_tracebacks(TracebackKernel kernel, int lanes, const ProfileView& profiles,
                    const Scoring& scoring, Queries queries, std::span<const int> edges,
                    std::span<Trace> out) {
  check_tracebacks(profiles, queries, edges, out);
  const int columns = profiles.columns;
  if (columns <= 0) {  // no DP to run; papara::traceback handles this corner
    for (std::size_t q = 0; q < queries.size(); ++q)
      out[q] = duet::papara::traceback(queries[q], profiles, edges[q], scoring);
    return;
  }
  thread_local std::vector<std::size_t> order;
  order.resize(queries.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // std::sort with the index as tie-break: stable without stable_sort's temporary buffer.
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return queries[a].size() != queries[b].size() ? queries[a].size() < queries[b].size() : a < b;
  });
  for (std::size_t first = 0; first < order.size(); first += static_cast<std::size_t>(lanes)) {
    const int used =
        static_cast<int>(std::min(order.size() - first, static_cast<std::size_t>(lanes)));
    std::size_t group[kMaxTracebackLanes];
    for (int k = 0; k < lanes; ++k)
      group[k] = order[first + static_cast<std::size_t>(std::min(k, used - 1))];
    const int rows = static_cast<int>(queries[group[used - 1]].size());
    // Scratch: residues, H and L, the choices.
    const std::size_t residue_bytes =
        round_up(static_cast<std::size_t>(rows) * static_cast<std::size_t>(lanes) * 4);
    const std::size_t work_size = round_up(traceback_work_bytes(rows));
    auto* const base = static_cast<std::uint8_t*>(
        thread_work(residue_bytes + work_size + traceback_choice_bytes(columns, rows, lanes)));
    auto* const residues = reinterpret_cast<std::int32_t*>(base);
    void* const work = base + residue_bytes;
    std::uint8_t* const choices = base + residue_bytes + work_size;
    alignas(kVectorBytes) std::int32_t lengths[kMaxTracebackLanes], lane_edges[kMaxTracebackLanes];
    const bool protein = profiles.alphabet() == duet::papara::Alphabet::protein;
    for (int k = 0; k < lanes; ++k) {
      const std::span<const std::uint8_t> query = queries[group[k]];
      const int m = static_cast<int>(query.size());
      lengths[k] = m;
      lane_edges[k] = edges[group[k]];
      for (int i = 0; i < rows; ++i)
        residues[static_cast<std::size_t>(i) * static_cast<std::size_t>(lanes) +
                 static_cast<std::size_t>(k)] =
            i >= m    ? 0
            : protein ? std::int32_t{1} << query[static_cast<std::size_t>(i)]
                      : query[static_cast<std::size_t>(i)];
    }
    TracebackEnd ends[kMaxTracebackLanes];
    kernel(TracebackGroupView{rows, lengths, lane_edges, residues, choices}, profiles, scoring,
           ends, work);
    for (int k = 0; k < used; ++k)
      walk_back(choices, rows, lanes, k, columns, lengths[k], ends[k], out[group[k]]);
  }
}

}  // namespace

void traceback_many_scalar(const ProfileView& profiles, const Scoring& scoring, Queries queries,
                           std::span<const int> edges, std::span<Trace> out) {
  check_tracebacks(profiles, queries, edges, out);
  for (std::size_t q = 0; q < queries.size(); ++q)
    out[q] = duet::papara::traceback(queries[q], profiles, edges[q], scoring);
}

void traceback_many_sse41(const ProfileView& profiles, const Scoring& scoring, Queries queries,
                          std::span<const int> edges, std::span<Trace> out) {
  run_tracebacks(&sse41::traceback_group, sse41::kTracebackLanes, profiles, scoring, queries, edges,
                 out);
}

void traceback_many_avx2(const ProfileView& profiles, const Scoring& scoring, Queries queries,
                         std::span<const int> edges, std::span<Trace> out) {
  run_tracebacks(&avx2::traceback_group, avx2::kTracebackLanes, profiles, scoring, queries, edges,
                 out);
}

void traceback_many_avx512(const ProfileView& profiles, const Scoring& scoring, Queries queries,
                           std::span<const int> edges, std::span<Trace> out) {
  run_tracebacks(&avx512::traceback_group, avx512::kTracebackLanes, profiles, scoring, queries,
                 edges, out);
}

void traceback_many(const ProfileView& profiles, const Scoring& scoring, Queries queries,
                    std::span<const int> edges, std::span<Trace> out) {
  best_papara_variant().traceback(profiles, scoring, queries, edges, out);
}

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
  check_alphabet(profiles, false);
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

void score_edges_protein_sse41(std::span<const std::uint8_t> query, const ProfileView& profiles,
                               int first_edge, int count, const Scoring& scoring,
                               std::int32_t* out) {
  run_one(&sse41::score_block_protein, query, profiles, first_edge, count, scoring, out);
}

void score_edges_protein_avx2(std::span<const std::uint8_t> query, const ProfileView& profiles,
                              int first_edge, int count, const Scoring& scoring,
                              std::int32_t* out) {
  run_one(&avx2::score_block_protein, query, profiles, first_edge, count, scoring, out);
}

void score_edges_protein_avx512(std::span<const std::uint8_t> query, const ProfileView& profiles,
                                int first_edge, int count, const Scoring& scoring,
                                std::int32_t* out) {
  run_one(&avx512::score_block_protein, query, profiles, first_edge, count, scoring, out);
}

void score_block_protein_scalar(const std::uint8_t* residues, const std::int64_t* offsets,
                                int queries, const ProfileView& profiles, int first_edge, int count,
                                const Scoring& scoring, std::int32_t* out) {
  check_alphabet(profiles, true);
  if (queries <= 0 || count <= 0) return;
  longest_query(offsets, queries);  // refuses empty queries, as the SIMD variants do
  for (int q = 0; q < queries; ++q) {
    const std::span<const std::uint8_t> query(
        residues + offsets[q], static_cast<std::size_t>(offsets[q + 1] - offsets[q]));
    duet::papara::score_edges_protein_scalar(query, profiles, first_edge, count, scoring,
                                             out + static_cast<std::ptrdiff_t>(q) * count);
  }
}

void score_block_protein_sse41(const std::uint8_t* residues, const std::int64_t* offsets,
                               int queries, const ProfileView& profiles, int first_edge, int count,
                               const Scoring& scoring, std::int32_t* out) {
  run_block(&sse41::score_block_protein, residues, offsets, queries, profiles, first_edge, count,
            scoring, out);
}

void score_block_protein_avx2(const std::uint8_t* residues, const std::int64_t* offsets,
                              int queries, const ProfileView& profiles, int first_edge, int count,
                              const Scoring& scoring, std::int32_t* out) {
  run_block(&avx2::score_block_protein, residues, offsets, queries, profiles, first_edge, count,
            scoring, out);
}

void score_block_protein_avx512(const std::uint8_t* residues, const std::int64_t* offsets,
                                int queries, const ProfileView& profiles, int first_edge, int count,
                                const Scoring& scoring, std::int32_t* out) {
  run_block(&avx512::score_block_protein, residues, offsets, queries, profiles, first_edge, count,
            scoring, out);
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
