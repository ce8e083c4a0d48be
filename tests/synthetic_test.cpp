// Synthetic workloads: deterministic from the seed, imitate the real database's
// composition and lengths, write models HMMER reads, calibrated sensibly.
#include "core/hmmsearch/synthetic.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <sstream>

#include "core/fasta_reader.hpp"
#include "core/hmmsearch/cascade.hpp"
#include "test_support.hpp"

namespace duet {
namespace {

const std::string kTutorial = "/usr/share/doc/hmmer/examples/tutorial/";

std::vector<HmmModel> sources() {
  std::vector<HmmModel> s;
  for (const char* n : {"Pkinase", "fn3", "globins4"})
    for (auto& m : read_hmm_file(kTutorial + n + ".hmm")) s.push_back(std::move(m));
  return s;
}

std::string model_text(const HmmModel& m) {
  std::ostringstream out;
  write_hmm(out, m);
  return out.str();
}

TEST(Synthetic, ModelsAreDeterministicAndReadBack) {
  const auto src = sources();
  const HmmModel a = synthetic_model(src, 120, 7, "a");
  const HmmModel b = synthetic_model(src, 120, 7, "a");
  const HmmModel c = synthetic_model(src, 120, 8, "a");
  EXPECT_EQ(model_text(a), model_text(b));
  EXPECT_NE(model_text(a), model_text(c));
  test::TempDir dir;
  test::write_file(dir.file("a.hmm"), model_text(a));
  const HmmModel r = read_hmm_file(dir.file("a.hmm"))[0];
  ASSERT_EQ(r.M, 120);
  for (int k = 1; k <= r.M; ++k)
    for (int x = 0; x < 20; ++x)
      EXPECT_NEAR(r.match[k][x], a.match[k][x], 1e-4f * a.match[k][x] + 1e-6f);
  // HMMER reads it too.
  const auto stat = test::run_command("hmmstat " + dir.file("a.hmm"));
  EXPECT_EQ(stat.status, 0) << stat.output;
  EXPECT_NE(stat.output.find(" a "), std::string::npos) << stat.output;
}

// Calibration: on i.i.d. background sequences about F1 = 2% pass MSV and F2 = 0.1% Viterbi.
TEST(Synthetic, CalibrationGivesExpectedFilterPassRates) {
  const std::uint64_t seed = test::test_seed();
  const HmmModel m = synthetic_model(sources(), 200, seed, "cal");
  const SearchProfile sp = build_search_profile(m, Background::for_alphabet(Alphabet::amino()));
  DatabaseProfile like;
  like.alphabet = &Alphabet::amino();
  const auto bg = Background::for_alphabet(Alphabet::amino());
  like.frequencies.assign(bg.frequencies.begin(), bg.frequencies.end());
  like.lengths = {300};
  SyntheticDatabaseSpec spec;
  spec.residues = 300 * 4000;
  spec.seed = seed;
  std::ostringstream fasta;
  write_synthetic_database(fasta, like, spec, nullptr);
  test::TempDir dir;
  test::write_file(dir.file("db.fa"), fasta.str());
  FastaReader reader(dir.file("db.fa"), Alphabet::amino());
  Sequence s;
  ReferenceKernels k(sp);
  CascadeSettings settings;
  settings.bias_filter = false;
  int n = 0, msv = 0;
  while (reader.next(s)) {
    ++n;
    const TargetScores t =
        run_cascade(sp, settings, k, s.residues.data(), static_cast<int>(s.residues.size()));
    if (t.stage > Stage::msv) ++msv;
  }
  ASSERT_EQ(n, 4000);
  const double rate = static_cast<double>(msv) / n;
  EXPECT_GT(rate, 0.008);
  EXPECT_LT(rate, 0.045);
}

TEST(Synthetic, DatabaseFollowsCompositionAndLengths) {
  const std::uint64_t seed = test::test_seed();
  test::TempDir dir;
  test::run_command("zcat /usr/share/doc/mmseqs2/example-data/DB.fasta.gz | head -n 4000 > " +
                    dir.file("real.fa"));
  const DatabaseProfile like = DatabaseProfile::from_fasta(dir.file("real.fa"), Alphabet::amino());
  EXPECT_EQ(like.lengths.size(), 2000u);
  SyntheticDatabaseSpec spec;
  spec.residues = 2000000;
  spec.seed = seed;
  spec.homolog_fraction = 0.05;
  const HmmModel m = read_hmm_file(kTutorial + "globins4.hmm")[0];
  std::ostringstream a, b;
  const auto n = write_synthetic_database(a, like, spec, &m);
  write_synthetic_database(b, like, spec, &m);
  EXPECT_EQ(a.str(), b.str());  // deterministic
  test::write_file(dir.file("syn.fa"), a.str());
  FastaReader reader(dir.file("syn.fa"), Alphabet::amino());
  Sequence s;
  std::vector<double> count(20, 0.0);
  double total = 0, length_sum = 0;
  std::int64_t homologs = 0, seqs = 0;
  while (reader.next(s)) {
    ++seqs;
    if (s.name.rfind("homolog_", 0) == 0) {
      ++homologs;
      continue;
    }
    length_sum += static_cast<double>(s.residues.size());
    for (Residue x : s.residues) count[x] += 1, total += 1;
  }
  EXPECT_EQ(seqs, n);
  for (int x = 0; x < 20; ++x) EXPECT_NEAR(count[x] / total, like.frequencies[x], 0.004) << x;
  const double real_mean = std::accumulate(like.lengths.begin(), like.lengths.end(), 0.0) /
                           static_cast<double>(like.lengths.size());
  EXPECT_NEAR(length_sum / static_cast<double>(seqs - homologs), real_mean, 0.1 * real_mean);
  EXPECT_NEAR(static_cast<double>(homologs) / static_cast<double>(seqs), 0.05, 0.02);
}

TEST(Synthetic, PlantedHomologsOfALongModelAreFound) {
  const std::uint64_t seed = test::test_seed();
  const HmmModel m = synthetic_model(sources(), 300, seed, "long");
  const SearchProfile sp = build_search_profile(m, Background::for_alphabet(Alphabet::amino()));
  ReferenceKernels k(sp);
  std::uint64_t rng = seed;
  int found = 0;
  for (int i = 0; i < 20; ++i) {
    const auto d = emit_domain(m, rng);
    const TargetScores t =
        run_cascade(sp, CascadeSettings{}, k, d.data(), static_cast<int>(d.size()));
    if (t.stage == Stage::passed) ++found;
  }
  EXPECT_GE(found, 15);
}

}  // namespace
}  // namespace duet
