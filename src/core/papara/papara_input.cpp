// Readers of PaPaRa's inputs (see papara_input.hpp).
#include "core/papara/papara_input.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/error.hpp"
#include "core/text_reader.hpp"

namespace duet::papara {

namespace {

// The lines of a text, with their numbers (from 1).
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    const std::size_t end = text_.find('\n', pos_);
    const std::size_t stop = end == std::string_view::npos ? text_.size() : end;
    line = text_.substr(pos_, stop - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = stop + 1;
    ++number_;
    return true;
  }
  std::int64_t number() const { return number_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::int64_t number_ = 0;
};

// A recursive-descent Newick parser over the whole text.
class NewickParser {
 public:
  NewickParser(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  Tree parse() {
    Tree tree;
    tree.path = path_;
    skip_space();
    if (peek() != '(') fail("a Newick tree starts with '('");
    nodes_.emplace_back();
    subtree(0);
    skip_space();
    if (peek() != ';') fail("expected ';' at the end of the tree");
    tree.nodes = std::move(nodes_);
    return tree;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InputError(path_, line_, what); }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void advance() {
    if (text_[pos_] == '\n') ++line_;
    ++pos_;
  }
  void skip_space() {
    while (pos_ < text_.size() && (is_space(text_[pos_]) || text_[pos_] == '[')) {
      if (text_[pos_] == '[') {  // a comment
        while (pos_ < text_.size() && text_[pos_] != ']') advance();
        if (pos_ == text_.size()) fail("a comment '[' is not closed");
      }
      advance();
    }
  }
  // A label: every character up to ':', ',', ')', '(', ';' or '[' (no trimming inside).
  std::string label() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() &&
           std::string_view(":,();[").find(text_[pos_]) == std::string_view::npos)
      advance();
    std::string name(text_.substr(start, pos_ - start));
    while (!name.empty() && is_space(name.back())) name.pop_back();
    return name;
  }
  // ":length", if written.
  void length(int node) {
    skip_space();
    if (peek() != ':') return;
    advance();
    skip_space();
    const std::size_t start = pos_;
    while (pos_ < text_.size() &&
           std::string_view(",();[").find(text_[pos_]) == std::string_view::npos &&
           !is_space(text_[pos_]))
      advance();
    const std::string number(text_.substr(start, pos_ - start));
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(value) ||
        value < 0)
      fail("branch length '" + number + "' is not a number >= 0");
    nodes_[static_cast<std::size_t>(node)].length = value;
  }
  // The node `node` at '(' or at a tip's name.
  void subtree(int node) {
    skip_space();
    if (peek() == '(') {
      advance();
      for (;;) {
        const int child = static_cast<int>(nodes_.size());
        nodes_.emplace_back();
        nodes_.back().parent = node;
        nodes_[static_cast<std::size_t>(node)].children.push_back(child);
        subtree(child);
        skip_space();
        if (peek() == ',') {
          advance();
          continue;
        }
        if (peek() == ')') {
          advance();
          break;
        }
        fail("expected ',' or ')' in the tree");
      }
      label();  // an inner node's label is ignored
    } else {
      std::string name = label();
      if (name.empty()) fail("a tip has no name");
      nodes_[static_cast<std::size_t>(node)].name = std::move(name);
    }
    nodes_[static_cast<std::size_t>(node)].line = line_;
    length(node);
  }

  const std::string& path_;
  std::string_view text_;
  std::size_t pos_ = 0;
  std::int64_t line_ = 1;
  std::vector<TreeNode> nodes_;
};

}  // namespace

int reference_state(char c) {
  const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (u == 'N' || u == '?' || u == '.' || u == '-') return kGapState;
  if (u == 'U') return 8;
  const std::size_t s = kStateChars.find(u);
  if (s == std::string_view::npos || s == 0) return -1;
  return static_cast<int>(s);
}

int protein_reference_code(char c) {
  const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::size_t code = kProteinReferenceChars.find(u);
  return code == std::string_view::npos ? -1 : static_cast<int>(code);
}

std::uint32_t protein_state_set(std::uint8_t code) {
  if (code < kProteinResidues.size()) return std::uint32_t{1} << code;
  if (code == kProteinGapCode) return kProteinStateMask;
  const char c = kProteinReferenceChars[code];  // B or Z
  const auto bit = [](char residue) { return std::uint32_t{1} << kProteinResidues.find(residue); };
  return c == 'B' ? bit('N') | bit('D') : bit('Q') | bit('E');
}

Tree read_newick(const std::string& path) {
  const WholeText text(path);
  return NewickParser(path, text.view()).parse();
}

