// The reference, its edges and their profiles (see papara_reference.hpp).
#include "core/papara/papara_reference.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/error.hpp"
#include "core/parallel_parts.hpp"

namespace duet::papara {

namespace {

// The unrooted tree of `tree` (nodes renumbered without a removed binary root) and its
// edges in PaPaRa's order.
void build_tree(const Tree& tree, Reference& r, std::vector<std::int64_t>& node_lines) {
  const auto& in = tree.nodes;
  const TreeNode& root = in.front();
  if (root.children.size() < 2 || root.children.size() > 3)
    throw InputError(tree.path, root.line,
                     "the root has " + std::to_string(root.children.size()) +
                         " children; PaPaRa takes a binary tree with a root of 2 or 3");
  for (std::size_t k = 1; k < in.size(); ++k) {
    const std::size_t c = in[k].children.size();
    if (c != 0 && c != 2)
      throw InputError(
          tree.path, in[k].line,
          "an inner node has " + std::to_string(c) + " children; PaPaRa takes a binary tree");
  }
  const bool rooted = root.children.size() == 2;
  // New numbers: the Newick order, less the root of a rooted tree.
  std::vector<int> number(in.size(), -1);
  for (std::size_t k = rooted ? 1 : 0; k < in.size(); ++k) {
    number[k] = static_cast<int>(r.nodes.size());
    r.nodes.emplace_back();
    r.nodes.back().name = in[k].name;
    node_lines.push_back(in[k].line);
  }
  const auto link = [&](int a, int slot_a, int b, int slot_b, double length) {
    Node& na = r.nodes[static_cast<std::size_t>(a)];
    Node& nb = r.nodes[static_cast<std::size_t>(b)];
    na.neighbor[static_cast<std::size_t>(slot_a)] = b;
    na.length[static_cast<std::size_t>(slot_a)] = length;
    nb.neighbor[static_cast<std::size_t>(slot_b)] = a;
    nb.length[static_cast<std::size_t>(slot_b)] = length;
  };
  // Every node below the root: slot 0 its parent, slots 1 and 2 its children.
  for (std::size_t k = 1; k < in.size(); ++k) {
    const int parent = in[k].parent;
    if (parent == 0) continue;  // the root's children, below
    const auto& siblings = in[static_cast<std::size_t>(parent)].children;
    const int slot = siblings[0] == static_cast<int>(k) ? 1 : 2;
    link(number[k], 0, number[static_cast<std::size_t>(parent)], slot, in[k].length);
  }
  const auto& top = root.children;
  if (rooted) {
    // The two root branches become one edge; the numbering starts at the left child.
    const auto left = static_cast<std::size_t>(top[0]), right = static_cast<std::size_t>(top[1]);
    link(number[left], 0, number[right], 0, in[left].length + in[right].length);
    r.start = number[left];
  } else {
    // The root's ring: slot 0 its third child, then the first and the second.
    r.start = 0;
    for (int slot = 0; slot < 3; ++slot) {
      const auto child = static_cast<std::size_t>(top[static_cast<std::size_t>((slot + 2) % 3)]);
      link(number[child], 0, 0, slot, in[child].length);
    }
  }
  for (Node& n : r.nodes)
    n.degree = static_cast<int>(
        std::count_if(n.neighbor.begin(), n.neighbor.end(), [](int v) { return v >= 0; }));
  // Preorder from the start node: an edge, then its node's first and second child.
  std::vector<std::pair<int, int>> stack;  // (node, parent)
  const Node& s = r.nodes[static_cast<std::size_t>(r.start)];
  for (int slot = s.degree - 1; slot >= 0; --slot)
    stack.emplace_back(s.neighbor[static_cast<std::size_t>(slot)], r.start);
  while (!stack.empty()) {
    const auto [node, parent] = stack.back();
    stack.pop_back();
    const Node& n = r.nodes[static_cast<std::size_t>(node)];
    r.edges.push_back({node, parent, n.length[0]});
    for (int slot = 2; slot >= 1; --slot)
      if (n.neighbor[static_cast<std::size_t>(slot)] >= 0)
        stack.emplace_back(n.neighbor[static_cast<std::size_t>(slot)], node);
  }
}

// The transition probabilities of the two-state gap model over a branch of length t.
struct Transition {
  double p[2][2];
  Transition(double g, double t) {
    const double decay = std::exp(-t);
    p[0][0] = (1 - g) + g * decay;
    p[0][1] = g * (1 - decay);
    p[1][0] = (1 - g) * (1 - decay);
    p[1][1] = g + (1 - g) * decay;
  }
};

// Directed vectors of one column chunk: vector k of edge e is 2e (its node's side) or
// 2e + 1 (its parent's side).
class ChunkVectors {
 public:
  static constexpr int kWidth = 32;

