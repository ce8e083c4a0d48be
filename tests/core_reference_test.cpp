// Unit tests of src/core: alphabets, readers, profile configuration, and the scalar
// reference stages on small cases worked out by hand.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "core/alphabet.hpp"
#include "core/error.hpp"
#include "core/fasta_reader.hpp"
#include "core/hmmsearch/cascade.hpp"
#include "core/hmmsearch/forward_canonical.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"
#include "core/hmmsearch/statistics.hpp"
#include "core/text_reader.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

using test::TempDir;
using test::write_file;

// A one-node DNA model: match emits A with 0.7, C/G/T with 0.1 each.
std::string one_node_dna_model() {
  auto f = [](double p) {
    char b[32];
    std::snprintf(b, sizeof b, "%.5f", -std::log(p));
    return std::string(b);
  };
  std::string s =
      "HMMER3/f [test]\nNAME  one\nLENG  1\nALPH  DNA\nRF    no\nMM    no\nCONS  yes\n"
      "CS    no\nMAP   no\nSTATS LOCAL MSV       -5.0  0.7\n"
      "STATS LOCAL VITERBI   -5.5  0.7\nSTATS LOCAL FORWARD   -3.0  0.7\n"
      "HMM          A        C        G        T\n"
      "            m->m     m->i     m->d     i->m     i->i     d->m     d->d\n";
  s += "  COMPO   " + f(0.7) + " " + f(0.1) + " " + f(0.1) + " " + f(0.1) + "\n";
  s += "          " + f(0.25) + " " + f(0.25) + " " + f(0.25) + " " + f(0.25) + "\n";
  s += "          " + f(0.98) + " " + f(0.01) + " " + f(0.01) + " " + f(0.5) + " " + f(0.5) +
       " 0.00000        *\n";
  s += "      1   " + f(0.7) + " " + f(0.1) + " " + f(0.1) + " " + f(0.1) + "      1 a - - -\n";
  s += "          " + f(0.25) + " " + f(0.25) + " " + f(0.25) + " " + f(0.25) + "\n";
  s += "          0.00000        *        *  0.00000        *  0.00000        *\n//\n";
  return s;
}

// one_node_dna_model() with the first `from` replaced by `to`.
std::string one_node_model_with(const std::string& from, const std::string& to) {
  std::string text = one_node_dna_model();
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(Alphabet, CodesFollowEasel) {
  const Alphabet& a = Alphabet::amino();
  EXPECT_EQ(a.K(), 20);
  EXPECT_EQ(a.Kp(), 29);
  EXPECT_EQ(a.digitize('A'), 0);
  EXPECT_EQ(a.digitize('y'), 19);
  EXPECT_EQ(a.digitize('B'), 21);
  EXPECT_EQ(a.digitize('X'), 26);
  EXPECT_EQ(a.digitize('*'), 27);
  EXPECT_EQ(a.digitize('1'), Alphabet::kIllegal);
  EXPECT_TRUE(a.includes(a.digitize('B'), a.digitize('N')));
  EXPECT_TRUE(a.includes(a.digitize('U'), a.digitize('C')));
  EXPECT_FALSE(a.includes(a.digitize('B'), a.digitize('A')));
  const Alphabet& d = Alphabet::dna();
  EXPECT_EQ(d.Kp(), 18);
  EXPECT_EQ(d.digitize('u'), d.digitize('T'));
  EXPECT_EQ(d.digitize('X'), d.digitize('N'));
  EXPECT_TRUE(d.includes(d.digitize('R'), d.digitize('G')));
}

TEST(FastaReader, ReadsPlainAndGzipWithEveryResidueCode) {
  TempDir dir;
  const std::string text = ">s1 first one\nACDEFGHIKLMNPQRSTVWY\nbjzouxacd*\n>s2\n\n>s3 x\nA\n";
  write_file(dir.file("a.fa"), text);
  gzFile gz = gzopen(dir.file("a.fa.gz").c_str(), "wb");
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  for (const char* name : {"a.fa", "a.fa.gz"}) {
    FastaReader r(dir.file(name), Alphabet::amino());
    Sequence s;
    ASSERT_TRUE(r.next(s));
    EXPECT_EQ(s.name, "s1");
    EXPECT_EQ(s.description, "first one");
    ASSERT_EQ(s.residues.size(), 30u);
    EXPECT_EQ(s.residues[20], 21);  // b -> B
    EXPECT_EQ(s.residues[29], 27);  // '*'
    ASSERT_TRUE(r.next(s));
    EXPECT_EQ(s.name, "s2");
    EXPECT_TRUE(s.residues.empty());
    ASSERT_TRUE(r.next(s));
    EXPECT_EQ(s.residues.size(), 1u);
    EXPECT_FALSE(r.next(s));
  }
}

// A whole file in memory: plain, and gzip growing past the compressed size it started
// from (several times over), byte for byte; an empty file is empty.
TEST(WholeText, PlainGzipAndEmptyFilesReadWhole) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 400000; ++i) text += "line " + std::to_string(i) + "\n";
  write_file(dir.file("t.txt"), text);
  gzFile gz = gzopen(dir.file("t.txt.gz").c_str(), "wb9");
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  write_file(dir.file("empty.txt"), "");
  EXPECT_EQ(WholeText(dir.file("t.txt")).view(), text);
  EXPECT_EQ(WholeText(dir.file("t.txt.gz")).view(), text);
  EXPECT_EQ(WholeText(dir.file("empty.txt")).view(), "");
  EXPECT_THROW(WholeText(dir.file("missing.txt")), InputError);
}

