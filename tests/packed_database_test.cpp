// The packed database (`duet makedb`, io/packed_database.hpp): every sequence's
// name, description and residues as the FASTA's; blocks numbered as the FASTA reader
// numbers them; searches whose results equal the FASTA's, bit for bit, on random
// databases (seed printed; DUET_TEST_SEED replays) and several block sizes; gzip input;
// the empty database; and the refusals: a truncated file, a changed byte, another
// version, another alphabet, a FIFO, bad FASTA (no file left, an existing one untouched).
#include "io/packed_database.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "app/hmmsearch/search.hpp"
#include "core/error.hpp"
#include "core/hmmsearch/hmm.hpp"
#include "core/input_file.hpp"
#include "io/block_reader.hpp"
#include "io/block_store.hpp"
#include "io/hdf5_file.hpp"
#include "search_compare.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

namespace fs = std::filesystem;

const std::string kDuet = DUET_BINARY;
const std::string kTutorial = "/usr/share/doc/hmmer/examples/tutorial/";
const std::string kGlobins = kTutorial + "globins4.hmm";
const std::string kFn3 = kTutorial + "fn3.hmm";
const std::string kMade1 = kTutorial + "MADE1.hmm";  // a DNA model

// A random FASTA of `count` records: names and descriptions of random lengths (some
// descriptions empty, some with inner spaces), sequences of 0 to `longest` residues in
// lines of random width, lower and upper case, with degenerate symbols. Every
// `real_every`-th record is one of `real` (sequences with hits), when given.
std::string random_fasta(std::mt19937_64& rng, int count, int longest, const Alphabet& alphabet,
                         const std::vector<std::string>& real = {}, int real_every = 0) {
  const std::string symbols = alphabet.type() == AlphabetType::amino
                                  ? "ACDEFGHIKLMNPQRSTVWYacdefghiklmnpqrstvwyXBZ"
                                  : "ACGTacgtNRY";
  const std::string name_chars = "abcXYZ019_|.-";
  std::uniform_int_distribution<int> length(0, longest), width(1, 80), small(0, 20);
  std::string text;
  for (int i = 0; i < count; ++i) {
    text += ">";
    const int name_length = 1 + small(rng) % 12;
    for (int k = 0; k < name_length; ++k) text += name_chars[rng() % name_chars.size()];
    text += "_" + std::to_string(i);
    if (rng() % 3 != 0) {
      text += " ";
      const int words = 1 + small(rng) % 5;
      for (int w = 0; w < words; ++w) text += (w ? " word" : "desc") + std::to_string(rng() % 100);
    }
    text += "\n";
    if (!real.empty() && real_every > 0 && i % real_every == 0) {
      text += real[static_cast<std::size_t>(i / real_every) % real.size()];
      continue;
    }
    const int n = length(rng);
    const int line = width(rng);
    for (int k = 0; k < n; ++k) {
      text += symbols[rng() % symbols.size()];
      if ((k + 1) % line == 0 || k + 1 == n) text += "\n";
    }
  }
  return text;
}

// The sequence records of the HMMER tutorial's globins (hits for globins4), as FASTA text.
std::vector<std::string> globin_records() {
  const std::string text = test::read_file(kTutorial + "globins45.fa");
  std::vector<std::string> records;
  for (std::size_t at = text.find('>'); at != std::string::npos;) {
    const std::size_t line_end = text.find('\n', at);
    const std::size_t next = text.find('>', line_end);
    records.push_back(
        text.substr(line_end + 1, next == std::string::npos ? next : next - line_end - 1));
    at = next;
  }
  return records;
}

test::CommandResult makedb(const std::string& args) {
  return test::run_command(kDuet + " makedb --quiet " + args);
}

// Every block of `path` read as `alphabet` with `block_residues`.
std::vector<BlockPtr> read_blocks(const std::string& path, const Alphabet& alphabet,
                                  std::size_t block_residues) {
  const InputFile file(path);
  io::ReaderOptions options;
  options.block_residues = block_residues;
  io::BlockStore store(file, alphabet, options, 0, false);
  io::BlockStore::Pass pass = store.begin_pass();
  std::vector<BlockPtr> blocks;
  while (BlockPtr b = pass.next()) blocks.push_back(b);
  return blocks;
}

