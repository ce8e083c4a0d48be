// Sweep files and CSV; see sweep.hpp.
#include "io/sweep.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "io/toml_input.hpp"

namespace duet::io {

namespace {

struct AxisKind {
  const char* key;
  const char* option;  // command-line option; empty for devices
  enum { kInteger, kNumber, kString } type;
};

const AxisKind kAxes[] = {
    {"devices", "", AxisKind::kString},
    {"cpu", "--cpu", AxisKind::kInteger},
    {"isa", "--isa", AxisKind::kString},
    {"policy", "--policy", AxisKind::kString},
    {"static_cpu_fraction", "--static-cpu-fraction", AxisKind::kNumber},
    {"block_residues", "--block-residues", AxisKind::kInteger},
    {"gpu_batch_blocks", "--gpu-batch-blocks", AxisKind::kInteger},
    {"gpu_batch_residues", "--gpu-batch-residues", AxisKind::kInteger},
    {"gpu_strategy", "--gpu-strategy", AxisKind::kString},
    {"gpu_sms", "--gpu-sms", AxisKind::kInteger},
};

std::string number_text(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}
  [[noreturn]] void fail(const toml::node& node, const std::string& message) const {
    throw InputError(source_, static_cast<std::int64_t>(node.source().begin.line), message);
  }
  std::string string(const toml::node& n, const std::string& key) const {
    if (!n.is_string()) fail(n, "'" + key + "' must be a string");
    return n.value<std::string>().value();
  }
  double number(const toml::node& n, const std::string& key) const {
    if (!n.is_number()) fail(n, "'" + key + "' must be a number");
    const double v = n.value<double>().value();
    if (!std::isfinite(v)) fail(n, "'" + key + "' must be finite");
    return v;
  }
  std::int64_t integer(const toml::node& n, const std::string& key) const {
    if (!n.is_integer()) fail(n, "'" + key + "' must be an integer");
    return n.value<std::int64_t>().value();
  }
  const toml::array& list(const toml::node& n, const std::string& key) const {
    if (!n.is_array()) fail(n, "'" + key + "' must be a list");
    const toml::array& a = *n.as_array();
    if (a.empty()) fail(n, "'" + key + "' must not be empty");
    return a;
  }

 private:
  std::string source_;
};

}  // namespace

SweepSpec parse_sweep(std::string_view text, const std::string& source_name) {
  const toml::table root = parse_toml(text, source_name);
  const Reader r(source_name);
  SweepSpec spec;
  for (auto&& [key, node] : root) {
    const std::string k(key.str());
    if (k == "name") {
      spec.name = r.string(node, k);
      if (spec.name.empty() || spec.name.find('/') != std::string::npos)
        r.fail(node, "'name' must be a non-empty file name");
    } else if (k == "repeats") {
      const auto v = r.integer(node, k);
      if (v < 1 || v > 1000) r.fail(node, "'repeats' must be 1 to 1000");
      spec.repeats = static_cast<int>(v);
    } else if (k == "workload") {
      if (!node.is_table()) r.fail(node, "[workload] must be a table");
      for (auto&& [wkey, w] : *node.as_table()) {
        const std::string wk(wkey.str());
        if (wk == "models") {
          for (auto&& m : r.list(w, wk)) spec.models.push_back(r.string(m, wk));
        } else if (wk == "synthetic_lengths") {
          for (auto&& m : r.list(w, wk)) {
            const auto v = r.integer(m, wk);
            if (v < 1 || v > 100000) r.fail(m, "model lengths must be 1 to 100000");
            spec.synthetic_lengths.push_back(static_cast<int>(v));
          }
        } else if (wk == "synthetic_seed") {
          spec.synthetic_seed = static_cast<std::uint64_t>(r.integer(w, wk));
        } else if (wk == "database") {
          spec.database = r.string(w, wk);
        } else if (wk == "synthetic_residues") {
          spec.synthetic_residues = r.number(w, wk);
          if (spec.synthetic_residues < 1) r.fail(w, "'synthetic_residues' must be at least 1");
        } else if (wk == "synthetic_homologs") {
          spec.synthetic_homologs = r.number(w, wk);
          if (spec.synthetic_homologs < 0 || spec.synthetic_homologs > 1)
            r.fail(w, "'synthetic_homologs' must be in [0, 1]");
        } else if (wk == "like") {
          spec.like = r.string(w, wk);
        } else if (wk == "options") {
          for (auto&& o : r.list(w, wk)) spec.options.push_back(r.string(o, wk));
        } else {
          r.fail(w, "unknown key '" + wk + "' in [workload]");
        }
      }
    } else if (k == "sweep") {
      if (!node.is_table()) r.fail(node, "[sweep] must be a table");
      std::vector<std::pair<std::int64_t, SweepAxis>> axes;
      for (auto&& [skey, s] : *node.as_table()) {
        const std::string sk(skey.str());
        const AxisKind* kind = nullptr;
        for (const auto& a : kAxes)
          if (sk == a.key) kind = &a;
        if (kind == nullptr) r.fail(s, "unknown sweep key '" + sk + "'");
        SweepAxis axis;
        axis.key = sk;
        for (auto&& v : r.list(s, sk)) {
          switch (kind->type) {
            case AxisKind::kInteger: {
              const auto i = r.integer(v, sk);
              // cpu 0: a worker per core; gpu_sms 0: the whole GPU.
              if (i < (sk == "cpu" || sk == "gpu_sms" ? 0 : 1))
                r.fail(v, "'" + sk + "' values must be positive");
              axis.values.push_back(std::to_string(i));
              break;
            }
            case AxisKind::kNumber: {
              const double d = r.number(v, sk);
              if (d < 0 || d > 1) r.fail(v, "'" + sk + "' values must be in [0, 1]");
              axis.values.push_back(number_text(d));
              break;
            }
            case AxisKind::kString: {
              const std::string t = r.string(v, sk);
              if (sk == "devices" && t != "cpu" && t != "gpu" && t != "hybrid") {
                r.fail(v, "devices must be cpu, gpu or hybrid, not '" + t + "'");
              }
              if (sk == "policy" && t != "dynamic" && t != "static")
                r.fail(v, "policy must be dynamic or static");
              axis.values.push_back(t);
              break;
            }
          }
        }
        axes.emplace_back(static_cast<std::int64_t>(skey.source().begin.line), std::move(axis));
      }
      std::stable_sort(axes.begin(), axes.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& a : axes) spec.axes.push_back(std::move(a.second));
    } else {
      r.fail(node, "unknown key '" + k + "'");
    }
  }
  if (spec.models.empty() == spec.synthetic_lengths.empty()) {
    throw InputError(source_name, 0,
                     "[workload] needs exactly one of 'models' and 'synthetic_lengths'");
  }
  if (spec.database.empty() == (spec.synthetic_residues == 0)) {
    throw InputError(source_name, 0,
                     "[workload] needs exactly one of 'database' and 'synthetic_residues'");
  }
  return spec;
}