TEST(FastaReader, ErrorsNameFileAndLine) {
  TempDir dir;
  write_file(dir.file("bad.fa"), ">s1\nACDE\nAC1DE\n");
  FastaReader r(dir.file("bad.fa"), Alphabet::amino());
  Sequence s;
  try {
    r.next(s);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_NE(std::string(e.what()).find("bad.fa:3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'1'"), std::string::npos) << e.what();
  }
  write_file(dir.file("nohead.fa"), "ACDE\n");
  FastaReader r2(dir.file("nohead.fa"), Alphabet::amino());
  EXPECT_THROW(r2.next(s), InputError);
  write_file(dir.file("gap.fa"), ">s\nAC-DE\n");
  FastaReader r3(dir.file("gap.fa"), Alphabet::amino());
  EXPECT_THROW(r3.next(s), InputError);
  EXPECT_THROW(FastaReader(dir.file("missing.fa"), Alphabet::amino()), InputError);
}

// A NUL byte in a header is an error naming the file and line (names end up as C strings
// in the HDF5 result file); in a sequence line it is an illegal character, as any byte
// outside the alphabet.
TEST(FastaReader, NulByteIsAnErrorInHeadersAndSequences) {
  TempDir dir;
  const std::string nul(1, '\0');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {">a\nAC\n>b" + nul + "c desc\nAC\n", "illegal NUL byte in a sequence header"},
      {">a\nAC\n>b desc" + nul + "\nAC\n", "illegal NUL byte in a sequence header"},
      {">a\nAC\n>" + nul + "\nAC\n", "illegal NUL byte in a sequence header"},
      {">a\nAC\n>b\nA" + nul + "C\n", "illegal character byte 0 in amino sequence 'b'"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string plain = dir.file("nul" + std::to_string(i) + ".fa");
    write_file(plain, cases[i].first);
    const std::string gz = plain + ".gz";
    gzFile f = gzopen(gz.c_str(), "wb");
    gzwrite(f, cases[i].first.data(), static_cast<unsigned>(cases[i].first.size()));
    gzclose(f);
    for (const std::string& path : {plain, gz}) {
      FastaReader r(path, Alphabet::amino());
      Sequence s;
      ASSERT_TRUE(r.next(s)) << path;
      EXPECT_EQ(s.name, "a");
      try {
        r.next(s);
        ADD_FAILURE() << path << ": no error";
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()),
                  path + ":" + std::to_string(i < 3 ? 3 : 4) + ": " + cases[i].second);
      }
    }
  }
}

TEST(FastaReader, CorruptGzipIsAnError) {
  TempDir dir;
  const std::string text(20000, 'A');
  gzFile gz = gzopen(dir.file("c.fa.gz").c_str(), "wb");
  const std::string rec = ">s\n" + text + "\n";
  gzwrite(gz, rec.data(), static_cast<unsigned>(rec.size()));
  gzclose(gz);
  std::string bytes = test::read_file(dir.file("c.fa.gz"));
  for (std::size_t i = 20; i < bytes.size() - 8; i += 7)
    bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  write_file(dir.file("c.fa.gz"), bytes);
  FastaReader r(dir.file("c.fa.gz"), Alphabet::amino());
  Sequence s;
  EXPECT_THROW(while (r.next(s)){}, InputError);
}

TEST(HmmReader, ReadsTutorialModels) {
  const auto models = read_hmm_file("/usr/share/doc/hmmer/examples/tutorial/globins4.hmm");
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].name, "globins4");
  EXPECT_EQ(models[0].M, 149);
  EXPECT_EQ(models[0].alphabet, &Alphabet::amino());
  EXPECT_NEAR(models[0].forward_lambda, 0.70957, 1e-6);
  const auto dna = read_hmm_file("/usr/share/doc/hmmer/examples/tutorial/MADE1.hmm");
  EXPECT_EQ(dna[0].alphabet, &Alphabet::dna());
  EXPECT_EQ(dna[0].M, 80);
}

TEST(HmmReader, SeveralModelsAndErrors) {
  TempDir dir;
  const std::string one = one_node_dna_model();
  write_file(dir.file("two.hmm"), one + one);
  EXPECT_EQ(read_hmm_file(dir.file("two.hmm")).size(), 2u);
  // Truncated after the node line: error names the line.
  std::string cut = one.substr(0, one.find("      1   "));
  write_file(dir.file("cut.hmm"), cut);
  try {
    read_hmm_file(dir.file("cut.hmm"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.hmm:"), std::string::npos) << e.what();
  }
  std::string bad = one;
  bad.replace(bad.find("      1   ") + 10, 7, "0.1x234");
  write_file(dir.file("bad.hmm"), bad);
  EXPECT_THROW(read_hmm_file(dir.file("bad.hmm")), InputError);
  write_file(dir.file("empty.hmm"), "");
  EXPECT_THROW(read_hmm_file(dir.file("empty.hmm")), InputError);
}

// Header numbers outside what the model's fields hold are errors on their line, not
// conversions (a fuzzer found "MAXL 1e308" converted to int).
TEST(HmmReader, HeaderNumbersOutOfRangeAreErrors) {
  TempDir dir;
  const auto line_of = [](const std::string& text, const std::string& what) {
    return std::count(text.begin(), text.begin() + static_cast<long>(text.find(what)), '\n') + 1;
  };
  int n = 0;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"LENG  1", "LENG  1\nMAXL  1e308"},
           {"LENG  1", "LENG  1\nMAXL  -3"},
           {"LENG  1", "LENG  1\nMAXL  2.5"},
           {"LENG  1", "LENG  1e9"},
           {"LENG  1", "LENG  0"},
           {"MSV       -5.0", "MSV       -1e300"},
           {"VITERBI   -5.5  0.7", "VITERBI   -5.5  1e39"},
       }) {
    const std::string text = one_node_model_with(from, to);
    const std::string name = "range" + std::to_string(n++) + ".hmm";
    write_file(dir.file(name), text);
    const std::string bad = to.substr(to.rfind('\n') + 1);
    try {
      read_hmm_file(dir.file(name));
      ADD_FAILURE() << to << ": no error";
    } catch (const InputError& e) {
      EXPECT_EQ(e.line(), line_of(text, bad)) << e.what();
    }
  }
  // In range, MAXL is read.
  write_file(dir.file("maxl.hmm"), one_node_model_with("LENG  1", "LENG  1\nMAXL  7"));
  EXPECT_EQ(read_hmm_file(dir.file("maxl.hmm")).at(0).max_length, 7);
}