Alignment read_phylip(const std::string& path) {
  const WholeText text(path);
  Alignment a;
  a.path = path;
  Lines lines(text.view());
  std::string_view line;
  // The header: the numbers of rows and columns.
  while (lines.next(line)) {
    std::size_t p = 0;
    while (p < line.size() && is_space(line[p])) ++p;
    if (p < line.size()) break;
  }
  const std::int64_t header_line = lines.number();
  long long rows = 0, columns = 0;
  {
    const char* p = line.data();
    const char* end = line.data() + line.size();
    const auto number = [&](long long& value) {
      while (p < end && is_space(*p)) ++p;
      const auto r = std::from_chars(p, end, value);
      if (r.ec != std::errc() || value <= 0) return false;
      p = r.ptr;
      return true;
    };
    if (header_line == 0 || !number(rows) || !number(columns))
      throw InputError(path, header_line == 0 ? 1 : header_line,
                       "a PHYLIP file starts with the numbers of rows and columns");
  }
  a.columns = columns;
  const auto next_line = [&](const char* what) {
    if (!lines.next(line))
      throw InputError(path, lines.number(), std::string("the file ends before ") + what);
  };
  // Blank lines after the header are skipped, as PaPaRa does.
  do {
    next_line("the first row");
  } while (line.find_first_not_of(" \t\r\f\v") == std::string_view::npos);
  for (long long r = 0; r < rows; ++r) {
    if (r > 0) next_line(("row " + std::to_string(r + 1)).c_str());
    if (line.empty() || is_space(line.front()))
      throw InputError(path, lines.number(), "a row starts with its name");
    std::size_t space = 0;
    while (space < line.size() && !is_space(line[space])) ++space;
    if (space == line.size())
      throw InputError(path, lines.number(), "no space between the row's name and its sequence");
    a.names.emplace_back(line.substr(0, space));
    std::string row;
    for (char c : line.substr(space))
      if (!is_space(c)) row.push_back(c);
    a.rows.push_back(std::move(row));
    a.lines.push_back(lines.number());
  }
  // Interleaved blocks, each after one skipped line, until the first row is complete.
  while (static_cast<std::int64_t>(a.rows.front().size()) < columns) {
    next_line("the next block of the interleaved alignment");
    for (auto& row : a.rows) {
      next_line("the end of the interleaved block");
      for (char c : line)
        if (!is_space(c)) row.push_back(c);
    }
  }
  for (std::size_t r = 0; r < a.rows.size(); ++r) {
    if (static_cast<std::int64_t>(a.rows[r].size()) != columns)
      throw InputError(path, a.lines[r],
                       "row '" + a.names[r] + "' has " + std::to_string(a.rows[r].size()) +
                           " characters; the header says " + std::to_string(columns));
  }
  return a;
}

Query make_query(std::string name, std::string_view raw, const std::string& path, std::int64_t line,
                 Alphabet alphabet) {
  Query q;
  q.name = std::move(name);
  q.path = path;
  q.line = line;
  const bool protein = alphabet == Alphabet::protein;
  for (char c : raw) {
    if (protein) {
      const std::size_t r = kProteinResidues.find(c);
      if (r != std::string_view::npos) q.states.push_back(static_cast<std::uint8_t>(r));
      continue;
    }
    const std::size_t s = kStateChars.find(c);
    if (s == std::string_view::npos || s == 0 || s == kGapState) continue;
    q.states.push_back(static_cast<std::uint8_t>(s));
  }
  if (q.states.empty())
    throw InputError(path, line,
                     "query '" + q.name + "' has no residue PaPaRa keeps (" +
                         (protein ? "the 20 upper-case amino acids; lower case, B, Z, X and "
                                    "other characters are dropped)"
                                  : "upper-case A C G T and IUPAC codes; lower case, N and U "
                                    "are dropped)"));
  return q;
}

std::vector<Query> read_queries(const std::string& path, Alphabet alphabet) {
  const WholeText text(path);
  Lines lines(text.view());
  std::vector<Query> queries;
  std::string_view line;
  std::string name, raw;
  std::int64_t record_line = 0;
  bool in_record = false;
  const auto finish = [&] {
    if (in_record && !raw.empty())
      queries.push_back(make_query(name, raw, path, record_line, alphabet));
  };
  while (lines.next(line)) {
    if (!line.empty() && line.front() == '>') {
      finish();
      in_record = true;
      record_line = lines.number();
      std::size_t start = 1;
      while (start < line.size() && is_space(line[start])) ++start;
      std::size_t end = start;
      while (end < line.size() && !is_space(line[end])) ++end;
      name.assign(line.substr(start, end - start));
      if (name.empty()) throw InputError(path, lines.number(), "a FASTA record has no name");
      raw.clear();
      continue;
    }
    if (!in_record) {
      if (line.find_first_not_of(" \t\r\f\v") == std::string_view::npos) continue;
      throw InputError(path, lines.number(), "a FASTA file starts with a '>' line");
    }
    for (char c : line)
      if (!is_space(c)) raw.push_back(c);
  }
  finish();
  return queries;
}

}  // namespace duet::papara