void expect_same_blocks(const std::vector<BlockPtr>& fasta, const std::vector<BlockPtr>& packed,
                        const std::string& what) {
  ASSERT_EQ(fasta.size(), packed.size()) << what;
  for (std::size_t b = 0; b < fasta.size(); ++b) {
    const Block& x = *fasta[b];
    const Block& y = *packed[b];
    const std::string where = what + ", block " + std::to_string(b);
    ASSERT_EQ(x.index, y.index) << where;
    ASSERT_EQ(x.first_sequence, y.first_sequence) << where;
    ASSERT_EQ(x.sequences(), y.sequences()) << where;
    EXPECT_EQ(x.residues, y.residues) << where;
    EXPECT_EQ(x.offsets, y.offsets) << where;
    for (std::size_t i = 0; i < x.sequences(); ++i) {
      EXPECT_EQ(x.name(i), y.name(i)) << where;
      EXPECT_EQ(x.description(i), y.description(i)) << where;
    }
  }
}

void patch(const std::string& path, std::uint64_t offset, const void* bytes, std::size_t size) {
  std::string data = test::read_file(path);
  ASSERT_LE(offset + size, data.size());
  std::memcpy(data.data() + offset, bytes, size);
  test::write_file(path, data);
}

template <typename T>
T header_field(const std::string& path, std::size_t at) {
  const std::string data = test::read_file(path);
  T value{};
  std::memcpy(&value, data.data() + at, sizeof value);
  return value;
}

// A search through the duet command; its output text.
test::CommandResult hmmsearch(const std::string& model, const std::string& db,
                              const std::string& out, const std::string& extra = "") {
  return test::run_command(kDuet + " hmmsearch --quiet --no-gpu " + extra + " --h5 " + out + " " +
                           model + " " + db);
}

TEST(PackedDatabase, RoundTripEqualsFastaBlockForBlock) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  for (const Alphabet* alphabet : {&Alphabet::amino(), &Alphabet::dna()}) {
    const std::string fasta = dir.file("db.fa"), packed = dir.file("db.duetdb");
    test::write_file(fasta, random_fasta(rng, 3000, 700, *alphabet));
    const std::string name(alphabet->name());
    const auto made =
        makedb(std::string("--alphabet ") + (alphabet == &Alphabet::dna() ? "dna " : "amino ") +
               fasta + " " + packed);
    ASSERT_EQ(made.status, 0) << made.output;
    {
      const InputFile file(packed);
      ASSERT_TRUE(io::PackedDatabase::is_packed(file));
      const io::PackedDatabase db(file);
      EXPECT_EQ(&db.alphabet(), alphabet);
      EXPECT_EQ(db.sequences(), 3000);
      EXPECT_NO_THROW(db.verify_checksums());
      EXPECT_EQ(db.longest(), [&] {
        std::int64_t longest = 0;
        for (const auto& b : read_blocks(fasta, *alphabet, 1 << 20))
          for (std::size_t i = 0; i < b->sequences(); ++i)
            longest = std::max<std::int64_t>(longest, b->length(i));
        return longest;
      }());
    }
    // One chunk of FASTA text: the FASTA reader's blocks follow the rule exactly, and the
    // packed blocks must be the same, block for block.
    for (std::size_t block :
         {std::size_t{1}, std::size_t{777}, std::size_t{50000}, std::size_t{1} << 22})
      expect_same_blocks(read_blocks(fasta, *alphabet, block),
                         read_blocks(packed, *alphabet, block),
                         name + ", block_residues " + std::to_string(block));
  }
}

