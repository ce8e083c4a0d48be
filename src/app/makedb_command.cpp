// `duet makedb`: see makedb_command.hpp. The FASTA is parsed and digitized in parallel by
// io::BlockReader; this thread writes each block as it arrives
// (PackedDatabaseWriter), so memory stays bounded whatever the database's size. The
// output keeps the output promise (io/output_file.hpp): it is written to a temporary file
// beside it and renamed at the end; bad input or a signal leaves no file and changes none.
#include "app/makedb_command.hpp"

#include <iostream>
#include <memory>
#include <string>

#include "app/kit/run_context.hpp"
#include "core/alphabet.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "io/block_reader.hpp"
#include "io/output_file.hpp"
#include "io/packed_database.hpp"

namespace duet::app {

namespace {

struct MakedbOptions {
  std::string input, out, alphabet = "amino";
  int reader_threads = 0;
  bool quiet = false;
};

int report_stop() {
  std::cerr << "duet: " << stop_reason() << "; no output written\n";
  return stop_exit_status();
}

int run_makedb(const MakedbOptions& o) {
  install_signal_handlers();
  const Alphabet& alphabet = o.alphabet == "dna" ? Alphabet::dna() : Alphabet::amino();
  // The output can be created and is not the input: checked before any work.
  io::OutputSet outputs({o.input});
  io::OutputFile& output = outputs.add(o.out, "output");
  phase_time("checked options");
  const InputFile input(o.input, &g_interrupted);
  if (g_interrupted.load()) return report_stop();
  if (io::PackedDatabase::is_packed(input))
    throw InputError(o.input, 0, "is already a packed database");
  phase_time("opened inputs");

  io::ReaderOptions reader_options;
  reader_options.threads = o.reader_threads;
  reader_options.stop = &g_interrupted;
  std::int64_t sequences = 0, residues = 0;
  {
    io::BlockReader reader(input, alphabet, reader_options);
    io::PackedDatabaseWriter writer(output.create_temporary(), output.path(), alphabet);
    while (const BlockPtr block = reader.next()) writer.add(*block);
    if (g_interrupted.load()) return report_stop();
    writer.finish();
    sequences = writer.sequences();
    residues = writer.residues();
  }
  phase_time("wrote database");
  if (g_interrupted.load()) return report_stop();
  outputs.commit_all();
  phase_time("committed output");
  if (!o.quiet) {
    std::cout << "# " << sequences << " " << alphabet.name() << " sequences, " << residues
              << " residues, written to " << o.out << "\n";
  }
  return 0;
}

}  // namespace

void add_makedb_command(CLI::App& app,
                        std::vector<std::pair<CLI::App*, std::function<int()>>>& commands) {
  auto o = std::make_shared<MakedbOptions>();
  auto* cmd = app.add_subcommand(
      "makedb", "Pack a FASTA database (plain or .gz) into a database that is mapped, not parsed");
  cmd->add_option("fasta", o->input, "FASTA database (plain or .gz)")->required();
  cmd->add_option("out", o->out, "packed database to write")->required();
  cmd->add_option("--alphabet", o->alphabet,
                  "alphabet the residues are digitized in: amino or dna; it must be the "
                  "alphabet of the models searched against it (default amino)")
      ->check(CLI::IsMember({"amino", "dna"}));
  cmd->add_option("--reader-threads", o->reader_threads,
                  "threads parsing the FASTA (default: one per core, at most 4)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet", o->quiet, "no output on standard output");
  commands.emplace_back(cmd, [o] { return run_makedb(*o); });
}

}  // namespace duet::app
