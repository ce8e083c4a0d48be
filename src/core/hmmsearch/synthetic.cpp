// Synthetic models and databases; see synthetic.hpp.
#include "core/hmmsearch/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <ostream>

#include "core/error.hpp"
#include "core/fasta_reader.hpp"
#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/reference_kernels.hpp"
#include "core/hmmsearch/statistics.hpp"

namespace duet {

namespace {

// SplitMix64: small, fast, and the same on every platform (std:: distributions are not).
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
double uniform(std::uint64_t& state) {
  return static_cast<double>(next_random(state) >> 11) * (1.0 / 9007199254740992.0);
}
std::size_t pick(std::uint64_t& state, std::size_t n) {
  return static_cast<std::size_t>(uniform(state) * static_cast<double>(n)) % n;
}
template <typename Vec>
int sample(std::uint64_t& state, const Vec& p) {
  double total = 0;
  for (auto v : p) total += static_cast<double>(v);
  double r = uniform(state) * total;
  for (std::size_t i = 0; i < p.size(); ++i) {
    r -= static_cast<double>(p[i]);
    if (r < 0) return static_cast<int>(i);
  }
  return static_cast<int>(p.size()) - 1;
}

std::vector<Residue> iid_sequence(std::uint64_t& state, const std::vector<double>& f, int L) {
  std::vector<Residue> s(L);
  for (auto& x : s) x = static_cast<Residue>(sample(state, f));
  return s;
}

// Maximum-likelihood Gumbel fit (location and scale), by bisection on lambda.
void fit_gumbel(const std::vector<double>& x, double& mu, double& lambda) {
  const double n = static_cast<double>(x.size());
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  auto f = [&](double lam) {
    double s = 0, sx = 0;
    for (double v : x) {
      const double e = std::exp(-lam * (v - mean));
      s += e;
      sx += v * e;
    }
    return 1.0 / lam - mean + sx / s;
  };
  double lo = 1e-3, hi = 20.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) > 0 ? lo : hi) = mid;
  }
  lambda = 0.5 * (lo + hi);
  double s = 0;
  for (double v : x) s += std::exp(-lambda * (v - mean));
  mu = mean - std::log(s / n) / lambda;
}

// Gumbel location for a known lambda.
double fit_gumbel_location(const std::vector<double>& x, double lambda) {
  double s = 0;
  const double m = *std::min_element(x.begin(), x.end());
  for (double v : x) s += std::exp(-lambda * (v - m));
  return m - std::log(s / static_cast<double>(x.size())) / lambda;
}

std::string field(float p) {
  if (p <= 0.0f) return "*";
  char b[32];
  double v = -std::log(static_cast<double>(p));
  if (v < 0) v = 0;
  std::snprintf(b, sizeof b, "%.5f", v);
  return b;
}

}  // namespace

HmmModel synthetic_model(const std::vector<HmmModel>& sources, int M, std::uint64_t seed,
                         const std::string& name) {
  if (sources.empty()) throw UsageError("synthetic models need at least one source model");
  if (M < 1) throw UsageError("model length must be at least 1");
  std::uint64_t rng = seed;
  const HmmModel& first = sources.front();
  HmmModel m;
  m.name = name;
  m.accession = "";
  m.description = "synthetic model, " + std::to_string(M) + " nodes, seed " + std::to_string(seed);
  m.alphabet = first.alphabet;
  m.M = M;
  m.format = "3/f";
  const int K = m.alphabet->K();
  m.t.assign(M + 1, {});
  m.match.assign(M + 1, std::vector<float>(K, 0.0f));
  m.insert.assign(M + 1, std::vector<float>(K, 0.0f));
  m.consensus.assign(M + 1, ' ');
  // Node 0 and the last node come from the source's ends; the rest are runs of
  // consecutive source nodes (runs of 5 to 40), which keeps neighbouring nodes alike.
  const HmmModel& s0 = sources[pick(rng, sources.size())];
  m.t[0] = s0.t[0];
  m.insert[0] = s0.insert[0];
  int k = 1;
  while (k <= M) {
    const HmmModel& src = sources[pick(rng, sources.size())];
    const int run = 5 + static_cast<int>(pick(rng, 36));
    const int start =
        1 + static_cast<int>(pick(rng, static_cast<std::size_t>(std::max(1, src.M - 1))));
    for (int j = 0; j < run && k <= M; ++j, ++k) {
      const int sk = std::min(src.M - 1, start + j);
      const int from = std::max(1, sk);
      m.match[k] = src.match[from];
      m.insert[k] = src.insert[from];
      m.t[k] = src.t[from];
    }
  }
  // Last node: no M->D, and D->M is certain (as HMMER's models end).
  auto& tM = m.t[M];
  const float keep = tM[kMM] + tM[kMD];
  tM[kMM] = keep;
  tM[kMD] = 0.0f;
  tM[kDM] = 1.0f;
  tM[kDD] = 0.0f;
  if (M == 1) m.t[0][kMD] = 0.0f, m.t[0][kMM] = 1.0f - m.t[0][kMI];
  // Composition: occupancy-weighted match emissions (as p7_hmm_SetComposition, matches only).
  std::vector<double> occ(M + 1, 0.0);
  occ[1] = m.t[0][kMI] + m.t[0][kMM];
  for (int j = 2; j <= M; ++j)
    occ[j] =
        occ[j - 1] * (m.t[j - 1][kMM] + m.t[j - 1][kMI]) + (1.0 - occ[j - 1]) * m.t[j - 1][kDM];
  std::vector<double> compo(K, 0.0);
  for (int j = 1; j <= M; ++j)
    for (int x = 0; x < K; ++x) compo[x] += occ[j] * m.match[j][x];
  const double total = std::accumulate(compo.begin(), compo.end(), 0.0);
  m.composition.resize(K);
  for (int x = 0; x < K; ++x) m.composition[x] = static_cast<float>(compo[x] / total);
  for (int j = 1; j <= M; ++j) {
    const int best = static_cast<int>(std::max_element(m.match[j].begin(), m.match[j].end()) -
                                      m.match[j].begin());
    m.consensus[j] = m.alphabet->symbol(static_cast<Residue>(best));
  }
  calibrate_model(m, seed ^ 0x5eed5eedULL);
  return m;
}

