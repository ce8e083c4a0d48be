// duet bench: see bench_command.hpp.
#include "app/bench_command.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "core/error.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/synthetic.hpp"
#include "io/hdf5_file.hpp"
#include "io/sweep.hpp"

namespace duet::app {

namespace {

namespace fs = std::filesystem;

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::string fixed(double v, int digits = 4) {
  if (!std::isfinite(v)) return "";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

// Runs `command`, returning its exit status and its standard error.
std::pair<int, std::string> run_process(const std::string& command) {
  const std::string full = command + " 2>&1 >/dev/null";
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return {-1, "cannot start process"};
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

const std::vector<std::string> kPointKeys = {"devices",
                                             "cpu",
                                             "isa",
                                             "policy",
                                             "static_cpu_fraction",
                                             "block_residues",
                                             "gpu_batch_blocks",
                                             "gpu_batch_residues",
                                             "gpu_strategy",
                                             "gpu_sms"};

struct Row {
  std::map<std::string, std::string> field;
  double gcups = NAN;
};

// The figures of one run's result file, a row per query.
std::vector<Row> rows_from_result(const std::string& h5_path) {
  std::vector<Row> rows;
  io::Hdf5Reader h5(h5_path);
  for (const std::string& q : h5.list("/results/hmmsearch")) {
    Row row;
    const std::string g = "/results/hmmsearch/" + q;
    const std::string t = "/trace/" + q;
    const double M = static_cast<double>(h5.attribute_int(g, "M"));
    const double residues = static_cast<double>(h5.attribute_int(g, "residues"));
    double wall = h5.attribute_double("/run", "wall_seconds");
    if (h5.exists(t)) wall = h5.attribute_double(t, "wall_seconds");
    row.field["query"] = q;
    row.field["M"] = std::to_string(static_cast<long long>(M));
    row.field["residues"] = std::to_string(static_cast<long long>(residues));
    row.field["wall_seconds"] = fixed(wall, 4);
    row.gcups = wall > 0 ? residues * M / wall / 1e9 : NAN;
    row.field["gcups"] = fixed(row.gcups);
    if (h5.exists(t + "/device")) {  // rows (a later model of a pass has none)
      const auto device = h5.read_uint8(t + "/device");
      const auto stage = h5.read_strings(t + "/stage");
      const auto cells = h5.read_int64(t + "/cells");
      const auto failed = h5.read_uint8(t + "/failed");
      double by_device[2] = {0, 0};
      std::map<std::string, double> by_stage;
      for (std::size_t i = 0; i < device.size(); ++i) {
        if (failed[i]) continue;
        const int d = device[i] ? 1 : 0;
        const double c = static_cast<double>(cells[i]);
        if (stage[i] != "post") by_device[d] += c;
        by_stage[std::string(d ? "gpu" : "cpu") + "/" + stage[i]] += c;
      }
      row.field["cpu_gcups"] = fixed(by_device[0] / wall / 1e9);
      row.field["gpu_gcups"] = fixed(by_device[1] / wall / 1e9);
      const double total = by_device[0] + by_device[1];
      row.field["cpu_share"] = total > 0 ? fixed(by_device[0] / total) : "";
      row.field["gpu_share"] = total > 0 ? fixed(by_device[1] / total) : "";
      std::string stages;
      for (const auto& [k, c] : by_stage)
        stages += (stages.empty() ? "" : ";") + k + "=" + fixed(c / wall / 1e9);
      row.field["stage_gcups"] = stages;
      row.field["idle_tail_seconds"] = fixed(h5.attribute_double(t, "idle_tail_seconds"), 4);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

void add_bench_command(CLI::App& app,
                       std::vector<std::pair<CLI::App*, std::function<int()>>>& commands) {
  struct Options {
    std::string sweep, out;
    bool dry_run = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("bench", "Run a throughput-study sweep and write summary.csv");
  cmd->add_option("sweep", o->sweep, "sweep file (TOML); examples in configs/sweeps/")->required();
  cmd->add_option("-o,--out", o->out, "output folder (created; its parent must exist)")->required();
  cmd->add_flag("--dry-run", o->dry_run, "print the runs without running them");
  commands.emplace_back(cmd, [o]() -> int {
    const io::SweepSpec spec = io::load_sweep(o->sweep);
    const auto points = io::expand_sweep(spec);
    const fs::path out(o->out);
    if (!out.parent_path().empty() && !fs::is_directory(out.parent_path())) {
      throw InputError(o->out, 0, "cannot create output folder: its parent does not exist");
    }
    fs::create_directories(out / "runs");
    const std::string self = fs::read_symlink("/proc/self/exe").string();

    // Workload: model files and database, generated here when synthetic.
    std::vector<std::string> model_files = spec.models;
    if (!spec.synthetic_lengths.empty()) {
      fs::create_directories(out / "models");
      std::vector<HmmModel> sources;
      for (const char* n : {"Pkinase", "fn3", "globins4"})
        for (auto& m :
             read_hmm_file(std::string("/usr/share/doc/hmmer/examples/tutorial/") + n + ".hmm"))
          sources.push_back(std::move(m));
      for (int M : spec.synthetic_lengths) {
        const std::string path = (out / "models" / ("synth" + std::to_string(M) + ".hmm")).string();
        std::ofstream f(path);
        write_hmm(f,
                  synthetic_model(sources, M, spec.synthetic_seed + static_cast<std::uint64_t>(M),
                                  "synth" + std::to_string(M)));
        model_files.push_back(path);
      }
    }
    std::string database = spec.database;
    if (database.empty()) {
      database = (out / "db.fa").string();
      const auto first = read_hmm_file(model_files.front());
      const DatabaseProfile like = DatabaseProfile::from_fasta(spec.like, *first.front().alphabet);
      SyntheticDatabaseSpec ds;
      ds.residues = static_cast<std::int64_t>(spec.synthetic_residues);
      ds.homolog_fraction = spec.synthetic_homologs;
      ds.seed = spec.synthetic_seed;
      std::ofstream f(database);
      write_synthetic_database(f, like, ds, &first.front());
    }

    std::vector<Row> rows;
    int n = 0;
    const int total = static_cast<int>(model_files.size() * points.size()) * spec.repeats;
    for (const std::string& model : model_files) {
      for (const io::SweepPoint& point : points) {
        for (int rep = 0; rep < spec.repeats; ++rep) {
          ++n;
          char name[64];
          std::snprintf(name, sizeof name, "%s-%04d.h5", spec.name.c_str(), n);
          const std::string h5 = (out / "runs" / name).string();
          std::string command = shell_quote(self) + " hmmsearch --quiet --h5 " + shell_quote(h5);
          for (const auto& a : spec.options) command += " " + shell_quote(a);
          for (const auto& a : io::point_arguments(point)) command += " " + shell_quote(a);
          command += " " + shell_quote(model) + " " + shell_quote(database);
          std::cerr << "[" << n << "/" << total << "] " << command << "\n";
          if (o->dry_run) continue;
          const auto [status, errors] = run_process(command);
          std::vector<Row> got;
          if (status == 0) {
            got = rows_from_result(h5);
          } else {
            Row failed;
            std::string first_line = errors.substr(0, errors.find('\n'));
            failed.field["status"] = "failed (exit " + std::to_string(status) + "): " + first_line;
            got.push_back(std::move(failed));
            std::cerr << "  " << failed.field["status"] << "\n";
          }
          for (Row& r : got) {
            if (!r.field.count("status")) r.field["status"] = "ok";
            r.field["sweep"] = spec.name;
            r.field["model_file"] = model;
            r.field["repeat"] = std::to_string(rep + 1);
            r.field["result_file"] = status == 0 ? h5 : "";
            for (const auto& k : kPointKeys) r.field[k] = point.count(k) ? point.at(k) : "";
            if (r.field["devices"].empty()) r.field["devices"] = "hybrid";
            rows.push_back(std::move(r));
          }
        }
      }
    }
    if (o->dry_run) return 0;

    // Hybrid efficiency: a hybrid row against the CPU-only and GPU-only rows of the same
    // model, query and settings (means over repeats); a CPU-only row has no GPU settings.
    auto settings_key = [](const Row& r, const std::string& devices) {
      std::string k = r.field.at("model_file") + "|" + r.field.at("query") + "|" + devices;
      for (const char* f : {"cpu", "isa", "block_residues"}) k += "|" + r.field.at(f);
      for (const char* f : {"gpu_batch_blocks", "gpu_batch_residues", "gpu_strategy", "gpu_sms"})
        k += "|" + (devices == "cpu" ? std::string() : r.field.at(f));
      return k;
    };
    std::map<std::string, std::pair<double, int>> mean;
    for (const Row& r : rows) {
      if (r.field.at("status") != "ok") continue;
      auto& m = mean[settings_key(
          r, r.field.at("devices") == "hybrid"
                 ? "hybrid-" + r.field.at("policy") + r.field.at("static_cpu_fraction")
                 : r.field.at("devices"))];
      m.first += r.gcups;
      m.second += 1;
    }
    for (Row& r : rows) {
      if (r.field.at("status") != "ok" || r.field.at("devices") != "hybrid") continue;
      const auto c = mean.find(settings_key(r, "cpu"));
      const auto g = mean.find(settings_key(r, "gpu"));
      if (c == mean.end() || g == mean.end()) continue;
      const double sum = c->second.first / c->second.second + g->second.first / g->second.second;
      if (sum > 0) r.field["hybrid_efficiency"] = fixed(r.gcups / sum);
    }
    const std::vector<std::string> header = {"sweep",
                                             "model_file",
                                             "query",
                                             "M",
                                             "residues",
                                             "repeat",
                                             "devices",
                                             "cpu",
                                             "isa",
                                             "policy",
                                             "static_cpu_fraction",
                                             "block_residues",
                                             "gpu_batch_blocks",
                                             "gpu_batch_residues",
                                             "gpu_strategy",
                                             "gpu_sms",
                                             "status",
                                             "wall_seconds",
                                             "gcups",
                                             "cpu_gcups",
                                             "gpu_gcups",
                                             "cpu_share",
                                             "gpu_share",
                                             "idle_tail_seconds",
                                             "hybrid_efficiency",
                                             "stage_gcups",
                                             "result_file"};
    std::vector<std::vector<std::string>> table;
    for (const Row& r : rows) {
      std::vector<std::string> line;
      for (const auto& h : header) line.push_back(r.field.count(h) ? r.field.at(h) : "");
      table.push_back(std::move(line));
    }
    const std::string csv = (out / "summary.csv").string();
    {
      std::ofstream f(csv + ".tmp");
      io::write_csv(f, header, table);
    }
    fs::rename(csv + ".tmp", csv);
    std::cout << "# " << rows.size() << " rows written to " << csv << "\n";
    std::cout << "# query        M  devices  cpu  isa       policy   fraction   wall_s    Gc/s  "
                 "efficiency  status\n";
    for (const Row& r : rows) {
      auto f = [&](const char* k) { return r.field.count(k) ? r.field.at(k) : std::string(); };
      std::printf("%-12s %5s  %-7s %4s  %-8s  %-7s  %8s  %8s  %7s  %10s  %s\n", f("query").c_str(),
                  f("M").c_str(), f("devices").c_str(), f("cpu").c_str(), f("isa").c_str(),
                  f("policy").c_str(), f("static_cpu_fraction").c_str(), f("wall_seconds").c_str(),
                  f("gcups").c_str(), f("hybrid_efficiency").c_str(), f("status").c_str());
    }
    return 0;
  });
}

}  // namespace duet::app
