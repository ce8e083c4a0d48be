// HMMER 3.3.2's domain definition and the scores hmmsearch reports from it, for one target
// that passed the Forward filter (p7_domaindef_ByPosteriorHeuristics and the rest of
// p7_Pipeline):
//   - regions: stretches where the posterior probability that the model emits a residue
//     is high (thresholds rt1 = 0.25, rt2 = 0.10), from the whole target's Forward and
//     Backward parsers;
//   - a region where a domain seems to end and another begin (rt3 = 0.20) is split by
//     clustering 200 sampled traces (HMMER's generator, reseeded per region), each other
//     region is one envelope;
//   - each envelope is rescored alone (unihit Forward and Backward, posterior decoding),
//     aligned by optimal accuracy, and given its null2 correction;
//   - the target's score: Forward minus the null2 bias of its envelopes, replaced by the
//     sum of its domains' scores where that is higher (HMMER's reconstruction rule).
// Domain scores are as HMMER computes them: the envelope's score with the length model of
// the whole target, less its own null2 bias.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/hmmsearch/posterior_dp.hpp"
#include "core/hmmsearch/profile.hpp"

namespace duet {

struct DomainSettings {
  bool null2 = true;        // off: hmmsearch --nonull2
  std::uint32_t seed = 42;  // the generator's seed for sampled traces (hmmsearch --seed)
};

// HMMER's alignment display of a domain, one character per alignment column (from the
// first to the last match state of its optimal-accuracy alignment): the model's consensus
// ('.' at an insertion); the match line (the residue where it is the consensus, '+' where
// its emission odds exceed 1); the target (upper case aligned, lower case inserted, '-'
// deleted); the posterior probability of each residue's alignment ('0' to '9' in tenths,
// '*' from 0.95; '.' at a deletion). Where the model has them, its CS and RF annotation
// ('.' at an insertion); else empty.
struct AlignmentDisplay {
  std::string model, match, target, posterior;
  std::string structure, reference;
};

struct Domain {
  // Coordinates, 1-based and inclusive: envelope and alignment on the target, alignment
  // on the model.
  int env_from = 0, env_to = 0, ali_from = 0, ali_to = 0, hmm_from = 0, hmm_to = 0;
  float envelope_nats = 0;     // the envelope's unihit Forward score
  float null2_nats = 0;        // the envelope's null2 correction (sum of per-residue scores)
  float expected_correct = 0;  // the optimal-accuracy alignment's score
  float bits = 0;              // the domain's score
  float bias_bits = 0;         // its null2 bias
  double log_pvalue = 0;       // natural log of the P-value of `bits`
  AlignmentDisplay alignment;
  // Mean posterior probability of the envelope's residues being aligned as they are
  // (HMMER's "acc").
  // Set by the report's per-domain thresholds (HMMER's is_reported, is_included).
  bool reported = false, included = false;
  double accuracy() const {
    return static_cast<double>(expected_correct) /
           (1.0 + std::fabs(static_cast<float>(env_to - env_from)));
  }
};

struct TargetDomains {
  std::vector<Domain> domains;
  // HMMER's domain number estimation: expected domains, regions, regions clustered,
  // envelopes overlapping an earlier one, envelopes.
  float expected = 0;
  int regions = 0, clustered = 0, overlaps = 0, envelopes = 0;
  // The target's reported score and its null2 bias (bits) and the log P-value of the
  // score; valid when is_hit().
  float score_bits = 0, bias_bits = 0;
  double log_pvalue = 0;
  int best_domain = 0;  // the domain with the highest score
  // HMMER keeps a target as a hit only where domain definition found a domain.
  bool is_hit() const { return !domains.empty(); }
};

// Scratch memory of domain definition, reused target after target by one thread.
class DomainWorkspace {
 public:
  DpMatrix whole_forward, whole_backward;  // the target's parsers
  DpMatrix forward, backward;              // a region's or envelope's matrices
  std::vector<float> btot, etot, mocc, null2_per_residue;
  HmmerRandom random;
};

// Domain definition and scores of a target of L >= 1 residues that passed the Forward
// filter with the Forward score `forward_nats` (the canonical score) against the null
// model's `null_nats`. `dp` is DpProfile(profile.forward), made once for many targets.
// `parsers`: the whole target's parser states where the search has them; else the whole
// target's Forward and Backward run here.
struct WholeTargetParsers {
  const float* forward = nullptr;   // the canonical Forward's (forward_canonical.hpp)
  const float* backward = nullptr;  // backward_parser_states's from them (needs forward)
  bool backward_own_scales = false;
};
TargetDomains define_domains(const SearchProfile& profile, const DpProfile& dp, const Residue* dsq,
                             int L, float forward_nats, float null_nats,
                             const DomainSettings& settings, DomainWorkspace& workspace,
                             const WholeTargetParsers& parsers = {});

// p7_FLogsum: log(e^a + e^b) by HMMER's table (1/1000 nat steps), as its scores use it.
float hmmer_logsum(float a, float b);

// The prior probability of the null2 hypothesis against the null model (HMMER's
// bg->omega).
inline constexpr float kNull2Omega = 1.0f / 256.0f;

}  // namespace duet
