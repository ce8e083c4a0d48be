// Reading the TOML configuration with toml++ and checking every key (the contract is in
// config.hpp), and writing a Config back as TOML.
#include "io/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <vector>

#include "core/error.hpp"
#include "io/toml_input.hpp"

namespace duet::io {
namespace {

constexpr std::array<std::string_view, 5> kIsaNames = {"auto", "scalar", "sse4.1", "avx2",
                                                       "avx512"};

// The shortest decimal text that reads back as the same double ("0.02", "1e-05", "10").
std::string shortest_decimal(double value) {
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return std::string(buffer.data(), result.ptr);
}

// A TOML float literal for `value`: shortest_decimal, with ".0" added where it would
// otherwise read as a TOML integer; inf and nan in TOML's spelling.
std::string toml_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string text = shortest_decimal(value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

// A TOML basic string: quotes, backslashes and control characters escaped, other bytes
// (UTF-8 included) as they are.
std::string toml_string(std::string_view value) {
  std::string text = "\"";
  for (const char c : value) {
    switch (c) {
      case '"':
        text += "\\\"";
        break;
      case '\\':
        text += "\\\\";
        break;
      case '\b':
        text += "\\b";
        break;
      case '\t':
        text += "\\t";
        break;
      case '\n':
        text += "\\n";
        break;
      case '\f':
        text += "\\f";
        break;
      case '\r':
        text += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          constexpr std::string_view kHex = "0123456789ABCDEF";
          const auto byte = static_cast<unsigned char>(c);
          text += "\\u00";
          text += kHex[byte >> 4];
          text += kHex[byte & 0xf];
        } else {
          text += c;
        }
    }
  }
  text += '"';
  return text;
}

// One key of a table with its value and the line it is on.
struct Entry {
  std::string_view key;
  const toml::node* value;
  std::int64_t line;
};

// The keys of `table` in the order they appear in the file, so that the first problem
// reported is the first one in the file.
std::vector<Entry> entries_in_file_order(const toml::table& table) {
  std::vector<Entry> entries;
  for (auto&& [key, value] : table) {
    entries.push_back({key.str(), &value, static_cast<std::int64_t>(key.source().begin.line)});
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.line < b.line; });
  return entries;
}

// Reads typed values from entries, throwing InputError(source, line, ...) on any problem.
class EntryReader {
 public:
  explicit EntryReader(const std::string& source_name) : source_name_(source_name) {}

  [[noreturn]] void fail(const Entry& entry, const std::string& message) const {
    throw InputError(source_name_, entry.line, message);
  }

  // A finite number, written as a TOML float or integer.
  double number(const Entry& entry) const {
    double value = 0.0;
    if (const auto* floating = entry.value->as_floating_point()) {
      value = floating->get();
    } else if (const auto* integer = entry.value->as_integer()) {
      value = static_cast<double>(integer->get());
    } else {
      fail_type(entry, "a number");
    }
    if (!std::isfinite(value)) {
      fail(entry, quoted(entry) + " must be a finite number, not " + shortest_decimal(value));
    }
    return value;
  }

  // A number within the range of its key (number_problem).
  double ranged_number(const Entry& entry) const {
    const double value = number(entry);
    const std::string problem = number_problem(entry.key, value);
    if (!problem.empty()) fail(entry, quoted(entry) + " " + problem);
    return value;
  }

  // A TOML integer within the range of its key (number_problem).
  std::int64_t ranged_integer(const Entry& entry) const {
    const auto* integer = entry.value->as_integer();
    if (integer == nullptr) fail_type(entry, "an integer");
    const std::int64_t value = integer->get();
    const std::string problem = number_problem(entry.key, static_cast<double>(value));
    if (!problem.empty()) fail(entry, quoted(entry) + " " + problem);
    return value;
  }

  bool boolean(const Entry& entry) const {
    const auto* boolean = entry.value->as_boolean();
    if (boolean == nullptr) fail_type(entry, "a boolean (true or false)");
    return boolean->get();
  }

  std::string string(const Entry& entry) const {
    const auto* string = entry.value->as_string();
    if (string == nullptr) fail_type(entry, "a string");
    return string->get();
  }

  std::string non_empty_string(const Entry& entry) const {
    std::string value = string(entry);
    if (value.empty()) fail(entry, quoted(entry) + " must not be empty");
    return value;
  }

  std::string isa_name(const Entry& entry) const {
    std::string value = string(entry);
    if (std::find(kIsaNames.begin(), kIsaNames.end(), value) == kIsaNames.end()) {
      std::string names;
      for (const std::string_view name : kIsaNames) {
        names += names.empty() ? "" : ", ";
        names += name;
      }
      fail(entry, quoted(entry) + " must be one of " + names + ", not '" + value + "'");
    }
    return value;
  }

