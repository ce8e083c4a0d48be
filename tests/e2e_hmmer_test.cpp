// End-to-end: `duet hmmsearch` against HMMER 3.3.2's `hmmsearch`, run here as the oracle
// (Debian's hmmer package), with the same options. Pass counts must be identical; the
// reported targets and domains identical and in HMMER's order (but for near ties, see
// untie()), with the same domain numbers, the same hmm, ali and env coordinates, scores
// within 0.1 bits, E-values within 10%; and at least 99% of the domains' alignment lines
// identical (on a small set, all but one), the others differing only by one step of a
// posterior character.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "io/hdf5_file.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

using test::TempDir;

const std::string kTutorial = "/usr/share/doc/hmmer/examples/tutorial/";
const std::string kDatabase = "/usr/share/doc/mmseqs2/example-data/DB.fasta.gz";

// A table's data rows, split on white space up to the description (`fields` columns).
std::vector<std::vector<std::string>> table_rows(const std::string& path, std::size_t fields) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::vector<std::string> row(fields);
    for (std::string& f : row) ss >> f;
    rows.push_back(row);
  }
  return rows;
}

// Equal, or numbers equal within what the printed precision allows: 0.1 (one step of the
// last printed digit of a score; slack for parsing it) and 10% of an E-value.
bool same_field(const std::string& h, const std::string& d) {
  if (h == d) return true;
  char* end_h = nullptr;
  char* end_d = nullptr;
  const double x = std::strtod(h.c_str(), &end_h);
  const double y = std::strtod(d.c_str(), &end_d);
  if (*end_h != 0 || *end_d != 0) return false;
  return std::fabs(x - y) <= 0.1 + 1e-9 || std::fabs(x - y) <= 0.1 * std::fabs(x);
}

void expect_same_field(const std::string& h, const std::string& d, const std::string& what) {
  EXPECT_TRUE(same_field(h, d)) << what << ": hmmsearch '" << h << "', duet '" << d << "'";
}

// Each reported domain's alignment lines (CS, RF, model, match, target, PP) in the text
// output, by query, target and domain number.
std::map<std::tuple<std::string, std::string, int>, std::string> alignment_blocks(
    const std::string& text) {
  std::map<std::tuple<std::string, std::string, int>, std::string> blocks;
  std::istringstream in(text);
  std::string line, query, target;
  std::tuple<std::string, std::string, int> current;
  bool in_block = false;
  const std::regex domain_header("  == domain ([0-9]+) .*");
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.rfind("Query:", 0) == 0) {
      std::istringstream ss(line.substr(6));
      ss >> query;
      in_block = false;
    } else if (line.rfind(">> ", 0) == 0) {
      std::istringstream ss(line.substr(3));
      ss >> target;
      in_block = false;
    } else if (std::regex_match(line, m, domain_header)) {
      current = {query, target, std::stoi(m[1])};
      in_block = true;
    } else if (line.rfind("Internal pipeline", 0) == 0 || line.rfind("  Alignments", 0) == 0) {
      in_block = false;
    } else if (in_block && !line.empty()) {
      blocks[current] += line + "\n";
    }
  }
  return blocks;
}

// The text output's target lists, in order: each query's line, its per-target table's
// shown names (and the inclusion threshold line), and the name of each domain annotation
// block (">> "). Not the names' column width: HMMER's is the longest name in its hit list,
// which also holds hits that passed a per-thread E-value test early in the search.
std::vector<std::string> target_lists(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Query:", 0) == 0) {
      out.push_back(line);
    } else if (line.rfind("    E-value  score", 0) == 0) {
      in_table = true;
    } else if (in_table) {
      if (line.empty()) {
        in_table = false;
      } else if (line.find("inclusion threshold") != std::string::npos) {
        out.push_back(line);
      } else if (line.rfind("    -------", 0) != 0) {
        std::istringstream fields(line);
        std::string name;
        for (int f = 0; f < 9; ++f) fields >> name;
        out.push_back("row " + name);
      }
    } else if (line.rfind(">> ", 0) == 0) {
      std::istringstream fields(line.substr(3));
      std::string name;
      fields >> name;
      out.push_back(">> " + name);
    }
  }
  return out;
}

