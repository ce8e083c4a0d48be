// The user configuration: search thresholds (HMMER's option names and defaults) and run
// settings, read from a TOML file with tables [hmmsearch] and [run], and written back.
//
// Reading is strict: an unknown table or key, a value of the wrong type, a value out of
// range, a TOML syntax error or an unreadable file throws duet::InputError naming the file
// and the line of the offending key. Keys that are absent keep the defaults below.
//
//   [hmmsearch]            # every key optional
//   E = 10.0               # > 0
//   T = 25.0               # any number; when present it replaces E
//   Z = 45638612           # > 0; default: number of targets
//   F1 = 0.02              # each of F1, F2, F3 in (0, 1]
//   F2 = 1e-3
//   F3 = 1e-5
//   max = false
//   nobias = false
//   nonull2 = false
//
//   [run]
//   cpu = 0                # >= 0; 0 = one worker thread per core
//   out = "duet.h5"        # not empty
//   tblout = ""            # empty = no table output
//   isa = "auto"           # auto, scalar, sse4.1, avx2, avx512
//   quiet = false
//
// Numbers may be written as TOML integers or floats; a TOML integer is required for cpu.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace duet::io {

struct SearchConfig {       // HMMER option names and defaults
  double E = 10.0;          // report targets with E-value <= E
  std::optional<double> T;  // report targets with bit score >= T (replaces E)
  std::optional<double> Z;  // search space size; default: number of targets
  double F1 = 0.02;         // MSV filter P-value threshold
  double F2 = 1e-3;         // Viterbi filter P-value threshold
  double F3 = 1e-5;         // Forward filter P-value threshold
  bool max = false;         // turn off all filters
  bool nobias = false;      // turn off the composition bias filter
  bool nonull2 = false;     // turn off the null2 score correction

  friend bool operator==(const SearchConfig&, const SearchConfig&) = default;
};

struct RunConfig {
  int cpu = 0;  // worker threads, 0 = one per core
  std::string out = "duet.h5";
  std::string tblout;        // empty = none
  std::string isa = "auto";  // auto, scalar, sse4.1, avx2, avx512
  bool quiet = false;

  friend bool operator==(const RunConfig&, const RunConfig&) = default;
};

struct Config {
  SearchConfig search;
  RunConfig run;

  friend bool operator==(const Config&, const Config&) = default;
};

// Reads and checks the TOML file at `path`.
Config load_config(const std::string& path);

// Checks and reads `toml_text`; `source_name` is the file name used in error messages.
Config parse_config(std::string_view toml_text, const std::string& source_name);

// The configuration as TOML text that parse_config reads back to an equal Config
// (every double is written with the shortest digits that read back exactly).
std::string to_toml(const Config& config);

}  // namespace duet::io