// A rank of a distributed run passes other ranks' blocks by their extent only
// (next_to_skip): the same blocks, sequences and work as next() cuts, with nothing copied,
// and the blocks after them unchanged.
TEST(PackedDatabase, SkippedBlocksKeepTheirExtents) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  const std::string fasta = dir.file("db.fa"), packed = dir.file("db.duetdb");
  test::write_file(fasta, random_fasta(rng, 2000, 500, Alphabet::amino()));
  ASSERT_EQ(makedb(fasta + " " + packed).status, 0);
  const std::vector<BlockPtr> all = read_blocks(packed, Alphabet::amino(), 3000);
  ASSERT_GT(all.size(), 10u);
  const InputFile file(packed);
  io::ReaderOptions options;
  options.block_residues = 3000;
  io::BlockStore store(file, Alphabet::amino(), options, 0, false);
  io::BlockStore::Pass pass = store.begin_pass();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const bool skip = rng() % 2 == 0;
    const BlockPtr b = skip ? pass.next_to_skip() : pass.next();
    ASSERT_TRUE(b) << "block " << i;
    EXPECT_EQ(b->index, all[i]->index);
    EXPECT_EQ(b->first_sequence, all[i]->first_sequence);
    EXPECT_EQ(b->sequences(), all[i]->sequences());
    EXPECT_EQ(b->work(), all[i]->work()) << "block " << i;
    if (skip) {
      EXPECT_TRUE(b->residues.empty()) << "a skipped block's residues are not copied";
    } else {
      EXPECT_EQ(b->residues, all[i]->residues) << "block " << i;
    }
  }
  EXPECT_EQ(pass.next(), nullptr);
}

// A side pass (the GPUs' line of a model split) runs beside the store's passes over blocks
// of its own: for FASTA, copies of the kept blocks joined up to the size asked, numbered
// from 0, the same sequences in the same order; for a packed database, the blocks its
// reader cuts at that size, from the start. For FASTA none before a complete first pass,
// nor where the database is not kept whole; the store's own passes are unchanged by it.
TEST(BlockStoreSidePass, OwnBlocksOfTheWholeDatabase) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  const std::string fasta = dir.file("db.fa"), packed = dir.file("db.duetdb");
  test::write_file(fasta, random_fasta(rng, 2000, 400, Alphabet::amino()));
  ASSERT_EQ(makedb(fasta + " " + packed).status, 0);
  const std::vector<BlockPtr> small = read_blocks(fasta, Alphabet::amino(), 3000);
  const auto drain = [](BlockSource& source) {
    std::vector<BlockPtr> blocks;
    while (BlockPtr b = source.next()) blocks.push_back(b);
    return blocks;
  };
  const auto joined = [](const std::vector<BlockPtr>& blocks) {
    Block all;
    for (const BlockPtr& b : blocks) {
      Block copy = *b;
      all.append(std::move(copy));
    }
    return all;
  };
  io::ReaderOptions options;
  options.block_residues = 3000;
  {
    const InputFile file(fasta);
    io::BlockStore store(file, Alphabet::amino(), options, std::uint64_t{1} << 30, true);
    EXPECT_EQ(store.side_pass(20000), nullptr) << "before the first pass";
    io::BlockStore::Pass first = store.begin_pass();
    const std::vector<BlockPtr> read = drain(first);
    ASSERT_TRUE(store.all_kept());
    const std::unique_ptr<BlockSource> side = store.side_pass(20000);
    ASSERT_NE(side, nullptr);
    const std::vector<BlockPtr> own = drain(*side);
    ASSERT_GT(own.size(), 1u);
    EXPECT_LT(own.size(), read.size());
    std::int64_t next_sequence = 0;
    for (std::size_t b = 0; b < own.size(); ++b) {
      EXPECT_EQ(own[b]->index, static_cast<std::int64_t>(b));
      EXPECT_EQ(own[b]->first_sequence, next_sequence);
      next_sequence += static_cast<std::int64_t>(own[b]->sequences());
      EXPECT_LE(own[b]->residue_count(), 20000);
      for (const BlockPtr& r : read) EXPECT_NE(own[b].get(), r.get()) << "a copy, not shared";
    }
    const Block a = joined(read), b = joined(own);
    EXPECT_EQ(a.residues, b.residues);
    EXPECT_EQ(a.offsets, b.offsets);
    EXPECT_EQ(a.header_text, b.header_text);
    EXPECT_EQ(drain(*store.side_pass(20000)).size(), own.size()) << "the same copies again";
    io::BlockStore::Pass second = store.begin_pass();
    expect_same_blocks(small, drain(second), "the store's next pass");
  }
  {
    // Memory for about half of the blocks: no side pass.
    const InputFile file(fasta);
    io::BlockStore store(file, Alphabet::amino(), options, joined(small).residues.size() / 2, true);
    io::BlockStore::Pass first = store.begin_pass();
    drain(first);
    EXPECT_FALSE(store.all_kept());
    EXPECT_EQ(store.side_pass(20000), nullptr);
  }
  {
    // A packed database's side pass needs no first pass.
    const InputFile file(packed);
    io::BlockStore store(file, Alphabet::amino(), options, 0, true);
    const std::unique_ptr<BlockSource> side = store.side_pass(20000);
    ASSERT_NE(side, nullptr);
    expect_same_blocks(read_blocks(packed, Alphabet::amino(), 20000), drain(*side),
                       "packed side pass");
  }
}

