// Device layouts of the MSV, Viterbi and canonical Forward score systems (see hmm_gpu.hpp),
// built from the core score arrays in one place, and their inverses for the round-trip tests. Host
// code only: compiled with or without CUDA.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "device/hmmsearch/hmm_gpu.hpp"

namespace duet::device {

namespace {
// Index of the value of node `node` (0-based within the padded model) for residue x.
std::size_t msv_value_index(const MsvDeviceLayout& l, int x, int node) {
  const int N = l.nodes_per_thread;
  const int half_nodes = N / 2;  // registers per thread, two nodes each
  const int tile_nodes = l.group_threads * N;
  const int tile = node / tile_nodes;
  const int in_tile = node % tile_nodes;
  const int thread = in_tile / N;
  const int in_thread = in_tile % N;
  const int reg = in_thread % half_nodes;   // register j
  const int lane = in_thread / half_nodes;  // 0: low 16 bits, 1: high 16 bits
  const int read = reg / 4;                 // which 16-byte read
  const int word = reg % 4;                 // 32-bit word inside it
  // [residue][tile][read][thread][word][lane]
  std::size_t i = static_cast<std::size_t>(x) * l.tiles + tile;
  i = (i * (N / 8) + read) * l.group_threads + thread;
  return (i * 4 + word) * 2 + lane;
}
}  // namespace

int msv_group_threads(int M) {
  if (M <= 8 * kMsvNodesPerThread) return 8;
  if (M <= 16 * kMsvNodesPerThread) return 16;
  return 32;
}

int msv_nodes_per_thread(int M, int group_threads) {
  const auto padded = [&](int n) {
    const int tile = group_threads * n;
    return static_cast<long long>(std::max(1, (M + tile - 1) / tile)) * tile;
  };
  return 10 * padded(32) <= 11 * padded(16) ? 32 : 16;
}

MsvDeviceLayout build_msv_device_layout(const MsvScores& msv, int group_threads,
                                        int nodes_per_thread) {
  if (group_threads != 8 && group_threads != 16 && group_threads != 32) {
    throw std::invalid_argument("MSV device layout: group of 8, 16 or 32 threads");
  }
  if (nodes_per_thread != 16 && nodes_per_thread != 32) {
    throw std::invalid_argument("MSV device layout: 16 or 32 nodes per thread");
  }
  MsvDeviceLayout l;
  l.M = msv.M;
  l.Kp = static_cast<int>(msv.cost.size());
  l.group_threads = group_threads;
  l.nodes_per_thread = nodes_per_thread;
  const int tile_nodes = group_threads * nodes_per_thread;
  l.tiles = std::max(1, (msv.M + tile_nodes - 1) / tile_nodes);
  l.base = msv.base;
  l.bias = msv.bias;
  l.tec = msv.tec;
  l.tbm = msv.tbm;
  // Kp residue rows, then the padding row Kp.
  l.words.assign(static_cast<std::size_t>(l.Kp + 1) * l.tiles * tile_nodes, kMsvPadScore);
  for (int x = 0; x < l.Kp; ++x) {
    for (int k = 1; k <= msv.M; ++k) {
      l.words[msv_value_index(l, x, k - 1)] =
          static_cast<std::int16_t>(int{msv.bias} - msv.cost[x][k]);
    }
  }
  const std::size_t row = static_cast<std::size_t>(msv.M) + 1;
  l.costs.assign(l.Kp * row, 255);
  for (int x = 0; x < l.Kp; ++x) {
    for (int k = 1; k <= msv.M; ++k) l.costs[x * row + k] = msv.cost[x][k];
  }
  return l;
}

std::vector<std::vector<std::uint8_t>> msv_costs_from_device_layout(const MsvDeviceLayout& l) {
  std::vector<std::vector<std::uint8_t>> cost(l.Kp, std::vector<std::uint8_t>(l.M + 1, 255));
  for (int x = 0; x < l.Kp; ++x) {
    for (int k = 1; k <= l.M; ++k) {
      cost[x][k] = static_cast<std::uint8_t>(int{l.bias} - l.words[msv_value_index(l, x, k - 1)]);
    }
  }
  return cost;
}

ViterbiDeviceLayout build_viterbi_device_layout(const ViterbiScores& vit) {
  ViterbiDeviceLayout l;
  const int M = vit.M;
  l.M = M;
  l.Kp = static_cast<int>(vit.match.size());
  l.base = vit.base;
  l.e_loop = vit.e_loop;
  l.e_move = vit.e_move;
  l.dd_bound = vit.dd_bound;
  const std::size_t row = static_cast<std::size_t>(M) + 1;
  l.match.assign(static_cast<std::size_t>(l.Kp) * row, -32768);
  for (int x = 0; x < l.Kp; ++x) {
    for (int k = 1; k <= M; ++k) l.match[x * row + k] = vit.match[x][k];
  }
  l.nodes.assign(kViterbiNodeFields * row, -32768);
  for (int k = 1; k <= M; ++k) {
    std::int16_t* n = &l.nodes[kViterbiNodeFields * static_cast<std::size_t>(k)];
    n[0] = vit.bm[k];
    n[1] = vit.mm[k];
    n[2] = vit.im[k];
    n[3] = vit.dm[k];
    n[4] = vit.md[k];
    n[5] = vit.mi[k];
    n[6] = vit.ii[k];
    n[7] = k >= 2 ? vit.dd[k - 1] : std::int16_t{-32768};
    if (k < M && vit.dd[k] > 0) {
      throw std::invalid_argument("Viterbi device layout: positive D->D score at node " +
                                  std::to_string(k));
    }
  }
  return l;
}

namespace {

void check_strip_width(const ViterbiDeviceLayout& l, int nodes_per_lane) {
  if (nodes_per_lane <= 0 || nodes_per_lane % 4 != 0 || l.M > 32 * nodes_per_lane) {
    throw std::invalid_argument("Viterbi strip tables: a model of " + std::to_string(l.M) +
                                " nodes in strips of " + std::to_string(nodes_per_lane));
  }
}

}  // namespace

std::vector<std::int32_t> viterbi_strip_emissions(const ViterbiDeviceLayout& l,
                                                  int nodes_per_lane) {
  check_strip_width(l, nodes_per_lane);
  const std::size_t S = static_cast<std::size_t>(nodes_per_lane);
  const std::size_t row = static_cast<std::size_t>(l.M) + 1;
  std::vector<std::int32_t> e(static_cast<std::size_t>(l.Kp) * 32 * S, kViterbiStripPadEmission);
  for (std::size_t x = 0; x < static_cast<std::size_t>(l.Kp); ++x) {
    for (std::size_t k = 1; k < row; ++k) {
      const std::size_t lane = (k - 1) / S, j = (k - 1) % S, q = j / 4, t = j % 4;
      e[((x * (S / 4) + q) * 32 + lane) * 4 + t] = l.match[x * row + k];
    }
  }
  return e;
}

std::vector<std::int16_t> viterbi_strip_records(const ViterbiDeviceLayout& l, int nodes_per_lane) {
  check_strip_width(l, nodes_per_lane);
  const std::size_t S = static_cast<std::size_t>(nodes_per_lane);
  std::vector<std::int16_t> r(32 * S * kViterbiNodeFields, -32768);
  for (std::size_t k = 1; k <= static_cast<std::size_t>(l.M); ++k) {
    const std::size_t lane = (k - 1) / S, j = (k - 1) % S;
    std::copy_n(&l.nodes[k * kViterbiNodeFields], kViterbiNodeFields,
                &r[(j * 32 + lane) * kViterbiNodeFields]);
  }
  return r;
}

bool viterbi_transitions_nonpositive(const ViterbiDeviceLayout& l) {
  return std::all_of(l.nodes.begin(), l.nodes.end(), [](std::int16_t v) { return v <= 0; });
}

ViterbiScores viterbi_scores_from_device_layout(const ViterbiDeviceLayout& l, float scale) {
  ViterbiScores v;
  const int M = l.M;
  v.M = M;
  v.scale = scale;
  v.base = l.base;
  v.e_loop = l.e_loop;
  v.e_move = l.e_move;
  v.dd_bound = l.dd_bound;
  const std::size_t row = static_cast<std::size_t>(M) + 1;
  v.match.assign(l.Kp, std::vector<std::int16_t>(row, -32768));
  for (int x = 0; x < l.Kp; ++x) {
    for (int k = 1; k <= M; ++k) v.match[x][k] = l.match[x * row + k];
  }
  for (auto* a : {&v.bm, &v.mm, &v.im, &v.dm, &v.md, &v.mi, &v.ii, &v.dd}) a->assign(row, -32768);
  for (int k = 1; k <= M; ++k) {
    const std::int16_t* n = &l.nodes[kViterbiNodeFields * static_cast<std::size_t>(k)];
    v.bm[k] = n[0];
    v.mm[k] = n[1];
    v.im[k] = n[2];
    v.dm[k] = n[3];
    v.md[k] = n[4];
    v.mi[k] = n[5];
    v.ii[k] = n[6];
    if (k >= 2) v.dd[k - 1] = n[7];
  }
  // dd[M] is not part of the layout (no node M+1): the core arrays hold -32768 there.
  v.dd[M] = -32768;
  return v;
}

GpuKernelChoice resolve_kernel_choice(GpuKernelChoice choice, int M) {
  if (choice.msv_group_threads == 0) choice.msv_group_threads = msv_group_threads(M);
  const int g = choice.msv_group_threads;
  if (g != 8 && g != 16 && g != 32) {
    throw std::invalid_argument("MSV thread group of " + std::to_string(g) +
                                " threads (8, 16 or 32)");
  }
  if (choice.msv_nodes_per_thread == 0) choice.msv_nodes_per_thread = msv_nodes_per_thread(M, g);
  const int n = choice.msv_nodes_per_thread;
  if (n != 16 && n != 32) {
    throw std::invalid_argument("MSV " + std::to_string(n) + " nodes per thread (16 or 32)");
  }
  return choice;
}

GpuStrategy parse_gpu_strategy(const std::string& name) {
  if (name == "warp") return GpuStrategy::warp_groups;
  if (name == "thread") return GpuStrategy::thread_per_target;
  if (name == "strip") return GpuStrategy::warp_strip;
  throw std::invalid_argument("--gpu-strategy: expected 'warp', 'thread' or 'strip', got '" + name +
                              "'");
}

std::string gpu_strategy_name(GpuStrategy s) {
  switch (s) {
    case GpuStrategy::warp_groups:
      return "warp";
    case GpuStrategy::thread_per_target:
      return "thread";
    case GpuStrategy::warp_strip:
      return "strip";
  }
  return "warp";
}

CanonicalDeviceLayout build_canonical_device_layout(const StripedForwardProfile& striped) {
  constexpr int lanes = 4;
  if (striped.lanes != lanes) {
    throw std::invalid_argument("canonical Forward device layout: a profile striped in " +
                                std::to_string(striped.lanes) + " lanes (4 expected)");
  }
  CanonicalDeviceLayout l;
  l.M = striped.M;
  l.Kp = striped.Kp;
  l.Q = striped.Q;
  l.e_loop = striped.e_loop;
  l.e_move = striped.e_move;
  l.match.assign(striped.match.begin(), striped.match.end());
  l.dd_prefix.assign(striped.dd_prefix.begin(), striped.dd_prefix.end());
  l.nodes.assign(static_cast<std::size_t>(l.Q) * lanes * kCanonicalNodeFields, 0.0f);
  const std::size_t row = static_cast<std::size_t>(l.Q) * lanes;
  for (int q = 0; q < l.Q; ++q) {
    for (int lane = 0; lane < lanes; ++lane) {
      float* out =
          l.nodes.data() + (static_cast<std::size_t>(q) * lanes + lane) * kCanonicalNodeFields;
      for (int t = 0; t < kVitPerQ; ++t) {
        out[t] = striped.transitions[(static_cast<std::size_t>(q) * kVitPerQ + t) * lanes + lane];
      }
      out[kVitPerQ] =
          striped.transitions[kVitPerQ * row + static_cast<std::size_t>(q) * lanes + lane];
    }
  }
  return l;
}

StripedForwardProfile striped_profile_from_canonical_layout(const CanonicalDeviceLayout& l) {
  constexpr int lanes = 4;
  StripedForwardProfile s;
  s.M = l.M;
  s.Kp = l.Kp;
  s.lanes = lanes;
  s.Q = l.Q;
  s.e_loop = l.e_loop;
  s.e_move = l.e_move;
  s.match.assign(l.match.begin(), l.match.end());
  s.dd_prefix.assign(l.dd_prefix.begin(), l.dd_prefix.end());
  const std::size_t row = static_cast<std::size_t>(l.Q) * lanes;
  s.transitions.assign(row * (kVitPerQ + 1), 0.0f);
  for (int q = 0; q < l.Q; ++q) {
    for (int lane = 0; lane < lanes; ++lane) {
      const float* in =
          l.nodes.data() + (static_cast<std::size_t>(q) * lanes + lane) * kCanonicalNodeFields;
      for (int t = 0; t < kVitPerQ; ++t) {
        s.transitions[(static_cast<std::size_t>(q) * kVitPerQ + t) * lanes + lane] = in[t];
      }
      s.transitions[kVitPerQ * row + static_cast<std::size_t>(q) * lanes + lane] = in[kVitPerQ];
    }
  }
  return s;
}

}  // namespace duet::device
