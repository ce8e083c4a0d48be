// The synthetic workload commands; see core/hmmsearch/synthetic.hpp for what they generate.
#include "app/synth_command.hpp"

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/error.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/synthetic.hpp"

namespace duet::app {

namespace {

// Writes `text` to `path` (gzip when it ends in .gz) through a temporary file.
void write_output(const std::string& path, const std::string& text) {
  const auto folder = std::filesystem::path(path).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder)) {
    throw InputError(path, 0, "cannot create output file: folder does not exist");
  }
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    gzFile gz = gzopen(tmp.c_str(), "wb6");
    if (gz == nullptr) throw InputError(path, 0, "cannot create output file");
    const bool ok = gzwrite(gz, text.data(), static_cast<unsigned>(text.size())) ==
                    static_cast<int>(text.size());
    if (gzclose(gz) != Z_OK || !ok) {
      std::filesystem::remove(tmp);
      throw InputError(path, 0, "write failed");
    }
  } else {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp);
      throw InputError(path, 0, "cannot write output file");
    }
  }
  std::filesystem::rename(tmp, path);
}

std::vector<HmmModel> read_sources(const std::vector<std::string>& paths) {
  std::vector<HmmModel> sources;
  for (const auto& p : paths)
    for (auto& m : read_hmm_file(p)) sources.push_back(std::move(m));
  for (const auto& m : sources)
    if (m.alphabet != sources.front().alphabet) throw UsageError("source models mix alphabets");
  return sources;
}

}  // namespace

void add_synth_commands(CLI::App& app,
                        std::vector<std::pair<CLI::App*, std::function<int()>>>& commands) {
  struct ModelOptions {
    std::vector<int> lengths;
    std::vector<std::string> sources = {"/usr/share/doc/hmmer/examples/tutorial/Pkinase.hmm",
                                        "/usr/share/doc/hmmer/examples/tutorial/fn3.hmm",
                                        "/usr/share/doc/hmmer/examples/tutorial/globins4.hmm"};
    std::uint64_t seed = 1;
    std::string out;
  };
  auto mo = std::make_shared<ModelOptions>();
  auto* model =
      app.add_subcommand("synth-model", "Write synthetic profile HMMs drawn from real models");
  model->add_option("-L,--length", mo->lengths, "model length(s); one model per length")
      ->required();
  model->add_option("--from", mo->sources,
                    "HMMER3 files whose nodes are drawn (default: the tutorial Pfam models)");
  model->add_option("--seed", mo->seed, "random seed (default 1)");
  model->add_option("-o,--out", mo->out, "output HMM file")->required();
  commands.emplace_back(model, [mo]() {
    const auto sources = read_sources(mo->sources);
    std::ostringstream text;
    for (std::size_t i = 0; i < mo->lengths.size(); ++i) {
      const int M = mo->lengths[i];
      if (M < 1 || M > 100000) throw UsageError("model length must be 1 to 100000");
      write_hmm(text, synthetic_model(sources, M, mo->seed + i, "synth" + std::to_string(M)));
    }
    write_output(mo->out, text.str());
    std::cerr << "duet: wrote " << mo->lengths.size() << " model(s) to " << mo->out << "\n";
    return 0;
  });

  struct DbOptions {
    std::string like = "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz";
    std::string model;
    double residues = 1e7;
    double homologs = 0.0;
    std::uint64_t seed = 1;
    std::string out;
  };
  auto dbo = std::make_shared<DbOptions>();
  auto* db =
      app.add_subcommand("synth-db", "Write a synthetic FASTA database imitating a real one");
  db->add_option("--like", dbo->like,
                 "FASTA whose composition and lengths to follow (default: the MMseqs2 example DB)");
  db->add_option("--residues", dbo->residues, "residues to write (default 1e7)");
  db->add_option("--homologs", dbo->homologs,
                 "fraction of sequences carrying a domain emitted from --model");
  db->add_option("--model", dbo->model,
                 "HMM file: its first model emits the homologs (and sets the alphabet)");
  db->add_option("--seed", dbo->seed, "random seed (default 1)");
  db->add_option("-o,--out", dbo->out, "output FASTA (.gz to compress)")->required();
  commands.emplace_back(db, [dbo]() {
    if (dbo->residues < 1) throw UsageError("--residues must be at least 1");
    if (dbo->homologs < 0 || dbo->homologs > 1) throw UsageError("--homologs must be in [0, 1]");
    std::vector<HmmModel> models;
    if (!dbo->model.empty()) models = read_hmm_file(dbo->model);
    if (dbo->homologs > 0 && models.empty()) throw UsageError("--homologs needs --model");
    const Alphabet& alphabet = models.empty() ? Alphabet::amino() : *models.front().alphabet;
    const DatabaseProfile like = DatabaseProfile::from_fasta(dbo->like, alphabet);
    SyntheticDatabaseSpec spec;
    spec.residues = static_cast<std::int64_t>(dbo->residues);
    spec.homolog_fraction = dbo->homologs;
    spec.seed = dbo->seed;
    std::ostringstream text;
    const auto n =
        write_synthetic_database(text, like, spec, models.empty() ? nullptr : &models.front());
    write_output(dbo->out, text.str());
    std::cerr << "duet: wrote " << n << " sequences to " << dbo->out << "\n";
    return 0;
  });
}

}  // namespace duet::app