  const toml::table& table(const Entry& entry) const {
    const auto* table = entry.value->as_table();
    if (table == nullptr) fail_type(entry, "a table");
    return *table;
  }

 private:
  static std::string quoted(const Entry& entry) {
    return std::string("'").append(entry.key).append("'");
  }

  [[noreturn]] void fail_type(const Entry& entry, std::string_view expected) const {
    fail(entry, quoted(entry) + " must be " + std::string(expected) + ", not " +
                    std::string(describe_type(entry.value->type())));
  }

  const std::string& source_name_;
};

constexpr std::array<std::string_view, 4> kPolicyNames = {"auto", "dynamic", "static", "adaptive"};

// The range of each numeric setting (number_problem): [low, high], either end open where
// said; integers only where `integer`.
struct NumberRange {
  std::string_view key;
  double low, high;
  bool low_open = false, high_open = false, integer = false;
};
constexpr double kNoLimit = std::numeric_limits<double>::max();
constexpr std::array<NumberRange, 27> kNumberRanges = {{
    {"E", 0.0, kNoLimit, true},
    {"T", -kNoLimit, kNoLimit},
    {"Z", 0.0, kNoLimit, true},
    {"domE", 0.0, kNoLimit, true},
    {"domT", -kNoLimit, kNoLimit},
    {"domZ", 0.0, kNoLimit, true},
    {"incE", 0.0, kNoLimit, true},
    {"incT", -kNoLimit, kNoLimit},
    {"incdomE", 0.0, kNoLimit, true},
    {"incdomT", -kNoLimit, kNoLimit},
    {"seed", 1.0, 4294967295.0, false, false, true},
    {"textw", 0.0, 1048576.0, false, false, true},
    {"F1", 0.0, 1.0, true},
    {"F2", 0.0, 1.0, true},
    {"F3", 0.0, 1.0, true},
    {"cpu", 0.0, kMaxCpuWorkers, false, false, true},
    {"static_cpu_fraction", 0.0, 1.0},
    {"block_residues", 1.0, 4294967296.0, false, false, true},
    {"queue_depth", 0.0, 1048576.0, false, false, true},
    {"gpu_batch_blocks", 0.0, 1048576.0, false, false, true},
    {"gpu_batch_residues", 1.0, 1099511627776.0, false, false, true},
    {"reader_threads", 0.0, 256.0, false, false, true},
    {"worker_nice", 0.0, 19.0, false, false, true},
    {"feeders", 1.0, 8.0, false, false, true},
    {"gpu_feeders", 1.0, 8.0, false, false, true},
    {"sms", 0.0, 4096.0, false, false, true},
    {"min_base_quality", 0.0, 93.0, false, false, true},
}};

const NumberRange& number_range(std::string_view key) {
  for (const NumberRange& range : kNumberRanges)
    if (range.key == key) return range;
  throw std::logic_error("number_problem: no range for '" + std::string(key) + "'");
}

// A memory size: a TOML integer (bytes, >= 0) or a string such as "512M" or "4G"
// (parse_memory_size); with `allow_auto`, also the string "auto", read as no value.
std::optional<std::uint64_t> memory_size_in(const EntryReader& reader, const Entry& entry,
                                            bool allow_auto) {
  const std::string key(entry.key);
  if (const auto* integer = entry.value->as_integer()) {
    if (integer->get() < 0) {
      reader.fail(entry, "'" + key + "' must be >= 0, not " + std::to_string(integer->get()));
    }
    return static_cast<std::uint64_t>(integer->get());
  }
  if (const auto* text = entry.value->as_string()) {
    if (allow_auto && text->get() == "auto") return std::nullopt;
    const auto bytes = parse_memory_size(text->get());
    if (!bytes) {
      reader.fail(entry, "'" + key + "' must be " + (allow_auto ? "\"auto\" or " : "") +
                             "a size such as \"512M\" or \"4G\", not '" + text->get() + "'");
    }
    return *bytes;
  }
  reader.fail(entry, "'" + key + "' must be an integer (bytes) or a string such as \"4G\", not " +
                         std::string(describe_type(entry.value->type())));
}

void read_scheduler(const toml::table& table, const EntryReader& reader,
                    SchedulerConfig& scheduler) {
  const std::vector<Entry> entries = entries_in_file_order(table);  // outlives the pointers below
  const Entry* no_gpu = nullptr;
  const Entry* gpu_only = nullptr;
  for (const Entry& entry : entries) {
    const std::string_view key = entry.key;
    if (key == "policy") {
      const std::string value = reader.string(entry);
      if (std::find(kPolicyNames.begin(), kPolicyNames.end(), value) == kPolicyNames.end()) {
        reader.fail(entry,
                    "'policy' must be one of auto, dynamic, static, adaptive, not '" + value + "'");
      }
      scheduler.policy = value;
    } else if (key == "static_cpu_fraction") {
      scheduler.static_cpu_fraction = reader.ranged_number(entry);
    } else if (key == "block_residues") {
      scheduler.block_residues = reader.ranged_integer(entry);
    } else if (key == "queue_depth") {
      scheduler.queue_depth = reader.ranged_integer(entry);
    } else if (key == "gpu_batch_blocks") {
      scheduler.gpu_batch_blocks = reader.ranged_integer(entry);
    } else if (key == "gpu_batch_residues") {
      scheduler.gpu_batch_residues = reader.ranged_integer(entry);
    } else if (key == "no_gpu") {
      scheduler.no_gpu = reader.boolean(entry);
      no_gpu = &entry;
    } else if (key == "gpu_only") {
      scheduler.gpu_only = reader.boolean(entry);
      gpu_only = &entry;
    } else if (key == "reuse_memory") {
      scheduler.reuse_memory = *memory_size_in(reader, entry, false);
    } else if (key == "gpu_min_database") {
      scheduler.gpu_min_database = *memory_size_in(reader, entry, false);
    } else if (key == "reader_threads") {
      scheduler.reader_threads = static_cast<int>(reader.ranged_integer(entry));
    } else if (key == "worker_nice") {
      scheduler.worker_nice = static_cast<int>(reader.ranged_integer(entry));
    } else {
      reader.fail(entry, "unknown key '" + std::string(key) + "' in [scheduler]");
    }
  }
  if (scheduler.no_gpu && scheduler.gpu_only) {
    const Entry& later = no_gpu->line > gpu_only->line ? *no_gpu : *gpu_only;
    reader.fail(later, "'no_gpu' and 'gpu_only' cannot both be true");
  }
}

void read_search(const toml::table& table, const EntryReader& reader, SearchConfig& search) {
  for (const Entry& entry : entries_in_file_order(table)) {
    const std::string_view key = entry.key;
    if (key == "E") {
      search.E = reader.ranged_number(entry);
    } else if (key == "T") {
      search.T = reader.ranged_number(entry);
    } else if (key == "Z") {
      search.Z = reader.ranged_number(entry);
    } else if (key == "F1") {
      search.F1 = reader.ranged_number(entry);
    } else if (key == "F2") {
      search.F2 = reader.ranged_number(entry);
    } else if (key == "F3") {
      search.F3 = reader.ranged_number(entry);
    } else if (key == "max") {
      search.max = reader.boolean(entry);
    } else if (key == "nobias") {
      search.nobias = reader.boolean(entry);
    } else if (key == "nonull2") {
      search.nonull2 = reader.boolean(entry);
    } else if (key == "domE") {
      search.domE = reader.ranged_number(entry);
    } else if (key == "domT") {
      search.domT = reader.ranged_number(entry);
    } else if (key == "domZ") {
      search.domZ = reader.ranged_number(entry);
    } else if (key == "incE") {
      search.incE = reader.ranged_number(entry);
    } else if (key == "incT") {
      search.incT = reader.ranged_number(entry);
    } else if (key == "incdomE") {
      search.incdomE = reader.ranged_number(entry);
    } else if (key == "incdomT") {
      search.incdomT = reader.ranged_number(entry);
    } else if (key == "seed") {
      search.seed = reader.ranged_integer(entry);
    } else if (key == "cut") {
      const std::string value = reader.string(entry);
      if (value != "" && value != "ga" && value != "nc" && value != "tc")
        reader.fail(entry, "'cut' must be one of ga, nc, tc or \"\", not '" + value + "'");
      search.cut = value;
    } else {
      reader.fail(entry, "unknown key '" + std::string(key) + "' in [hmmsearch]");
    }
  }
}

void read_run(const toml::table& table, const EntryReader& reader, RunConfig& run) {
  for (const Entry& entry : entries_in_file_order(table)) {
    const std::string_view key = entry.key;
    if (key == "cpu") {
      run.cpu = static_cast<int>(reader.ranged_integer(entry));
    } else if (key == "h5") {
      run.h5 = reader.non_empty_string(entry);
    } else if (key == "text") {
      run.text = reader.string(entry);
    } else if (key == "out") {
      reader.fail(entry, "'out' is now 'h5' (the HDF5 result file; 'text' names the text output)");
    } else if (key == "tblout") {
      run.tblout = reader.string(entry);
    } else if (key == "domtblout") {
      run.domtblout = reader.string(entry);
    } else if (key == "noali") {
      run.noali = reader.boolean(entry);
    } else if (key == "acc") {
      run.acc = reader.boolean(entry);
    } else if (key == "textw") {
      run.textw = static_cast<int>(reader.ranged_integer(entry));
    } else if (key == "isa") {
      run.isa = reader.isa_name(entry);
    } else if (key == "quiet") {
      run.quiet = reader.boolean(entry);
    } else {
      reader.fail(entry, "unknown key '" + std::string(key) + "' in [run]");
    }
  }
}

void read_gpu(const toml::table& table, const EntryReader& reader, GpuConfig& gpu) {
  for (const Entry& entry : entries_in_file_order(table)) {
    if (entry.key == "kernel_table") {
      gpu.kernel_table = reader.string(entry);
    } else if (entry.key == "jit") {
      gpu.jit = reader.boolean(entry);
    } else if (entry.key == "feeders") {
      gpu.feeders = static_cast<int>(reader.ranged_integer(entry));
    } else if (entry.key == "resident") {
      gpu.resident = memory_size_in(reader, entry, true);
    } else if (entry.key == "sms") {
      gpu.sms = static_cast<int>(reader.ranged_integer(entry));
    } else {
      reader.fail(entry, "unknown key '" + std::string(entry.key) + "' in [gpu]");
    }
  }
}

}  // namespace

