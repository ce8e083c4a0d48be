// Domain definition (domain_definition.hpp).
#include "core/hmmsearch/domain_definition.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "core/hmmsearch/denormals.hpp"
#include "core/hmmsearch/statistics.hpp"

namespace duet {

namespace {

// HMMER's thresholds (p7_domaindef_Create).
constexpr float kRegionTrigger = 0.25f;  // rt1: a region starts where mocc reaches this
constexpr float kRegionEdge = 0.10f;     // rt2: and extends while mocc less B (E) stays above
constexpr float kMultiDomain = 0.20f;    // rt3: expected E-then-B inside a region
constexpr int kSamples = 200;            // sampled traces per multi-domain region
constexpr float kMinOverlap = 0.8f;      // clustering: overlap of the smaller pair
constexpr int kMaxDiagonalDiff = 4;
constexpr float kMinPosterior = 0.25f;  // a cluster's share of the samples
constexpr float kMinEndpointShare = 0.02f;
// How far from its threshold a value of the canonical parsers' decoding must lie for the
// region loop's decision on it to be HMMER's: the canonical order of the D->D paths
// (posterior_dp.hpp, DeletePaths) moves the values by about 2e-7 (0.100000232 against
// HMMER's 0.099999994 at one residue); a target with one nearer is decoded again from
// parsers in HMMER's order. At 1e-5, 1 target in 100 or so is; at 1e-4 one in ten was (1,000
// models against 5,000 proteins), which cost 10% of the run.
constexpr float kDecisionMargin = 1e-5f;

// One domain of a sampled trace, in target coordinates.
struct SampledDomain {
  int sample = 0, i = 0, j = 0, k = 0, m = 0;
};
struct Cluster {
  int i = 0, j = 0, k = 0, m = 0;
  float prob = 0;
};

// A domain of a trace: its B and E steps and its first and last M states.
struct TraceDomain {
  std::size_t from = 0, to = 0;  // indices of B and E
  int i = 0, j = 0, k = 0, m = 0;
};

// The domains of the trace `tr`, into `out`.
void index_trace(const Trace& tr, std::vector<TraceDomain>& out) {
  out.clear();
  TraceDomain d;
  for (std::size_t z = 0; z < tr.size(); ++z) {
    switch (tr[z].state) {
      case TraceState::B:
        d = TraceDomain{};
        d.from = z;
        break;
      case TraceState::M:
        if (d.i == 0) d.i = tr[z].i;
        if (d.k == 0) d.k = tr[z].k;
        d.j = tr[z].i;
        d.m = tr[z].k;
        break;
      case TraceState::E:
        d.to = z;
        out.push_back(d);
        break;
      default:
        break;
    }
  }
}

// Degenerate codes get the mean of their residues' null2 odds (esl_abc_FAvgScVec).
void average_degenerate_odds(const Alphabet& abc, std::vector<float>& odds) {
  const int K = abc.K(), Kp = abc.Kp();
  for (int x = K + 1; x <= Kp - 3; ++x) {
    float sum = 0.0f;
    int n = 0;
    for (int y = 0; y < K; ++y) {
      if (abc.includes(x, y)) {
        sum += odds[y];
        ++n;
      }
    }
    odds[x] = n > 0 ? sum / static_cast<float>(n) : 0.0f;
  }
}

// The null2 model's odds f'(x) / f(x) for every residue code, from the expected use of
// each node's match state (m_use[k]) and insert state (i_use[k]) and of N, C and J
// (flank) per residue: the posterior-weighted mean of the emission odds. Degenerate codes
// get the mean over their residues; gap, '*' and '~' get 1.
void null2_odds(const ForwardScores& scores, const Alphabet& abc, const std::vector<float>& m_use,
                const std::vector<float>& i_use, float flank, std::vector<float>& odds) {
  const int K = abc.K(), M = scores.M;
  odds.assign(abc.Kp(), 1.0f);
  float insert = 0.0f;
  for (int k = 1; k <= M; ++k) insert += i_use[k];
  for (int x = 0; x < K; ++x) {
    const std::vector<float>& e = scores.match[x];
    float sum = 0.0f;
    for (int k = 1; k <= M; ++k) sum += m_use[k] * e[k];
    odds[x] = sum + insert + flank;
  }
  average_degenerate_odds(abc, odds);
}

// p7_Null2_ByExpectation: null2 odds from an envelope's posterior matrix.
void null2_by_expectation(const ForwardScores& scores, const Alphabet& abc, const DpMatrix& pp,
                          std::vector<float>& odds) {
  const int M = pp.M(), Ld = pp.L();
  const std::size_t width = pp.width();
  std::vector<float> m_sum(width, 0.0f), i_sum(width, 0.0f);
  float n = 0.0f, c = 0.0f, j = 0.0f;
  for (int i = 1; i <= Ld; ++i) {
    const float* m = pp.mrow(i);
    const float* ins = pp.irow(i);
    for (std::size_t w = 0; w < width; ++w) m_sum[w] += m[w];
    for (std::size_t w = 0; w < width; ++w) i_sum[w] += ins[w];
    n += pp.x(i, DpMatrix::kN);
    c += pp.x(i, DpMatrix::kC);
    j += pp.x(i, DpMatrix::kJ);
  }
  const float norm = 1.0f / static_cast<float>(Ld);
  std::vector<float> m_use(M + 1, 0.0f), i_use(M + 1, 0.0f);
  for (int k = 1; k <= M; ++k) {
    m_use[k] = m_sum[pp.at(k)] * norm;
    i_use[k] = i_sum[pp.at(k)] * norm;
  }
  null2_odds(scores, abc, m_use, i_use, n * norm + c * norm + j * norm, odds);
}

// p7_Null2_ByTrace: null2 odds from the emissions of one sampled domain (trace steps
// from..to). As in HMMER 3.3.2, an insert state's emission counts as its node's match
// state's. Summed over the domain's emissions, not over every node: a trace uses few.
// Each residue's sum runs in the trace's order, over the node's odds of every residue at
// once (DpProfile::match_by_node).
void null2_by_trace(const DpProfile& dp, const Alphabet& abc, const Trace& tr, std::size_t from,
                    std::size_t to, std::vector<float>& odds) {
  const int K = abc.K();
  int Ld = 0;
  for (std::size_t z = from; z <= to; ++z) Ld += tr[z].i > 0 ? 1 : 0;
  const float norm = 1.0f / static_cast<float>(Ld);
  odds.assign(abc.Kp(), 1.0f);
  std::fill(odds.begin(), odds.begin() + K, 0.0f);
  float* sum = odds.data();
  for (std::size_t z = from; z <= to; ++z) {
    if (tr[z].i <= 0 || tr[z].k <= 0) continue;
    const float* e = dp.match_by_node.data() + static_cast<std::size_t>(tr[z].k) * dp.Kp;
    for (int x = 0; x < K; ++x) sum[x] += norm * e[x];
  }
  average_degenerate_odds(abc, odds);
}

// esl_cluster_SingleLinkage's link test of two sampled domains (p7_spensemble's).
bool linked(const SampledDomain& a, const SampledDomain& b) {
  int overlap = std::min(a.j, b.j) - std::max(a.i, b.i) + 1;
  int n = std::min(a.j - a.i + 1, b.j - b.i + 1);
  if (static_cast<float>(overlap) / static_cast<float>(n) < kMinOverlap) return false;
  overlap = std::min(a.m, b.m) - std::max(a.k, b.k);  // no + 1, as in HMMER
  n = std::min(a.m - a.k + 1, b.m - b.k + 1);
  if (static_cast<float>(overlap) / static_cast<float>(n) < kMinOverlap) return false;
  if (std::abs((a.i - a.k) - (b.i - b.k)) <= kMaxDiagonalDiff) return true;
  if (std::abs((a.j - a.m) - (b.j - b.m)) <= kMaxDiagonalDiff) return true;
  return false;
}

// Single-linkage clusters in Easel's numbering (depth-first from the lowest unassigned
// sample).
std::vector<int> single_linkage(const std::vector<SampledDomain>& v, int& clusters) {
  const int n = static_cast<int>(v.size());
  std::vector<int> available(n), stack, assignment(n, -1);
  for (int x = 0; x < n; ++x) available[x] = n - x - 1;
  int na = n;
  clusters = 0;
  while (na > 0) {
    stack.push_back(available[--na]);
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      assignment[x] = clusters;
      for (int a = na - 1; a >= 0; --a) {
        if (linked(v[x], v[available[a]])) {
          stack.push_back(available[a]);
          available[a] = available[--na];
        }
      }
    }
    ++clusters;
  }
  return assignment;
}

// The leftmost (from_left) or rightmost coordinate that at least `threshold` samples
// share; else the most shared one.
int endpoint(const std::vector<int>& counts, int low, bool from_left, int threshold) {
  const int n = static_cast<int>(counts.size());
  for (int d = 0; d < n; ++d) {
    const int x = from_left ? d : n - 1 - d;
    if (counts[x] >= threshold) return low + x;
  }
  return low + static_cast<int>(std::max_element(counts.begin(), counts.end()) - counts.begin());
}

// p7_spensemble_Cluster: the clusters of the sampled domains that enough samples share,
// with their consensus endpoints, ordered by start.
std::vector<Cluster> cluster_samples(const std::vector<SampledDomain>& v, int samples) {
  int nc = 0;
  const std::vector<int> assignment = single_linkage(v, nc);
  std::vector<Cluster> out;
  std::vector<int> counts;
  for (int c = 0; c < nc; ++c) {
    int included = 0, last_sample = -1;
    int imin = 0, imax = 0, jmin = 0, jmax = 0, kmin = 0, kmax = 0, mmin = 0, mmax = 0;
    for (std::size_t h = 0; h < v.size(); ++h) {
      if (assignment[h] != c) continue;
      if (v[h].sample != last_sample) ++included;
      last_sample = v[h].sample;
      if (imin == 0) {
        imin = imax = v[h].i;
        jmin = jmax = v[h].j;
        kmin = kmax = v[h].k;
        mmin = mmax = v[h].m;
      } else {
        imin = std::min(imin, v[h].i);
        imax = std::max(imax, v[h].i);
        jmin = std::min(jmin, v[h].j);
        jmax = std::max(jmax, v[h].j);
        kmin = std::min(kmin, v[h].k);
        kmax = std::max(kmax, v[h].k);
        mmin = std::min(mmin, v[h].m);
        mmax = std::max(mmax, v[h].m);
      }
    }
    if (static_cast<float>(included) / static_cast<float>(samples) < kMinPosterior) continue;
    const int threshold =
        static_cast<int>(std::ceil(static_cast<float>(included) * kMinEndpointShare));
    const auto best = [&](int low, int high, int SampledDomain::*field, bool from_left) {
      counts.assign(static_cast<std::size_t>(high - low + 1), 0);
      for (std::size_t h = 0; h < v.size(); ++h)
        if (assignment[h] == c) ++counts[v[h].*field - low];
      return endpoint(counts, low, from_left, threshold);
    };
    Cluster cl;
    cl.i = best(imin, imax, &SampledDomain::i, true);
    cl.k = best(kmin, kmax, &SampledDomain::k, true);
    cl.j = best(jmin, jmax, &SampledDomain::j, false);
    cl.m = best(mmin, mmax, &SampledDomain::m, false);
    if (cl.i > cl.j || cl.k > cl.m) continue;  // no well-defined domain
    cl.prob = static_cast<float>(included) / static_cast<float>(samples);
    out.push_back(cl);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Cluster& a, const Cluster& b) { return a.i < b.i; });
  return out;
}

