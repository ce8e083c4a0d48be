// Kernel-only throughput of PaPaRa's GPU scoring kernels (src/device/papara/papara_gpu.hpp)
// on synthetic data: a profile of --columns columns over --edges edges (states mostly one
// base, some IUPAC sets and gap states, --flags of the columns flagged), --queries queries of
// --min-length to --max-length residues (mostly single bases), scored against every edge.
// Prints, per kernel and strip width, the median kernel time of --repeat calls and T cells/s
// (cells = columns x residues x edges, as PaPaRa counts them), after checking the first
// --check queries' scores on the first and last 256 edges against score_edges_scalar (exit 1
// on any difference). --alphabet protein: protein profiles (states mostly one amino acid,
// some sets and the gap state) and queries of amino acids, checked against
// score_edges_protein_scalar; the protein kernel is the only one (--kernel all: it).
//
//   papara_gpu_bench [--columns 1500] [--edges 10000] [--queries 1000] [--min-length 100]
//                    [--max-length 150] [--flags 0.1] [--alphabet dna|protein]
//                    [--kernel auto|base-rows|match-mask|protein|all]
//                    [--width 0|12|16|20|24|all] [--repeat 3] [--check 2] [--seed 1]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/papara/papara_kernel.hpp"
#include "device/gpu_info.hpp"
#include "device/papara/papara_gpu.hpp"

