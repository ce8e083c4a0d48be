// Random models and targets for the SIMD kernel tests; see simd_test_support.hpp.
#include "simd_test_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "core/fasta_reader.hpp"

namespace duet::simd_test {

std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    std::uint64_t s;
    if (const char* text = std::getenv("DUET_TEST_SEED")) {
      s = std::strtoull(text, nullptr, 10);
    } else {
      s = (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    }
    std::cout << "[ seed     ] DUET_TEST_SEED=" << s << std::endl;
    return s;
  }();
  return seed;
}

namespace {

double uniform(std::mt19937_64& rng) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// Normalises positive weights into probabilities (floats, summing to 1 within rounding).
std::vector<float> normalised(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  std::vector<float> p(weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i) p[i] = static_cast<float>(weights[i] / total);
  return p;
}

std::vector<float> random_distribution(std::mt19937_64& rng, int K, double sharpness) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> w(K);
  for (double& x : w) x = std::exp(sharpness * normal(rng));
  return normalised(w);
}

int sample(std::mt19937_64& rng, const std::vector<float>& p) {
  double u = uniform(rng);
  for (std::size_t i = 0; i < p.size(); ++i) {
    u -= p[i];
    if (u < 0) return static_cast<int>(i);
  }
  return static_cast<int>(p.size()) - 1;
}

}  // namespace

ModelStyle random_style(std::mt19937_64& rng) {
  ModelStyle s;
  s.emission_sharpness = 0.3 + 2.7 * uniform(rng);
  s.gap_open = 0.01 + 0.3 * uniform(rng);
  s.delete_extension = 0.05 + 0.9 * uniform(rng);
  return s;
}

HmmModel random_hmm(std::mt19937_64& rng, const Alphabet& alphabet, int M,
                    const ModelStyle& style) {
  const int K = alphabet.K();
  HmmModel hmm;
  hmm.name = "random" + std::to_string(M);
  hmm.alphabet = &alphabet;
  hmm.M = M;
  hmm.t.assign(M + 1, {});
  hmm.match.assign(M + 1, std::vector<float>(K, 0.0f));
  hmm.insert.assign(M + 1, std::vector<float>(K, 0.0f));
  for (int k = 0; k <= M; ++k) {
    const double open = style.gap_open * (0.2 + 1.6 * uniform(rng));
    std::vector<float> m =
        normalised({1.0, open * uniform(rng), k < M ? open * uniform(rng) : 0.0});
    const std::vector<float> i = normalised({0.2 + uniform(rng), 0.05 + 0.8 * uniform(rng)});
    const double extend = std::min(0.98, style.delete_extension * (0.3 + 1.4 * uniform(rng)));
    std::vector<float> d = normalised({1.0 - extend, extend});
    if (k == 0 || k == M) d = {1.0f, 0.0f};  // node 0 and node M: D->M only (HMMER's convention)
    hmm.t[k] = {m[0], m[1], m[2], i[0], i[1], d[0], d[1]};
    hmm.insert[k] = random_distribution(rng, K, 0.3);
    if (k > 0) hmm.match[k] = random_distribution(rng, K, style.emission_sharpness);
  }
  hmm.composition.assign(K, 0.0f);
  for (int k = 1; k <= M; ++k)
    for (int x = 0; x < K; ++x) hmm.composition[x] += hmm.match[k][x] / static_cast<float>(M);
  hmm.msv_mu = -9.5f;
  hmm.msv_lambda = 0.72f;
  hmm.viterbi_mu = -10.0f;
  hmm.viterbi_lambda = 0.72f;
  hmm.forward_tau = -4.5f;
  hmm.forward_lambda = 0.72f;
  hmm.has_stats = true;
  hmm.format = "3/f";
  return hmm;
}

std::vector<Residue> random_codes(std::mt19937_64& rng, const Alphabet& alphabet, int L) {
  std::uniform_int_distribution<int> code(0, alphabet.Kp() - 1);
  std::vector<Residue> dsq(L);
  for (Residue& x : dsq) x = static_cast<Residue>(code(rng));
  return dsq;
}