// p7_alidisplay_Create's lines of the trace steps first..last of an envelope `env`.
AlignmentDisplay display(const SearchProfile& profile, const Trace& tr, std::size_t first,
                         std::size_t last, const Residue* env) {
  const Alphabet& abc = *profile.alphabet;
  AlignmentDisplay out;
  for (std::size_t z = first; z <= last; ++z) {
    const TraceStep& step = tr[z];
    const int k = step.k;
    const bool insert = step.state == TraceState::I;
    if (!profile.structure.empty()) out.structure += insert ? '.' : profile.structure[k];
    if (!profile.reference.empty()) out.reference += insert ? '.' : profile.reference[k];
    if (step.state == TraceState::I) {
      out.model += '.';
      out.match += ' ';
      out.target += static_cast<char>(std::tolower(abc.symbol(env[step.i - 1])));
    } else if (step.state == TraceState::D) {
      out.model += profile.consensus[k];
      out.match += ' ';
      out.target += '-';
    } else {
      const Residue x = env[step.i - 1];
      const char consensus = profile.consensus[k];
      out.model += consensus;
      if (x == abc.digitize(consensus))
        out.match += consensus;
      else
        out.match += profile.forward.match[x][k] > 1.0f ? '+' : ' ';
      out.target += static_cast<char>(std::toupper(abc.symbol(x)));
    }
    if (step.state == TraceState::D) {
      out.posterior += '.';
    } else {
      const double p = static_cast<double>(step.pp) + 0.05;
      out.posterior += p >= 1.0 ? '*' : static_cast<char>('0' + static_cast<int>(p * 10.0));
    }
  }
  return out;
}