// Posterior characters' steps: '0' to '9', then '*'.
int posterior_step(char c) {
  if (c == '*') return 10;
  return c >= '0' && c <= '9' ? c - '0' : -1;
}

bool is_posterior_line(const std::string& line) {
  return (line.size() >= 3 && line.compare(line.size() - 3, 3, " PP") == 0) ||
         line.rfind("#=GR ", 0) == 0 || line.rfind("#=GC PP_cons", 0) == 0;
}

// Texts equal line by line, but that a posterior line's characters may be one step apart
// ('9' against '*'). duet's posteriors are HMMER's up to the last bits of a float (its
// Backward adds in another order), which moves a character where the probability lies
// on a step's edge.
bool same_up_to_posterior_steps(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string x, y;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(ia, x));
    const bool more_b = static_cast<bool>(std::getline(ib, y));
    if (more_a != more_b) return false;
    if (!more_a) return true;
    if (x == y) continue;
    if (!is_posterior_line(x) || !is_posterior_line(y) || x.size() != y.size()) return false;
    for (std::size_t c = 0; c < x.size(); ++c) {
      if (x[c] == y[c]) continue;
      const int s = posterior_step(x[c]), t = posterior_step(y[c]);
      if (s < 0 || t < 0 || std::abs(s - t) > 1) return false;
    }
  }
}

using TableRows = std::vector<std::vector<std::string>>;

// A --tblout row's target (column 0) in its query's list (column 2).
std::string row_key(const std::vector<std::string>& row) {
  return row[2] + " " + row[0];
}

// HMMER lists each query's targets by E-value, and targets of equal E-value in database
// order. duet's scores are HMMER's up to the last bits of a float (see above), so two
// targets whose scores lie within that noise of each other can come in the other order;
// they then print the same E-value and score. That is the one difference in order allowed:
// within each run of duet's --tblout rows of one query that print the same E-value and
// score (columns 4 and 5), the rows are put in HMMER's order. Returns, by query and target
// name (or accession), the names of the rows moved: the row's in HMMER's place for the
// one duet had there, to rename the text output's lists alike.
std::map<std::string, std::string> untie(const TableRows& ht, TableRows& dt, bool print = true) {
  std::map<std::string, std::size_t> rank;
  for (std::size_t r = 0; r < ht.size(); ++r) rank.emplace(row_key(ht[r]), r);
  const auto rank_of = [&](const std::vector<std::string>& row) {
    const auto it = rank.find(row_key(row));
    return it == rank.end() ? ht.size() : it->second;
  };
  const TableRows before = dt;
  for (std::size_t begin = 0; begin < dt.size();) {
    std::size_t end = begin + 1;
    while (end < dt.size() && dt[end][2] == dt[begin][2] && dt[end][4] == dt[begin][4] &&
           dt[end][5] == dt[begin][5])
      ++end;
    std::stable_sort(dt.begin() + begin, dt.begin() + end,
                     [&](const auto& a, const auto& b) { return rank_of(a) < rank_of(b); });
    begin = end;
  }
  std::map<std::string, std::string> renamed;
  for (std::size_t r = 0; r < dt.size(); ++r) {
    if (before[r][0] == dt[r][0]) continue;
    if (print)
      std::printf("near tie: %s %s (E-value %s, score %s) in the place of %s\n", dt[r][2].c_str(),
                  dt[r][0].c_str(), dt[r][4].c_str(), dt[r][5].c_str(), before[r][0].c_str());
    renamed[dt[r][2] + " " + before[r][0]] = dt[r][0];
    if (before[r][1] != "-") renamed[dt[r][2] + " " + before[r][1]] = dt[r][1];
  }
  return renamed;
}

// Rows whose "query target" (columns `query` and `target`) is not one of `keys`.
TableRows rows_without(const TableRows& rows, const std::set<std::string>& keys, std::size_t query,
                       std::size_t target) {
  TableRows out;
  for (const auto& row : rows)
    if (keys.count(row[query] + " " + row[target]) == 0) out.push_back(row);
  return out;
}