// Numbers are read as strtod reads them, whichever way they are written: a leading '+',
// an exponent, a zero written long; a value strtod reports out of range is an error.
TEST(HmmReader, NumbersReadAsStrtodReadsThem) {
  TempDir dir;
  const auto read_with = [&](const std::string& from, const std::string& to) {
    write_file(dir.file("n.hmm"), one_node_model_with(from, to));
    return read_hmm_file(dir.file("n.hmm")).at(0);
  };
  const HmmModel plain = read_with("0.00000        *\n//", "0.00000        *\n//");
  for (const char* zero : {"+0.0", "0e7", "-0.000", "0.0E-400"}) {
    const HmmModel m = read_with("0.00000        *\n//", std::string(zero) + "        *\n//");
    EXPECT_EQ(m.t, plain.t) << zero;
  }
  const HmmModel exponent = read_with("STATS LOCAL MSV       -5.0", "STATS LOCAL MSV  -0.5e1");
  EXPECT_EQ(exponent.msv_mu, plain.msv_mu);
  EXPECT_EQ(read_with("STATS LOCAL MSV       -5.0", "STATS LOCAL MSV  +0x1p-1").msv_mu, 0.5f);
  for (const char* bad : {"1e-400", "1e-310", "+-1", "1e400", "0x", "1.0.0"}) {
    EXPECT_THROW(read_with("0.00000        *\n//", std::string(bad) + "        *\n//"), InputError)
        << bad;
  }
}

// An emission or transition line with a value missing or one too many is an error naming
// the file and line: on a match line the MAP column would otherwise be read as the last
// emission. The annotation columns of each format (or none) are accepted.
// A file above 1 MiB is parsed in parts in parallel: the same models as one reader of
// the whole file, and the same first error (message and line) when one model is broken.
TEST(HmmReader, LargeFileParsedInPartsGivesTheSameModelsAndErrors) {
  test::TempDir dir;
  const std::string tutorial = "/usr/share/doc/hmmer/examples/tutorial/";
  std::string one_round;
  for (const char* name : {"Pkinase.hmm", "fn3.hmm", "globins4.hmm"})
    one_round += test::read_file(tutorial + name);
  std::string text;
  while (text.size() < (std::size_t{3} << 20)) text += one_round;
  test::write_file(dir.file("many.hmm"), text);
  const auto sequential = [&](const std::string& path) {
    HmmReader reader(path);
    std::vector<HmmModel> models;
    HmmModel m;
    while (reader.next(m)) models.push_back(m);
    return models;
  };
  const std::vector<HmmModel> expected = sequential(dir.file("many.hmm"));
  const std::vector<HmmModel> parallel = read_hmm_file(dir.file("many.hmm"));
  ASSERT_GT(expected.size(), 30u);
  ASSERT_EQ(parallel.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const HmmModel& a = expected[i];
    const HmmModel& b = parallel[i];
    EXPECT_EQ(a.name, b.name) << i;
    EXPECT_EQ(a.line, b.line) << i;
    EXPECT_EQ(a.M, b.M) << i;
    EXPECT_EQ(a.alphabet, b.alphabet) << i;
    EXPECT_EQ(a.t, b.t) << i;
    EXPECT_EQ(a.match, b.match) << i;
    EXPECT_EQ(a.insert, b.insert) << i;
    EXPECT_EQ(a.consensus, b.consensus) << i;
    EXPECT_EQ(a.forward_tau, b.forward_tau) << i;
  }
  // Two broken models, past the middle and near the end: the first is reported, with its
  // line, as a reader of the whole file reports it.
  std::string broken = text;
  for (const std::size_t at : {broken.size() * 2 / 3, broken.size() * 9 / 10}) {
    const std::size_t node = broken.find("\n      7 ", at);
    ASSERT_NE(node, std::string::npos);
    broken.replace(node + 1, 7, "      8");
  }
  test::write_file(dir.file("broken.hmm"), broken);
  std::string expected_error, parallel_error;
  try {
    sequential(dir.file("broken.hmm"));
  } catch (const InputError& e) {
    expected_error = e.what();
  }
  try {
    read_hmm_file(dir.file("broken.hmm"));
  } catch (const InputError& e) {
    parallel_error = e.what();
  }
  EXPECT_FALSE(expected_error.empty());
  EXPECT_EQ(parallel_error, expected_error);
}

