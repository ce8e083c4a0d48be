// Helpers shared by the tests: temporary folders, running commands, reading HMMER's
// --tblout and pipeline counts, random seeds that can be replayed.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>

namespace duet::test {

// A fresh folder, removed with its contents at the end of the test.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("duet-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer;
  std::size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The random seed of a test: DUET_TEST_SEED when set, else a fresh one; printed.
inline std::uint64_t test_seed() {
  std::uint64_t seed;
  if (const char* s = std::getenv("DUET_TEST_SEED")) {
    seed = std::strtoull(s, nullptr, 10);
  } else {
    seed = std::random_device{}();
  }
  std::cout << "[ seed     ] DUET_TEST_SEED=" << seed << "\n";
  return seed;
}

// Full-sequence columns of a --tblout file: (query, target) -> (E-value, score).
struct TableRow {
  double evalue = 0, score = 0;
};
inline std::map<std::pair<std::string, std::string>, TableRow> read_tblout(const std::string& path) {
  std::map<std::pair<std::string, std::string>, TableRow> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string target, tacc, query, qacc;
    TableRow row;
    ss >> target >> tacc >> query >> qacc >> row.evalue >> row.score;
    rows[{query, target}] = row;
  }
  return rows;
}

// "Passed MSV filter:" etc. counts from HMMER-style output, per query in order.
inline std::vector<std::array<long, 4>> read_pass_counts(const std::string& text) {
  std::vector<std::array<long, 4>> counts;
  std::istringstream in(text);
  std::string line;
  const char* labels[4] = {"Passed MSV filter:", "Passed bias filter:", "Passed Vit filter:",
                           "Passed Fwd filter:"};
  while (std::getline(in, line)) {
    for (int i = 0; i < 4; ++i) {
      if (line.rfind(labels[i], 0) == 0) {
        if (i == 0) counts.push_back({});
        counts.back()[i] = std::stol(line.substr(std::string(labels[i]).size()));
      }
    }
  }
  return counts;
}

}  // namespace duet::test