// target_lists() without the entries of `keys` ("query target").
std::vector<std::string> lists_without(const std::vector<std::string>& lists,
                                       const std::set<std::string>& keys) {
  std::vector<std::string> out;
  std::string query;
  for (const std::string& entry : lists) {
    if (entry.rfind("Query:", 0) == 0) {
      std::istringstream(entry.substr(6)) >> query;
    } else if (keys.count(query + " " + entry.substr(entry.find(' ') + 1)) != 0) {
      continue;
    }
    out.push_back(entry);
  }
  return out;
}

// Domain definition's float edges. duet's domain definition follows HMMER's algorithm and,
// but for the D->D paths of the envelopes' Forward and Backward (the canonical Forward's
// scan, posterior_dp.hpp), HMMER's order of operations, so its posteriors are HMMER's up to
// the last bits of a float. Where one of those lies on a threshold, the target's bias and
// score could differ by a tenth of a bit or so. (Before the region loop's decisions were
// checked and sampled regions ran in HMMER's order, domain_definition.cpp, seeds 4149286596,
// 299920804 and 183767226 had a region end one residue later than HMMER's or other sampled
// traces, a score 0.1 to 0.2 bits off and a target moved in the order; none is known now.) One
// target a comparison may so differ beyond the fields' tolerance, or move in the order, and only
// one that neither output includes, within 1 bit of score and a factor 2 of E-value: it is printed
// and left out of the comparisons that follow. Returns its "query target" key.
std::set<std::string> float_edges(const TableRows& ht, const TableRows& dt) {
  std::map<std::string, const std::vector<std::string>*> duet;
  for (const auto& row : dt) duet.emplace(row_key(row), &row);
  // Whether the two lists, without `key`, are in the same order but for near ties.
  const auto same_order_without = [&](const std::string& key) {
    const TableRows h = rows_without(ht, {key}, 2, 0);
    TableRows d = rows_without(dt, {key}, 2, 0);
    if (h.size() != d.size()) return false;
    untie(h, d, false);
    for (std::size_t r = 0; r < h.size(); ++r)
      if (row_key(h[r]) != row_key(d[r])) return false;
    return true;
  };
  const bool in_order = same_order_without("");
  std::set<std::string> edges;
  for (const auto& h : ht) {
    const auto it = duet.find(row_key(h));
    if (it == duet.end()) continue;  // a target of one list only: the comparisons fail
    const auto& d = *it->second;
    bool same = true;
    for (std::size_t f = 0; f < h.size(); ++f) same = same && same_field(h[f], d[f]);
    if (same && (in_order || !same_order_without(row_key(h)))) continue;
    const double e_h = std::strtod(h[4].c_str(), nullptr), e_d = std::strtod(d[4].c_str(), nullptr);
    const double score_h = std::strtod(h[5].c_str(), nullptr);
    const double score_d = std::strtod(d[5].c_str(), nullptr);
    if (h[17] != "0" || d[17] != "0" || std::fabs(score_h - score_d) > 1.0 || e_h > 2 * e_d ||
        e_d > 2 * e_h)
      continue;  // not an edge: the comparisons fail
    std::printf("float edge: %s %s: hmmsearch E-value %s, score %s, bias %s; duet %s, %s, %s\n",
                h[2].c_str(), h[0].c_str(), h[4].c_str(), h[5].c_str(), h[6].c_str(), d[4].c_str(),
                d[5].c_str(), d[6].c_str());
    edges.insert(row_key(h));
  }
  EXPECT_LE(edges.size(), 1u) << "targets past the fields' tolerance";
  return edges;
}

// target_lists() with each query's names renamed as untie() says.
std::vector<std::string> renamed_lists(std::vector<std::string> lists,
                                       const std::map<std::string, std::string>& renamed) {
  std::string query;
  for (std::string& entry : lists) {
    if (entry.rfind("Query:", 0) == 0) {
      std::istringstream(entry.substr(6)) >> query;
      continue;
    }
    const std::size_t space = entry.find(' ');
    const auto it = renamed.find(query + " " + entry.substr(space + 1));
    if (it != renamed.end()) entry = entry.substr(0, space + 1) + it->second;
  }
  return lists;
}

// A text's lines, sorted: a Stockholm file's without the order of its sequences.
std::string sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

