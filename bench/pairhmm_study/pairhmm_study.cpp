// The study kernels' drivers (see pairhmm_study.hpp): the skewed kernels through the
// inter-pair driver of src/host_simd/pairhmm, the anti-diagonal ones through their own,
// one pair at a time. Compiled without ISA flags.
#include "pairhmm_study/pairhmm_study.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "host_simd/pairhmm/pairhmm_driver_support.hpp"
#include "pairhmm_study/pairhmm_study_isa_kernels.hpp"

namespace duet::simd::pairhmm {

namespace {

using duet::pairhmm::Model;
using duet::pairhmm::Pair;
using duet::pairhmm::RowParameters;

// The anti-diagonal kernels: each pair alone, its read's rows in the [parameter][row]
// layout (made once per run of pairs of one read) and its haplotype reversed, padded.
struct DiagonalWorkspace {
  AlignedFloats parameters, work;
  std::vector<std::int32_t> haplotype;
  std::vector<RowParameters<float>> one_read;
};

template <int W>
void forward_sums_diagonal(float (*kernel)(const DiagonalPairView&), const Model& model,
                           std::span<const Pair> pairs, float* sums) {
  thread_local DiagonalWorkspace ws;
  const FlushToZero flush_to_zero;
  const duet::pairhmm::Read* packed_read = nullptr;
  DiagonalPairView p;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const Pair& pair = pairs[i];
    const int R = pair.rows(), C = pair.columns();
    if (R == 0 || C == 0) {  // nothing to vectorise: the canonical computation itself
      sums[i] = duet::pairhmm::forward_sum<float>(model, pair);
      continue;
    }
    if (pair.read != packed_read) {
      packed_read = pair.read;
      p.rows = R;
      p.padded_rows = (R + W - 1) / W * W;
      const auto padded = static_cast<std::size_t>(p.padded_rows);
      float* parameters = ws.parameters.get(kParameters * padded);
      std::fill(parameters, parameters + kParameters * padded, 0.0f);
      model.rows(*pair.read, ws.one_read);
      unsigned codes = 0;  // the read's base codes, or-ed
      for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r) {
        const RowParameters<float>& q = ws.one_read[r];
        parameters[kMatchToMatch * padded + r] = q.match_to_match;
        parameters[kIndelToMatch * padded + r] = q.indel_to_match;
        parameters[kMatchToInsertion * padded + r] = q.match_to_insertion;
        parameters[kMatchToDeletion * padded + r] = q.match_to_deletion;
        parameters[kGapExtension * padded + r] = q.gap_extension;
        parameters[kEmissionMatch * padded + r] = q.emission_match;
        parameters[kEmissionMismatch * padded + r] = q.emission_mismatch;
        const std::int32_t base = pair.read->bases[r];
        codes |= pair.read->bases[r];
        std::memcpy(&parameters[kReadBase * padded + r], &base, sizeof(float));
      }
      require_base_codes(codes);
      p.parameters = parameters;
    }
    const auto columns = static_cast<std::size_t>(C);
    ws.haplotype.assign(columns + 2 * (W - 1), 0);
    unsigned codes = 0;  // the haplotype's base codes, or-ed
    for (std::size_t j = 0; j < columns; ++j) {
      codes |= pair.haplotype->bases[columns - 1 - j];
      ws.haplotype[W - 1 + j] = pair.haplotype->bases[columns - 1 - j];
    }
    require_base_codes(codes);
    p.columns = C;
    p.haplotype = ws.haplotype.data() + (W - 1);
    p.initial_deletion = Model::initial_deletion_float(C);
    p.work = ws.work.get(diagonal_work_floats(C, W));
    sums[i] = kernel(p);
  }
}

}  // namespace

void forward_sums_avx2_skewed(const Model& model, std::span<const Pair> pairs, float* sums) {
  forward_sums_inter_pair<avx2::kLanes, false>(&avx2::forward_group_skewed, model, pairs, sums);
}

void forward_sums_avx512_skewed(const Model& model, std::span<const Pair> pairs, float* sums) {
  forward_sums_inter_pair<avx512::kLanes, false>(&avx512::forward_group_skewed, model, pairs, sums);
}

void forward_sums_avx2_skewed_grouped(const Model& model, std::span<const Pair> pairs,
                                      float* sums) {
  forward_sums_inter_pair<avx2::kLanes, true>(&avx2::forward_group_skewed, model, pairs, sums);
}

void forward_sums_avx512_skewed_grouped(const Model& model, std::span<const Pair> pairs,
                                        float* sums) {
  forward_sums_inter_pair<avx512::kLanes, true>(&avx512::forward_group_skewed, model, pairs, sums);
}

void forward_sums_avx2_diagonal(const Model& model, std::span<const Pair> pairs, float* sums) {
  forward_sums_diagonal<avx2::kLanes>(&avx2::forward_pair_diagonal, model, pairs, sums);
}

void forward_sums_avx512_diagonal(const Model& model, std::span<const Pair> pairs, float* sums) {
  forward_sums_diagonal<avx512::kLanes>(&avx512::forward_pair_diagonal, model, pairs, sums);
}

}  // namespace duet::simd::pairhmm