  ChunkVectors(const Reference& r, GapMode mode, const std::vector<int>& edge_of, double g)
      : r_(r), mode_(mode), edge_of_(edge_of), protein_(r.alphabet == Alphabet::protein) {
    const std::size_t vectors = 2 * r.edges.size();
    state_.resize(vectors * kWidth);
    if (mode == GapMode::cgap) {
      aux_.resize(vectors * kWidth);
    } else {
      partial_.resize(vectors * kWidth * 2);
    }
    tip_.resize(vectors);
    transition_.reserve(r.edges.size());
    for (const Edge& e : r.edges) transition_.emplace_back(g, e.length);
  }

  // Columns [first, first + width) into `profiles`.
  void run(int first, int width, Profiles& profiles) {
    first_ = first;
    const int edges = static_cast<int>(r_.edges.size());
    // The nodes' sides, children before parents (later edges are further down).
    for (int e = edges - 1; e >= 0; --e) {
      const Node& n =
          r_.nodes[static_cast<std::size_t>(r_.edges[static_cast<std::size_t>(e)].node)];
      if (n.row >= 0) {
        set_tip(2 * e, n.row, first, width);
      } else {
        const int e1 = edge_of_[static_cast<std::size_t>(n.neighbor[1])];
        const int e2 = edge_of_[static_cast<std::size_t>(n.neighbor[2])];
        combine(2 * e, 2 * e1, e1, 2 * e2, e2, width);
      }
    }
    // The parents' sides, parents before children.
    for (int e = 0; e < edges; ++e) {
      const Edge& edge = r_.edges[static_cast<std::size_t>(e)];
      const Node& p = r_.nodes[static_cast<std::size_t>(edge.parent)];
      if (p.row >= 0) {  // the start node is a tip
        set_tip(2 * e + 1, p.row, first, width);
        continue;
      }
      int sides[2], lengths[2], k = 0;
      for (int slot = 0; slot < 3; ++slot) {
        const int y = p.neighbor[static_cast<std::size_t>(slot)];
        if (y < 0 || y == edge.node) continue;
        const int ey = edge_of_[static_cast<std::size_t>(y)];
        if (ey >= 0 && r_.edges[static_cast<std::size_t>(ey)].parent == edge.parent) {
          sides[k] = 2 * ey;  // a child of p: its own side
          lengths[k] = ey;
        } else {
          const int ep = edge_of_[static_cast<std::size_t>(edge.parent)];
          sides[k] = 2 * ep + 1;  // p's parent: the side beyond p
          lengths[k] = ep;
        }
        ++k;
      }
      combine(2 * e + 1, sides[0], lengths[0], sides[1], lengths[1], width);
    }
    // Each edge's profile: its two sides over its whole length.
    std::vector<std::uint32_t> result(kWidth);
    for (int e = 0; e < edges; ++e) {
      combine_into(result.data(), 2 * e, e, 2 * e + 1, e, width, -1);
      for (int j = 0; j < width; ++j) {
        const std::size_t at =
            static_cast<std::size_t>(first + j) * static_cast<std::size_t>(profiles.edge_stride) +
            static_cast<std::size_t>(e);
        const std::uint32_t cell = result[static_cast<std::size_t>(j)];
        if (protein_) {
          profiles.protein_cells[at] = cell;
        } else {
          profiles.cells[at] = static_cast<std::uint8_t>(cell);
        }
      }
    }
  }

  // The first column (of the whole reference) where a partial was 0/0.
  int zero_column = -1;

 private:
  std::size_t at(int vector, int j) const {
    return static_cast<std::size_t>(vector) * kWidth + static_cast<std::size_t>(j);
  }

  void set_tip(int v, int row, int first, int width) {
    tip_[static_cast<std::size_t>(v)] = 1;
    const auto& states = r_.states[static_cast<std::size_t>(row)];
    for (int j = 0; j < width; ++j) {
      const std::uint8_t s = states[static_cast<std::size_t>(first + j)];
      const bool gap = s == (protein_ ? kProteinGapCode : kGapState);
      state_[at(v, j)] = protein_ ? protein_state_set(s) : s;
      if (mode_ == GapMode::cgap) {
        aux_[at(v, j)] = gap ? 1 : 0;
      } else {
        partial_[2 * at(v, j)] = gap ? 0.0 : 1.0;
        partial_[2 * at(v, j) + 1] = gap ? 1.0 : 0.0;
      }
    }
  }

  void combine(int out, int a, int la, int b, int lb, int width) {
    tip_[static_cast<std::size_t>(out)] = 0;
    combine_into(nullptr, a, la, b, lb, width, out);
  }