// `scan`: hmmscan (the models pressed with hmmpress for HMMER's) instead of hmmsearch.
void expect_same_as_hmmer(const std::string& hmm, const std::string& db, const std::string& extra,
                          const TempDir& dir, std::size_t min_reported = 0, bool scan = false) {
  const std::string h_tbl = dir.file("hmmer.tbl"), d_tbl = dir.file("duet.tbl");
  const std::string h_dom = dir.file("hmmer.dom"), d_dom = dir.file("duet.dom");
  const std::string program = scan ? "hmmscan" : "hmmsearch";
  std::string h_models = hmm;
  if (scan) {
    h_models = dir.file("pressed.hmm");
    test::write_file(h_models, test::read_file(hmm));
    for (const char* ext : {".h3m", ".h3i", ".h3f", ".h3p"})
      std::filesystem::remove(h_models + ext);
    const auto press = test::run_command("hmmpress " + h_models);
    ASSERT_EQ(press.status, 0) << press.output;
  }
  // -A (hmmsearch only): the significant domains' alignment file.
  const std::string h_ali = dir.file("hmmer.sto"), d_ali = dir.file("duet.sto");
  std::filesystem::remove(h_ali);
  std::filesystem::remove(d_ali);
  const std::string h_extra = scan ? "" : " -A " + h_ali;
  const std::string d_extra = scan ? "" : " -A " + d_ali;
  const auto h = test::run_command(program + " --cpu 2 " + extra + h_extra + " --tblout " + h_tbl +
                                   " --domtblout " + h_dom + " " + h_models + " " + db);
  ASSERT_EQ(h.status, 0) << h.output;
  const auto d = test::run_command(std::string(DUET_BINARY) + " " + program + " --cpu 2 " + extra +
                                   d_extra + " --tblout " + d_tbl + " --domtblout " + d_dom +
                                   " --h5 " + dir.file("duet.h5") + " " + hmm + " " + db);
  ASSERT_EQ(d.status, 0) << d.output;
  const auto hc = test::read_pass_counts(h.output);
  const auto dc = test::read_pass_counts(d.output);
  ASSERT_FALSE(hc.empty());
  ASSERT_EQ(hc, dc) << "pass counts differ\n--- hmmsearch\n"
                    << h.output << "\n--- duet\n"
                    << d.output;
  // Targets: name, accession, query, accession, E-value, score, bias, best domain's
  // E-value, score, bias, and the domain numbers (exp reg clu ov env dom rep inc), in
  // HMMER's order.
  auto ht = table_rows(h_tbl, 18);
  auto dt = table_rows(d_tbl, 18);
  EXPECT_GE(ht.size(), min_reported);
  ASSERT_EQ(ht.size(), dt.size()) << "reported targets";
  const std::set<std::string> edges = float_edges(ht, dt);
  ht = rows_without(ht, edges, 2, 0);
  dt = rows_without(dt, edges, 2, 0);
  const auto renamed = untie(ht, dt);
  if (!renamed.empty() && !scan) {
    // A near tie in duet's own scores too: within 0.001 bits in the result file.
    io::Hdf5Reader h5(dir.file("duet.h5"));
    std::map<std::string, float> score;
    for (const std::string& model : h5.list("/results/hmmsearch")) {
      const std::string g = "/results/hmmsearch/" + model + "/";
      const auto names = h5.read_strings(g + "name");
      const auto bits = h5.read_floats(g + "score_bits");
      for (std::size_t i = 0; i < names.size(); ++i) score.emplace(model + " " + names[i], bits[i]);
    }
    for (const auto& [was, now] : renamed) {
      const std::string query = was.substr(0, was.find(' '));
      if (score.count(was) == 0 || score.count(query + " " + now) == 0) continue;  // accessions
      EXPECT_LE(std::fabs(score[was] - score[query + " " + now]), 1e-3f) << was << " and " << now;
    }
  }
  for (std::size_t r = 0; r < ht.size(); ++r)
    for (std::size_t f = 0; f < 18; ++f)
      expect_same_field(ht[r][f], dt[r][f], ht[r][0] + " --tblout column " + std::to_string(f));
  // Domains: every column but the description.
  const auto hd = rows_without(table_rows(h_dom, 22), edges, 3, 0);
  auto dd = rows_without(table_rows(d_dom, 22), edges, 3, 0);
  ASSERT_EQ(hd.size(), dd.size()) << "reported domains";
  if (!renamed.empty()) {
    // Domain rows follow their targets: duet's in the order of its --tblout rows untied.
    std::map<std::string, std::size_t> rank;
    for (std::size_t r = 0; r < dt.size(); ++r) rank.emplace(dt[r][0] + " " + dt[r][2], r);
    std::stable_sort(dd.begin(), dd.end(), [&](const auto& a, const auto& b) {
      return rank.at(a[0] + " " + a[3]) < rank.at(b[0] + " " + b[3]);
    });
  }
  for (std::size_t r = 0; r < hd.size(); ++r)
    for (std::size_t f = 0; f < 22; ++f)
      expect_same_field(hd[r][f], dd[r][f],
                        hd[r][0] + " domain " + hd[r][9] + " column " + std::to_string(f));
  // The text output's lists of targets (names, or accessions under --acc).
  EXPECT_EQ(lists_without(target_lists(h.output), edges),
            renamed_lists(lists_without(target_lists(d.output), edges), renamed));
  // Alignments.
  auto ha = alignment_blocks(h.output);
  const auto da = alignment_blocks(d.output);
  std::erase_if(ha, [&](const auto& block) {
    return edges.count(std::get<0>(block.first) + " " + std::get<1>(block.first)) != 0;
  });
  EXPECT_EQ(ha.size(), hd.size());
  std::size_t same = 0;
  std::string first_difference;
  for (const auto& [key, block] : ha) {
    const auto it = da.find(key);
    if (it != da.end() && it->second == block) {
      ++same;
      continue;
    }
    const std::string where = std::get<0>(key) + " " + std::get<1>(key) + " domain " +
                              std::to_string(std::get<2>(key)) + "\n--- hmmsearch\n" + block +
                              "--- duet\n" + (it == da.end() ? "(none)\n" : it->second);
    EXPECT_TRUE(it != da.end() && same_up_to_posterior_steps(block, it->second))
        << "alignments differ beyond a posterior step: " << where;
    if (first_difference.empty()) first_difference = where;
  }
  std::printf("alignments identical: %zu of %zu\n", same, ha.size());
  if (!scan) {
    // The same file as HMMER's, but for the author line and the descriptions' trailing
    // blanks (duet's reader drops them); none where no domain is significant.
    const auto stockholm = [](const std::string& path) {
      std::string text;
      if (!std::filesystem::exists(path)) return text;
      std::istringstream in(test::read_file(path));
      for (std::string line; std::getline(in, line);) {
        if (line.rfind("#=GF AU", 0) == 0) continue;
        while (!line.empty() && line.back() == ' ') line.pop_back();
        text += line + "\n";
      }
      return text;
    };
    // Its sequences in hit order: where a near tie moved a row, compared line by line
    // sorted.
    std::string h_file = stockholm(h_ali), d_file = stockholm(d_ali);
    if (!renamed.empty()) {
      h_file = sorted_lines(h_file);
      d_file = sorted_lines(d_file);
    }
    EXPECT_TRUE(same_up_to_posterior_steps(h_file, d_file))
        << "-A files differ beyond a posterior step: " << h_ali << " " << d_ali << "\n"
        << h_file << "--- duet\n"
        << d_file;
  }
  // At least 99% identical; on fewer than 100 domains, all but one.
  EXPECT_LE(ha.size() - same, std::max<std::size_t>(1, ha.size() / 100))
      << same << " of " << ha.size()
      << " alignments identical; first difference: " << first_difference;
}

