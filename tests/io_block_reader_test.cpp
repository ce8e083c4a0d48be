// The parallel BlockReader (src/io) against the sequential FastaReader (the reference
// for what FASTA input means): the same sequences in the same order, the same errors with
// the same file:line, on random files (seed printed; DUET_TEST_SEED replays) with every
// residue code, wrapped and unwrapped lines, "\r\n", white space, blank lines, empty
// sequences, plain and gzip, chunks from a few bytes up, 1 to 3 parser threads, the
// scalar and AVX2 digitizers; block sizes and numbering; re-reading from a block on.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/fasta_reader.hpp"
#include "host_simd/digitize.hpp"
#include "io/block_reader.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

using io::BlockReader;
using io::ReaderOptions;

std::mt19937_64 seeded_rng() {
  return std::mt19937_64(test::test_seed());
}

void write_gzip(const std::string& path, const std::string& text) {
  gzFile gz = gzopen(path.c_str(), "wb");
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
}

// A random FASTA text that FastaReader accepts.
std::string random_fasta(std::mt19937_64& rng, const Alphabet& alphabet) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  std::string residues;
  for (int c = 0; c < 256; ++c) {
    if (c != '-' && alphabet.digitize(static_cast<char>(c)) != Alphabet::kIllegal)
      residues += static_cast<char>(c);
  }
  const std::string eol = pick(4) == 0 ? "\r\n" : "\n";
  std::string text;
  for (int i = pick(3); i > 0; --i)
    text += pick(2) ? eol : std::string(" \t") + eol;  // blank lines first
  const int records = 1 + pick(60);
  for (int r = 0; r < records; ++r) {
    text += ">";
    if (pick(4) == 0) text += " ";
    text += "seq" + std::to_string(r) + (pick(3) == 0 ? "|x_" + std::to_string(pick(1000)) : "");
    if (pick(2))
      text += std::string(pick(2) ? " " : "\t") + "desc " + std::to_string(pick(100000)) +
              (pick(3) ? "  " : "");
    text += eol;
    const int length = pick(8) == 0 ? 0 : pick(5) == 0 ? pick(3000) : pick(200);
    const int width = pick(3) == 0 ? 100000 : 1 + pick(80);
    for (int i = 0; i < length; ++i) {
      text += residues[static_cast<std::size_t>(pick(static_cast<int>(residues.size())))];
      if (pick(50) == 0) text += pick(2) ? ' ' : '\t';
      if ((i + 1) % width == 0 && i + 1 < length) text += eol;
    }
    if (length > 0 || pick(2)) text += eol;
    if (pick(10) == 0) text += eol;  // a blank line inside the record
  }
  if (pick(3) == 0 && !text.empty() && text.back() == '\n') text.pop_back();  // no final newline
  return text;
}

struct Expected {
  std::vector<Sequence> sequences;
};

Expected read_sequentially(const std::string& path, const Alphabet& alphabet) {
  Expected e;
  FastaReader reader(path, alphabet);
  Sequence s;
  while (reader.next(s)) e.sequences.push_back(s);
  return e;
}

// Reads the whole file with BlockReader and checks it against FastaReader's sequences.
std::vector<BlockPtr> check_same(const std::string& path, const Alphabet& alphabet,
                                 const ReaderOptions& options, const Expected& expected,
                                 const std::string& what) {
  BlockReader reader(path, alphabet, options);
  std::vector<BlockPtr> blocks;
  std::size_t k = 0;
  while (BlockPtr b = reader.next()) {
    EXPECT_EQ(b->index, static_cast<std::int64_t>(blocks.size()) + options.start.block) << what;
    EXPECT_EQ(b->first_sequence, static_cast<std::int64_t>(k) + options.start.sequence) << what;
    EXPECT_GT(b->sequences(), 0u) << what;
    for (std::size_t i = 0; i < b->sequences(); ++i, ++k) {
      const std::size_t at = k + static_cast<std::size_t>(options.start.sequence);
      if (at >= expected.sequences.size()) {
        ADD_FAILURE() << what << ": more sequences than FastaReader";
        return blocks;
      }
      const Sequence& s = expected.sequences[at];
      EXPECT_EQ(b->name(i), s.name) << what;
      EXPECT_EQ(b->description(i), s.description) << what;
      if (static_cast<std::size_t>(b->length(i)) != s.residues.size()) {
        ADD_FAILURE() << what << " sequence " << at << ": length " << b->length(i)
                      << ", FastaReader " << s.residues.size();
        return blocks;
      }
      EXPECT_TRUE(std::equal(s.residues.begin(), s.residues.end(), b->sequence(i)))
          << what << " sequence " << at;
      if (i == 0) {
        EXPECT_EQ(b->first_line, s.line) << what;
      }
    }
    blocks.push_back(b);
  }
  EXPECT_EQ(k + static_cast<std::size_t>(options.start.sequence), expected.sequences.size())
      << what;
  // Sizes: every block but the last holds at least block_residues residues (with
  // consumers, the first and last blocks of a plain file are smaller: see ShapesFirstAndLast).
  const bool shaped = options.consumers > 0 && !path.ends_with(".gz");
  for (std::size_t i = 0; !shaped && i + 1 < blocks.size(); ++i) {
    EXPECT_GE(static_cast<std::size_t>(blocks[i]->residue_count()), options.block_residues)
        << what << " block " << i;
  }
  return blocks;
}