class Definer {
 public:
  Definer(const SearchProfile& profile, const DpProfile& dp, const Residue* dsq, int L,
          const WholeTargetParsers& parsers, const DomainSettings& settings, DomainWorkspace& ws)
      : p_(profile),
        s_(profile.forward),
        dp_(dp),
        dsq_(dsq),
        L_(L),
        parsers_(parsers),
        settings_(settings),
        ws_(ws),
        multihit_(SpecialMoves::multihit(profile.forward, L)),
        unihit_(SpecialMoves::unihit(L)) {}

  void run(TargetDomains& out) {
    DpMatrix& fwd = ws_.whole_forward;
    DpMatrix& bck = ws_.whole_backward;
    fwd.reset(s_.M, L_, false);
    bck.reset(s_.M, L_, false);
    // The canonical Forward's states are forward_dp's where its N/C/J moves are multihit_'s
    // (below 2^24 residues: ForwardScores::ncj).
    const ForwardScores::Length ncj = s_.ncj(L_);
    const bool from_canonical =
        parsers_.forward != nullptr && ncj.loop == multihit_.n_loop && ncj.move == multihit_.n_move;
    if (from_canonical) {
      fwd.set_parser_states(parsers_.forward);
      if (parsers_.backward != nullptr) {
        bck.set_parser_states(parsers_.backward);
        bck.own_scales = parsers_.backward_own_scales;
      } else {
        backward_dp(dp_, multihit_, dsq_, L_, fwd, bck, DeletePaths::scan);
      }
    } else {
      forward_dp(dp_, multihit_, dsq_, L_, fwd);
      backward_dp(dp_, multihit_, dsq_, L_, fwd, bck);
    }
    if (!decode_domain_boundaries(multihit_, fwd, bck, ws_.btot, ws_.etot, ws_.mocc)) return;
    if (decisions_near_thresholds()) {
      forward_dp(dp_, multihit_, dsq_, L_, fwd, DeletePaths::passes);
      backward_dp(dp_, multihit_, dsq_, L_, fwd, bck, DeletePaths::passes);
      if (!decode_domain_boundaries(multihit_, fwd, bck, ws_.btot, ws_.etot, ws_.mocc)) return;
    }
    ws_.null2_per_residue.assign(static_cast<std::size_t>(L_) + 1, 0.0f);
    out.expected = ws_.btot[L_];
    const std::vector<float>& mocc = ws_.mocc;
    const std::vector<float>& btot = ws_.btot;
    const std::vector<float>& etot = ws_.etot;
    int i = -1;
    bool triggered = false;
    for (int j = 1; j <= L_; ++j) {
      if (!triggered) {
        if (mocc[j] - (btot[j] - btot[j - 1]) < kRegionEdge)
          i = j;
        else if (i == -1)
          i = j;
        if (mocc[j] >= kRegionTrigger) triggered = true;
      } else if (mocc[j] - (etot[j] - etot[j - 1]) < kRegionEdge) {
        ++out.regions;
        if (is_multidomain_region(i, j)) {
          ++out.clustered;
          const std::vector<Cluster> clusters = sample_region(i, j);
          int last_j = 0;
          for (const Cluster& c : clusters) {
            if (c.i <= last_j) ++out.overlaps;
            ++out.envelopes;
            if (rescore_envelope(c.i, c.j, true, out)) last_j = c.j;
          }
        } else {
          ++out.envelopes;
          rescore_envelope(i, j, false, out);
        }
        i = -1;
        triggered = false;
      }
    }
  }

