// Reading, choosing from and writing the GPU kernel-choice table (contract in
// kernel_table.hpp).
#include "io/kernel_table.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "core/error.hpp"
#include "io/toml_input.hpp"

namespace duet::io {
namespace {

constexpr int kMaxModelLength = 100000;

std::int64_t line_of(const toml::node& node) {
  return static_cast<std::int64_t>(node.source().begin.line);
}

struct Reader {
  const std::string& source;
  [[noreturn]] void fail(std::int64_t line, const std::string& message) const {
    throw InputError(source, line, message);
  }
  std::string string(std::string_view key, const toml::node& node) const {
    const auto* s = node.as_string();
    if (s == nullptr)
      fail(line_of(node), "'" + std::string(key) + "' must be a string, not " +
                              std::string(describe_type(node.type())));
    if (s->get().empty()) fail(line_of(node), "'" + std::string(key) + "' must not be empty");
    return s->get();
  }
  int integer(std::string_view key, const toml::node& node, int low, int high) const {
    return static_cast<int>(integer64(key, node, low, high));
  }
  std::int64_t integer64(std::string_view key, const toml::node& node, std::int64_t low,
                         std::int64_t high) const {
    const auto* i = node.as_integer();
    if (i == nullptr)
      fail(line_of(node), "'" + std::string(key) + "' must be an integer, not " +
                              std::string(describe_type(node.type())));
    const std::int64_t v = i->get();
    if (v < low || v > high) {
      fail(line_of(node), "'" + std::string(key) + "' must be in [" + std::to_string(low) + ", " +
                              std::to_string(high) + "], not " + std::to_string(v));
    }
    return v;
  }
};

GpuTuning read_tuning(const Reader& reader, const toml::node& node, std::int64_t line) {
  const auto* table = node.as_table();
  if (table == nullptr)
    reader.fail(line, "'tuning' must be a table ([tuning]), not " +
                          std::string(describe_type(node.type())));
  GpuTuning t;
  constexpr std::int64_t kMax = std::int64_t{1} << 40;
  for (auto&& [key, value] : *table) {
    const std::string_view k = key.str();
    if (k == "forward_max_steps") {
      t.forward_max_steps = reader.integer64(k, value, 1, kMax);
    } else if (k == "lane_residues") {
      t.lane_residues = reader.integer64(k, value, 1, kMax);
    } else if (k == "max_lanes") {
      t.max_lanes = reader.integer(k, value, 1, 64);
    } else if (k == "pairhmm_gpu_only_workers") {
      t.pairhmm_gpu_only_workers = reader.integer(k, value, 1, 1024);
    } else if (k == "pairhmm_cores_per_feeder") {
      t.pairhmm_cores_per_feeder = reader.integer(k, value, 0, 64);
    } else if (k == "pairhmm_feeders_per_gpu") {
      t.pairhmm_feeders_per_gpu = reader.integer(k, value, 1, 8);
    } else if (k == "pairhmm_gpu_min_cells_per_worker") {
      t.pairhmm_gpu_min_cells_per_worker = reader.integer64(k, value, 0, kMax);
    } else {
      reader.fail(line_of(value),
                  "unknown key '" + std::string(k) +
                      "' in [tuning] (the keys are forward_max_steps, lane_residues, max_lanes, "
                      "pairhmm_gpu_only_workers, pairhmm_cores_per_feeder, "
                      "pairhmm_feeders_per_gpu, pairhmm_gpu_min_cells_per_worker)");
    }
  }
  return t;
}

double cost(const Reader& reader, std::string_view key, const toml::node& node, bool zero_allowed) {
  double v = 0;
  if (const auto* i = node.as_integer()) {
    v = static_cast<double>(i->get());
  } else if (const auto* f = node.as_floating_point()) {
    v = f->get();
  } else {
    reader.fail(line_of(node), "'" + std::string(key) + "' must be a number, not " +
                                   std::string(describe_type(node.type())));
  }
  if (!std::isfinite(v) || v > 1e9 || (zero_allowed ? v < 0 : v <= 0)) {
    std::ostringstream text;
    text << "'" << key << "' must be " << (zero_allowed ? "in [0, 1e9]" : "in (0, 1e9]") << ", not "
         << v;
    reader.fail(line_of(node), text.str());
  }
  return v;
}

// "GxK": lanes G (4, 8, 16 or 32) by K rows per lane (1, 2, 4 or 8).
void read_shape(const Reader& reader, const toml::node& node, PairhmmShapeRow& row) {
  const std::string text = reader.string("shape", node);
  const std::size_t x = text.find('x');
  const auto number = [](const std::string& digits) {
    if (digits.empty() || digits.size() > 2 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return -1;
    return std::stoi(digits);
  };
  const int lanes = x == std::string::npos ? -1 : number(text.substr(0, x));
  const int rows = x == std::string::npos ? -1 : number(text.substr(x + 1));
  if ((lanes != 4 && lanes != 8 && lanes != 16 && lanes != 32) ||
      (rows != 1 && rows != 2 && rows != 4 && rows != 8)) {
    reader.fail(line_of(node),
                "'shape' must be lanes x rows per lane (lanes 4, 8, 16 or 32; "
                "rows 1, 2, 4 or 8), as \"8x4\", not '" +
                    text + "'");
  }
  row.lanes = lanes;
  row.rows_per_lane = rows;
}

std::vector<PairhmmShapeRow> read_shapes(const Reader& reader, std::string_view arithmetic,
                                         const toml::node& node) {
  const auto* list = node.as_array();
  if (list == nullptr || !list->is_array_of_tables() || list->empty()) {
    reader.fail(line_of(node), "'" + std::string(arithmetic) +
                                   "' must be a list of shapes ({ shape = \"8x4\", ... }), not " +
                                   std::string(describe_type(node.type())) +
                                   (list != nullptr && list->empty() ? " (empty)" : ""));
  }
  std::vector<PairhmmShapeRow> rows;
  for (const toml::node& entry : *list) {
    const toml::table& t = *entry.as_table();
    PairhmmShapeRow row;
    row.line = line_of(entry);
    bool has_shape = false, has_step = false, has_warp = false, has_latency = false;
    for (auto&& [key, value] : t) {
      const std::string_view k = key.str();
      if (k == "shape") {
        read_shape(reader, value, row);
        has_shape = true;
      } else if (k == "cycles_per_warp_step") {
        row.cycles_per_warp_step = cost(reader, k, value, false);
        has_step = true;
      } else if (k == "cycles_per_warp") {
        row.cycles_per_warp = cost(reader, k, value, true);
        has_warp = true;
      } else if (k == "latency_per_step") {
        row.latency_per_step = cost(reader, k, value, false);
        has_latency = true;
      } else {
        reader.fail(line_of(value), "unknown key '" + std::string(k) +
                                        "' in a pair-HMM shape (the keys are shape, "
                                        "cycles_per_warp_step, cycles_per_warp, latency_per_step)");
      }
    }
    const char* missing = !has_shape     ? "shape"
                          : !has_step    ? "cycles_per_warp_step"
                          : !has_warp    ? "cycles_per_warp"
                          : !has_latency ? "latency_per_step"
                                         : nullptr;
    if (missing != nullptr)
      reader.fail(row.line, std::string("a pair-HMM shape lacks '") + missing + "'");
    for (const PairhmmShapeRow& earlier : rows) {
      if (earlier.lanes == row.lanes && earlier.rows_per_lane == row.rows_per_lane) {
        reader.fail(row.line, "shape " + std::to_string(row.lanes) + "x" +
                                  std::to_string(row.rows_per_lane) + " given twice in '" +
                                  std::string(arithmetic) + "' (line " +
                                  std::to_string(earlier.line) + " first)");
      }
    }
    rows.push_back(row);
  }
  return rows;
}

PairhmmShapeTable read_pairhmm_shapes(const Reader& reader, const toml::node& node,
                                      std::int64_t line) {
  const auto* table = node.as_table();
  if (table == nullptr)
    reader.fail(line, "'pairhmm_shapes' must be a table ([pairhmm_shapes]), not " +
                          std::string(describe_type(node.type())));
  PairhmmShapeTable shapes;
  for (auto&& [key, value] : *table) {
    const std::string_view k = key.str();
    if (k == "ftz") {
      shapes.ftz = read_shapes(reader, k, value);
    } else if (k == "ieee") {
      shapes.ieee = read_shapes(reader, k, value);
    } else {
      reader.fail(line_of(value), "unknown key '" + std::string(k) +
                                      "' in [pairhmm_shapes] (the keys are ftz and ieee)");
    }
  }
  if (shapes.ftz.empty() || shapes.ieee.empty()) {
    reader.fail(line, std::string("[pairhmm_shapes] lacks '") +
                          (shapes.ftz.empty() ? "ftz" : "ieee") + "' (give both arithmetics)");
  }
  return shapes;
}

KernelTableRow read_row(const Reader& reader, const toml::table& row, std::int64_t row_line) {
  KernelTableRow r;
  bool has_length = false, has_group = false, has_strategy = false;
  std::vector<std::pair<std::int64_t, std::string_view>> keys;
  for (auto&& [key, value] : row) keys.emplace_back(line_of(value), key.str());
  std::stable_sort(keys.begin(), keys.end());
  for (const auto& [line, key] : keys) {
    const toml::node& value = *row.get(key);
    if (key == "max_length") {
      r.max_length = reader.integer(key, value, 1, kMaxModelLength);
      has_length = true;
    } else if (key == "msv_group_threads") {
      r.msv_group_threads = reader.integer(key, value, 8, 32);
      if (r.msv_group_threads != 8 && r.msv_group_threads != 16 && r.msv_group_threads != 32) {
        reader.fail(line, "'msv_group_threads' must be 8, 16 or 32, not " +
                              std::to_string(r.msv_group_threads));
      }
      has_group = true;
    } else if (key == "viterbi_strategy") {
      r.viterbi_strategy = reader.string(key, value);
      if (r.viterbi_strategy != "warp" && r.viterbi_strategy != "thread" &&
          r.viterbi_strategy != "strip") {
        reader.fail(line, "'viterbi_strategy' must be warp, thread or strip, not '" +
                              r.viterbi_strategy + "'");
      }
      has_strategy = true;
    } else {
      reader.fail(
          line, "unknown key '" + std::string(key) +
                    "' in [[row]] (the keys are max_length, msv_group_threads, viterbi_strategy)");
    }
  }
  const char* missing = !has_length     ? "max_length"
                        : !has_group    ? "msv_group_threads"
                        : !has_strategy ? "viterbi_strategy"
                                        : nullptr;
  if (missing != nullptr) reader.fail(row_line, std::string("[[row]] lacks '") + missing + "'");
  return r;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04X",
                    static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

KernelTable load_kernel_table(const std::string& path) {
  return parse_kernel_table(read_input_file(path, "kernel table"), path);
}

KernelTable parse_kernel_table(std::string_view toml_text, const std::string& source_name) {
  const toml::table root = parse_toml(toml_text, source_name);
  const Reader reader{source_name};
  KernelTable table;
  std::vector<std::pair<std::int64_t, std::string_view>> keys;
  for (auto&& [key, value] : root)
    keys.emplace_back(static_cast<std::int64_t>(key.source().begin.line), key.str());
  std::stable_sort(keys.begin(), keys.end());
  bool has_rows = false;
  for (const auto& [line, key] : keys) {
    const toml::node& value = *root.get(key);
    if (key == "device") {
      table.device = reader.string(key, value);
    } else if (key == "measured") {
      table.measured = reader.string(key, value);
    } else if (key == "command") {
      table.command = reader.string(key, value);
    } else if (key == "row") {
      const auto* rows = value.as_array();
      if (rows == nullptr || !rows->is_array_of_tables()) {
        reader.fail(line, "'row' must be an array of tables ([[row]]), not " +
                              std::string(describe_type(value.type())));
      }
      for (const toml::node& node : *rows) {
        const auto& row_table = *node.as_table();
        KernelTableRow row = read_row(reader, row_table, line_of(node));
        if (!table.rows.empty() && row.max_length <= table.rows.back().max_length) {
          const toml::node* at = row_table.get("max_length");
          reader.fail(line_of(*at), "'max_length' must increase from row to row (" +
                                        std::to_string(row.max_length) + " follows " +
                                        std::to_string(table.rows.back().max_length) + ")");
        }
        table.rows.push_back(std::move(row));
      }
      has_rows = true;
    } else if (key == "tuning") {
      table.tuning = read_tuning(reader, value, line);
    } else if (key == "pairhmm_shapes") {
      table.pairhmm_shapes = read_pairhmm_shapes(reader, value, line);
    } else {
      reader.fail(line, "unknown key '" + std::string(key) +
                            "' (the keys are device, measured, command, [[row]], [tuning] and "
                            "[pairhmm_shapes])");
    }
  }
  if (table.device.empty())
    reader.fail(1, "kernel table lacks 'device' (the GPU it was measured on)");
  if (table.measured.empty())
    reader.fail(1, "kernel table lacks 'measured' (when it was measured)");
  if (!has_rows || table.rows.empty()) reader.fail(1, "kernel table has no [[row]]");
  return table;
}

const KernelTableRow& choose_kernels(const KernelTable& table, int M) {
  if (table.rows.empty()) throw std::invalid_argument("kernel table without rows");
  for (const KernelTableRow& row : table.rows)
    if (M <= row.max_length) return row;
  return table.rows.back();
}

KernelTableRow plan_kernels(const KernelTable* table, int M, const std::string& strategy_option) {
  KernelTableRow plan{M, 0, "strip", ""};
  if (table != nullptr) {
    const KernelTableRow& row = choose_kernels(*table, M);
    plan.msv_group_threads = row.msv_group_threads;
    plan.viterbi_strategy = row.viterbi_strategy;
  }
  if (!strategy_option.empty()) plan.viterbi_strategy = strategy_option;
  return plan;
}

std::string to_toml(const KernelTable& table) {
  std::ostringstream text;
  text << "# GPU kernel choice by model length for the hmmsearch filters (MSV thread-group size,\n"
          "# Viterbi strategy), measured kernel-only by `duet tune` on the device below.\n"
          "# Regenerate on the GPU it will run on:  duet tune -o configs/gpu-kernels.toml\n"
          "# (see README, \"GPU kernel-choice table\"). A model longer than the last row takes "
          "it.\n";
  text << "device = " << quoted(table.device) << '\n';
  text << "measured = " << quoted(table.measured) << '\n';
  if (!table.command.empty()) text << "command = " << quoted(table.command) << '\n';
  for (const KernelTableRow& row : table.rows) {
    text << '\n';
    std::istringstream note(row.note);
    for (std::string line; std::getline(note, line);) text << "# " << line << '\n';
    text << "[[row]]\n";
    text << "max_length = " << row.max_length << '\n';
    text << "msv_group_threads = " << row.msv_group_threads << '\n';
    text << "viterbi_strategy = " << quoted(row.viterbi_strategy) << '\n';
  }
  const GpuTuning& t = table.tuning;
  text << "\n# Tuning constants of the GPU paths (see src/io/kernel_table.hpp).\n[tuning]\n";
  text << "forward_max_steps = " << t.forward_max_steps << '\n';
  text << "lane_residues = " << t.lane_residues << '\n';
  text << "max_lanes = " << t.max_lanes << '\n';
  text << "pairhmm_gpu_only_workers = " << t.pairhmm_gpu_only_workers << '\n';
  text << "pairhmm_cores_per_feeder = " << t.pairhmm_cores_per_feeder << '\n';
  text << "pairhmm_feeders_per_gpu = " << t.pairhmm_feeders_per_gpu << '\n';
  text << "pairhmm_gpu_min_cells_per_worker = " << t.pairhmm_gpu_min_cells_per_worker << '\n';
  const PairhmmShapeTable& shapes = table.pairhmm_shapes;
  if (!shapes.empty()) {
    text << "\n# The pair-HMM intra-task kernel's shapes (lanes x rows per lane) and their costs "
            "in\n"
            "# cycles (see src/io/kernel_table.hpp).\n[pairhmm_shapes]\n";
    text.precision(17);
    for (const auto& [name, rows] :
         {std::pair{"ftz", &shapes.ftz}, std::pair{"ieee", &shapes.ieee}}) {
      text << name << " = [\n";
      for (const PairhmmShapeRow& r : *rows) {
        text << "  { shape = \"" << r.lanes << 'x' << r.rows_per_lane
             << "\", cycles_per_warp_step = " << r.cycles_per_warp_step
             << ", cycles_per_warp = " << r.cycles_per_warp
             << ", latency_per_step = " << r.latency_per_step << " },\n";
      }
      text << "]\n";
    }
  }
  return text.str();
}

std::vector<KernelTableRow> rows_from_timings(std::vector<KernelTimingPoint> points) {
  if (points.empty()) throw std::invalid_argument("no timings");
  std::sort(points.begin(), points.end(),
            [](const auto& a, const auto& b) { return a.length < b.length; });
  std::vector<KernelTableRow> rows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const KernelTimingPoint& p = points[i];
    if (i > 0 && p.length == points[i - 1].length) {
      throw std::invalid_argument("length " + std::to_string(p.length) + " timed twice");
    }
    if (p.msv_ms.empty())
      throw std::invalid_argument("length " + std::to_string(p.length) + " has no MSV time");
    int best_group = 0;
    double best_ms = std::numeric_limits<double>::infinity();
    for (const auto& [group, ms] : p.msv_ms) {
      if (ms < best_ms || (ms == best_ms && group < best_group)) {
        best_group = group;
        best_ms = ms;
      }
    }
    std::string strategy = "warp";
    double best_viterbi = p.viterbi_warp_ms;
    if (p.viterbi_strip_ms < best_viterbi) strategy = "strip", best_viterbi = p.viterbi_strip_ms;
    if (p.viterbi_thread_ms < best_viterbi) strategy = "thread";
    std::ostringstream note;
    note.setf(std::ios::fixed);
    note.precision(3);
    note << "M=" << p.length << ": MSV ms";
    for (const auto& [group, ms] : p.msv_ms) note << " g" << group << "=" << ms;
    note << "; Viterbi ms warp=" << p.viterbi_warp_ms << " thread=" << p.viterbi_thread_ms;
    if (std::isfinite(p.viterbi_strip_ms)) note << " strip=" << p.viterbi_strip_ms;
    if (!rows.empty() && rows.back().msv_group_threads == best_group &&
        rows.back().viterbi_strategy == strategy) {
      rows.back().max_length = p.length;
      rows.back().note += "\n" + note.str();
    } else {
      rows.push_back({p.length, best_group, strategy, note.str()});
    }
  }
  return rows;
}

std::string resolve_kernel_table_path(const std::string& option, const std::string& configured,
                                      const std::vector<std::string>& defaults) {
  if (!option.empty()) return option;
  if (!configured.empty()) return configured;
  for (const std::string& path : defaults) {
    std::error_code error;
    if (std::filesystem::is_regular_file(path, error)) return path;
  }
  return "";
}

}  // namespace duet::io