TEST(BlockReader, SameSequencesAsFastaReaderOnRandomFiles) {
  auto rng = seeded_rng();
  test::TempDir dir;
  for (int round = 0; round < 40; ++round) {
    const Alphabet& alphabet = round % 4 == 3 ? Alphabet::dna() : Alphabet::amino();
    const std::string text = random_fasta(rng, alphabet);
    const std::string plain = dir.file("r.fa"), gz = dir.file("r.fa.gz");
    test::write_file(plain, text);
    write_gzip(gz, text);
    const Expected expected = read_sequentially(plain, alphabet);
    for (const std::string& path : {plain, gz}) {
      for (std::size_t chunk :
           {std::size_t{1}, std::size_t{37}, std::size_t{500}, std::size_t{0}}) {
        ReaderOptions o;
        o.chunk_bytes = chunk;
        o.threads = 1 + static_cast<int>(rng() % 3);
        o.block_residues = std::vector<std::size_t>{1, 7, 300, std::size_t{1} << 20}[rng() % 4];
        o.simd = rng() % 2 == 0;
        o.consumers = rng() % 3 == 0 ? 0 : 1 + static_cast<int>(rng() % 8);
        check_same(path, alphabet, o, expected,
                   "round " + std::to_string(round) + " " + path + " chunk " +
                       std::to_string(chunk) + " threads " + std::to_string(o.threads) + " block " +
                       std::to_string(o.block_residues) + (o.simd ? " simd" : " scalar") +
                       " consumers " + std::to_string(o.consumers));
      }
    }
  }
}

// With consumers, a plain file's first blocks and those of its last consumers x
// block_residues bytes are a quarter of block_residues (so that every worker starts early
// and they finish together); the middle ones are as without; the sequences are the same.
TEST(BlockReader, ShapesFirstAndLastBlocksForTheConsumers) {
  test::TempDir dir;
  std::string text;
  for (int i = 0; i < 4000; ++i)
    text += ">s" + std::to_string(i) + " d\n" + std::string(100, 'A') + "\n";
  const std::string path = dir.file("even.fa");
  test::write_file(path, text);
  const Expected expected = read_sequentially(path, Alphabet::amino());
  ReaderOptions plain;
  plain.block_residues = 10000;  // 100 sequences; the file holds 400,000 residues
  const std::vector<BlockPtr> unshaped =
      check_same(path, Alphabet::amino(), plain, expected, "unshaped");
  ReaderOptions o = plain;
  o.consumers = 4;
  const std::vector<BlockPtr> blocks = check_same(path, Alphabet::amino(), o, expected, "shaped");
  ASSERT_GT(blocks.size(), unshaped.size() + 8);
  // The first consumers blocks, and the blocks of the last 40,000 bytes, hold at most
  // a quarter of block_residues; some in the middle hold block_residues.
  for (std::size_t i = 0; i < 4; ++i) EXPECT_LE(blocks[i]->residue_count(), 2500) << "block " << i;
  const std::uint64_t tail_begin = text.size() - 4 * o.block_residues;
  std::size_t tail_blocks = 0, full_blocks = 0;
  for (const BlockPtr& b : blocks) {
    if (b->file_offset >= tail_begin) {
      ++tail_blocks;
      EXPECT_LE(b->residue_count(), 2500) << "block " << b->index;
    }
    if (b->residue_count() >= 10000) ++full_blocks;
  }
  EXPECT_GE(tail_blocks, 15u);
  EXPECT_GT(full_blocks, 0u);
  // A gzip file is read as without consumers.
  const std::string gz = dir.file("even.fa.gz");
  write_gzip(gz, text);
  EXPECT_EQ(check_same(gz, Alphabet::amino(), o, expected, "gzip").size(), unshaped.size());
}