 private:
  // max over z of min(E expected in i..z, B expected in z..j), against rt3.
  float multidomain_value(int i, int j) const {
    float best = -1.0f;
    for (int z = i; z <= j; ++z) {
      const float n = std::min(ws_.etot[z] - ws_.etot[i - 1], ws_.btot[j] - ws_.btot[z - 1]);
      best = std::max(best, n);
    }
    return best;
  }
  bool is_multidomain_region(int i, int j) const { return multidomain_value(i, j) >= kMultiDomain; }

  // Whether a decision of run()'s region loop (replayed here without its work) compares a
  // value within kDecisionMargin of its threshold.
  bool decisions_near_thresholds() const {
    const std::vector<float>& mocc = ws_.mocc;
    const std::vector<float>& btot = ws_.btot;
    const std::vector<float>& etot = ws_.etot;
    const auto near = [](float value, float threshold) {
      return std::fabs(value - threshold) < kDecisionMargin;
    };
    int i = -1;
    bool triggered = false;
    for (int j = 1; j <= L_; ++j) {
      if (!triggered) {
        const float start = mocc[j] - (btot[j] - btot[j - 1]);
        if (near(start, kRegionEdge) || near(mocc[j], kRegionTrigger)) return true;
        if (start < kRegionEdge || i == -1) i = j;
        if (mocc[j] >= kRegionTrigger) triggered = true;
      } else {
        const float end = mocc[j] - (etot[j] - etot[j - 1]);
        if (near(end, kRegionEdge)) return true;
        if (end < kRegionEdge) {
          if (near(multidomain_value(i, j), kMultiDomain)) return true;
          i = -1;
          triggered = false;
        }
      }
    }
    return false;
  }