std::string number_problem(std::string_view key, double value) {
  const NumberRange& range = number_range(key);
  const bool whole = std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e18;
  const std::string shown = range.integer && whole ? std::to_string(static_cast<long long>(value))
                                                   : shortest_decimal(value);
  if (!std::isfinite(value)) return "must be a finite number, not " + shown;
  if (range.integer && value != std::floor(value)) return "must be an integer, not " + shown;
  const bool above_low = range.low_open ? value > range.low : value >= range.low;
  const bool below_high = range.high_open ? value < range.high : value <= range.high;
  if (above_low && below_high) return "";
  const auto bound = [](double b) {
    return b == std::floor(b) && std::fabs(b) < 1e15 ? std::to_string(static_cast<long long>(b))
                                                     : shortest_decimal(b);
  };
  if (range.high == kNoLimit) {
    return std::string("must be ") + (range.low_open ? "> " : ">= ") + bound(range.low) + ", not " +
           shown;
  }
  return std::string("must be in ") + (range.low_open ? "(" : "[") + bound(range.low) + ", " +
         bound(range.high) + (range.high_open ? ")" : "]") + ", not " + shown;
}

Config load_config(const std::string& path) {
  return parse_config(read_input_file(path, "configuration file"), path);
}

Config parse_config(std::string_view toml_text, const std::string& source_name) {
  const toml::table root = parse_toml(toml_text, source_name);
  const EntryReader reader(source_name);
  Config config;
  for (const Entry& entry : entries_in_file_order(root)) {
    if (entry.key == "hmmsearch") {
      read_search(reader.table(entry), reader, config.search);
    } else if (entry.key == "run") {
      read_run(reader.table(entry), reader, config.run);
    } else if (entry.key == "scheduler") {
      read_scheduler(reader.table(entry), reader, config.scheduler);
    } else if (entry.key == "gpu") {
      read_gpu(reader.table(entry), reader, config.gpu);
    } else if (entry.value->is_table()) {
      reader.fail(entry, "unknown table [" + std::string(entry.key) +
                             "] (the tables are [hmmsearch], [run], [scheduler] and [gpu])");
    } else {
      reader.fail(
          entry,
          "unknown key '" + std::string(entry.key) +
              "' outside a table (the tables are [hmmsearch], [run], [scheduler] and [gpu])");
    }
  }
  return config;
}