TEST(BlockReader, ReReadsFromAnyBlock) {
  auto rng = seeded_rng();
  test::TempDir dir;
  const std::string text = random_fasta(rng, Alphabet::amino()) + "\n>last\nACDE\n";
  for (const std::string& path : {dir.file("s.fa"), dir.file("s.fa.gz")}) {
    if (path.ends_with(".gz")) {
      write_gzip(path, text);
    } else {
      test::write_file(path, text);
    }
    const Expected expected = read_sequentially(path, Alphabet::amino());
    ReaderOptions o;
    o.block_residues = 50;
    o.chunk_bytes = 300;
    const std::vector<BlockPtr> blocks =
        check_same(path, Alphabet::amino(), o, expected, "full pass");
    for (const BlockPtr& b : blocks) {
      ReaderOptions from = o;
      from.start = {b->file_offset, b->first_line, b->index, b->first_sequence};
      check_same(path, Alphabet::amino(), from, expected,
                 path + " from block " + std::to_string(b->index));
    }
  }
}

TEST(BlockReader, ErrorsAreFastaReadersWithFileAndLine) {
  test::TempDir dir;
  const std::vector<std::string> bad = {
      ">a\nACDEF\n>b\nAC%DE\n",                        // the CLI test's case: line 4
      ">s1\nACDE\nAC1DE\n",                            // line 3, '1'
      "ACDE\n>s\nAC\n",                                // no header first
      "\n  \n x\n>s\nAC\n",                            // not blank before the first header
      ">s\nAC-DE\n",                                   // gap
      ">s\nACD>E\n",                                   // '>' inside a line
      ">a\nAC\n>\nAC\n",                               // header without a name
      ">a\nAC\n>  \t\nAC\n",                           // header of white space only
      ">a\nAC\n>b\nA\vC\n",                            // a vertical tab
      std::string(">a\nAC\n>b\nA") + '\0' + "C\n",     // a NUL byte
      std::string(">a\nAC\n>b") + '\0' + "c d\nAC\n",  // a NUL byte in a name
      std::string(">a\nAC\n>b d") + '\0' + "\nAC\n",   // ... in a description
      std::string(">") + '\0' + "\nAC\n",              // ... alone in the first header
      "\x89"
      "DUETDB\n\1\0\0\0",  // a packed database's first line
      "\x89"
      "DUETDB\r\n>s\nAC\n",  // ... with a '\r'
      "\n\x89"
      "DUETDB\n>s\nAC\n",  // ... not the first line
      "\x89"
      "DUETDBX\n>s\nAC\n",  // ... longer
  };
  auto expected_error = [](const std::string& path) -> std::string {
    try {
      read_sequentially(path, Alphabet::amino());
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    for (int repeat : {1, 300}) {  // alone, and after many good records (a later chunk)
      std::string text;
      for (int r = 1; r < repeat; ++r)
        text += ">good" + std::to_string(r) + " d\nACDEFGHIKL\nMNPQ\n";
      if (repeat > 1 && bad[i][0] != '>') continue;  // "before the first header" cases only alone
      text += bad[i];
      const std::string path = dir.file("bad" + std::to_string(i) + ".fa");
      test::write_file(path, text);
      const std::string want = expected_error(path);
      ASSERT_NE(want, "no error") << i;
      for (std::size_t chunk : {std::size_t{3}, std::size_t{64}, std::size_t{0}}) {
        ReaderOptions o;
        o.chunk_bytes = chunk;
        o.block_residues = 16;
        std::string got = "no error";
        try {
          BlockReader reader(path, Alphabet::amino(), o);
          while (reader.next()) {
          }
        } catch (const InputError& e) {
          got = e.what();
        }
        EXPECT_EQ(got, want) << "case " << i << " repeat " << repeat << " chunk " << chunk;
      }
    }
  }
}

// A gzip stream cut short: the same message and line as FastaReader's, file named once
// (zlib names the file by how it was opened: the path, or "<fd:N>" for BlockReader); and
// an error in the text read before the cut comes first, as in FastaReader.
TEST(BlockReader, TruncatedGzipErrorIsFastaReaders) {
  test::TempDir dir;
  std::string good;
  for (int r = 0; r < 200; ++r) good += ">s" + std::to_string(r) + " d\nACDEFGHIKLMNPQRSTVWY\n";
  const std::string bad = ">a\nAC%DE\n" + good;
  for (const bool bad_line : {false, true}) {
    const std::string& text = bad_line ? bad : good;
    const std::string path = dir.file(bad_line ? "bad.fa.gz" : "good.fa.gz");
    write_gzip(path, text);
    const std::string bytes = test::read_file(path);
    test::write_file(path, bytes.substr(0, bytes.size() / 2));
    std::string want = "no error";
    try {
      read_sequentially(path, Alphabet::amino());
    } catch (const InputError& e) {
      want = e.what();
    }
    EXPECT_EQ(want.find(path + ":"), 0u) << want;
    EXPECT_EQ(want.find(path, 1), std::string::npos) << "file named twice: " << want;
    EXPECT_NE(want.find(bad_line ? ":2: illegal character '%'" : ": read error: "),
              std::string::npos)
        << want;
    for (std::size_t chunk : {std::size_t{1}, std::size_t{64}, std::size_t{0}}) {
      ReaderOptions o;
      o.chunk_bytes = chunk;
      o.block_residues = 16;
      std::string got = "no error";
      try {
        BlockReader reader(path, Alphabet::amino(), o);
        while (reader.next()) {
        }
      } catch (const InputError& e) {
        got = e.what();
      }
      EXPECT_EQ(got, want) << path << " chunk " << chunk;
    }
  }
}

TEST(BlockReader, OpenErrorsAndEmptyFiles) {
  test::TempDir dir;
  EXPECT_THROW(BlockReader(dir.file("missing.fa"), Alphabet::amino(), 100), InputError);
  EXPECT_THROW(BlockReader(dir.path().string(), Alphabet::amino(), 100), InputError);
  for (const std::string& text : {std::string(), std::string("\n\n  \n")}) {
    test::write_file(dir.file("e.fa"), text);
    BlockReader reader(dir.file("e.fa"), Alphabet::amino(), 100);
    EXPECT_EQ(reader.next(), nullptr);
  }
  // A corrupt gzip file: InputError naming the file.
  std::string rec = ">s\n" + std::string(200000, 'A') + "\n";
  write_gzip(dir.file("c.fa.gz"), rec);
  std::string bytes = test::read_file(dir.file("c.fa.gz"));
  for (std::size_t i = 20; i < bytes.size() - 8; i += 7)
    bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  test::write_file(dir.file("c.fa.gz"), bytes);
  try {
    BlockReader reader(dir.file("c.fa.gz"), Alphabet::amino(), 100);
    while (reader.next()) {
    }
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("c.fa.gz"), std::string::npos) << e.what();
  }
}

