// Synthetic workloads for throughput studies, deterministic from a seed:
//   - profile HMMs of any length whose node parameters are drawn (as runs of consecutive
//     nodes) from real models, calibrated as hmmbuild calibrates (lambda from the mean
//     match relative entropy; MSV and Viterbi Gumbel locations and the Forward
//     exponential tail fitted on i.i.d. background sequences, with duet's own filters);
//   - databases whose residue composition and length distribution follow a real one,
//     with a fraction of sequences carrying a domain emitted from a model.
// Same seed, same inputs: the same model and database, byte for byte.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/hmmsearch/hmm.hpp"
#include "core/sequence.hpp"

namespace duet {

// A model of M nodes drawn from `sources` (all of one alphabet), named `name`.
HmmModel synthetic_model(const std::vector<HmmModel>& sources, int M, std::uint64_t seed,
                         const std::string& name);

// Fills the STATS calibration of `model` (lambda, MSV/Viterbi mu, Forward tau).
void calibrate_model(HmmModel& model, std::uint64_t seed);

// What a synthetic database imitates: residue frequencies and sequence lengths.
struct DatabaseProfile {
  const Alphabet* alphabet = nullptr;
  std::vector<double> frequencies;  // K canonical residues, sums to 1
  std::vector<int> lengths;         // observed lengths, sampled with replacement
  static DatabaseProfile from_fasta(const std::string& path, const Alphabet& alphabet,
                                    std::int64_t max_sequences = 1000000);
};

struct SyntheticDatabaseSpec {
  std::int64_t residues = 10000000;  // stop once this many residues are written
  double homolog_fraction = 0.0;     // fraction of sequences carrying an emitted domain
  std::uint64_t seed = 1;
};

// Writes FASTA to `out`; homologs emitted from `model` (may be null when the fraction is
// 0) are named "homolog_<n>", others "random_<n>". Returns the number of sequences.
std::int64_t write_synthetic_database(std::ostream& out, const DatabaseProfile& like,
                                      const SyntheticDatabaseSpec& spec, const HmmModel* model);

// One domain emitted from `model` (match/insert emissions along a sampled path), entering
// in the first tenth of the nodes and leaving in the last tenth.
std::vector<Residue> emit_domain(const HmmModel& model, std::uint64_t& rng_state);

// HMMER3/f text of a model (probabilities as -ln p with 5 decimals, '*' for 0).
void write_hmm(std::ostream& out, const HmmModel& model);

}  // namespace duet