TEST(PackedDatabase, GzipInputMakesTheSameFile) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  const std::string fasta = dir.file("db.fa");
  test::write_file(fasta, random_fasta(rng, 2000, 400, Alphabet::amino()));
  ASSERT_EQ(test::run_command("gzip -k " + fasta).status, 0);
  ASSERT_EQ(makedb(fasta + " " + dir.file("plain.duetdb")).status, 0);
  const auto made = makedb(fasta + ".gz " + dir.file("gzip.duetdb"));
  ASSERT_EQ(made.status, 0) << made.output;
  EXPECT_EQ(test::read_file(dir.file("plain.duetdb")), test::read_file(dir.file("gzip.duetdb")));
  // A packed database is refused as input of makedb, whatever its name.
  const auto again = makedb(dir.file("plain.duetdb") + " " + dir.file("again.duetdb"));
  EXPECT_NE(again.status, 0);
  EXPECT_NE(again.output.find("is already a packed database"), std::string::npos) << again.output;
}

TEST(PackedDatabase, SearchResultsIdenticalToFasta) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  const std::string fasta = dir.file("db.fa"), packed = dir.file("db.duetdb");
  test::write_file(fasta, random_fasta(rng, 1500, 500, Alphabet::amino(), globin_records(), 7));
  ASSERT_EQ(makedb(fasta + " " + packed).status, 0);
  std::vector<HmmModel> models = read_hmm_file(kGlobins);
  for (HmmModel& m : read_hmm_file(kFn3)) models.push_back(std::move(m));
  io::Config config;
  config.run.cpu = 3;
  config.search.F1 = 0.3;  // relaxed: many targets reach the later stages
  config.search.F2 = 0.05;
  config.search.F3 = 0.01;
  for (std::size_t block : {std::size_t{1}, std::size_t{3000}, std::size_t{1} << 20}) {
    for (const int test_gpus : {0, 1}) {
      app::HybridOptions h;
      h.block_residues = block;
      h.gpu = test_gpus ? app::HybridOptions::Gpu::auto_detect : app::HybridOptions::Gpu::off;
      h.test_gpus = test_gpus;
      for (const std::uint64_t reuse : {std::uint64_t{0}, std::uint64_t{2} << 30}) {
        h.reuse_memory = reuse;
        const app::SearchRun a = app::run_hmmsearch(models, fasta, config, h);
        ASSERT_GT(a.queries.at(0).counts.passed_forward, 0);
        test::expect_identical(a, app::run_hmmsearch(models, packed, config, h),
                               "block_residues " + std::to_string(block) + ", test gpus " +
                                   std::to_string(test_gpus) + ", reuse " + std::to_string(reuse));
      }
    }
  }
}