void calibrate_model(HmmModel& model, std::uint64_t seed) {
  const Background bg = Background::for_alphabet(*model.alphabet);
  std::vector<double> f(bg.frequencies.begin(), bg.frequencies.end());
  const int K = model.alphabet->K();
  // lambda = ln 2 + 1.44 / (M H), H the mean match relative entropy in bits.
  double H = 0;
  for (int k = 1; k <= model.M; ++k)
    for (int x = 0; x < K; ++x)
      if (model.match[k][x] > 0)
        H += model.match[k][x] * std::log2(model.match[k][x] / bg.frequencies[x]);
  H /= model.M;
  const double lambda = kLog2 + 1.44 / (model.M * H);
  model.msv_lambda = model.viterbi_lambda = model.forward_lambda = static_cast<float>(lambda);
  model.msv_mu = model.viterbi_mu = model.forward_tau = 0;
  const SearchProfile sp = build_search_profile(model, bg);
  std::uint64_t rng = seed;
  const int N = 200;
  std::vector<double> msv(N), vit(N), fwd(N);
  for (int i = 0; i < N; ++i) {
    const auto s = iid_sequence(rng, f, 200);
    const float null = null_score(200);
    const FilterScore m = msv_filter_reference(sp.msv, s.data(), 200);
    const float msv_nats = m.overflow ? (255.0f - sp.msv.base) / sp.msv.scale : m.nats;
    msv[i] = (msv_nats - null) / kLog2;
    const FilterScore v = viterbi_filter_reference(sp.viterbi, s.data(), 200);
    vit[i] = (v.overflow ? 20.0 : (v.nats - null) / kLog2);
  }
  for (int i = 0; i < N; ++i) {
    const auto s = iid_sequence(rng, f, 100);
    fwd[i] = (forward_parser_reference(sp.forward, s.data(), 100) - null_score(100)) / kLog2;
  }
  model.msv_mu = static_cast<float>(fit_gumbel_location(msv, lambda));
  model.viterbi_mu = static_cast<float>(fit_gumbel_location(vit, lambda));
  double gmu, glam;
  fit_gumbel(fwd, gmu, glam);
  const double tailp = 0.04;
  const double x = gmu - std::log(-std::log(1.0 - tailp)) / glam;  // Gumbel inverse CDF
  model.forward_tau = static_cast<float>(x + std::log(tailp) / lambda);
  model.has_stats = true;
}

DatabaseProfile DatabaseProfile::from_fasta(const std::string& path, const Alphabet& alphabet,
                                            std::int64_t max_sequences) {
  DatabaseProfile p;
  p.alphabet = &alphabet;
  std::vector<double> count(alphabet.K(), 0.0);
  FastaReader reader(path, alphabet);
  Sequence s;
  std::int64_t n = 0;
  while (n < max_sequences && reader.next(s)) {
    ++n;
    if (s.residues.empty()) continue;
    p.lengths.push_back(static_cast<int>(s.residues.size()));
    for (Residue x : s.residues)
      if (x < alphabet.K()) count[x] += 1;
  }
  if (p.lengths.empty()) throw InputError(path, 0, "no sequences to imitate");
  const double total = std::accumulate(count.begin(), count.end(), 0.0);
  p.frequencies.resize(alphabet.K());
  for (int x = 0; x < alphabet.K(); ++x) p.frequencies[x] = count[x] / total;
  return p;
}

