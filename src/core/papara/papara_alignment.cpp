// Traceback, insertion columns and the alignment file (see papara_alignment.hpp).
#include "core/papara/papara_alignment.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <utility>

#include "core/parallel_parts.hpp"

namespace duet::papara {

namespace {

// Per cell of the traceback: where H came from, and whether L and U extend.
enum : std::uint8_t { kFromDiagonal = 0, kFromL = 1, kFromU = 2, kLExtends = 4, kUExtends = 8 };

}  // namespace

Trace traceback(std::span<const std::uint8_t> query, const ProfileView& p, int edge,
                const Scoring& s) {
  const int m = static_cast<int>(query.size());
  const int n = p.columns;
  const bool protein = p.alphabet() == Alphabet::protein;
  // Column j's state set and gap flag.
  const auto cell = [&](int j) -> std::pair<std::uint32_t, bool> {
    const std::size_t at = static_cast<std::size_t>(j) * static_cast<std::size_t>(p.edge_stride) +
                           static_cast<std::size_t>(edge);
    if (protein)
      return {p.protein_cells[at] & kProteinStateMask,
              (p.protein_cells[at] & kProteinFlagBit) != 0};
    return {p.cells[at] & kStateMask, (p.cells[at] & kFlagBit) != 0};
  };
  // The query's residues as state sets: a residue matches where it shares a bit.
  std::vector<std::uint32_t> residue_sets(query.begin(), query.end());
  if (protein)
    for (auto& r : residue_sets) r = std::uint32_t{1} << r;
  const std::int32_t negative = kNegative;
  // Pointers column by column; H, L of the previous column per row; U carried down each column.
  std::vector<std::uint8_t> from(static_cast<std::size_t>(m) * static_cast<std::size_t>(n));
  std::vector<std::int32_t> h(static_cast<std::size_t>(m), 0),
      l(static_cast<std::size_t>(m), negative);
  std::vector<std::int32_t> last_column(static_cast<std::size_t>(m)),
      last_row(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) {
    const auto [state, flag] = cell(j);
    const std::int32_t go = flag ? 0 : s.gap_open, ge = flag ? 0 : s.gap_extend;
    const std::int32_t flag_score = flag ? s.match_cgap : 0;
    std::int32_t diag = 0, up = 0, u = 0;  // row -1: H = 0, and U = 0 here
    std::uint8_t* column_from =
        from.data() + static_cast<std::size_t>(j) * static_cast<std::size_t>(m);
    // Branch-free (the choices are data-dependent): selects and bit arithmetic only.
    for (int i = 0; i < m; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const std::int32_t left = h[k];
      const std::int32_t l_open = left + go, l_extend = l[k] + ge;
      const bool l_extends = l_extend > l_open;
      const std::int32_t lv = l_extends ? l_extend : l_open;
      const std::int32_t u_open = up + s.gap_open, u_extend = u + s.gap_extend;
      const bool u_extends = u_extend > u_open;
      u = u_extends ? u_extend : u_open;
      const std::int32_t d = diag + ((state & residue_sets[k]) != 0 ? s.match : 0) + flag_score;
      const bool take_u = u > lv && u > d;
      const bool take_l = !take_u && lv >= u && lv > d;
      const std::int32_t value = take_u ? u : (take_l ? lv : d);
      column_from[k] =
          static_cast<std::uint8_t>((take_u ? kFromU : 0) | (take_l ? kFromL : 0) |
                                    (l_extends ? kLExtends : 0) | (u_extends ? kUExtends : 0));
      l[k] = lv;
      diag = left;
      h[k] = value;
      up = value;
    }
    last_row[static_cast<std::size_t>(j)] = h[static_cast<std::size_t>(m - 1)];
  }
  last_column = h;
  // The end cell: the first maximum down the last column (rows 0..m-2), then along the
  // last row.
  int end_i = 0, end_j = n - 1;
  std::int32_t best = std::numeric_limits<std::int32_t>::min();
  for (int i = 0; i + 1 < m; ++i)
    if (last_column[static_cast<std::size_t>(i)] > best) {
      best = last_column[static_cast<std::size_t>(i)];
      end_i = i;
      end_j = n - 1;
    }
  for (int j = 0; j < n; ++j)
    if (last_row[static_cast<std::size_t>(j)] > best) {
      best = last_row[static_cast<std::size_t>(j)];
      end_i = m - 1;
      end_j = j;
    }
  Trace t;
  t.score = best;
  std::vector<std::uint8_t>& codes = t.codes;  // built backwards, reversed at the end
  for (int j = n - 1; j > end_j; --j) codes.push_back(kColumnOnly);
  for (int i = m - 1; i > end_i; --i) codes.push_back(kBaseOnly);
  int i = end_i, j = end_j;
  enum { in_h, in_l, in_u } matrix = in_h;
  while (i >= 0 && j >= 0) {
    const std::uint8_t bits = from[static_cast<std::size_t>(j) * static_cast<std::size_t>(m) +
                                   static_cast<std::size_t>(i)];
    if (matrix == in_h) {
      const int origin = bits & 3;
      if (origin == kFromDiagonal) {
        codes.push_back(kColumnAndBase);
        --i;
        --j;
        continue;
      }
      matrix = origin == kFromL ? in_l : in_u;
    }
    if (matrix == in_l) {
      codes.push_back(kColumnOnly);
      if ((bits & kLExtends) == 0) matrix = in_h;
      --j;
    } else {
      codes.push_back(kBaseOnly);
      if ((bits & kUExtends) == 0) matrix = in_h;
      --i;
    }
  }
  for (; j >= 0; --j) codes.push_back(kColumnOnly);
  for (; i >= 0; --i) codes.push_back(kBaseOnly);
  std::reverse(codes.begin(), codes.end());
  return t;
}

AlignedRows aligned_rows(const Reference& reference, std::span<const Query> queries,
                         std::span<const Trace> traces, bool no_reference_gaps) {
  const auto n = static_cast<std::size_t>(reference.columns());
  // Bases each query inserts before column k (k = n: after the last), and their widest.
  std::vector<std::size_t> width(n + 1, 0), count(n + 1);
  for (const Trace& t : traces) {
    std::fill(count.begin(), count.end(), 0);
    std::size_t k = 0;
    for (std::uint8_t c : t.codes) {
      if (c == kBaseOnly) {
        ++count[k];
      } else {
        ++k;
      }
    }
    for (std::size_t slot = 0; slot <= n; ++slot) width[slot] = std::max(width[slot], count[slot]);
  }
  AlignedRows out;
  out.references = reference.names.size();
  out.columns = n;
  if (!no_reference_gaps)
    for (std::size_t w : width) out.columns += w;
  for (std::size_t r = 0; r < reference.names.size(); ++r) {
    out.names.push_back(reference.names[r]);
    std::string row;
    row.reserve(out.columns);
    const std::string& original = reference.rows[r];
    for (std::size_t j = 0; j <= n; ++j) {
      if (!no_reference_gaps) row.append(width[j], '-');
      if (j == n) break;
      if (no_reference_gaps && reference.alphabet == Alphabet::protein) {
        row.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(original[j]))));
      } else if (no_reference_gaps) {
        const int s = reference_state(original[j]);
        row.push_back(s == kGapState ? '-' : kStateChars[static_cast<std::size_t>(s)]);
      } else {
        row.push_back(original[j]);
      }
    }
    out.rows.push_back(std::move(row));
  }
  // The queries' rows, in parts on every core (each row depends on its trace alone).
  const std::size_t first = out.rows.size();
  for (const Query& q : queries) out.names.push_back(q.name);
  out.rows.resize(first + queries.size());
  constexpr std::size_t kPart = 256;
  for_each_part((queries.size() + kPart - 1) / kPart, [&](std::size_t part) {
    const std::size_t end = std::min(queries.size(), (part + 1) * kPart);
    for (std::size_t q = part * kPart; q < end; ++q) {
      const auto& states = queries[q].states;
      const Alphabet alphabet = reference.alphabet;
      std::string& row = out.rows[first + q];
      row.reserve(out.columns);
      std::string inserted;
      std::size_t base = 0, k = 0;
      const auto flush_slot = [&](std::size_t slot) {
        if (!no_reference_gaps) {
          const std::size_t pad = width[slot] - inserted.size();
          if (slot == 0) row.append(pad, '-');
          row += inserted;
          if (slot != 0) row.append(pad, '-');
        }
        inserted.clear();
      };
      for (std::uint8_t c : traces[q].codes) {
        if (c == kBaseOnly) {
          inserted.push_back(residue_char(states[base++], alphabet));
          continue;
        }
        flush_slot(k);
        row.push_back(c == kColumnAndBase ? residue_char(states[base++], alphabet) : '-');
        ++k;
      }
      flush_slot(n);
    }
  });
  return out;
}

void write_alignment(std::ostream& out, const AlignedRows& rows, bool fasta) {
  if (fasta) {
    for (std::size_t r = 0; r < rows.rows.size(); ++r)
      out << '>' << rows.names[r] << '\n' << rows.rows[r] << '\n';
    return;
  }
  std::size_t pad = 0;
  for (const auto& name : rows.names) pad = std::max(pad, name.size() + 1);
  out << rows.rows.size() << ' ' << rows.columns << '\n';
  for (std::size_t r = 0; r < rows.rows.size(); ++r) {
    out << rows.names[r];
    for (std::size_t k = rows.names[r].size(); k < pad; ++k) out << ' ';
    out << rows.rows[r] << '\n';
  }
}

}  // namespace duet::papara