TEST(PackedDatabase, CommandGivesTheSameResultFile) {
  const std::uint64_t seed = test::test_seed();
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  const std::string fasta = dir.file("db.fa"), packed = dir.file("db.duetdb");
  test::write_file(fasta, random_fasta(rng, 800, 400, Alphabet::amino(), globin_records(), 5));
  ASSERT_EQ(makedb(fasta + " " + packed).status, 0);
  for (const std::string blocks : {"1000", "1048576"}) {
    const std::string extra = "--block-residues " + blocks;
    const auto a = hmmsearch(kGlobins, fasta, dir.file("fasta.h5"), extra);
    ASSERT_EQ(a.status, 0) << a.output;
    const auto b = hmmsearch(kGlobins, packed, dir.file("packed.h5"), extra);
    ASSERT_EQ(b.status, 0) << b.output;
    const io::Hdf5Reader x(dir.file("fasta.h5")), y(dir.file("packed.h5"));
    const std::string group = "/results/hmmsearch/globins4/";
    ASSERT_EQ(x.list(group), y.list(group));
    EXPECT_EQ(x.read_int64(group + "index"), y.read_int64(group + "index"));
    EXPECT_GT(x.read_int64(group + "index").size(), 10u);
    EXPECT_EQ(x.read_strings(group + "name"), y.read_strings(group + "name"));
    EXPECT_EQ(x.read_strings(group + "description"), y.read_strings(group + "description"));
    EXPECT_EQ(x.read_int32(group + "length"), y.read_int32(group + "length"));
    EXPECT_EQ(x.read_uint8(group + "stage"), y.read_uint8(group + "stage"));
    for (const char* column : {"msv_bits", "viterbi_bits", "forward_bits"}) {
      const auto p = x.read_floats(group + column), q = y.read_floats(group + column);
      ASSERT_EQ(p.size(), q.size());
      EXPECT_EQ(0, std::memcmp(p.data(), q.data(), p.size() * sizeof(float))) << column;
    }
    const auto p = x.read_doubles(group + "pvalue"), q = y.read_doubles(group + "pvalue");
    ASSERT_EQ(p.size(), q.size());
    EXPECT_EQ(0, std::memcmp(p.data(), q.data(), p.size() * sizeof(double)));
  }
}

TEST(PackedDatabase, EmptyFastaMakesAnEmptyDatabase) {
  test::TempDir dir;
  test::write_file(dir.file("empty.fa"), "");
  const auto made = makedb(dir.file("empty.fa") + " " + dir.file("empty.duetdb"));
  ASSERT_EQ(made.status, 0) << made.output;
  const InputFile file(dir.file("empty.duetdb"));
  const io::PackedDatabase db(file);
  EXPECT_EQ(db.sequences(), 0);
  EXPECT_EQ(db.residues(), 0);
  EXPECT_NO_THROW(db.verify_checksums());
  const std::vector<HmmModel> models = read_hmm_file(kGlobins);
  app::HybridOptions h;
  h.gpu = app::HybridOptions::Gpu::off;
  const app::SearchRun a = app::run_hmmsearch(models, dir.file("empty.fa"), {}, h);
  const app::SearchRun b = app::run_hmmsearch(models, dir.file("empty.duetdb"), {}, h);
  EXPECT_EQ(b.queries.at(0).counts.targets, 0);
  test::expect_identical(a, b, "empty database");
}

// A packed database of the tutorial's globins and its FASTA, for the refusals.
struct SmallDatabase {
  test::TempDir dir;
  std::string fasta = dir.file("db.fa"), packed = dir.file("db.duetdb");
  SmallDatabase() {
    std::mt19937_64 rng(1);
    test::write_file(fasta, random_fasta(rng, 300, 300, Alphabet::amino(), globin_records(), 3));
    const auto made = makedb(fasta + " " + packed);
    EXPECT_EQ(made.status, 0) << made.output;
  }
  // Searches `db`; expects failure, `message` in the output, and no result file.
  void expect_refused(const std::string& db, const std::string& message,
                      const std::string& model = kGlobins) const {
    const std::string out = dir.file("refused.h5");
    const auto r = hmmsearch(model, db, out);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find(db + ": "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out));
  }
};