TEST(HmmReader, EmissionAndTransitionLinesNeedExactlyTheirValues) {
  TempDir dir;
  // The model's lines, 1-based; node 1's match line is the one starting with "1".
  std::vector<std::string> lines(1);
  {
    std::istringstream in(one_node_dna_model());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  const long match = std::find_if(lines.begin(), lines.end(),
                                  [](const std::string& l) { return l.starts_with("      1 "); }) -
                     lines.begin();
  auto tokens_of = [](const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> tokens;
    for (std::string t; in >> t;) tokens.push_back(t);
    return tokens;
  };
  auto joined = [](const std::vector<std::string>& tokens) {
    std::string line = "        ";
    for (const std::string& t : tokens) line += " " + t;
    return line;
  };
  // The model with line `n` replaced.
  auto with_line = [&](long n, const std::string& line) {
    std::string text;
    for (std::size_t i = 1; i < lines.size(); ++i)
      text += (static_cast<long>(i) == n ? line : lines[i]) + "\n";
    return text;
  };
  auto expect_error_at = [&](const std::string& text, long line, const std::string& name) {
    write_file(dir.file(name), text);
    try {
      read_hmm_file(dir.file(name));
      ADD_FAILURE() << name << ": no error";
    } catch (const InputError& e) {
      EXPECT_EQ(e.line(), line) << name << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(name + ":" + std::to_string(line) + ": "),
                std::string::npos)
          << e.what();
    }
  };
  auto expect_read = [&](const std::string& text, const std::string& name) {
    write_file(dir.file(name), text);
    return read_hmm_file(dir.file(name)).at(0);
  };

  // Match line "1 e1 e2 e3 e4 1 a - - -" (3/f: MAP, CONS, RF, MM, CS).
  std::vector<std::string> m = tokens_of(lines[static_cast<std::size_t>(match)]);
  ASSERT_EQ(m.size(), 10u);
  auto without = [](std::vector<std::string> t, std::size_t i) {
    t.erase(t.begin() + static_cast<long>(i));
    return t;
  };
  auto with = [](std::vector<std::string> t, std::size_t i, const std::string& value) {
    t.insert(t.begin() + static_cast<long>(i), value);
    return t;
  };
  // One emission missing: before, MAP's "1" was read as the fourth emission.
  expect_error_at(with_line(match, joined(without(m, 1))), match, "match_short.hmm");
  expect_error_at(with_line(match, joined(with(m, 1, "1.38629"))), match, "match_long.hmm");
  expect_error_at(with_line(match, joined(with(m, 10, "-"))), match, "match_annotation_long.hmm");
  expect_error_at(with_line(match, joined(without(m, 9))), match, "match_annotation_short.hmm");
  // Emissions only: accepted; one missing or one extra is not.
  const std::vector<std::string> bare(m.begin(), m.begin() + 5);
  EXPECT_EQ(expect_read(with_line(match, joined(bare)), "bare.hmm").match[1],
            expect_read(with_line(match, joined(m)), "full.hmm").match[1]);
  expect_error_at(with_line(match, joined(without(bare, 4))), match, "bare_short.hmm");
  expect_error_at(with_line(match, joined(with(bare, 5, "1.38629"))), match, "bare_long.hmm");
  // The annotation columns are a MAP number or '-', then one character each.
  expect_error_at(with_line(match, joined(with(without(m, 5), 5, "1.5"))), match, "map.hmm");
  expect_error_at(with_line(match, joined(with(without(m, 6), 6, "ab"))), match, "cons.hmm");
  // Insert and transition lines (node 0 and node 1): exactly K and 7 values.
  for (long line : {match - 2, match - 1, match + 1, match + 2}) {
    const std::vector<std::string> t = tokens_of(lines[static_cast<std::size_t>(line)]);
    expect_error_at(with_line(line, joined(without(t, 0))), line,
                    "short" + std::to_string(line) + ".hmm");
    expect_error_at(with_line(line, joined(with(t, 0, "1.00000"))), line,
                    "long" + std::to_string(line) + ".hmm");
  }
  // Older formats: 3/e has MAP, CONS, RF, CS; 3/a to 3/d MAP, RF, CS.
  std::vector<std::string> v3e = without(m, 8);
  lines[1].replace(0, 8, "HMMER3/e");
  EXPECT_EQ(expect_read(with_line(match, joined(v3e)), "v3e.hmm").consensus[1], 'a');
  expect_error_at(with_line(match, joined(m)), match, "v3e_long.hmm");
  lines[1].replace(0, 8, "HMMER3/b");
  EXPECT_EQ(expect_read(with_line(match, joined(without(v3e, 6))), "v3b.hmm").M, 1);
  expect_error_at(with_line(match, joined(v3e)), match, "v3b_long.hmm");

  // A tutorial model (amino, MAP yes): node 3's match line without its first emission.
  std::string globins = test::read_file("/usr/share/doc/hmmer/examples/tutorial/globins4.hmm");
  const auto at = globins.find("\n      3   ") + 1;
  const long line3 = std::count(globins.begin(), globins.begin() + static_cast<long>(at), '\n') + 1;
  globins.erase(at + 10, 9);  // "3.50771  ": one value and its spaces
  expect_error_at(globins, line3, "globins_short.hmm");
}

// Worked by hand (see the comments): bytes and words as HMMER's conversions give them.
TEST(Reference, OneNodeModelByHand) {
  TempDir dir;
  write_file(dir.file("one.hmm"), one_node_dna_model());
  const HmmModel hmm = read_hmm_file(dir.file("one.hmm"))[0];
  const SearchProfile sp = build_search_profile(hmm, Background::for_alphabet(Alphabet::dna()));
  const Alphabet& a = Alphabet::dna();
  // MSV: scale 3/ln2 = 4.328; score(A) = ln(0.7/0.25) = 1.0296 nats -> 4.456 -> bias 4.
  EXPECT_EQ(sp.msv.bias, 4);
  EXPECT_EQ(sp.msv.cost[a.digitize('A')][1], 0);  // -4 + bias
  EXPECT_EQ(sp.msv.cost[a.digitize('C')][1], 8);  // ln(0.4) -> -3.97 -> cost 4 + bias
  EXPECT_EQ(sp.msv.tbm, 0);                       // ln(2 / (1*2)) = 0
  EXPECT_EQ(sp.msv.tec, 3);                       // ln(1/2) = -1 bit = 3 units
  EXPECT_EQ(sp.msv.tjb(1), 1);                    // ln(3/4) -> -1.245 units
  const Residue A[] = {a.digitize('A')};
  // xB = 190 - 1; M = 189 + 4 - 0 = 193; xJ = 193 - 3 = 190; (190 - 1 - 190) / scale - 3.
  const FilterScore msv = msv_filter_reference(sp.msv, A, 1);
  EXPECT_FALSE(msv.overflow);
  EXPECT_FLOAT_EQ(msv.nats, -1.0f / sp.msv.scale - 3.0f);
  // Viterbi: scale 500/ln2 = 721.35; match(A) = 743; N->B for L=1 = ln(3/4) -> -208;
  // E->C = -500. xB = 11792; M = 12535; xC = 12035; (12035 - 208 - 12000)/scale - 3.
  EXPECT_EQ(sp.viterbi.match[a.digitize('A')][1], 743);
  EXPECT_EQ(sp.viterbi.ncj_move(1), -208);
  EXPECT_EQ(sp.viterbi.e_move, -500);
  const FilterScore vit = viterbi_filter_reference(sp.viterbi, A, 1);
  EXPECT_FLOAT_EQ(vit.nats, -173.0f / sp.viterbi.scale - 3.0f);
  // Forward: B = 3/4, M = 0.75 * 1 * 2.8 = 2.1, C = 2.1 / 2, score = ln(1.05 * 3/4).
  EXPECT_NEAR(forward_parser_reference(sp.forward, A, 1), std::log(1.05 * 0.75), 1e-5);
  EXPECT_NEAR(forward_canonical(sp.forward, A, 1), std::log(1.05 * 0.75), 1e-5);
  // A mismatch, "C": MSV's only cell is 189 + 4 - 8 = 185, so xJ = 182 and the score is
  // (182 - 1 - 190)/scale - 3; HMMER's SSV shortcut floors it at the begin score:
  // xJ = 190 - 1 - 0 - 3 = 186, (186 - 1 - 190)/scale - 3, and that is what the cascade keeps.
  const Residue C[] = {a.digitize('C')};
  EXPECT_FLOAT_EQ(msv_filter_reference(sp.msv, C, 1).nats, -9.0f / sp.msv.scale - 3.0f);
  float floor_nats = 0;
  ASSERT_TRUE(msv_ssv_floor(sp.msv, 1, floor_nats));
  EXPECT_FLOAT_EQ(floor_nats, -5.0f / sp.msv.scale - 3.0f);
  ReferenceKernels kernels(sp);
  CascadeSettings all_pass;
  all_pass.F1 = all_pass.F2 = all_pass.F3 = 1.0;
  const TargetScores t = run_cascade(sp, all_pass, kernels, C, 1);
  EXPECT_FLOAT_EQ(t.msv_bits, (floor_nats - null_score(1)) / static_cast<float>(kLog2));
  // Null model: L ln(L/(L+1)) + ln(1/(L+1)) = 2 ln(1/2) for L = 1.
  EXPECT_NEAR(null_score(1), 2 * std::log(0.5), 1e-6);
}

