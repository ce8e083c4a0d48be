// The reference as PaPaRa 2.5 sees it (SPEC.md §1, §2): the unrooted tree with its edges
// numbered as PaPaRa numbers them, the reference rows (tips) with all-gap columns removed,
// the extra queries (rows that are not tips), and the ancestral profile of every edge in
// either gap-flag mode.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/papara/papara_input.hpp"
#include "core/papara/papara_kernel.hpp"

namespace duet::papara {

enum class GapMode {
  probabilistic,  // PaPaRa's default: flags from a two-state gap model along the tree
  cgap,           // -c: parsimony gap flags
};

// A node of the unrooted tree. Slots: 0 faces the parent, 1 and 2 the first and second
// Newick children (the start node's slot 0 is its third neighbour; see Reference::start).
struct Node {
  std::string name;  // tips; "" for inner nodes
  int row = -1;      // a tip's reference row
  int degree = 0;
  std::array<int, 3> neighbor{-1, -1, -1};
  std::array<double, 3> length{0, 0, 0};
};

// Edge e joins `node` (the side away from the start node) and `parent`.
struct Edge {
  int node = -1, parent = -1;
  double length = 0;
};

struct Reference {
  std::string tree_path, alignment_path;
  std::vector<Node> nodes;  // the Newick's nodes in file order, less a removed binary root
  int start = 0;            // where the numbering starts (the root, or a rooted tree's left child)
  std::vector<Edge> edges;  // PaPaRa's order

  Alphabet alphabet = Alphabet::dna;
  std::vector<std::string> names;  // reference rows (tips), in file order
  std::vector<std::string> rows;   // their original characters, kept columns only
  // Their states, kept columns only: DNA state sets (papara_input.hpp), or protein codes
  // (protein_reference_code).
  std::vector<std::vector<std::uint8_t>> states;
  std::int64_t input_columns = 0;  // the alignment's columns before removal
  double gap_fraction = 0;         // literal '-' over rows x kept columns

  int columns() const { return states.empty() ? 0 : static_cast<int>(states.front().size()); }
};

// The reference of `tree` and `alignment`; the alignment's rows that are not tips become
// `extra_queries` (in file order). InputError for a tip without a row, a non-binary inner
// node, a bad character in a reference row, or a tree of fewer than three tips.
Reference make_reference(const Tree& tree, const Alignment& alignment,
                         std::vector<Query>& extra_queries, Alphabet alphabet = Alphabet::dna);

// The profiles of every edge (papara_kernel.hpp's layout), computed on all cores.
// InputError (the tree's file) for zero-length sibling branches that make the gap model's
// partials 0/0 (PaPaRa 2.5 aborts there).
struct Profiles {
  int columns = 0, edges = 0, edge_stride = 0;
  Alphabet alphabet = Alphabet::dna;
  std::vector<std::uint8_t> cells;           // DNA
  std::vector<std::uint32_t> protein_cells;  // protein
  ProfileView view() const {
    return {columns,
            edges,
            edge_stride,
            cells.empty() ? nullptr : cells.data(),
            protein_cells.empty() ? nullptr : protein_cells.data(),
            alphabet};
  }
};

Profiles build_profiles(const Reference& reference, GapMode mode);

}  // namespace duet::papara
