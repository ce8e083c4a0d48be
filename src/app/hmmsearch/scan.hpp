// hmmscan: query sequences against a model database, as one hmmsearch pass of every model
// over the sequences whose results are regrouped by sequence. The scores are the same as
// hmmsearch's (the pipeline is symmetric); the statistics are hmmscan's: each sequence is
// a query with the models as its targets, Z = the number of models, domZ = the models
// reported for that sequence.
#pragma once

#include <string>
#include <vector>

#include "app/hmmsearch/search.hpp"
#include "core/alphabet.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "io/config.hpp"
#include "io/hdf5_file.hpp"

namespace duet::app {

struct QuerySequence {
  std::string name, description;
  int length = 0;
};

// The sequences of a FASTA file (plain or gzip), in order.
std::vector<QuerySequence> read_query_sequences(const std::string& path, const Alphabet& alphabet);

// hmmscan's results from a search of `models` against `sequences`: one query per sequence
// (name, description, M = its length), whose targets are the records of the models that
// passed its MSV filter (index = the model's position, name, accession, description,
// length = M, the model's Pfam cutoffs under config.cut), its pass counts over the models
// (targets = the number of models, residues = their nodes), then finish_query with
// hmmscan's Z. Moves the records out of `search`; its summaries stay.
SearchRun scan_results(SearchRun& search, const std::vector<HmmModel>& models,
                       const std::vector<QuerySequence>& sequences, const io::SearchConfig& config);

// /results/hmmscan: the queries' table, every hit (query x model) and every domain of the
// hits, as flat tables (README, "The result file (hmmscan)").
void write_scan_results(io::Hdf5Writer& file, const SearchRun& scan);

}  // namespace duet::app