TEST(PackedDatabase, TruncatedFileIsRefused) {
  SmallDatabase s;
  const std::string whole = test::read_file(s.packed);
  for (const std::size_t keep :
       {whole.size() - 1, whole.size() / 2, std::size_t{300}, std::size_t{100}}) {
    test::write_file(s.dir.file("cut.duetdb"), whole.substr(0, keep));
    s.expect_refused(s.dir.file("cut.duetdb"), "is truncated");
  }
  // Bytes after the last section are as wrong as bytes missing.
  test::write_file(s.dir.file("long.duetdb"), whole + "x");
  s.expect_refused(s.dir.file("long.duetdb"), "is corrupt");
}

TEST(PackedDatabase, ChangedByteIsFoundByTheChecksums) {
  SmallDatabase s;
  const auto residues_at = header_field<std::uint64_t>(s.packed, 56);
  const auto text_at = header_field<std::uint64_t>(s.packed, 56 + 2 * 24);
  const std::string db = s.dir.file("changed.duetdb");
  // A residue changed into another valid code: only the checksum can tell.
  fs::copy_file(s.packed, db);
  const std::string whole = test::read_file(db);
  const char other = static_cast<char>((whole[residues_at + 10] + 1) % 20);
  patch(db, residues_at + 10, &other, 1);
  s.expect_refused(db, "checksum of its residues section does not match");
  {
    const InputFile file(db);
    const io::PackedDatabase packed(file);
    EXPECT_THROW(packed.verify_checksums(), InputError);
  }
  // A name changed.
  fs::remove(db);
  fs::copy_file(s.packed, db);
  patch(db, text_at + 1, "#", 1);
  s.expect_refused(db, "checksum of its header text section does not match");
  // A residue outside the alphabet: refused, whichever check meets it first.
  fs::remove(db);
  fs::copy_file(s.packed, db);
  const char bad = static_cast<char>(200);
  patch(db, residues_at + 5, &bad, 1);
  s.expect_refused(db, "is corrupt");
  // A byte of the header.
  fs::remove(db);
  fs::copy_file(s.packed, db);
  patch(db, 30, "\x7f", 1);
  s.expect_refused(db, "header's checksum");
}

TEST(PackedDatabase, OtherVersionIsRefusedNamingBoth) {
  SmallDatabase s;
  const std::string db = s.dir.file("future.duetdb");
  fs::copy_file(s.packed, db);
  const std::uint32_t future = io::kPackedVersion + 1;
  patch(db, 8, &future, sizeof future);
  s.expect_refused(db, "format version " + std::to_string(future) + "; this duet reads version " +
                           std::to_string(io::kPackedVersion));
}

TEST(PackedDatabase, AlphabetMustMatchTheModel) {
  SmallDatabase s;
  s.expect_refused(s.packed, "is a packed amino database, and the model is DNA", kMade1);
  const std::string dna = s.dir.file("dna.duetdb");
  ASSERT_EQ(makedb("--alphabet dna " + kTutorial + "dna_target.fa " + dna).status, 0);
  s.expect_refused(dna, "is a packed DNA database, and the model is amino");
  // The DNA database searched with the DNA model equals the FASTA search.
  const auto a = hmmsearch(kMade1, kTutorial + "dna_target.fa", s.dir.file("a.h5"));
  ASSERT_EQ(a.status, 0) << a.output;
  const auto b = hmmsearch(kMade1, dna, s.dir.file("b.h5"));
  ASSERT_EQ(b.status, 0) << b.output;
  const io::Hdf5Reader x(s.dir.file("a.h5")), y(s.dir.file("b.h5"));
  EXPECT_EQ(x.read_strings("/results/hmmsearch/MADE1/name"),
            y.read_strings("/results/hmmsearch/MADE1/name"));
  EXPECT_EQ(x.read_floats("/results/hmmsearch/MADE1/forward_bits"),
            y.read_floats("/results/hmmsearch/MADE1/forward_bits"));
}

