// Which PaPaRa scoring kernels the app runs: the CPU kernel (scalar or a SIMD variant
// chosen at run time, or forced by --isa) and the GPU backends.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/papara/papara_choice.hpp"
#include "core/papara/papara_kernel.hpp"
#include "scheduler/scheduler.hpp"

namespace duet::app {

struct QueryResidues;

// Scores of many queries (residues, offsets: see QueryResidues) against an edge range:
// out[q * count + k] is query q's on edge first_edge + k.
// DNA profiles give int16 scores, protein profiles int32.
using ScoreBlockFunction = void (*)(const std::uint8_t* residues, const std::int64_t* offsets,
                                    int queries, const papara::ProfileView& profiles,
                                    int first_edge, int count, const papara::Scoring& scoring,
                                    std::int16_t* out);
using ProteinScoreBlockFunction = void (*)(const std::uint8_t* residues,
                                           const std::int64_t* offsets, int queries,
                                           const papara::ProfileView& profiles, int first_edge,
                                           int count, const papara::Scoring& scoring,
                                           std::int32_t* out);

// The kernel of one alphabet: `function` for DNA, `protein_function` for protein (the
// other null).
struct PaparaCpuKernel {
  std::string name;  // e.g. "avx512 int16 x32 edges"
  ScoreBlockFunction function = nullptr;
  ProteinScoreBlockFunction protein_function = nullptr;
};

// "auto": the fastest the CPU has; otherwise the named ISA, a UsageError when the CPU or
// the build lacks it.
const PaparaCpuKernel& select_papara_cpu_kernel(const std::string& isa,
                                                papara::Alphabet alphabet = papara::Alphabet::dna);
// The ISA names --isa takes.
std::vector<std::string> papara_isa_names();

// What a block covers (see papara_workload.hpp).
struct PaparaUnit {
  std::int64_t first_query = 0, queries = 0;
  int first_edge = 0, edges = 0;
};

// The choices of a unit's queries from their scores ([query][edge] of the unit).
std::vector<papara::Choice> choices_of_scores(const PaparaUnit& unit,
                                              std::span<const std::int16_t> scores);
std::vector<papara::Choice> choices_of_scores(const PaparaUnit& unit,
                                              std::span<const std::int32_t> scores);

// Delivers a block's choices (its queries in order) once a device batch succeeded.
using ChoiceConsumer =
    std::function<void(const PaparaUnit& unit, std::span<const papara::Choice> choices)>;

// One backend per GPU the driver shows, with the profiles resident on each (DNA or protein:
// the GPU kernel of the profiles' alphabet). No GPU (or a build without CUDA): none, or a
// UsageError when `required`.
std::vector<std::unique_ptr<scheduler::GpuBackend>> make_papara_gpu_backends(
    const papara::ProfileView& profiles, const QueryResidues& queries,
    const papara::Scoring& scoring, std::span<const PaparaUnit> units, ChoiceConsumer consumer,
    bool required);

}  // namespace duet::app