SweepSpec load_sweep(const std::string& path) {
  return parse_sweep(read_input_file(path, "sweep file"), path);
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec) {
  std::vector<SweepPoint> points = {SweepPoint{}};
  for (const SweepAxis& axis : spec.axes) {
    std::vector<SweepPoint> next;
    for (const SweepPoint& p : points)
      for (const std::string& v : axis.values) {
        SweepPoint q = p;
        q[axis.key] = v;
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  // Drop combinations that make no sense, and the duplicates that leaves.
  std::vector<SweepPoint> kept;
  std::set<SweepPoint> seen;
  for (SweepPoint p : points) {
    const auto devices = p.count("devices") ? p["devices"] : "hybrid";
    const auto policy = p.count("policy") ? p["policy"] : "dynamic";
    if (policy != "static" || devices != "hybrid") p.erase("static_cpu_fraction");
    if (devices == "cpu") {
      for (const char* k :
           {"gpu_batch_blocks", "gpu_batch_residues", "gpu_strategy", "gpu_sms", "policy"})
        p.erase(k);
    }
    if (devices == "gpu") {
      for (const char* k : {"isa", "policy"}) p.erase(k);
    }
    if (seen.insert(p).second) kept.push_back(std::move(p));
  }
  return kept;
}

std::vector<std::string> point_arguments(const SweepPoint& point) {
  std::vector<std::string> args;
  for (const auto& a : kAxes) {
    const auto it = point.find(a.key);
    if (it == point.end()) continue;
    if (std::string(a.key) == "devices") {
      if (it->second == "cpu") args.push_back("--no-gpu");
      if (it->second == "gpu") args.push_back("--gpu-only");
      continue;
    }
    args.push_back(a.option);
    args.push_back(it->second);
  }
  return args;
}

void write_csv(std::ostream& out, const std::vector<std::string>& header,
               const std::vector<std::vector<std::string>>& rows) {
  auto field = [&](const std::string& f) {
    if (f.find_first_of(",\"\n\r") == std::string::npos) {
      out << f;
      return;
    }
    out << '"';
    for (char c : f) {
      if (c == '"') out << '"';
      out << c;
    }
    out << '"';
  };
  auto line = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (i) out << ',';
      field(r[i]);
    }
    out << '\n';
  };
  line(header);
  for (const auto& r : rows) line(r);
}

std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
      any = false;
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace duet::io
