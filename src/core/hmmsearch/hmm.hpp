// A profile HMM as a HMMER3 save file describes it (probabilities, not scores), and the
// reader of HMMER3 ASCII files (formats 3/a to 3/f, plain or gzip, several models a file).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/alphabet.hpp"
#include "core/text_reader.hpp"

namespace duet {

// Transition indices of a node, in the file's column order.
enum HmmTransition { kMM = 0, kMI, kMD, kIM, kII, kDM, kDD, kNumTransitions };

struct HmmModel {
  std::string name;
  std::string accession;
  std::string description;
  const Alphabet* alphabet = nullptr;
  int M = 0;              // nodes
  int max_length = 0;     // MAXL, 0 if absent
  std::string consensus;  // consensus residues, 1..M at [1..M], empty if absent
  // The RF (reference) and CS (structure) annotation per node, 1..M at [1..M], where the
  // header says "RF yes" / "CS yes"; empty otherwise.
  std::string reference, structure;
  // Probabilities as HMMER computes them from the file: expf(-value), 0 for '*'.
  std::vector<std::array<float, kNumTransitions>> t;  // nodes 0..M
  std::vector<std::vector<float>> match;              // nodes 0..M (row 0 unused) x K
  std::vector<std::vector<float>> insert;             // nodes 0..M x K
  std::vector<float> composition;                     // COMPO line, K values; empty if absent
  // Calibration (STATS LOCAL lines).
  float msv_mu = 0, msv_lambda = 0, viterbi_mu = 0, viterbi_lambda = 0;
  float forward_tau = 0, forward_lambda = 0;
  bool has_stats = false;
  // Pfam's bit score cutoffs (GA gathering, TC trusted, NC noise): per sequence and per
  // domain; absent where the file has no such line.
  std::optional<std::array<float, 2>> ga, tc, nc;
  std::string format;     // "3/f" etc.
  std::int64_t line = 0;  // first line of the model in its file
};

class HmmReader {
 public:
  explicit HmmReader(const std::string& path);
  // Models in `text` (not copied: it must outlive the reader), a part of the file `path`
  // after its line `lines_before`.
  HmmReader(const std::string& path, std::string_view text, std::int64_t lines_before);
  // Reads the next model; false at end of file. Throws InputError with the line.
  bool next(HmmModel& model);
  const std::string& path() const { return text_.path(); }

 private:
  TextReader text_;
  std::string line_;
  std::vector<std::string_view> fields_;  // the words of line_ (a node's lines)
};

// Reads every model of a file; a file with none is an error. A large file is cut between
// models and the parts are parsed in parallel: the same models and the same first error
// as reading it in one go.
std::vector<HmmModel> read_hmm_file(const std::string& path);

// The models' nodes (M) summed.
inline std::int64_t total_nodes(const std::vector<HmmModel>& models) {
  std::int64_t nodes = 0;
  for (const HmmModel& m : models) nodes += m.M;
  return nodes;
}

}  // namespace duet