std::vector<Residue> sampled_from_model(std::mt19937_64& rng, const HmmModel& hmm, int L,
                                        double noise) {
  const Alphabet& abc = *hmm.alphabet;
  const int M = hmm.M;
  std::vector<float> uniform_canonical(abc.K(), 1.0f / static_cast<float>(abc.K()));
  std::vector<Residue> dsq;
  const auto emit = [&](const std::vector<float>& p) {
    dsq.push_back(static_cast<Residue>(sample(rng, p)));
  };
  while (static_cast<int>(dsq.size()) < L) {
    const int flank = static_cast<int>(std::exponential_distribution<double>(1.0 / 15.0)(rng));
    for (int j = 0; j < flank; ++j) emit(uniform_canonical);
    // One local domain: enter at a random node, follow the model's transitions.
    const double u = uniform(rng);
    int k = 1 + std::min(M - 1, static_cast<int>(u * u * M));
    enum { match, insert, remove } state = match;
    int guard = 0;
    while (k <= M && guard++ < 4 * M + 100) {
      if (state == match) {
        emit(hmm.match[k]);
        if (k == M || uniform(rng) < 0.01) break;  // local exit
        const int next = sample(rng, {hmm.t[k][kMM], hmm.t[k][kMI], hmm.t[k][kMD]});
        if (next == 0) {
          ++k;
        } else if (next == 1) {
          state = insert;
        } else {
          state = remove;
          ++k;
        }
      } else if (state == insert) {
        emit(hmm.insert[k]);
        if (sample(rng, {hmm.t[k][kIM], hmm.t[k][kII]}) == 0) {
          state = match;
          ++k;
        }
      } else {
        if (k == M || sample(rng, {hmm.t[k][kDM], hmm.t[k][kDD]}) == 0) {
          state = match;
          ++k;
          if (k > M) break;
        } else {
          ++k;
        }
      }
    }
  }
  dsq.resize(L);
  std::uniform_int_distribution<int> code(0, abc.Kp() - 1);
  for (Residue& x : dsq) {
    if (uniform(rng) < noise) x = static_cast<Residue>(code(rng));
  }
  return dsq;
}

std::vector<Residue> consensus_repeated(const HmmModel& hmm, int L) {
  std::vector<Residue> dsq(L);
  for (int i = 0; i < L; ++i) {
    const std::vector<float>& p = hmm.match[1 + i % hmm.M];
    dsq[i] = static_cast<Residue>(std::max_element(p.begin(), p.end()) - p.begin());
  }
  return dsq;
}

std::vector<Residue> consensus_with_deletions(std::mt19937_64& rng, const HmmModel& hmm, int gaps) {
  const std::vector<Residue> consensus = consensus_repeated(hmm, hmm.M);
  std::vector<bool> keep(consensus.size(), true);
  for (int g = 0; g < gaps; ++g) {
    const int length = std::uniform_int_distribution<int>(2, std::max(2, hmm.M / 8))(rng);
    const int start = std::uniform_int_distribution<int>(0, std::max(0, hmm.M - length - 1))(rng);
    for (int k = start; k < std::min(hmm.M, start + length); ++k) keep[k] = false;
  }
  std::vector<Residue> dsq;
  for (std::size_t k = 0; k < consensus.size(); ++k) {
    if (keep[k]) dsq.push_back(consensus[k]);
  }
  return dsq;
}

std::vector<Sequence> read_sequences(const std::string& path, const Alphabet& alphabet, int count) {
  std::vector<Sequence> out;
  if (!std::filesystem::exists(path)) return out;
  FastaReader reader(path, alphabet);
  Sequence s;
  while (static_cast<int>(out.size()) < count && reader.next(s)) out.push_back(s);
  return out;
}

TestModel make_model(std::mt19937_64& rng, const Alphabet& abc, int M,
                     std::optional<ModelStyle> given) {
  const ModelStyle style = given ? *given : random_style(rng);
  TestModel m;
  std::ostringstream label;
  label << abc.name() << " M=" << M << " sharpness=" << style.emission_sharpness
        << " gap_open=" << style.gap_open << " delete_extension=" << style.delete_extension;
  m.label = label.str();
  m.hmm = random_hmm(rng, abc, M, style);
  m.profile = build_search_profile(m.hmm, Background::for_alphabet(abc));
  return m;
}

}  // namespace duet::simd_test