  // region_trace_ensemble: samples the region's traces (multihit, the whole target's
  // length model), sets the region's null2 scores from them, and returns the clusters'
  // envelopes with dominated ones removed.
  std::vector<Cluster> sample_region(int ireg, int jreg) {
    const int Lr = jreg - ireg + 1;
    const Residue* region = dsq_ + (ireg - 1);
    std::vector<float>& n2 = ws_.null2_per_residue;
    std::fill(n2.begin() + ireg, n2.begin() + jreg + 1, 0.0f);
    ws_.forward.reset(s_.M, Lr, true);
    forward_dp(dp_, multihit_, region, Lr, ws_.forward, DeletePaths::passes);
    ws_.random.reseed(settings_.seed);
    std::vector<SampledDomain> sampled;
    std::vector<float> odds;
    Trace tr;
    std::vector<TraceDomain> domains;
    for (int t = 0; t < kSamples; ++t) {
      stochastic_trace(ws_.random, s_, multihit_, ws_.forward, tr);
      index_trace(tr, domains);
      int pos = 1;
      for (const TraceDomain& d : domains) {
        sampled.push_back({t, d.i + ireg - 1, d.j + ireg - 1, d.k, d.m});
        null2_by_trace(dp_, *p_.alphabet, tr, d.from, d.to, odds);
        for (; pos <= d.i; ++pos) n2[ireg + pos - 1] += 1.0f;
        for (; pos <= d.j; ++pos) n2[ireg + pos - 1] += odds[region[pos - 1]];
      }
      for (; pos <= Lr; ++pos) n2[ireg + pos - 1] += 1.0f;
    }
    for (int pos = ireg; pos <= jreg; ++pos)
      n2[pos] = std::log(n2[pos] / static_cast<float>(kSamples));
    std::vector<Cluster> clusters = cluster_samples(sampled, kSamples);
    // Of two envelopes overlapping by 80% or more of the shorter, the less probable goes.
    std::vector<bool> dominated(clusters.size(), false);
    for (std::size_t d = 0; d < clusters.size(); ++d) {
      for (std::size_t d2 = d + 1; d2 < clusters.size(); ++d2) {
        const Cluster& a = clusters[d];
        const Cluster& b = clusters[d2];
        const int overlap = std::min(a.j, b.j) - std::max(a.i, b.i) + 1;
        if (overlap == 0) break;
        const int n = std::min(a.j - a.i + 1, b.j - b.i + 1);
        if (static_cast<float>(overlap) / static_cast<float>(n) >= 0.8f) {
          if (a.prob > b.prob)
            dominated[d2] = true;
          else
            dominated[d] = true;
        }
      }
    }
    std::vector<Cluster> kept;
    for (std::size_t d = 0; d < clusters.size(); ++d)
      if (!dominated[d]) kept.push_back(clusters[d]);
    return kept;
  }