TEST(Reference, SaturationAndEmptyTargets) {
  const HmmModel hmm = read_hmm_file("/usr/share/doc/hmmer/examples/tutorial/globins4.hmm")[0];
  const SearchProfile sp = build_search_profile(hmm, Background::for_alphabet(Alphabet::amino()));
  // The consensus repeated scores far beyond the 8-bit range: MSV reports overflow.
  std::vector<Residue> seq;
  for (int r = 0; r < 4; ++r)
    for (int k = 1; k <= hmm.M; ++k) seq.push_back(Alphabet::amino().digitize(hmm.consensus[k]));
  const FilterScore msv = msv_filter_reference(sp.msv, seq.data(), static_cast<int>(seq.size()));
  EXPECT_TRUE(msv.overflow);
  EXPECT_TRUE(std::isinf(msv.nats));
  ReferenceKernels kernels(sp);
  const TargetScores t =
      run_cascade(sp, CascadeSettings{}, kernels, seq.data(), static_cast<int>(seq.size()));
  EXPECT_EQ(t.stage, Stage::passed);
  const TargetScores e = run_cascade(sp, CascadeSettings{}, kernels, seq.data(), 0);
  EXPECT_EQ(e.stage, Stage::empty);
}

TEST(Reference, SsvShortcutAgreesWithMsv) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  int below_floor = 0;
  for (const char* name : {"globins4", "fn3", "Pkinase"}) {
    const HmmModel hmm =
        read_hmm_file(std::string("/usr/share/doc/hmmer/examples/tutorial/") + name + ".hmm")[0];
    const SearchProfile sp = build_search_profile(hmm, Background::for_alphabet(Alphabet::amino()));
    int conclusive = 0;
    for (int n = 0; n < 300; ++n) {
      // For L = 0 HMMER never runs the filters. Every tenth target is 1 to 3 residues of
      // '*' (code 27, no match scores), whose MSV score falls below SSV's floor.
      const bool stop_codons = n % 10 == 5;
      const int L = 1 + static_cast<int>(rng() % (stop_codons ? 3 : 600));
      std::vector<Residue> s(L);
      for (auto& x : s) x = static_cast<Residue>(rng() % 29 == 0 ? 21 + rng() % 8 : rng() % 20);
      if (stop_codons) std::fill(s.begin(), s.end(), Residue{27});
      if (n % 10 == 0) {  // plant a stretch of consensus
        for (int k = 1; k <= hmm.M && k < L; ++k)
          s[k - 1] = Alphabet::amino().digitize(hmm.consensus[k]);
      }
      FilterScore ssv;
      if (!ssv_filter_reference(sp.msv, s.data(), L, ssv)) continue;
      ++conclusive;
      const FilterScore msv = msv_filter_reference(sp.msv, s.data(), L);
      ASSERT_EQ(ssv.overflow, msv.overflow) << name << " n=" << n;
      if (!msv.overflow) {
        // HMMER's SSV starts every diagonal at the begin score, so its result never falls
        // below that floor, where MSV (a target of mismatches only) can.
        float floor_nats = 0;
        ASSERT_TRUE(msv_ssv_floor(sp.msv, L, floor_nats)) << name << " n=" << n;
        ASSERT_EQ(ssv.nats, std::max(msv.nats, floor_nats)) << name << " n=" << n << " L=" << L;
        if (msv.nats < floor_nats) ++below_floor;
      }
    }
    EXPECT_GT(conclusive, 100) << name;
  }
  EXPECT_GT(below_floor, 0);
}