TEST(PackedDatabase, FifoIsRefusedClearly) {
  SmallDatabase s;
  const std::string fifo = s.dir.file("db.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string out = s.dir.file("o.h5");
  const auto r =
      test::run_command("(cat " + s.packed + " > " + fifo + " &) ; timeout 60 " + kDuet +
                        " hmmsearch --quiet --no-gpu --h5 " + out + " " + kGlobins + " " + fifo);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("must be given as itself, a regular file"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out));
}

TEST(PackedDatabase, BadFastaLeavesNoFileAndKeepsAnExistingOne) {
  test::TempDir dir;
  const std::string fasta = dir.file("bad.fa");
  test::write_file(fasta, ">one first\nACDEF\nGHIK\n>two\nAC-DE\n");
  // hmmsearch's message for the same file.
  const auto searched = hmmsearch(kGlobins, fasta, dir.file("o.h5"));
  ASSERT_EQ(searched.status, 1);
  const std::string message = fasta + ":5: illegal character '-' in amino sequence 'two'";
  EXPECT_NE(searched.output.find(message), std::string::npos) << searched.output;

  const auto fresh = makedb(fasta + " " + dir.file("new.duetdb"));
  EXPECT_EQ(fresh.status, 1);
  EXPECT_EQ(fresh.output, "duet: error: " + message + "\n");
  EXPECT_FALSE(fs::exists(dir.file("new.duetdb")));

  test::write_file(dir.file("old.duetdb"), "earlier database\n");
  const auto time = fs::last_write_time(dir.file("old.duetdb"));
  const auto over = makedb(fasta + " " + dir.file("old.duetdb"));
  EXPECT_EQ(over.status, 1);
  EXPECT_EQ(test::read_file(dir.file("old.duetdb")), "earlier database\n");
  EXPECT_EQ(fs::last_write_time(dir.file("old.duetdb")), time);
  // Nothing else is left in the folder: no temporary file, no section file.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path()))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"bad.fa", "old.duetdb"}));

  // A missing input and an output folder that does not exist are clear errors too.
  const auto missing = makedb(dir.file("none.fa") + " " + dir.file("x.duetdb"));
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find("none.fa: cannot open"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace duet

namespace duet {
namespace {

// Names in `folder`, sorted.
std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(folder))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(PackedDatabase, SignalOrFullDiskLeavesNoFileAndKeepsAnExistingOne) {
  test::TempDir dir;
  std::mt19937_64 rng(2);
  const std::string fasta = dir.file("db.fa"), old = dir.file("old.duetdb");
  test::write_file(fasta, random_fasta(rng, 3000, 400, Alphabet::amino()));
  test::write_file(old, "earlier database\n");
  const auto time = fs::last_write_time(old);
  const auto expect_untouched = [&](const std::string& context) {
    EXPECT_EQ(test::read_file(old), "earlier database\n") << context;
    EXPECT_EQ(fs::last_write_time(old), time) << context;
    EXPECT_EQ(names_in(dir.path()), (std::vector<std::string>{"db.fa", "old.duetdb"})) << context;
  };
  for (const std::string phase : {"checked options", "opened inputs", "wrote database"}) {
    const auto r = test::run_command("DUET_DEBUG_SIGNAL_AT=15@'" + phase + "' " + kDuet +
                                     " makedb --quiet " + fasta + " " + old);
    EXPECT_EQ(r.status, 143) << phase << ": " << r.output;
    EXPECT_NE(r.output.find("terminated; no output written"), std::string::npos) << r.output;
    expect_untouched("SIGTERM at " + phase);
  }
  // Writes that fail part way (a file-size limit of 256 KiB; the database is larger).
  const auto r =
      test::run_command("ulimit -f 256; " + kDuet + " makedb --quiet " + fasta + " " + old);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("duet: error: " + old + ": cannot write"), std::string::npos) << r.output;
  expect_untouched("file-size limit");
}

}  // namespace
}  // namespace duet