  // rescore_isolated_domain: the envelope i..j alone (unihit, the whole target's length
  // model), its optimal-accuracy alignment and null2 correction. False where posterior
  // decoding overflows (no domain).
  bool rescore_envelope(int i, int j, bool null2_done, TargetDomains& out) {
    const int Ld = j - i + 1;
    const Residue* env = dsq_ + (i - 1);
    DpMatrix& fwd = ws_.forward;
    DpMatrix& bck = ws_.backward;
    fwd.reset(s_.M, Ld, true);
    bck.reset(s_.M, Ld, true);
    Domain dom;
    dom.envelope_nats = forward_dp(dp_, unihit_, env, Ld, fwd);
    backward_dp(dp_, unihit_, env, Ld, fwd, bck);
    if (!decode_posteriors(unihit_, fwd, bck, bck)) return false;
    const DpMatrix& pp = bck;
    dom.expected_correct = optimal_accuracy(dp_, unihit_, pp, fwd);
    const Trace tr = optimal_accuracy_trace(s_, unihit_, pp, fwd);
    std::size_t first = tr.size(), last = 0;
    for (std::size_t z = 0; z < tr.size(); ++z) {
      if (tr[z].state != TraceState::M) continue;
      if (first == tr.size()) first = z;
      last = z;
    }
    if (first == tr.size()) return false;  // no M state: HMMER makes no alignment either
    dom.alignment = display(p_, tr, first, last, env);
    dom.hmm_from = tr[first].k;
    dom.hmm_to = tr[last].k;
    dom.ali_from = tr[first].i + i - 1;
    dom.ali_to = tr[last].i + i - 1;
    std::vector<float>& n2 = ws_.null2_per_residue;
    if (!null2_done) {
      std::vector<float> odds;
      null2_by_expectation(s_, *p_.alphabet, pp, odds);
      for (int pos = i; pos <= j; ++pos) n2[pos] = std::log(odds[dsq_[pos - 1]]);
    }
    float correction = 0.0f;
    for (int pos = i; pos <= j; ++pos) correction += n2[pos];
    dom.null2_nats = correction;
    dom.env_from = i;
    dom.env_to = j;
    out.domains.push_back(std::move(dom));
    return true;
  }

  const SearchProfile& p_;
  const ForwardScores& s_;
  const DpProfile& dp_;
  const Residue* dsq_;
  int L_;
  const WholeTargetParsers& parsers_;
  const DomainSettings& settings_;
  DomainWorkspace& ws_;
  SpecialMoves multihit_, unihit_;
};

