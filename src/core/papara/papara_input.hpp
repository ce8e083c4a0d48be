// PaPaRa's three inputs as PaPaRa 2.5 reads them (SPEC.md §1): the Newick tree (-t), the
// PHYLIP reference alignment (-s) and the FASTA queries (-q). Each reader keeps line
// numbers for messages; any problem is an InputError naming the file and line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/papara/papara_kernel.hpp"

namespace duet::papara {

// DNA state sets: A=1, C=2, G=4, T=8, IUPAC codes their unions, 15 the gap state. The
// character of state s is kStateChars[s].
inline constexpr std::string_view kStateChars = "_ACMGRSVTWYHKDB-";
inline constexpr std::uint8_t kGapState = 15;

// A reference character's state (case ignored, U is T, N ? . and - are the gap state);
// -1 for any other character.
int reference_state(char c);

// Protein (-a), as PaPaRa 2.5's amino-acid model: amino acid r is kProteinResidues[r] and
// bit r of a state set. A reference character (case ignored) is one of
// kProteinReferenceChars: an amino acid, B (N or D), Z (Q or E) or '-', the gap state (all
// 20 bits); its code is its place there. Any other character (X, ?, ., U, *, ...) makes
// PaPaRa 2.5 abort.
inline constexpr std::string_view kProteinResidues = "ARNDCQEGHILKMFPSTWYV";
inline constexpr std::string_view kProteinReferenceChars = "ARNDCQEGHILKMFPSTWYVBZ-";
inline constexpr std::uint8_t kProteinGapCode = 22;

// A protein reference character's code; -1 for any other character.
int protein_reference_code(char c);
// The state set of a protein reference code.
std::uint32_t protein_state_set(std::uint8_t code);

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

// A query: its residues after PaPaRa's filter, where it came from, and its place in the
// output. DNA: only upper-case characters of kStateChars are kept, then _ and - dropped;
// protein: only the 20 upper-case amino acids are kept (lower case, B, Z, X, - and any
// other character are dropped).
struct Query {
  std::string name;
  std::vector<std::uint8_t> states;  // DNA: state sets 1..14; protein: amino acids 0..19
  std::string path;
  std::int64_t line = 0;
};

// The query of `raw` characters; InputError (path, line) when the filter leaves nothing
// (PaPaRa 2.5 would loop forever on it).
Query make_query(std::string name, std::string_view raw, const std::string& path, std::int64_t line,
                 Alphabet alphabet = Alphabet::dna);

// The character of a query residue.
inline char residue_char(std::uint8_t residue, Alphabet alphabet) {
  return alphabet == Alphabet::protein ? kProteinResidues[residue] : kStateChars[residue];
}

// FASTA records: the name is the first word after '>', the sequence every non-space
// character; records with no character are dropped.
std::vector<Query> read_queries(const std::string& path, Alphabet alphabet = Alphabet::dna);

}  // namespace duet::papara
