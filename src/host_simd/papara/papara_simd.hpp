// CPU SIMD kernels of PaPaRa's scoring DP and traceback, and their run-time dispatch.
//
// Contract (every variant): the int16 scores of score_edges_scalar
// (core/papara/papara_kernel.hpp) on DNA profiles and the int32 scores of
// score_edges_protein_scalar on protein profiles, exactly, wrap-around included; the Traces
// of papara::traceback (core/papara/papara_alignment.hpp), exactly, on either. Thread-safe: scratch
// memory is per thread and grows only with the longest query (and, for the traceback, the
// longest query times the profile's columns) seen.
//
// Vectorisation of the scoring: one lane per edge (int16 for DNA, int32 for protein),
// `lanes` (`protein_lanes`) consecutive edges of the
// interleaved profile layout at a time (the last group of a range reads the layout's
// padding edges, or starts earlier, and keeps only its own lanes), one query at a time
// against them; see papara_kernel_impl.hpp. Of the traceback: one int32 lane per query,
// `traceback_lanes` queries of similar length at a time, each against its own edge; see
// papara_traceback_impl.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/papara/papara_alignment.hpp"
#include "core/papara/papara_kernel.hpp"
#include "host_simd/cpu_features.hpp"

namespace duet::simd::papara {

// Many queries against one edge range: query q is residues[offsets[q], offsets[q + 1])
// (states 1..15, at least one residue each), and out[q * count + k] is its score on edge
// first_edge + k. The same scores as the ScoreEdgesFunction on each query; faster, as a
// group of edges is read once for all queries and the scratch is set up once.
using ScoreBlockFunction = void (*)(const std::uint8_t* residues, const std::int64_t* offsets,
                                    int queries, const duet::papara::ProfileView& profiles,
                                    int first_edge, int count, const duet::papara::Scoring& scoring,
                                    std::int16_t* out);

// The same on protein profiles: query residues 0..19, int32 scores as
// score_edges_protein_scalar gives them.
using ProteinScoreBlockFunction = void (*)(const std::uint8_t* residues,
                                           const std::int64_t* offsets, int queries,
                                           const duet::papara::ProfileView& profiles,
                                           int first_edge, int count,
                                           const duet::papara::Scoring& scoring, std::int32_t* out);

// Tracebacks of many queries: out[q] = papara::traceback(queries[q], profiles, edges[q],
// scoring), exactly. Queries hold residues (DNA states 1..15, protein 0..19), at least one each;
// edges lie in [0, profiles.edges); queries, edges and out have one size (std::invalid_argument
// otherwise). The SIMD variants sort the queries by length into groups of
// `traceback_lanes`.
using TracebackManyFunction = void (*)(const duet::papara::ProfileView& profiles,
                                       const duet::papara::Scoring& scoring,
                                       std::span<const std::span<const std::uint8_t>> queries,
                                       std::span<const int> edges,
                                       std::span<duet::papara::Trace> out);

// One row per variant: tests, benchmarks and the dispatcher read this table.
struct PaparaVariant {
  Isa isa;
  std::string_view name;                      // isa_name(isa): "scalar", "sse4.1", "avx2", "avx512"
  int lanes;                                  // edges computed at once (1: the scalar kernel)
  int element_bits;                           // 16: PaPaRa's wrapping int16 scores (DNA)
  duet::papara::ScoreEdgesFunction function;  // one query
  ScoreBlockFunction block;                   // many queries
  int traceback_lanes;                        // queries traced back at once (int32 lanes)
  TracebackManyFunction traceback;
  int protein_lanes;  // edges computed at once on protein profiles (int32 lanes)
  duet::papara::ProteinScoreEdgesFunction protein_function;  // one query
  ProteinScoreBlockFunction protein_block;                   // many queries
};

void score_edges_sse41(std::span<const std::uint8_t> query,
                       const duet::papara::ProfileView& profiles, int first_edge, int count,
                       const duet::papara::Scoring& scoring, std::int16_t* out);
void score_edges_avx2(std::span<const std::uint8_t> query,
                      const duet::papara::ProfileView& profiles, int first_edge, int count,
                      const duet::papara::Scoring& scoring, std::int16_t* out);
void score_edges_avx512(std::span<const std::uint8_t> query,
                        const duet::papara::ProfileView& profiles, int first_edge, int count,
                        const duet::papara::Scoring& scoring, std::int16_t* out);
// The block forms (see ScoreBlockFunction); the scalar one calls score_edges_scalar per query.
void score_block_scalar(const std::uint8_t* residues, const std::int64_t* offsets, int queries,
                        const duet::papara::ProfileView& profiles, int first_edge, int count,
                        const duet::papara::Scoring& scoring, std::int16_t* out);
void score_block_sse41(const std::uint8_t* residues, const std::int64_t* offsets, int queries,
                       const duet::papara::ProfileView& profiles, int first_edge, int count,
                       const duet::papara::Scoring& scoring, std::int16_t* out);
void score_block_avx2(const std::uint8_t* residues, const std::int64_t* offsets, int queries,
                      const duet::papara::ProfileView& profiles, int first_edge, int count,
                      const duet::papara::Scoring& scoring, std::int16_t* out);
void score_block_avx512(const std::uint8_t* residues, const std::int64_t* offsets, int queries,
                        const duet::papara::ProfileView& profiles, int first_edge, int count,
                        const duet::papara::Scoring& scoring, std::int16_t* out);

// The protein forms.
void score_edges_protein_sse41(std::span<const std::uint8_t> query,
                               const duet::papara::ProfileView& profiles, int first_edge, int count,
                               const duet::papara::Scoring& scoring, std::int32_t* out);
void score_edges_protein_avx2(std::span<const std::uint8_t> query,
                              const duet::papara::ProfileView& profiles, int first_edge, int count,
                              const duet::papara::Scoring& scoring, std::int32_t* out);
void score_edges_protein_avx512(std::span<const std::uint8_t> query,
                                const duet::papara::ProfileView& profiles, int first_edge,
                                int count, const duet::papara::Scoring& scoring, std::int32_t* out);
void score_block_protein_scalar(const std::uint8_t* residues, const std::int64_t* offsets,
                                int queries, const duet::papara::ProfileView& profiles,
                                int first_edge, int count, const duet::papara::Scoring& scoring,
                                std::int32_t* out);
void score_block_protein_sse41(const std::uint8_t* residues, const std::int64_t* offsets,
                               int queries, const duet::papara::ProfileView& profiles,
                               int first_edge, int count, const duet::papara::Scoring& scoring,
                               std::int32_t* out);
void score_block_protein_avx2(const std::uint8_t* residues, const std::int64_t* offsets,
                              int queries, const duet::papara::ProfileView& profiles,
                              int first_edge, int count, const duet::papara::Scoring& scoring,
                              std::int32_t* out);
void score_block_protein_avx512(const std::uint8_t* residues, const std::int64_t* offsets,
                                int queries, const duet::papara::ProfileView& profiles,
                                int first_edge, int count, const duet::papara::Scoring& scoring,
                                std::int32_t* out);

// The traceback forms (see TracebackManyFunction); the scalar one calls papara::traceback
// per query.
void traceback_many_scalar(const duet::papara::ProfileView& profiles,
                           const duet::papara::Scoring& scoring,
                           std::span<const std::span<const std::uint8_t>> queries,
                           std::span<const int> edges, std::span<duet::papara::Trace> out);
void traceback_many_sse41(const duet::papara::ProfileView& profiles,
                          const duet::papara::Scoring& scoring,
                          std::span<const std::span<const std::uint8_t>> queries,
                          std::span<const int> edges, std::span<duet::papara::Trace> out);
void traceback_many_avx2(const duet::papara::ProfileView& profiles,
                         const duet::papara::Scoring& scoring,
                         std::span<const std::span<const std::uint8_t>> queries,
                         std::span<const int> edges, std::span<duet::papara::Trace> out);
void traceback_many_avx512(const duet::papara::ProfileView& profiles,
                           const duet::papara::Scoring& scoring,
                           std::span<const std::span<const std::uint8_t>> queries,
                           std::span<const int> edges, std::span<duet::papara::Trace> out);

inline constexpr std::array<PaparaVariant, 4> kPaparaVariants{{
    {Isa::scalar, "scalar", 1, 16, &duet::papara::score_edges_scalar, &score_block_scalar, 1,
     &traceback_many_scalar, 1, &duet::papara::score_edges_protein_scalar,
     &score_block_protein_scalar},
    {Isa::sse41, "sse4.1", 8, 16, &score_edges_sse41, &score_block_sse41, 4, &traceback_many_sse41,
     4, &score_edges_protein_sse41, &score_block_protein_sse41},
    {Isa::avx2, "avx2", 16, 16, &score_edges_avx2, &score_block_avx2, 8, &traceback_many_avx2, 8,
     &score_edges_protein_avx2, &score_block_protein_avx2},
    {Isa::avx512, "avx512", 32, 16, &score_edges_avx512, &score_block_avx512, 16,
     &traceback_many_avx512, 16, &score_edges_protein_avx512, &score_block_protein_avx512},
}};

// The fastest variant this CPU runs (AVX-512, then AVX2, SSE4.1, scalar), decided once.
const PaparaVariant& best_papara_variant();
// A variant by name ("auto" is the best); throws UsageError when unknown or unsupported.
const PaparaVariant& papara_variant(std::string_view name);

// The best variant's traceback (see TracebackManyFunction).
void traceback_many(const duet::papara::ProfileView& profiles, const duet::papara::Scoring& scoring,
                    std::span<const std::span<const std::uint8_t>> queries,
                    std::span<const int> edges, std::span<duet::papara::Trace> out);

}  // namespace duet::simd::papara