std::string to_toml(const Config& config) {
  const SearchConfig& search = config.search;
  const RunConfig& run = config.run;
  const auto boolean = [](bool value) { return value ? "true" : "false"; };
  std::ostringstream text;
  text << "[hmmsearch]\n";
  text << "E = " << toml_float(search.E) << '\n';
  if (search.T) text << "T = " << toml_float(*search.T) << '\n';
  if (search.Z) text << "Z = " << toml_float(*search.Z) << '\n';
  text << "F1 = " << toml_float(search.F1) << '\n';
  text << "F2 = " << toml_float(search.F2) << '\n';
  text << "F3 = " << toml_float(search.F3) << '\n';
  text << "max = " << boolean(search.max) << '\n';
  text << "nobias = " << boolean(search.nobias) << '\n';
  text << "nonull2 = " << boolean(search.nonull2) << '\n';
  text << "domE = " << toml_float(search.domE) << '\n';
  if (search.domT) text << "domT = " << toml_float(*search.domT) << '\n';
  if (search.domZ) text << "domZ = " << toml_float(*search.domZ) << '\n';
  text << "incE = " << toml_float(search.incE) << '\n';
  if (search.incT) text << "incT = " << toml_float(*search.incT) << '\n';
  text << "incdomE = " << toml_float(search.incdomE) << '\n';
  if (search.incdomT) text << "incdomT = " << toml_float(*search.incdomT) << '\n';
  text << "seed = " << search.seed << '\n';
  text << "cut = " << toml_string(search.cut) << '\n';
  text << "\n[run]\n";
  text << "cpu = " << run.cpu << '\n';
  text << "h5 = " << toml_string(run.h5) << '\n';
  text << "text = " << toml_string(run.text) << '\n';
  text << "tblout = " << toml_string(run.tblout) << '\n';
  text << "domtblout = " << toml_string(run.domtblout) << '\n';
  text << "noali = " << boolean(run.noali) << '\n';
  text << "acc = " << boolean(run.acc) << '\n';
  text << "textw = " << run.textw << '\n';
  text << "isa = " << toml_string(run.isa) << '\n';
  text << "quiet = " << boolean(run.quiet) << '\n';
  const SchedulerConfig& scheduler = config.scheduler;
  text << "\n[scheduler]\n";
  text << "policy = " << toml_string(scheduler.policy) << '\n';
  text << "static_cpu_fraction = " << toml_float(scheduler.static_cpu_fraction) << '\n';
  text << "block_residues = " << scheduler.block_residues << '\n';
  text << "queue_depth = " << scheduler.queue_depth << '\n';
  text << "gpu_batch_blocks = " << scheduler.gpu_batch_blocks << '\n';
  text << "gpu_batch_residues = " << scheduler.gpu_batch_residues << '\n';
  text << "no_gpu = " << boolean(scheduler.no_gpu) << '\n';
  text << "gpu_only = " << boolean(scheduler.gpu_only) << '\n';
  text << "reuse_memory = " << toml_string(format_memory_size(scheduler.reuse_memory)) << '\n';
  text << "gpu_min_database = " << toml_string(format_memory_size(scheduler.gpu_min_database))
       << '\n';
  text << "reader_threads = " << scheduler.reader_threads << '\n';
  text << "worker_nice = " << scheduler.worker_nice << '\n';
  text << "\n[gpu]\n";
  text << "kernel_table = " << toml_string(config.gpu.kernel_table) << '\n';
  text << "jit = " << boolean(config.gpu.jit) << '\n';
  if (config.gpu.feeders) text << "feeders = " << *config.gpu.feeders << '\n';
  text << "resident = "
       << toml_string(config.gpu.resident ? format_memory_size(*config.gpu.resident) : "auto")
       << '\n';
  text << "sms = " << config.gpu.sms << '\n';
  return text.str();
}

