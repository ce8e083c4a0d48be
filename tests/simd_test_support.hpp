// Inputs for the SIMD kernel tests: a replayable seed, random profile HMMs with
// normalised probabilities and calibration lines, and targets (uniform over every code,
// sampled from a model's own paths, the consensus repeated), plus the tutorial models and
// the MMseqs2 example database.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/alphabet.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/sequence.hpp"

namespace duet::simd_test {

// DUET_TEST_SEED when set, else a fresh seed; printed once per process as
// "DUET_TEST_SEED=<n>" so that a failure can be replayed.
std::uint64_t test_seed();

// How a random model looks: emission peakedness (0: flat, 3: nearly one residue per
// node), gap-open and delete-extension levels (0..1).
struct ModelStyle {
  double emission_sharpness = 1.0;
  double gap_open = 0.1;
  double delete_extension = 0.5;
};
ModelStyle random_style(std::mt19937_64& rng);

HmmModel random_hmm(std::mt19937_64& rng, const Alphabet& alphabet, int M, const ModelStyle& style);

// Uniform over every code 0..Kp-1 (degenerate, gap, '*', '~' included).
std::vector<Residue> random_codes(std::mt19937_64& rng, const Alphabet& alphabet, int L);
// Domains sampled along the model's own paths (M, I and D states, local entry and exit)
// between random canonical flanks, cut to L; `noise` of the positions replaced by any code.
std::vector<Residue> sampled_from_model(std::mt19937_64& rng, const HmmModel& hmm, int L,
                                        double noise);
// The model's most probable residue at every node, repeated to length L.
std::vector<Residue> consensus_repeated(const HmmModel& hmm, int L);
// The consensus of nodes 1..M once, with `gaps` random runs of nodes left out (paths
// through D->D chains then score best).
std::vector<Residue> consensus_with_deletions(std::mt19937_64& rng, const HmmModel& hmm, int gaps);

// A random model (random_hmm) with its search profile and a label naming its alphabet,
// length and style, for test messages.
struct TestModel {
  std::string label;
  HmmModel hmm;
  SearchProfile profile;
};
TestModel make_model(std::mt19937_64& rng, const Alphabet& abc, int M,
                     std::optional<ModelStyle> given = {});

inline const char* kTutorialDir = "/usr/share/doc/hmmer/examples/tutorial/";
inline const char* kMmseqsDatabase = "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz";
// The first `count` sequences of a FASTA file (empty if the file is missing).
std::vector<Sequence> read_sequences(const std::string& path, const Alphabet& alphabet, int count);

}  // namespace duet::simd_test