TEST(BlockReader, StopsEarlyWithoutReadingEverything) {
  test::TempDir dir;
  std::string text;
  for (int r = 0; r < 20000; ++r)
    text += ">s" + std::to_string(r) + "\n" + std::string(100, 'A') + "\n";
  test::write_file(dir.file("big.fa"), text);
  ReaderOptions o;
  o.block_residues = 100;
  o.chunk_bytes = 1000;
  for (int taken = 0; taken < 5; ++taken) {
    BlockReader reader(dir.file("big.fa"), Alphabet::amino(), o);
    for (int i = 0; i < taken; ++i) ASSERT_NE(reader.next(), nullptr);
    // The destructor stops the source and parser threads, bounded by the chunk budget.
  }
}

TEST(Digitize, VectorAndScalarVersionsAgreeOnEveryByte) {
  if (simd::best_digitizer() == simd::digitize_line_scalar) GTEST_SKIP() << "no AVX2 on this CPU";
  auto rng = seeded_rng();
  for (const Alphabet* alphabet : {&Alphabet::amino(), &Alphabet::dna()}) {
    const simd::DigitizeTable table(*alphabet);
    for (int round = 0; round < 3000; ++round) {
      const std::size_t n = rng() % 100;
      std::vector<char> line(n + 32);
      const bool clean = round % 2 == 0;  // half the lines hold residues only
      for (char& c : line) {
        do c = static_cast<char>(rng() % 256);
        while (clean && table.codes[static_cast<unsigned char>(c)] >= simd::DigitizeTable::kSkip);
      }
      std::vector<Residue> scalar(n + 32), vector(n + 32);
      const bool a = simd::digitize_line_scalar(table, line.data(), n, scalar.data());
      const bool b = simd::digitize_line_avx2(table, line.data(), n, vector.data());
      ASSERT_EQ(a, b) << "round " << round;
      ASSERT_TRUE(std::equal(scalar.begin(), scalar.begin() + static_cast<long>(n), vector.begin()))
          << round;
      if (clean) {
        EXPECT_TRUE(a);
      }
    }
    for (int c = 0; c < 256; ++c) {  // each byte alone
      char line[33] = {static_cast<char>(c)};
      Residue s[33], v[33];
      EXPECT_EQ(simd::digitize_line_scalar(table, line, 1, s),
                simd::digitize_line_avx2(table, line, 1, v));
      EXPECT_EQ(s[0], v[0]) << c;
      const Residue x = alphabet->digitize(static_cast<char>(c));
      if (c == '-' || x == Alphabet::kIllegal) {
        EXPECT_GE(s[0], simd::DigitizeTable::kSkip) << c;
      } else {
        EXPECT_EQ(s[0], x) << c;
      }
    }
  }
}

}  // namespace
}  // namespace duet