// esl_vec_FSum: a float sum with Kahan's compensation.
float compensated_sum(const std::vector<float>& v) {
  float sum = 0.0f, c = 0.0f;
  for (float x : v) {
    const float y = x - c;
    const float t = sum + y;
    c = (t - sum) - y;
    sum = t;
  }
  return sum;
}

// log(omega) + bias, through p7_FLogsum with 0: the null2 hypothesis's prior-weighted bias.
float null2_bias(float correction_nats) {
  return hmmer_logsum(0.0f, static_cast<float>(std::log(kNull2Omega) + correction_nats));
}

}  // namespace

float hmmer_logsum(float a, float b) {
  const float high = std::max(a, b), low = std::min(a, b);
  if (low == -std::numeric_limits<float>::infinity() || high - low >= 15.7f) return high;
  const int step = static_cast<int>((high - low) * 1000.0f);
  return high + static_cast<float>(std::log(1.0 + std::exp(-static_cast<double>(step) / 1000.0)));
}

TargetDomains define_domains(const SearchProfile& profile, const DpProfile& dp, const Residue* dsq,
                             int L, float forward_nats, float null_nats,
                             const DomainSettings& settings, DomainWorkspace& workspace,
                             const WholeTargetParsers& parsers) {
  TargetDomains out;
  if (L <= 0) return out;
  const FlushDenormals flush_denormals;  // HMMER's mode, and no slow denormal arithmetic
  Definer(profile, dp, dsq, L, parsers, settings, workspace).run(out);
  if (out.domains.empty()) return out;
  const double log2 = kLog2;
  const auto survival = [&](float bits) {
    return exponential_log_survival(bits, profile.forward_tau, profile.forward_lambda);
  };
  // The whole target's score, less the null2 bias of its envelopes.
  const float seq_bias =
      settings.null2 ? null2_bias(compensated_sum(workspace.null2_per_residue)) : 0.0f;
  float pre_score = static_cast<float>((forward_nats - null_nats) / log2);
  float seq_score = static_cast<float>((forward_nats - (null_nats + seq_bias)) / log2);
  // The reconstruction: the sum of the domains that score above their bias.
  float sum_nats = 0.0f, domain_bias = 0.0f;
  int covered = 0;
  for (const Domain& d : out.domains) {
    if (settings.null2 ? d.envelope_nats - d.null2_nats > 0.0f : d.envelope_nats > 0.0f) {
      sum_nats += d.envelope_nats;
      covered += d.env_to - d.env_from + 1;
      domain_bias += d.null2_nats;
    }
  }
  const float sum_bias = settings.null2 ? null2_bias(domain_bias) : 0.0f;
  const double flank =
      std::log(static_cast<double>(static_cast<float>(L) / static_cast<float>(L + 3)));
  sum_nats = static_cast<float>(sum_nats + (L - covered) * flank);
  const float pre_sum = static_cast<float>((sum_nats - null_nats) / log2);
  const float sum_score = static_cast<float>((sum_nats - (null_nats + sum_bias)) / log2);
  if (covered > 0 && sum_score > seq_score) {
    seq_score = sum_score;
    pre_score = pre_sum;
  }
  out.score_bits = seq_score;
  out.bias_bits = pre_score - seq_score;
  out.log_pvalue = survival(seq_score);
  for (std::size_t k = 0; k < out.domains.size(); ++k) {
    Domain& d = out.domains[k];
    const int Ld = d.env_to - d.env_from + 1;
    const float with_flanks = static_cast<float>(d.envelope_nats + (L - Ld) * flank);
    const float bias_nats = settings.null2 ? null2_bias(d.null2_nats) : 0.0f;
    d.bits = static_cast<float>((with_flanks - (null_nats + bias_nats)) / log2);
    d.bias_bits = static_cast<float>(bias_nats / log2);
    d.log_pvalue = survival(d.bits);
    if (d.bits > out.domains[out.best_domain].bits) out.best_domain = static_cast<int>(k);
  }
  return out;
}

}  // namespace duet