namespace {

using duet::device::papara::Kernel;

struct Options {
  int columns = 1500, edges = 10000, queries = 1000, min_length = 100, max_length = 150;
  double flags = 0.1;
  std::string alphabet = "dna", kernel = "auto", width = "0";
  int repeat = 3, check = 2;
  std::uint64_t seed = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--columns")
      o.columns = std::stoi(value);
    else if (key == "--edges")
      o.edges = std::stoi(value);
    else if (key == "--queries")
      o.queries = std::stoi(value);
    else if (key == "--min-length")
      o.min_length = std::stoi(value);
    else if (key == "--max-length")
      o.max_length = std::stoi(value);
    else if (key == "--flags")
      o.flags = std::stod(value);
    else if (key == "--alphabet")
      o.alphabet = value;
    else if (key == "--kernel")
      o.kernel = value;
    else if (key == "--width")
      o.width = value;
    else if (key == "--repeat")
      o.repeat = std::stoi(value);
    else if (key == "--check")
      o.check = std::stoi(value);
    else if (key == "--seed")
      o.seed = std::stoull(value);
    else {
      std::fprintf(stderr, "papara_gpu_bench: unknown option %s\n", key.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (duet::device::list_gpus().gpus.empty()) {
    std::fprintf(stderr, "papara_gpu_bench: no CUDA device\n");
    return 2;
  }
  if (o.alphabet != "dna" && o.alphabet != "protein") {
    std::fprintf(stderr, "papara_gpu_bench: --alphabet dna or protein\n");
    return 2;
  }
  const bool protein = o.alphabet == "protein";
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> unit(0, 1);
  const int stride = (o.edges + duet::papara::kEdgeAlign - 1) / duet::papara::kEdgeAlign *
                     duet::papara::kEdgeAlign;
  const std::size_t n_cells =
      static_cast<std::size_t>(o.columns) * static_cast<std::size_t>(stride);
  std::vector<std::uint8_t> cells(protein ? 0 : n_cells);
  std::vector<std::uint32_t> protein_cells(protein ? n_cells : 0);
  for (int j = 0; j < o.columns; ++j) {
    const std::size_t row = static_cast<std::size_t>(j) * static_cast<std::size_t>(stride);
    for (int e = 0; e < stride; ++e) {
      const std::size_t at = row + static_cast<std::size_t>(e);
      if (e >= o.edges) {  // padding edges repeat the last edge
        if (protein) {
          protein_cells[at] = protein_cells[row + static_cast<std::size_t>(o.edges - 1)];
        } else {
          cells[at] = cells[row + static_cast<std::size_t>(o.edges - 1)];
        }
        continue;
      }
      const double r = unit(rng);
      const bool flagged = unit(rng) < o.flags;
      if (protein) {
        const std::uint32_t state =
            r < 0.8   ? 1u << (rng() % 20)
            : r < 0.9 ? duet::papara::kProteinStateMask
                      : 1u + static_cast<std::uint32_t>(rng() % duet::papara::kProteinStateMask);
        protein_cells[at] = state | (flagged ? duet::papara::kProteinFlagBit : 0u);
      } else {
        const unsigned state = r < 0.8   ? 1u << (rng() % 4)
                               : r < 0.9 ? 15u
                                         : static_cast<unsigned>(1 + rng() % 15);
        cells[at] = static_cast<std::uint8_t>(state | (flagged ? duet::papara::kFlagBit : 0));
      }
    }
  }
  const duet::papara::ProfileView profiles{o.columns, o.edges, stride,
                                           protein ? nullptr : cells.data(),
                                           protein ? protein_cells.data() : nullptr};
  std::vector<std::uint8_t> residues;
  std::vector<std::int64_t> offsets{0};
  for (int q = 0; q < o.queries; ++q) {
    const int length =
        o.min_length +
        static_cast<int>(rng() % static_cast<unsigned>(o.max_length - o.min_length + 1));
    for (int i = 0; i < length; ++i) {
      residues.push_back(static_cast<std::uint8_t>(protein            ? rng() % 20
                                                   : rng() % 100 != 0 ? 1u << (rng() % 4)
                                                                      : 1 + rng() % 15));
    }
    offsets.push_back(static_cast<std::int64_t>(residues.size()));
  }
  const double cells_per_call = static_cast<double>(o.columns) *
                                static_cast<double>(residues.size()) * static_cast<double>(o.edges);
  const duet::papara::Scoring scoring;  // PaPaRa's default -3:-1:2:-3

  std::vector<Kernel> kernels;
  if (!protein && (o.kernel == "all" || o.kernel == "base-rows"))
    kernels.push_back(Kernel::base_rows);
  if (!protein && (o.kernel == "all" || o.kernel == "match-mask"))
    kernels.push_back(Kernel::match_mask);
  if (protein && (o.kernel == "all" || o.kernel == "protein")) kernels.push_back(Kernel::protein);
  if (o.kernel == "auto") kernels.push_back(Kernel::automatic);
  std::vector<int> widths;
  if (o.width == "all") {
    widths.assign(std::begin(duet::device::papara::kStripWidths),
                  std::end(duet::device::papara::kStripWidths));
  } else {
    widths.push_back(std::stoi(o.width));
  }

  duet::device::papara::PaparaGpu gpu(0, profiles);
  std::printf(
      "# %s: %d columns, %d edges, %d queries of %d..%d (%zu residues), %.3g cells per call\n",
      gpu.name().c_str(), o.columns, o.edges, o.queries, o.min_length, o.max_length,
      residues.size(), cells_per_call);
  std::printf("%-12s %6s %10s %10s %9s %s\n", "kernel", "width", "median_s", "Tcells/s", "launches",
              "check");
  std::fflush(stdout);
  // The scores of one alphabet: int16 for DNA, int32 for protein, against that alphabet's
  // scalar reference.
  const auto measure = [&](auto& out, auto& reference, auto scalar) {
    using Score = typename std::remove_reference_t<decltype(out)>::value_type;
    out.resize(static_cast<std::size_t>(o.queries) * static_cast<std::size_t>(o.edges));
    reference.resize(static_cast<std::size_t>(o.edges));
    bool all_equal = true;
    for (Kernel kernel : kernels) {
      for (int width : widths) {
        gpu.set_kernel(kernel, width);
        // Warm-up on one query and 64 edges (module load), then the timed calls.
        gpu.score(residues.data(), offsets.data(), 1, 0, std::min(o.edges, 64), scoring,
                  out.data());
        std::vector<double> seconds;
        for (int r = 0; r < o.repeat; ++r) {
          std::fill(out.begin(), out.end(), static_cast<Score>(0x7b7b));
          gpu.score(residues.data(), offsets.data(), static_cast<std::size_t>(o.queries), 0,
                    o.edges, scoring, out.data());
          seconds.push_back(gpu.last_kernel_seconds());
        }
        std::sort(seconds.begin(), seconds.end());
        const double median = seconds[seconds.size() / 2];
        // The first --check queries against the first and last 256 edges.
        int mismatches = 0;
        for (int q = 0; q < std::min(o.check, o.queries); ++q) {
          const auto at = [&](int i) { return offsets[static_cast<std::size_t>(i)]; };
          const std::span<const std::uint8_t> query(residues.data() + at(q),
                                                    static_cast<std::size_t>(at(q + 1) - at(q)));
          for (int first : {0, std::max(256, o.edges - 256)}) {
            const int count = std::min(256, o.edges - first);
            if (count <= 0) continue;
            scalar(query, profiles, first, count, scoring, reference.data());
            for (int k = 0; k < count; ++k) {
              const std::size_t i =
                  static_cast<std::size_t>(q) * static_cast<std::size_t>(o.edges) +
                  static_cast<std::size_t>(first + k);
              mismatches += out[i] != reference[static_cast<std::size_t>(k)];
            }
          }
        }
        all_equal = all_equal && mismatches == 0;
        std::printf("%-12s %6d %10.4f %10.3f %9d %s\n",
                    duet::device::papara::kernel_name(gpu.last_kernel()), gpu.last_strip_width(),
                    median, cells_per_call / median * 1e-12, gpu.last_launches(),
                    mismatches == 0 ? "equal" : (std::to_string(mismatches) + " differ").c_str());
        std::fflush(stdout);
      }
    }
    return all_equal;
  };
  std::vector<std::int16_t> out, reference;
  std::vector<std::int32_t> protein_out, protein_reference;
  const bool all_equal =
      protein ? measure(protein_out, protein_reference, &duet::papara::score_edges_protein_scalar)
              : measure(out, reference, &duet::papara::score_edges_scalar);
  return all_equal ? 0 : 1;
}
