// hmmscan's regrouping of a search (scan.hpp).
#include "app/hmmsearch/scan.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include "app/hmmsearch/report.hpp"
#include "core/fasta_reader.hpp"

namespace duet::app {

std::vector<QuerySequence> read_query_sequences(const std::string& path, const Alphabet& alphabet) {
  std::vector<QuerySequence> out;
  FastaReader reader(path, alphabet);
  Sequence s;
  while (reader.next(s))
    out.push_back(
        {std::move(s.name), std::move(s.description), static_cast<int>(s.residues.size())});
  return out;
}

SearchRun scan_results(SearchRun& search, const std::vector<HmmModel>& models,
                       const std::vector<QuerySequence>& sequences,
                       const io::SearchConfig& config) {
  SearchRun scan;
  scan.seconds = search.seconds;
  scan.stopped = search.stopped;
  scan.queries.resize(sequences.size());
  const std::int64_t nodes = total_nodes(models);
  for (std::size_t s = 0; s < sequences.size(); ++s) {
    QueryResult& q = scan.queries[s];
    q.name = sequences[s].name;
    q.description = sequences[s].description;
    q.M = sequences[s].length;
    q.counts.targets = static_cast<std::int64_t>(models.size());
    q.counts.residues = nodes;
    q.pass_first = s;
  }
  for (std::size_t m = 0; m < search.queries.size(); ++m) {
    const HmmModel& model = models[m];
    const auto cutoffs = model_cutoffs(model, config.cut, "the model database");
    for (TargetRecord& record : search.queries[m].targets) {
      QueryResult& q = scan.queries.at(static_cast<std::size_t>(record.index));
      PipelineCounts& c = q.counts;
      const Stage st = record.scores.stage;
      ++c.passed_msv;  // a record is kept for a target that passed the MSV filter
      if (st > Stage::bias) ++c.passed_bias;
      if (st > Stage::viterbi) ++c.passed_viterbi;
      if (st > Stage::forward) ++c.passed_forward;
      record.index = static_cast<std::int64_t>(m);
      record.name = model.name;
      record.accession = model.accession;
      record.description = model.description;
      record.length = model.M;
      record.cutoffs = cutoffs;
      q.targets.push_back(std::move(record));
    }
    search.queries[m].targets.clear();
  }
  for (QueryResult& q : scan.queries) finish_query(q, config);
  return scan;
}

void write_scan_results(io::Hdf5Writer& file, const SearchRun& scan) {
  const std::string g = "/results/hmmscan";
  file.create_group(g);
  // Queries.
  {
    std::vector<std::string> name, description;
    std::vector<std::int32_t> length;
    std::vector<std::int64_t> passed_msv, passed_bias, passed_viterbi, passed_forward, reported;
    for (const QueryResult& q : scan.queries) {
      name.push_back(q.name);
      description.push_back(q.description);
      length.push_back(q.M);
      passed_msv.push_back(q.counts.passed_msv);
      passed_bias.push_back(q.counts.passed_bias);
      passed_viterbi.push_back(q.counts.passed_viterbi);
      passed_forward.push_back(q.counts.passed_forward);
      reported.push_back(static_cast<std::int64_t>(q.reported.size()));
    }
    file.create_group(g + "/queries");
    file.write(g + "/queries/name", name);
    file.write(g + "/queries/description", description);
    file.write(g + "/queries/length", length);
    file.write(g + "/queries/passed_msv", passed_msv);
    file.write(g + "/queries/passed_bias", passed_bias);
    file.write(g + "/queries/passed_viterbi", passed_viterbi);
    file.write(g + "/queries/passed_forward", passed_forward);
    file.write(g + "/queries/reported_models", reported);
  }
  // Hits (a model whose domain definition found a domain in the query) and their domains.
  std::vector<std::int64_t> hit_query, hit_model;
  std::vector<std::string> hit_name;
  std::vector<float> hit_score, hit_bias;
  std::vector<double> hit_evalue;
  std::vector<std::uint8_t> hit_reported, hit_included;
  QueryEnd::Domains all;
  std::vector<std::int64_t> domain_query;
  const auto append = [](auto& to, const auto& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  for (std::size_t qi = 0; qi < scan.queries.size(); ++qi) {
    const QueryResult& q = scan.queries[qi];
    for (const TargetRecord& t : q.targets) {
      if (!t.is_hit()) continue;
      hit_query.push_back(static_cast<std::int64_t>(qi));
      hit_model.push_back(t.index);
      hit_name.push_back(t.name);
      hit_score.push_back(t.domains.score_bits);
      hit_bias.push_back(t.domains.bias_bits);
      hit_evalue.push_back(t.evalue);
      hit_reported.push_back(t.reported ? 1 : 0);
      hit_included.push_back(t.included ? 1 : 0);
    }
    const QueryEnd end = query_end(q, false);
    const QueryEnd::Domains& d = end.domains;
    domain_query.insert(domain_query.end(), d.target.size(), static_cast<std::int64_t>(qi));
    append(all.target, d.target);
    append(all.number, d.number);
    append(all.hmm_from, d.hmm_from);
    append(all.hmm_to, d.hmm_to);
    append(all.ali_from, d.ali_from);
    append(all.ali_to, d.ali_to);
    append(all.env_from, d.env_from);
    append(all.env_to, d.env_to);
    append(all.score_bits, d.score_bits);
    append(all.bias_bits, d.bias_bits);
    append(all.accuracy, d.accuracy);
    append(all.c_evalue, d.c_evalue);
    append(all.i_evalue, d.i_evalue);
    append(all.reported, d.reported);
    append(all.included, d.included);
    append(all.model_line, d.model_line);
    append(all.match_line, d.match_line);
    append(all.target_line, d.target_line);
    append(all.posterior_line, d.posterior_line);
  }
  const std::string h = g + "/hits";
  file.create_group(h);
  file.write(h + "/query", hit_query);
  file.write(h + "/model", hit_model);
  file.write(h + "/model_name", hit_name);
  file.write(h + "/score_bits", hit_score);
  file.write(h + "/bias_bits", hit_bias);
  file.write(h + "/evalue", hit_evalue);
  file.write(h + "/reported", hit_reported);
  file.write(h + "/included", hit_included);
  const std::string dg = g + "/domains";
  file.create_group(dg);
  file.write(dg + "/query", domain_query);
  file.write(dg + "/model", all.target);
  file.write(dg + "/number", all.number);
  file.write(dg + "/score_bits", all.score_bits);
  file.write(dg + "/bias_bits", all.bias_bits);
  file.write(dg + "/c_evalue", all.c_evalue);
  file.write(dg + "/i_evalue", all.i_evalue);
  file.write(dg + "/hmm_from", all.hmm_from);
  file.write(dg + "/hmm_to", all.hmm_to);
  file.write(dg + "/ali_from", all.ali_from);
  file.write(dg + "/ali_to", all.ali_to);
  file.write(dg + "/env_from", all.env_from);
  file.write(dg + "/env_to", all.env_to);
  file.write(dg + "/accuracy", all.accuracy);
  file.write(dg + "/reported", all.reported);
  file.write(dg + "/included", all.included);
  file.write(dg + "/model_line", all.model_line);
  file.write(dg + "/match_line", all.match_line);
  file.write(dg + "/target_line", all.target_line);
  file.write(dg + "/posterior_line", all.posterior_line);
  file.set_attribute(g, "queries", static_cast<std::int64_t>(scan.queries.size()));
  file.set_attribute(g, "Z", scan.queries.empty() ? 0.0 : scan.queries.front().Z);
}

}  // namespace duet::app