  // Combines sides a and b (over the lengths of edges la and lb) into vector `out`, or, at
  // an edge's root (out < 0), into the profile cells `result`.
  void combine_into(std::uint32_t* result, int a, int la, int b, int lb, int width, int out) {
    const bool any_tip =
        tip_[static_cast<std::size_t>(a)] != 0 || tip_[static_cast<std::size_t>(b)] != 0;
    const Transition& ta = transition_[static_cast<std::size_t>(la)];
    const Transition& tb = transition_[static_cast<std::size_t>(lb)];
    for (int j = 0; j < width; ++j) {
      const std::uint32_t sa = state_[at(a, j)], sb = state_[at(b, j)];
      std::uint32_t s = sa & sb;
      if (s == 0) s = sa | sb;
      bool flag = false;
      if (mode_ == GapMode::cgap) {
        const std::uint8_t xa = aux_[at(a, j)], xb = aux_[at(b, j)];
        const bool ga = any_tip ? (xa & 1) != 0 : xa == 1;
        const bool gb = any_tip ? (xb & 1) != 0 : xb == 1;
        const std::uint8_t aux = ga && gb ? 1 : (ga != gb ? 3 : 0);
        if (out >= 0) aux_[at(out, j)] = aux;
        flag = aux == 1;
      } else {
        const double* pa = &partial_[2 * at(a, j)];
        const double* pb = &partial_[2 * at(b, j)];
        double l[2];
        for (int k = 0; k < 2; ++k)
          l[k] =
              (ta.p[k][0] * pa[0] + ta.p[k][1] * pa[1]) * (tb.p[k][0] * pb[0] + tb.p[k][1] * pb[1]);
        if (l[0] == 0 && l[1] == 0 && zero_column < 0) zero_column = first_ + j;
        if (l[0] < 0x1p-256 && l[1] < 0x1p-256) {
          l[0] *= 0x1p256;
          l[1] *= 0x1p256;
        }
        if (out >= 0) {
          partial_[2 * at(out, j)] = l[0];
          partial_[2 * at(out, j) + 1] = l[1];
        }
        flag = l[0] < l[1];
      }
      if (out >= 0) {
        state_[at(out, j)] = s;
      } else {
        result[j] = s | (flag ? (protein_ ? kProteinFlagBit : kFlagBit) : 0u);
      }
    }
  }