class TutorialModel : public ::testing::TestWithParam<const char*> {};

TEST_P(TutorialModel, SameAsHmmsearchOnMmseqsDatabase) {
  TempDir dir;
  expect_same_as_hmmer(kTutorial + GetParam() + ".hmm", kDatabase, "", dir, 5);
  expect_same_as_hmmer(kTutorial + GetParam() + ".hmm", kDatabase, "--nonull2", dir, 5);
}

INSTANTIATE_TEST_SUITE_P(Hmmer, TutorialModel, ::testing::Values("Pkinase", "fn3", "globins4"));

// Pfam's bit score cutoffs: a copy of fn3 given GA, TC and NC lines, with each of
// --cut_ga, --cut_tc and --cut_nc; a model without the line asked for is an error that
// names it.
TEST(EndToEnd, PfamCutoffs) {
  TempDir dir;
  std::string model = test::read_file(kTutorial + "fn3.hmm");
  // Where Pfam has them, after CKSUM (hmmsearch 3.3.2 crashes on them before LENG).
  const std::size_t after_checksum = model.find('\n', model.find("\nCKSUM") + 1) + 1;
  model.insert(after_checksum, "GA    12.00 9.50;\nTC    20.00 15.00;\nNC    8.00 5.00;\n");
  test::write_file(dir.file("fn3_cut.hmm"), model);
  for (const char* cut : {"--cut_ga", "--cut_tc", "--cut_nc"})
    expect_same_as_hmmer(dir.file("fn3_cut.hmm"), kDatabase, cut, dir, 5);
  const auto r =
      test::run_command(std::string(DUET_BINARY) + " hmmsearch --cut_ga --h5 " + dir.file("x.h5") +
                        " " + kTutorial + "globins4.hmm " + kDatabase);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("globins4.hmm"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("model 'globins4' has no GA line (--cut_ga)"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.h5")));
}

// hmmscan: the three tutorial protein models against 1,000 sequences, grouped by
// sequence with hmmscan's statistics, as HMMER's hmmscan reports them.
TEST(EndToEnd, HmmscanAsHmmer) {
  TempDir dir;
  test::write_file(dir.file("three.hmm"), test::read_file(kTutorial + "globins4.hmm") +
                                              test::read_file(kTutorial + "fn3.hmm") +
                                              test::read_file(kTutorial + "Pkinase.hmm"));
  ASSERT_EQ(test::run_command("zcat " + kDatabase + " | head -n 2000 > " + dir.file("q.fa")).status,
            0);
  expect_same_as_hmmer(dir.file("three.hmm"), dir.file("q.fa"), "", dir, 20, true);
  // The result file: a row per sequence, the reported hits are --tblout's rows.
  {
    io::Hdf5Reader h5(dir.file("duet.h5"));
    EXPECT_EQ(h5.read_strings("/results/hmmscan/queries/name").size(), 1000u);
    const auto reported = h5.read_uint8("/results/hmmscan/hits/reported");
    const auto query = h5.read_int64("/results/hmmscan/hits/query");
    ASSERT_EQ(query.size(), reported.size());
    std::size_t rows = 0;
    std::ifstream table(dir.file("duet.tbl"));
    for (std::string line; std::getline(table, line);) rows += !line.empty() && line[0] != '#';
    EXPECT_EQ(static_cast<std::size_t>(std::count(reported.begin(), reported.end(), 1)), rows);
  }
  expect_same_as_hmmer(dir.file("three.hmm"), dir.file("q.fa"), "-E 1e-3 --domE 1e-5 --nonull2",
                       dir, 10, true);
  // --acc: the models' accessions (Pkinase's and fn3's; globins4 has none) in the tables,
  // the domain blocks and the alignments.
  expect_same_as_hmmer(dir.file("three.hmm"), dir.file("q.fa"), "--acc", dir, 20, true);
}

// hmmsearch --acc: the query model's accession in its alignments (the FASTA targets have
// none, so their names stay).
TEST(EndToEnd, AccessionsInsteadOfNames) {
  TempDir dir;
  ASSERT_EQ(test::run_command("zcat " + kDatabase + " | head -n 4000 > " + dir.file("q.fa")).status,
            0);
  expect_same_as_hmmer(kTutorial + "Pkinase.hmm", dir.file("q.fa"), "--acc", dir, 5);
  const auto d =
      test::run_command(std::string(DUET_BINARY) + " hmmsearch --acc --cpu 2 --h5 " +
                        dir.file("x.h5") + " " + kTutorial + "Pkinase.hmm " + dir.file("q.fa"));
  EXPECT_NE(d.output.find("# prefer accessions over names:    yes"), std::string::npos);
  EXPECT_NE(d.output.find("      PF00069.17   1 "), std::string::npos) << d.output;
}

TEST(EndToEnd, SeveralModelsInOneFileAndOptions) {
  TempDir dir;
  test::write_file(dir.file("three.hmm"), test::read_file(kTutorial + "globins4.hmm") +
                                              test::read_file(kTutorial + "fn3.hmm") +
                                              test::read_file(kTutorial + "Pkinase.hmm"));
  // hmmsearch cannot rewind a gzip database for a second query: give it a plain copy.
  const std::string db = dir.file("db.fa");
  ASSERT_EQ(test::run_command("zcat " + kDatabase + " > " + db).status, 0);
  expect_same_as_hmmer(dir.file("three.hmm"), db, "-E 1e-3 --F1 0.05 --F2 0.01", dir, 10);
  expect_same_as_hmmer(dir.file("three.hmm"), db, "--nobias -Z 1000000", dir, 10);
  expect_same_as_hmmer(dir.file("three.hmm"), db, "-T 30", dir, 10);
  expect_same_as_hmmer(dir.file("three.hmm"), db,
                       "--domE 1e-3 --incE 1e-20 --incdomE 1e-6 --domZ 50 --seed 7", dir, 10);
  expect_same_as_hmmer(dir.file("three.hmm"), db, "--domT 15 --incT 100 --incdomT 30 --nonull2",
                       dir, 10);
}

// Random DNA pieces cut from the tutorial's human chromosome fragment, lowercase,
// degenerate codes (every one), and lengths 0 and 1, searched with the MADE1 model.
TEST(EndToEnd, DnaModelAndEveryResidueCode) {
  TempDir dir;
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  std::string chrom;
  {
    std::istringstream in(test::read_file(kTutorial + "dna_target.fa"));
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '>') chrom += line;
  }
  std::string fasta = ">empty\n>one\nA\n>one_n\nn\n";
  const std::string degenerate = "RYMKSWHBVDNXUryn";
  // Overlapping windows over the whole fragment (so the real MADE1 copies are found),
  // then random pieces.
  const std::size_t windows = chrom.size() / 3000;
  for (std::size_t i = 0; i < windows + 100; ++i) {
    const std::size_t len =
        i < windows ? std::min<std::size_t>(4000, chrom.size() - i * 3000) : rng() % 3000 + 1;
    const std::size_t start = i < windows ? i * 3000 : rng() % (chrom.size() - len);
    std::string piece = chrom.substr(start, len);
    if (i % 3 == 0)
      for (auto& c : piece) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (i % 5 == 0)
      for (int j = 0; j < 5; ++j)
        piece[rng() % piece.size()] = degenerate[rng() % degenerate.size()];
    fasta += ">piece" + std::to_string(i) + " start=" + std::to_string(start) + "\n";
    for (std::size_t p = 0; p < piece.size(); p += 60) fasta += piece.substr(p, 60) + "\n";
  }
  test::write_file(dir.file("dna.fa"), fasta);
  expect_same_as_hmmer(kTutorial + "MADE1.hmm", dir.file("dna.fa"), "", dir, 1);
  expect_same_as_hmmer(kTutorial + "MADE1.hmm", dir.file("dna.fa"), "--max", dir, 1);
}

TEST(EndToEnd, ProteinsWithEveryResidueCodeUnderMax) {
  TempDir dir;
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  const std::string residues = "ACDEFGHIKLMNPQRSTVWYBJZOUX*acdefghiklmnpqrstvwybjzoux";
  // HMMER 3.3.2 itself aborts on a few of these draws ("forward score underflow" in its
  // generic Forward under --max; seed 4216350356 makes one): such a draw cannot be
  // compared, and the next one from the same generator is taken instead.
  for (int draw = 0;; ++draw) {
    ASSERT_LT(draw, 10) << "hmmsearch --max aborted on 10 draws in a row";
    std::string fasta = ">empty\n>one\nW\n>two\nx*\n";
    for (int i = 0; i < 300; ++i) {
      const std::size_t len = rng() % 400 + 1;
      fasta += ">p" + std::to_string(i) + "\n";
      for (std::size_t p = 0; p < len; ++p) {
        fasta += (rng() % 10 == 0) ? residues[rng() % residues.size()] : residues[rng() % 20];
        if (p % 70 == 69) fasta += '\n';
      }
      fasta += '\n';
    }
    test::write_file(dir.file("p.fa"), fasta);
    const auto h = test::run_command("hmmsearch --max -o /dev/null " + kTutorial + "globins4.hmm " +
                                     dir.file("p.fa"));
    if (h.status == 0) break;
    ASSERT_NE(h.output.find("forward score underflow"), std::string::npos) << h.output;
    std::printf("draw %d: hmmsearch --max aborted (forward score underflow); drawing again\n",
                draw);
  }
  expect_same_as_hmmer(kTutorial + "globins4.hmm", dir.file("p.fa"), "--max", dir, 0);
  expect_same_as_hmmer(kTutorial + "globins4.hmm", dir.file("p.fa"), "", dir);
}

// Models built here with HMMER's hmmbuild, of 1, 50, 1,000 and over 2,000 nodes, searched
// against part of the mmseqs2 examples plus homologs: pieces of the longer families, and
// for the 50-node family, sequences with three copies of it (repeated domains).
TEST(EndToEnd, ModelsOfLengthOneToOverTwoThousand) {
  TempDir dir;
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  const std::string aa = "ACDEFGHIKLMNPQRSTVWY";
  const auto random_protein = [&](int length) {
    std::string s;
    for (int i = 0; i < length; ++i) s += aa[rng() % 20];
    return s;
  };
  const auto mutate = [&](std::string s, int one_in) {
    for (auto& c : s)
      if (rng() % static_cast<unsigned>(one_in) == 0) c = aa[rng() % 20];
    return s;
  };
  // Length 1: a single conserved column.
  std::string sto = "# STOCKHOLM 1.0\n";
  for (int i = 0; i < 8; ++i) sto += "s" + std::to_string(i) + " W\n";
  sto += "//\n";
  test::write_file(dir.file("one.sto"), sto);
  // The others: six mutated copies of a random protein.
  std::string homologs;
  for (const int length : {50, 1000, 2100}) {
    const std::string ancestor = random_protein(length);
    std::string family = "# STOCKHOLM 1.0\n";
    for (int s = 0; s < 6; ++s) {
      const std::string copy = mutate(ancestor, 5);
      family += "h" + std::to_string(s) + " " + copy + "\n";
      const std::string name = ">homolog" + std::to_string(length) + "_" + std::to_string(s) + "\n";
      if (length == 50) {
        homologs += name + random_protein(30) + mutate(copy, 6) + random_protein(20) +
                    mutate(copy, 6) + random_protein(40) + mutate(copy, 6) + "\n";
      } else {
        const int piece =
            length * 3 / 5 + static_cast<int>(rng() % static_cast<unsigned>(length / 5));
        homologs += name +
                    mutate(copy, 4).substr(rng() % static_cast<unsigned>(length / 5),
                                           static_cast<std::size_t>(piece)) +
                    "\n";
      }
    }
    test::write_file(dir.file("m" + std::to_string(length) + ".sto"), family + "//\n");
  }
  for (const char* name : {"one", "m50", "m1000", "m2100"}) {
    const auto b =
        test::run_command("hmmbuild --amino --cpu 2 " + dir.file(std::string(name) + ".hmm") + " " +
                          dir.file(std::string(name) + ".sto"));
    ASSERT_EQ(b.status, 0) << b.output;
  }
  const auto cut =
      test::run_command("zcat " + kDatabase + " | head -n 4000 > " + dir.file("db.fa"));
  ASSERT_EQ(cut.status, 0);
  test::write_file(dir.file("db.fa"), test::read_file(dir.file("db.fa")) + homologs);
  expect_same_as_hmmer(dir.file("one.hmm"), dir.file("db.fa"), "", dir);
  expect_same_as_hmmer(dir.file("m50.hmm"), dir.file("db.fa"), "", dir, 6);
  expect_same_as_hmmer(dir.file("m1000.hmm"), dir.file("db.fa"), "", dir, 6);
  expect_same_as_hmmer(dir.file("m2100.hmm"), dir.file("db.fa"), "", dir, 6);
}

}  // namespace
}  // namespace duet