// run_filters_together (the bias filters of the targets that reach it computed together)
// and the decisions on scores computed elsewhere (decide_through_bias or, for a batch,
// decide_through_bias_together, then decide_after_viterbi, as a GPU feeder makes them,
// also with the composition scores of every other target given as a GPU gives them)
// give every target run_filters' scores,
// bit for bit: random targets with planted consensus (they pass MSV) and biased stretches,
// on the tutorial models, at three F1 thresholds and without the bias filter.
TEST(Reference, FiltersTogetherAndDeviceDecisionsGiveRunFiltersScores) {
  const auto same = [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  for (const char* name : {"globins4", "fn3", "Pkinase"}) {
    const HmmModel hmm =
        read_hmm_file(std::string("/usr/share/doc/hmmer/examples/tutorial/") + name + ".hmm")[0];
    const SearchProfile sp = build_search_profile(hmm, Background::for_alphabet(Alphabet::amino()));
    ReferenceKernels kernels(sp);
    std::vector<std::vector<Residue>> seqs(60);
    for (std::size_t n = 0; n < seqs.size(); ++n) {
      std::vector<Residue>& s = seqs[n];
      s.resize(1 + rng() % 400);
      const Residue biased = static_cast<Residue>(rng() % 20);
      for (auto& x : s) x = static_cast<Residue>(n % 4 == 1 && rng() % 2 ? biased : rng() % 20);
      if (n % 3 == 0) {  // a stretch of consensus
        for (int k = 1; k <= hmm.M && k < static_cast<int>(s.size()); ++k)
          if (rng() % 5 != 0)
            s[static_cast<std::size_t>(k) - 1] = Alphabet::amino().digitize(hmm.consensus[k]);
      }
    }
    std::vector<const Residue*> dsq;
    std::vector<int> L;
    for (const auto& s : seqs) {
      dsq.push_back(s.data());
      L.push_back(static_cast<int>(s.size()));
    }
    for (const auto& [F1, bias_filter] : std::vector<std::pair<double, bool>>{
             {0.02, true}, {0.5, true}, {1.0, true}, {0.02, false}}) {
      CascadeSettings settings;
      settings.F1 = F1;
      settings.bias_filter = bias_filter;
      const std::string what =
          std::string(name) + " F1 " + std::to_string(F1) + (bias_filter ? "" : " nobias");
      std::vector<TargetScores> together(seqs.size());
      run_filters_together(sp, settings, kernels, seqs.size(), dsq.data(), L.data(),
                           together.data());
      // The device's decisions in a batch (decide_through_bias_together), as a GPU feeder
      // makes them on the targets that passed MSV there.
      std::vector<FilterScore> msv;
      for (std::size_t i = 0; i < seqs.size(); ++i) msv.push_back(kernels.msv(dsq[i], L[i]));
      std::vector<TargetScores> batch(seqs.size());
      std::vector<NextStage> batch_next(seqs.size());
      decide_through_bias_together(sp, settings, seqs.size(), dsq.data(), L.data(), msv.data(),
                                   batch.data(), batch_next.data());
      // With the composition scores of every other target given (the others NaN: computed
      // again), as the GPU's bias filter gives them.
      std::vector<float> composition(seqs.size(), std::numeric_limits<float>::quiet_NaN());
      for (std::size_t i = 0; i < seqs.size(); i += 2)
        composition[i] = bias_composition_score(sp.bias, dsq[i], L[i]);
      std::vector<TargetScores> given(seqs.size());
      std::vector<NextStage> given_next(seqs.size());
      decide_through_bias_together(sp, settings, seqs.size(), dsq.data(), L.data(), msv.data(),
                                   given.data(), given_next.data(), composition.data());
      int past_bias = 0;
      for (std::size_t i = 0; i < seqs.size(); ++i) {
        const TargetScores want = run_filters(sp, settings, kernels, dsq[i], L[i]);
        // The decisions on scores computed elsewhere, as a GPU feeder makes them.
        TargetScores device;
        const NextStage next = decide_through_bias(sp, settings, dsq[i], L[i], msv[i], device);
        EXPECT_EQ(batch_next[i], next) << what << " target " << i;
        EXPECT_EQ(given_next[i], next) << what << " target " << i;
        if (next == NextStage::viterbi) {
          const FilterScore viterbi = kernels.viterbi(dsq[i], L[i]);
          for (TargetScores* t : {&device, &batch[i], &given[i]})
            decide_after_viterbi(sp, settings, viterbi, *t);
        }
        for (const TargetScores* t : {&together[i], &device, &batch[i], &given[i]}) {
          const std::string who = what +
                                  (t == &device     ? " device"
                                   : t == &batch[i] ? " device batch"
                                   : t == &given[i] ? " device compositions"
                                                    : " together") +
                                  " target " + std::to_string(i);
          EXPECT_EQ(t->stage, want.stage) << who;
          EXPECT_TRUE(same(t->null_nats, want.null_nats)) << who;
          EXPECT_TRUE(same(t->filter_nats, want.filter_nats)) << who;
          EXPECT_TRUE(same(t->msv_bits, want.msv_bits)) << who;
          EXPECT_TRUE(same(t->viterbi_bits, want.viterbi_bits) ||
                      (std::isnan(t->viterbi_bits) && std::isnan(want.viterbi_bits)))
              << who;
          EXPECT_EQ(t->pvalue, want.pvalue) << who;
        }
        past_bias += want.stage != Stage::msv && want.stage != Stage::bias;
      }
      EXPECT_GT(past_bias, 0) << what;
    }
  }
}

// bias_filter_scores (several targets interleaved) gives bias_filter_score's floats bit
// for bit: random lengths 0 to 2000 with every residue code, biased stretches, on the
// tutorial models' bias filters (amino) and MADE1's (DNA).
TEST(Reference, BiasFilterScoresAreBiasFilterScoreBitForBit) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  for (const char* name : {"globins4", "fn3", "Pkinase", "MADE1"}) {
    const HmmModel hmm =
        read_hmm_file(std::string("/usr/share/doc/hmmer/examples/tutorial/") + name + ".hmm")[0];
    const Alphabet& abc = *hmm.alphabet;
    const SearchProfile sp = build_search_profile(hmm, Background::for_alphabet(abc));
    for (int n : {0, 1, 3, 4, 5, 9, 64}) {
      std::vector<std::vector<Residue>> seqs(static_cast<std::size_t>(n));
      for (auto& s : seqs) {
        const int L = rng() % 7 == 0 ? static_cast<int>(rng() % 3) : static_cast<int>(rng() % 2001);
        s.resize(static_cast<std::size_t>(L));
        const Residue biased = static_cast<Residue>(rng() % abc.K());
        for (auto& x : s) {
          x = rng() % 3 == 0 ? biased : static_cast<Residue>(rng() % abc.Kp());
        }
      }
      std::vector<const Residue*> dsq;
      std::vector<int> L;
      for (const auto& s : seqs) {
        dsq.push_back(s.data());
        L.push_back(static_cast<int>(s.size()));
      }
      std::vector<float> out(seqs.size(), -1.0f);
      bias_filter_scores(sp.bias, dsq.data(), L.data(), seqs.size(), out.data());
      for (std::size_t j = 0; j < seqs.size(); ++j) {
        const float ref = bias_filter_score(sp.bias, dsq[j], L[j]);
        std::uint32_t a = 0, b = 0;
        std::memcpy(&a, &out[j], sizeof a);
        std::memcpy(&b, &ref, sizeof b);
        ASSERT_EQ(a, b) << name << " n=" << n << " target " << j << " L=" << L[j] << ": " << out[j]
                        << " vs " << ref;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Long targets. HMMER refuses targets over 100,000 residues; duet scores any length up to
// 2^31 - 1. Up to 2^24 - 1 residues the length terms keep HMMER's float arithmetic, bit for
// bit; from 2^24 on (where L + 1 is no longer a float, and HMMER's null model would give
// log(0)) they are computed in double. The scores of such targets must follow the closed
// forms below.

constexpr int kLongLengths[] = {1 << 24, (1 << 24) + 1, 50'000'000};

std::uint32_t float_bits(float x) {
  std::uint32_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The spacing of floats at x: a value computed in double and rounded once to float is
// within half of it.
double float_spacing(double x) {
  const auto f = static_cast<float>(std::fabs(x));
  return static_cast<double>(std::nextafter(f, std::numeric_limits<float>::infinity()) - f);
}

// The null model's length terms, L ln(L / (L + 1)) + ln(1 / (L + 1)), in long double.
long double null_closed_form(long double L) {
  return -L * std::log1p(1.0L / L) - std::log(L + 1.0L);
}

// The N/C/J move probability of a target of L residues (multihit), 3 / (L + 3).
long double move_closed_form(long double L) {
  return 3.0L / (L + 3.0L);
}

TEST(LongTargets, NullScoreIsHmmersBelowTwoTo24AndTheClosedFormFrom) {
  // The lengths HMMER accepts, and beyond up to 2^24 - 1: HMMER's float arithmetic, as
  // p7_bg_NullOne computes it.
  for (const int L : {1, 2, 3, 1000, 100000, 1000000, (1 << 24) - 1}) {
    const float p1 = static_cast<float>(L) / static_cast<float>(L + 1);
    const auto hmmer = static_cast<float>(
        static_cast<float>(L) * std::log(static_cast<double>(p1)) + std::log(1.0 - p1));
    EXPECT_EQ(float_bits(null_score(L)), float_bits(hmmer)) << "L=" << L;
  }
  for (const int L : {1 << 24, (1 << 24) + 1, 50'000'000, std::numeric_limits<int>::max()}) {
    const float got = null_score(L);
    const auto want = static_cast<double>(null_closed_form(L));
    ASSERT_TRUE(std::isfinite(got)) << "L=" << L;
    EXPECT_NEAR(got, want, float_spacing(want)) << "L=" << L;
  }
}

TEST(LongTargets, FilterLengthTermsFollowTheirClosedForms) {
  TempDir dir;
  write_file(dir.file("one.hmm"), one_node_dna_model());
  const SearchProfile sp = build_search_profile(read_hmm_file(dir.file("one.hmm"))[0],
                                                Background::for_alphabet(Alphabet::dna()));
  for (const int L : {1 << 24, (1 << 24) + 1, 50'000'000, std::numeric_limits<int>::max()}) {
    const long double log_move = std::log(move_closed_form(L));
    // MSV's N->B cost (1/3 bits, positive) and the Viterbi filter's N->B score (1/500 bits):
    // the closed form rounded, as HMMER rounds it.
    EXPECT_NEAR(sp.msv.tjb(L), static_cast<double>(-sp.msv.scale * log_move), 0.5 + 1e-3)
        << "L=" << L;
    EXPECT_NEAR(sp.viterbi.ncj_move(L), static_cast<double>(sp.viterbi.scale * log_move),
                0.5 + 1e-3)
        << "L=" << L;
    // Forward's move probability: the closed form rounded to float.
    const auto move = static_cast<double>(move_closed_form(L));
    EXPECT_NEAR(sp.forward.ncj(L).move, move, float_spacing(move)) << "L=" << L;
  }
}

// A one-node target model (match emits A with odds o) and a target of one A followed by
// L - 1 '*' (no match odds: every path leaves the model after the A). Its Forward score is,
// in closed form, ln(move * tBM * o * tEC * move) + (L - 1) ln(loop), move = 3 / (L + 3),
// loop = 1 - move; its bias filter score, whose '*' has odds 1 in both states, is
// ln(pi0 * odds0(A) + pi1 * odds1(A)) plus the null model's length terms.
struct PaddedTarget {
  SearchProfile profile;
  std::vector<Residue> dsq;
};

PaddedTarget padded_target(const TempDir& dir, int L) {
  write_file(dir.file("one.hmm"), one_node_dna_model());
  const Alphabet& a = Alphabet::dna();
  PaddedTarget t{
      build_search_profile(read_hmm_file(dir.file("one.hmm"))[0], Background::for_alphabet(a)),
      std::vector<Residue>(static_cast<std::size_t>(L), a.digitize('*'))};
  t.dsq[0] = a.digitize('A');
  return t;
}

long double padded_forward_closed_form(const SearchProfile& sp, long double L) {
  const ForwardScores& f = sp.forward;
  const Residue A = Alphabet::dna().digitize('A');
  const long double move = move_closed_form(L);
  return std::log(move * f.bm[1] * f.match[A][1] * f.e_move * move) + (L - 1) * std::log1p(-move);
}

long double padded_bias_closed_form(const SearchProfile& sp, long double L) {
  const BiasFilterModel& b = sp.bias;
  const Residue A = Alphabet::dna().digitize('A');
  return std::log(static_cast<long double>(b.pi0) * b.odds[A][0] +
                  static_cast<long double>(b.pi1) * b.odds[A][1]) +
         null_closed_form(L);
}

// The closed form's tolerance (nats). The scores differ from the exact value only by
// float rounding: the products of the A's row (a few roundings of 2^-24), the final
// rounding of a score near -35 to float (half a spacing, 1.9e-6), and, from 2^24 on, the
// one residue that the model emits not paying the N/C/J loop (ln(loop), 1.8e-7): under 3e-6.
constexpr double kClosedFormTolerance = 1e-5;

TEST(LongTargets, ForwardOfAPaddedTargetIsTheClosedForm) {
  TempDir dir;
  for (const int L : kLongLengths) {
    const PaddedTarget t = padded_target(dir, L);
    const auto want = static_cast<double>(padded_forward_closed_form(t.profile, L));
    EXPECT_NEAR(forward_parser_reference(t.profile.forward, t.dsq.data(), L), want,
                kClosedFormTolerance)
        << "L=" << L;
    EXPECT_NEAR(forward_canonical(t.profile.forward, t.dsq.data(), L), want, kClosedFormTolerance)
        << "L=" << L;
  }
}

// The whole cascade on those targets, every filter passed: finite scores (HMMER's float
// null model gave log(0) from 2^24 on: +inf bits, E-value 0), the reported bit score and
// the bias filter's null score as the closed forms predict, a P-value in (0, 1).
TEST(LongTargets, CascadeScoresOfAPaddedTargetAreFiniteAndTheClosedForm) {
  TempDir dir;
  for (const int L : kLongLengths) {
    const PaddedTarget t = padded_target(dir, L);
    ReferenceKernels kernels(t.profile);
    CascadeSettings all_pass;
    all_pass.F1 = all_pass.F2 = all_pass.F3 = 1.0;
    const TargetScores s = run_cascade(t.profile, all_pass, kernels, t.dsq.data(), L);
    ASSERT_EQ(s.stage, Stage::passed) << "L=" << L;
    EXPECT_TRUE(std::isfinite(s.null_nats)) << "L=" << L;
    EXPECT_TRUE(std::isfinite(s.msv_bits)) << "L=" << L;
    const long double null = null_closed_form(L);
    EXPECT_NEAR(s.filter_nats, static_cast<double>(padded_bias_closed_form(t.profile, L)),
                kClosedFormTolerance)
        << "L=" << L;
    const auto bits =
        static_cast<double>((padded_forward_closed_form(t.profile, L) - null) / kLog2);
    EXPECT_NEAR(s.forward_bits, bits, kClosedFormTolerance / kLog2) << "L=" << L;
    EXPECT_TRUE(std::isfinite(s.pvalue) && s.pvalue > 0.0 && s.pvalue <= 1.0)
        << "L=" << L << " P=" << s.pvalue;
    EXPECT_DOUBLE_EQ(s.pvalue, forward_pvalue(t.profile, s.forward_bits)) << "L=" << L;
  }
}

TEST(Statistics, MatchEasel) {
  EXPECT_NEAR(gumbel_survival(0.0, 0.0, 1.0), 1.0 - std::exp(-1.0), 1e-12);
  EXPECT_NEAR(gumbel_survival(40.0, 0.0, 1.0), std::exp(-40.0), 1e-25);
  EXPECT_EQ(exponential_survival(-1.0, 0.0, 0.7), 1.0);
  EXPECT_NEAR(exponential_survival(10.0, 2.0, 0.7), std::exp(-5.6), 1e-15);
}

}  // namespace
}  // namespace duet

namespace duet {
namespace {

// The MSV rejection without a P-value (certain_msv_reject_below) rejects only scores whose
// P-value fails F1 too: every float below the bound, the 4,000 just under it and random
// ones far below, for random Gumbel parameters and thresholds (HMMER's default F1 among
// them); and the bound sits within its margin of the score where the P-value meets F1.
TEST(Cascade, CertainMsvRejectionAgreesWithThePValue) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  SearchProfile profile;
  for (int trial = 0; trial < 2000; ++trial) {
    profile.msv_mu = static_cast<float>(-15.0 + 20.0 * unit(rng));
    profile.msv_lambda = static_cast<float>(0.3 + 0.6 * unit(rng));
    const double F1 = trial % 3 == 0 ? 0.02 : std::pow(10.0, -8.0 * unit(rng));
    const double below = certain_msv_reject_below(profile, F1);
    ASSERT_TRUE(std::isfinite(below)) << "F1 " << F1;
    const auto P = [&](float x) { return gumbel_survival(x, profile.msv_mu, profile.msv_lambda); };
    auto x = static_cast<float>(below);
    if (static_cast<double>(x) >= below) x = std::nextafter(x, -1e30f);
    for (int step = 0; step < 4000; ++step, x = std::nextafter(x, -1e30f))
      ASSERT_GT(P(x), F1) << "x " << x << " mu " << profile.msv_mu << " lambda "
                          << profile.msv_lambda << " F1 " << F1;
    for (int r = 0; r < 200; ++r) {
      const auto far = static_cast<float>(below - 40.0 * unit(rng));
      if (static_cast<double>(far) < below) {
        ASSERT_GT(P(far), F1) << far;
      }
    }
    const double margin = 0.01 + 1e-6 * std::fabs(below) * 1.01;
    EXPECT_LE(P(static_cast<float>(below + margin + 1e-3)), F1) << "the bound is too low";
  }
  // Nothing is rejected so where F1 lets every score through.
  EXPECT_EQ(certain_msv_reject_below(profile, 1.0), -std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace duet