  const Reference& r_;
  GapMode mode_;
  const std::vector<int>& edge_of_;
  bool protein_;
  int first_ = 0;
  std::vector<std::uint32_t> state_;  // state sets
  std::vector<std::uint8_t> aux_, tip_;
  std::vector<double> partial_;
  std::vector<Transition> transition_;
};

}  // namespace

Reference make_reference(const Tree& tree, const Alignment& alignment,
                         std::vector<Query>& extra_queries, Alphabet alphabet) {
  Reference r;
  r.alphabet = alphabet;
  const bool protein = alphabet == Alphabet::protein;
  const int gap = protein ? kProteinGapCode : kGapState;
  r.tree_path = tree.path;
  r.alignment_path = alignment.path;
  std::vector<std::int64_t> node_lines;
  build_tree(tree, r, node_lines);
  std::unordered_map<std::string, int> tip_of;
  int tips = 0;
  for (std::size_t k = 0; k < r.nodes.size(); ++k) {
    if (r.nodes[k].degree != 1) continue;
    ++tips;
    if (!tip_of.emplace(r.nodes[k].name, static_cast<int>(k)).second)
      throw InputError(tree.path, node_lines[k],
                       "tip '" + r.nodes[k].name + "' appears twice in the tree");
  }
  if (tips < 3) throw InputError(tree.path, 0, "the tree has fewer than 3 tips");
  // Rows named after tips are the references; the others are queries.
  std::vector<std::size_t> reference_rows;
  for (std::size_t k = 0; k < alignment.rows.size(); ++k) {
    const auto tip = tip_of.find(alignment.names[k]);
    if (tip == tip_of.end()) {
      extra_queries.push_back(make_query(alignment.names[k], alignment.rows[k], alignment.path,
                                         alignment.lines[k], alphabet));
      continue;
    }
    Node& node = r.nodes[static_cast<std::size_t>(tip->second)];
    if (node.row >= 0)
      throw InputError(alignment.path, alignment.lines[k],
                       "row '" + alignment.names[k] + "' appears twice");
    node.row = static_cast<int>(reference_rows.size());
    reference_rows.push_back(k);
  }
  for (std::size_t k = 0; k < r.nodes.size(); ++k)
    if (r.nodes[k].degree == 1 && r.nodes[k].row < 0)
      throw InputError(tree.path, node_lines[k],
                       "tip '" + r.nodes[k].name + "' has no row in " + alignment.path);
  // States, and the columns where some reference is not a gap.
  r.input_columns = alignment.columns;
  const auto columns = static_cast<std::size_t>(alignment.columns);
  std::vector<std::vector<std::uint8_t>> states(reference_rows.size(),
                                                std::vector<std::uint8_t>(columns));
  std::vector<char> kept(columns, 0);
  for (std::size_t i = 0; i < reference_rows.size(); ++i) {
    const std::string& row = alignment.rows[reference_rows[i]];
    for (std::size_t j = 0; j < columns; ++j) {
      const int s = protein ? protein_reference_code(row[j]) : reference_state(row[j]);
      if (s < 0)
        throw InputError(alignment.path, alignment.lines[reference_rows[i]],
                         "row '" + alignment.names[reference_rows[i]] + "', column " +
                             std::to_string(j + 1) + ": '" + std::string(1, row[j]) +
                             (protein ? "' is not an amino-acid character of PaPaRa 2.5 (the 20 "
                                        "amino acids, B, Z, -; it aborts on X, ?, . and others)"
                                      : "' is not a DNA character (ACGTU, IUPAC codes, N ? . -)"));
      states[i][j] = static_cast<std::uint8_t>(s);
      if (s != gap) kept[j] = 1;
    }
  }
  std::int64_t dashes = 0;
  for (std::size_t i = 0; i < reference_rows.size(); ++i) {
    r.names.push_back(alignment.names[reference_rows[i]]);
    std::string original;
    std::vector<std::uint8_t> s;
    for (std::size_t j = 0; j < columns; ++j) {
      if (kept[j] == 0) continue;
      const char c = alignment.rows[reference_rows[i]][j];
      original.push_back(c);
      s.push_back(states[i][j]);
      dashes += c == '-' ? 1 : 0;
    }
    r.rows.push_back(std::move(original));
    r.states.push_back(std::move(s));
  }
  if (r.columns() == 0)
    throw InputError(alignment.path, 0, "every column of the references is a gap");
  r.gap_fraction =
      static_cast<double>(dashes) / (static_cast<double>(r.names.size()) * r.columns());
  return r;
}

Profiles build_profiles(const Reference& r, GapMode mode) {
  Profiles p;
  p.alphabet = r.alphabet;
  p.columns = r.columns();
  p.edges = static_cast<int>(r.edges.size());
  p.edge_stride = (p.edges + kEdgeAlign - 1) / kEdgeAlign * kEdgeAlign;
  const std::size_t cells =
      static_cast<std::size_t>(p.columns) * static_cast<std::size_t>(p.edge_stride);
  if (r.alphabet == Alphabet::protein) {
    p.protein_cells.resize(cells);
  } else {
    p.cells.resize(cells);
  }
  std::vector<int> edge_of(r.nodes.size(), -1);  // the edge whose `node` a node is
  for (std::size_t e = 0; e < r.edges.size(); ++e)
    edge_of[static_cast<std::size_t>(r.edges[e].node)] = static_cast<int>(e);
  const int width = ChunkVectors::kWidth;
  const int chunks = (p.columns + width - 1) / width;
  std::vector<int> zero_column(static_cast<std::size_t>(chunks), -1);
  for_each_part(static_cast<std::size_t>(chunks), [&](std::size_t c) {
    ChunkVectors vectors(r, mode, edge_of, r.gap_fraction);
    const int first = static_cast<int>(c) * width;
    vectors.run(first, std::min(width, p.columns - first), p);
    zero_column[c] = vectors.zero_column;
  });
  for (int c = 0; c < chunks; ++c) {
    if (zero_column[static_cast<std::size_t>(c)] < 0) continue;
    throw InputError(r.tree_path, 0,
                     "zero-length sibling branches differ in gap status at column " +
                         std::to_string(zero_column[static_cast<std::size_t>(c)] + 1) +
                         " (of the columns kept): the gap model's partials are 0/0, where PaPaRa "
                         "2.5 aborts; give those branches a length, or use -c");
  }
  // Padding edges repeat the last edge.
  const auto pad = [&p](auto* first) {
    for (int j = 0; j < p.columns; ++j) {
      auto* row = first + static_cast<std::size_t>(j) * static_cast<std::size_t>(p.edge_stride);
      for (int e = p.edges; e < p.edge_stride; ++e) row[e] = row[p.edges - 1];
    }
  };
  if (r.alphabet == Alphabet::protein) {
    pad(p.protein_cells.data());
  } else {
    pad(p.cells.data());
  }
  return p;
}

}  // namespace duet::papara