std::vector<Residue> emit_domain(const HmmModel& model, std::uint64_t& rng) {
  // A near-full-length domain: entry in the first tenth of the nodes, exit in the last.
  const int M = model.M;
  const std::size_t tenth = static_cast<std::size_t>(std::max(1, M / 10));
  int k = 1 + static_cast<int>(pick(rng, tenth));
  const int end = std::max(k, M - static_cast<int>(pick(rng, tenth)));
  std::vector<Residue> out;
  enum { kMatch, kInsert, kDelete } state = kMatch;
  while (k <= end) {
    if (state == kMatch) out.push_back(static_cast<Residue>(sample(rng, model.match[k])));
    if (state == kInsert) out.push_back(static_cast<Residue>(sample(rng, model.insert[k])));
    if (k == end && state != kInsert) break;
    const auto& t = model.t[k];
    if (state == kMatch) {
      const int next = sample(rng, std::array<float, 3>{t[kMM], t[kMI], t[kMD]});
      if (next == 1) {
        state = kInsert;
        continue;
      }
      state = next == 0 ? kMatch : kDelete;
    } else if (state == kInsert) {
      if (sample(rng, std::array<float, 2>{t[kIM], t[kII]}) == 1) continue;
      state = kMatch;
    } else {
      state = sample(rng, std::array<float, 2>{t[kDM], t[kDD]}) == 0 ? kMatch : kDelete;
    }
    ++k;
    if (out.size() > static_cast<std::size_t>(4 * M + 100)) break;  // runaway insert loops
  }
  return out;
}

std::int64_t write_synthetic_database(std::ostream& out, const DatabaseProfile& like,
                                      const SyntheticDatabaseSpec& spec, const HmmModel* model) {
  if (spec.homolog_fraction > 0 && model == nullptr) throw UsageError("homologs need a model");
  if (model != nullptr && model->alphabet != like.alphabet) {
    throw UsageError("the model's alphabet differs from the database's");
  }
  std::uint64_t rng = spec.seed;
  std::int64_t written = 0, n = 0;
  std::string line;
  while (written < spec.residues) {
    const int L = like.lengths[pick(rng, like.lengths.size())];
    std::vector<Residue> s = iid_sequence(rng, like.frequencies, L);
    const bool homolog = spec.homolog_fraction > 0 && uniform(rng) < spec.homolog_fraction;
    if (homolog) {
      const auto domain = emit_domain(*model, rng);
      const std::size_t at = pick(rng, s.size() + 1);
      s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), domain.begin(), domain.end());
    }
    out << '>' << (homolog ? "homolog_" : "random_") << n << '\n';
    for (std::size_t p = 0; p < s.size(); p += 60) {
      line.clear();
      for (std::size_t q = p; q < std::min(s.size(), p + 60); ++q)
        line += like.alphabet->symbol(s[q]);
      out << line << '\n';
    }
    written += static_cast<std::int64_t>(s.size());
    ++n;
  }
  return n;
}

void write_hmm(std::ostream& out, const HmmModel& m) {
  const Alphabet& a = *m.alphabet;
  const int K = a.K();
  char buf[64];
  out << "HMMER3/f [duet synthetic]\n";
  out << "NAME  " << m.name << "\n";
  if (!m.accession.empty()) out << "ACC   " << m.accession << "\n";
  if (!m.description.empty()) out << "DESC  " << m.description << "\n";
  out << "LENG  " << m.M << "\n";
  out << "ALPH  " << (a.type() == AlphabetType::amino ? "amino" : "DNA") << "\n";
  out << "RF    no\nMM    no\nCONS  yes\nCS    no\nMAP   no\n";
  std::snprintf(buf, sizeof buf, "%.4f %.5f", static_cast<double>(m.msv_mu),
                static_cast<double>(m.msv_lambda));
  out << "STATS LOCAL MSV      " << buf << "\n";
  std::snprintf(buf, sizeof buf, "%.4f %.5f", static_cast<double>(m.viterbi_mu),
                static_cast<double>(m.viterbi_lambda));
  out << "STATS LOCAL VITERBI  " << buf << "\n";
  std::snprintf(buf, sizeof buf, "%.4f %.5f", static_cast<double>(m.forward_tau),
                static_cast<double>(m.forward_lambda));
  out << "STATS LOCAL FORWARD  " << buf << "\n";
  out << "HMM     ";
  for (int x = 0; x < K; ++x) out << "     " << a.symbol(static_cast<Residue>(x)) << "   ";
  out << "\n        m->m     m->i     m->d     i->m     i->i     d->m     d->d\n";
  auto row = [&](const std::string& lead, const std::vector<float>& v, const std::string& tail) {
    out << lead;
    for (float p : v) out << ' ' << field(p);
    out << tail << "\n";
  };
  if (!m.composition.empty()) row("  COMPO ", m.composition, "");
  row("        ", m.insert[0], "");
  row("        ", std::vector<float>(m.t[0].begin(), m.t[0].end()), "");
  for (int k = 1; k <= m.M; ++k) {
    std::snprintf(buf, sizeof buf, "%7d", k);
    row(buf, m.match[k],
        std::string(" - ") +
            static_cast<char>(std::tolower(static_cast<unsigned char>(m.consensus[k]))) + " - - -");
    row("        ", m.insert[k], "");
    row("        ", std::vector<float>(m.t[k].begin(), m.t[k].end()), "");
  }
  out << "//\n";
}

}  // namespace duet
