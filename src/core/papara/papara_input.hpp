// PaPaRa's three inputs as PaPaRa 2.5 reads them (SPEC.md §1): the Newick tree (-t), the
// PHYLIP reference alignment (-s) and the FASTA queries (-q). Each reader keeps line
// numbers for messages; any problem is an InputError naming the file and line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace duet::papara {

// DNA state sets: A=1, C=2, G=4, T=8, IUPAC codes their unions, 15 the gap state. The
// character of state s is kStateChars[s].
inline constexpr std::string_view kStateChars = "_ACMGRSVTWYHKDB-";
inline constexpr std::uint8_t kGapState = 15;

// A reference character's state (case ignored, U is T, N ? . and - are the gap state);
// -1 for any other character.
int reference_state(char c);

// A rooted tree as written: node 0 is the root, children in Newick order.
struct TreeNode {
  std::string name;  // tips only (inner-node labels are ignored)
  int parent = -1;
  std::vector<int> children;
  double length = 1.0;    // of the branch to the parent (1.0 where none is written)
  std::int64_t line = 0;  // where the node ends in the file
};

struct Tree {
  std::string path;
  std::vector<TreeNode> nodes;
};

Tree read_newick(const std::string& path);

// The rows of a PHYLIP file (sequential or interleaved), whitespace removed.
struct Alignment {
  std::string path;
  std::int64_t columns = 0;
  std::vector<std::string> names, rows;
  std::vector<std::int64_t> lines;  // each row's first line
};

Alignment read_phylip(const std::string& path);

// A query: its states after PaPaRa's filter (only upper-case characters of kStateChars are
// kept, then _ and - dropped), where it came from, and its place in the output.
struct Query {
  std::string name;
  std::vector<std::uint8_t> states;  // 1..14
  std::string path;
  std::int64_t line = 0;
};

// The query of `raw` characters; InputError (path, line) when the filter leaves nothing
// (PaPaRa 2.5 would loop forever on it).
Query make_query(std::string name, std::string_view raw, const std::string& path,
                 std::int64_t line);

// FASTA records: the name is the first word after '>', the sequence every non-space
// character; records with no character are dropped.
std::vector<Query> read_queries(const std::string& path);

}  // namespace duet::papara