std::optional<std::uint64_t> parse_memory_size(std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [p, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || p == text.data()) return std::nullopt;
  std::string_view unit(p, static_cast<std::size_t>(end - p));
  int shift = 0;
  if (!unit.empty()) {
    const std::string_view units = "KMGT";
    const auto k = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    if (k != std::string_view::npos) {
      shift = 10 * static_cast<int>(k + 1);
      unit.remove_prefix(1);
      if (unit == "iB" || unit == "ib") unit.remove_prefix(2);
    }
    if (unit == "B" || unit == "b") unit.remove_prefix(1);
    if (!unit.empty()) return std::nullopt;
  }
  if (value > (std::uint64_t{1} << 63 >> shift)) return std::nullopt;
  return value << shift;
}

std::optional<std::optional<std::uint64_t>> parse_gpu_resident(std::string_view text) {
  if (text == "auto") return std::optional<std::uint64_t>{};
  const auto bytes = parse_memory_size(text);
  if (!bytes) return std::nullopt;
  return std::optional<std::uint64_t>{*bytes};
}

std::string format_memory_size(std::uint64_t bytes) {
  const char* units = "KMGT";
  int unit = -1;
  while (unit < 3 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + (unit >= 0 ? std::string(1, units[unit]) : std::string());
}

}  // namespace duet::io
