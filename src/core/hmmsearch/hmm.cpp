// HMMER3 ASCII reader. Follows HMMER 3.3.2's rules for what a file must hold: a format
// line, NAME, LENG, ALPH, the HMM and transition header lines, COMPO (optional), the
// node-0 insert and transition lines, M nodes of three lines each, and "//".
#include "core/hmmsearch/hmm.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "core/parallel_parts.hpp"

namespace duet {

namespace {

// The line's words, separated by white space (is_space) as `>>` separates them, as views
// into it (the node lines: no allocation once `words` has grown).
void split_into(std::string_view line, std::vector<std::string_view>& words) {
  words.clear();
  const char* p = line.data();
  const char* const end = p + line.size();
  while (p != end) {
    while (p != end && is_space(*p)) ++p;
    const char* const start = p;
    while (p != end && !is_space(*p)) ++p;
    if (p != start) words.emplace_back(start, static_cast<std::size_t>(p - start));
  }
}

// The same as strings (the header's lines).
std::vector<std::string> split(const std::string& line) {
  std::vector<std::string_view> words;
  split_into(line, words);
  return {words.begin(), words.end()};
}

// `token` as std::strtod reads it: true when it reads the whole token without a range
// error. Through std::from_chars where that gives the same value (both round correctly),
// several times faster: a model file is mostly numbers. What from_chars reads otherwise
// or not at all (a leading '+', hexadecimal, a value that overflows or underflows) goes
// to strtod.
bool read_double(std::string_view token, double& value) {
  const char* first = token.data();
  const char* const last = first + token.size();
  if (first != last && *first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+')
    ++first;
  const auto [end, error] = std::from_chars(first, last, value);
  if (error == std::errc() && end == last && first != last) {
    if (std::fabs(value) >= std::numeric_limits<double>::min()) return true;
    // Zero or subnormal: a zero only when no digit before the exponent is 1 to 9
    // (strtod reports an underflow otherwise).
    const char* p = first;
    while (p != last && *p != 'e' && *p != 'E' && (*p < '1' || *p > '9')) ++p;
    if (value == 0 && (p == last || *p == 'e' || *p == 'E')) return true;
  }
  const std::string text(token);  // strtod wants the terminating NUL
  char* stop = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &stop);
  return stop != text.c_str() && *stop == '\0' && errno != ERANGE;
}

std::string rest_after_tag(const std::string& line) {
  std::size_t p = 0;
  while (p < line.size() && !is_space(line[p])) ++p;
  while (p < line.size() && is_space(line[p])) ++p;
  std::size_t e = line.size();
  while (e > p && is_space(line[e - 1])) --e;
  return line.substr(p, e - p);
}

}  // namespace

HmmReader::HmmReader(const std::string& path) : text_(path) {}

HmmReader::HmmReader(const std::string& path, std::string_view text, std::int64_t lines_before)
    : text_(path, text, lines_before) {}

bool HmmReader::next(HmmModel& model) {
  auto fail = [&](const std::string& message) -> void {
    throw InputError(text_.path(), text_.line_number(), message);
  };
  auto need_line = [&](const char* what) {
    if (!text_.next_line(line_)) {
      throw InputError(text_.path(), text_.line_number(),
                       std::string("unexpected end of file: expected ") + what);
    }
  };
  // A probability field: -ln(p) or '*' for p = 0, as HMMER reads it.
  auto probability = [&](std::string_view token) -> float {
    if (token == "*") return 0.0f;
    double v = 0;
    if (!read_double(token, v) || !std::isfinite(v) || v < 0) {
      fail("expected a probability field (a non-negative number or '*'), found '" +
           std::string(token) + "'");
    }
    return std::exp(static_cast<float>(-1.0 * v));
  };
  auto number = [&](std::string_view token, const char* what) -> double {
    double v = 0;
    if (!read_double(token, v) || !std::isfinite(v)) {
      fail(std::string("expected a number for ") + what + ", found '" + std::string(token) + "'");
    }
    return v;
  };
  // A whole number from lo to hi (LENG, MAXL).
  auto whole = [&](const std::string& token, const char* what, int lo, int hi) -> int {
    const double v = number(token, what);
    if (v < lo || v > hi || v != std::floor(v)) {
      fail(std::string(what) + " must be a whole number from " + std::to_string(lo) + " to " +
           std::to_string(hi) + ", found '" + token + "'");
    }
    return static_cast<int>(v);
  };
  // A STATS parameter: a number a float holds.
  auto parameter = [&](const std::string& token) -> float {
    const double v = number(token, "STATS");
    if (std::fabs(v) > std::numeric_limits<float>::max())
      fail("STATS parameter '" + token + "' is out of range");
    return static_cast<float>(v);
  };

  // Skip blank lines before a model.
  do {
    if (!text_.next_line(line_)) return false;
  } while (split(line_).empty());

  model = HmmModel{};
  model.line = text_.line_number();
  if (line_.rfind("HMMER3/", 0) != 0) {
    if (line_.rfind("HMMER2", 0) == 0)
      fail("HMMER2 format is not supported; convert with hmmconvert");
    fail("not a HMMER3 profile file: expected a line starting with 'HMMER3/'");
  }
  const char version = line_.size() > 7 ? line_[7] : '?';
  if (version < 'a' || version > 'f')
    fail(std::string("unknown HMMER3 format version '") + version + "'");
  model.format = std::string("3/") + version;

  // Header section, up to the "HMM" line.
  bool have_leng = false;
  bool has_reference = false, has_structure = false;
  for (;;) {
    need_line("the 'HMM' line");
    const auto tokens = split(line_);
    if (tokens.empty()) continue;
    const std::string& tag = tokens[0];
    if (tag == "HMM") break;
    if (tag == "NAME") {
      if (tokens.size() < 2) fail("NAME line has no name");
      model.name = tokens[1];
    } else if (tag == "ACC") {
      model.accession = rest_after_tag(line_);
    } else if (tag == "DESC") {
      model.description = rest_after_tag(line_);
    } else if (tag == "LENG") {
      if (tokens.size() < 2) fail("LENG line has no length");
      model.M = whole(tokens[1], "LENG", 1, 100000);
      have_leng = true;
    } else if (tag == "MAXL") {
      if (tokens.size() >= 2)
        model.max_length = whole(tokens[1], "MAXL", 0, std::numeric_limits<int>::max());
    } else if (tag == "ALPH") {
      if (tokens.size() < 2) fail("ALPH line has no alphabet");
      std::string a = tokens[1];
      for (auto& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (a == "amino") {
        model.alphabet = &Alphabet::amino();
      } else if (a == "dna" || a == "rna") {
        model.alphabet = &Alphabet::dna();
      } else {
        fail("unsupported alphabet '" + tokens[1] + "' (duet reads amino, DNA and RNA models)");
      }
    } else if (tag == "STATS") {
      if (tokens.size() < 4) fail("STATS line too short");
      if (tokens[1] != "LOCAL") continue;  // HMMER ignores other STATS lines too
      if (tokens[2] == "MSV" || tokens[2] == "VITERBI" || tokens[2] == "FORWARD") {
        if (tokens.size() < 5) fail("STATS LOCAL line needs two parameters");
        const float a = parameter(tokens[3]);
        const float b = parameter(tokens[4]);
        if (b <= 0) fail("STATS lambda must be positive");
        if (tokens[2] == "MSV") {
          model.msv_mu = a, model.msv_lambda = b;
        } else if (tokens[2] == "VITERBI") {
          model.viterbi_mu = a, model.viterbi_lambda = b;
        } else {
          model.forward_tau = a, model.forward_lambda = b;
        }
      } else if (tokens[2] == "VLAMBDA") {  // 3/a style
        model.msv_lambda = model.viterbi_lambda = model.forward_lambda = parameter(tokens[3]);
      } else if (tokens[2] == "VMU") {
        model.msv_mu = model.viterbi_mu = parameter(tokens[3]);
      } else if (tokens[2] == "FTAU") {
        model.forward_tau = parameter(tokens[3]);
      } else {
        fail("unknown STATS LOCAL line '" + tokens[2] + "'");
      }
      model.has_stats = true;
    } else if ((tag == "RF" || tag == "CS") && tokens.size() >= 2) {
      std::string flag = tokens[1];
      for (auto& c : flag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      (tag == "RF" ? has_reference : has_structure) = flag == "yes";
    } else if (tag == "RF" || tag == "MM" || tag == "CONS" || tag == "CS" || tag == "MAP" ||
               tag == "DATE" || tag == "COM" || tag == "NSEQ" || tag == "EFFN" || tag == "CKSUM" ||
               tag == "BM" || tag == "SM") {
      // Annotation that does not change scores.
    } else if (tag == "GA" || tag == "TC" || tag == "NC") {
      // Two scores, sequence and domain ("25.00 25.00;"); one for DNA, for both.
      const bool dna = model.alphabet != nullptr && model.alphabet->type() == AlphabetType::dna;
      const std::size_t needed = dna ? 2 : 3;
      if (tokens.size() < needed) fail("too few fields on the " + tag + " line");
      const auto cutoff = [&](std::string token) {
        if (!token.empty() && token.back() == ';') token.pop_back();
        double v = 0;
        if (!read_double(token, v) || !std::isfinite(v) ||
            std::fabs(v) > std::numeric_limits<float>::max())
          fail("the " + tag + " line's '" + token + "' is not a bit score");
        return static_cast<float>(v);
      };
      const float sequence = cutoff(tokens[1]);
      const std::array<float, 2> both{sequence, dna ? sequence : cutoff(tokens[2])};
      (tag == "GA" ? model.ga : tag == "TC" ? model.tc : model.nc) = both;
    } else if (tag == "//") {
      fail("model ends before its 'HMM' section");
    } else {
      fail("unknown tag '" + tag + "' in the model header");
    }
  }
  if (model.name.empty()) fail("model has no NAME line");
  if (!have_leng) fail("model '" + model.name + "' has no LENG line");
  if (model.alphabet == nullptr) fail("model '" + model.name + "' has no ALPH line");
  if (model.msv_lambda <= 0 || model.viterbi_lambda <= 0 || model.forward_lambda <= 0) {
    fail("model '" + model.name +
         "' has no STATS LOCAL calibration lines (run hmmbuild or hmmcalibrate)");
  }

  const int K = model.alphabet->K();
  const int M = model.M;
  {
    // The "HMM A C D ..." line was just read; check its residue columns.
    const auto tokens = split(line_);
    if (static_cast<int>(tokens.size()) != K + 1) {
      fail("the 'HMM' line should list " + std::to_string(K) + " residues for a " +
           std::string(model.alphabet->name()) + " model");
    }
  }
  need_line("the transition header line");  // m->m m->i ...
  model.t.assign(M + 1, {});
  model.match.assign(M + 1, std::vector<float>(K, 0.0f));
  model.insert.assign(M + 1, std::vector<float>(K, 0.0f));
  model.consensus.assign(M + 1, ' ');
  if (has_reference) model.reference.assign(M + 1, ' ');
  if (has_structure) model.structure.assign(M + 1, ' ');
  // Where RF sits among the annotation fields (CS is the last).
  const std::size_t reference_field = version >= 'e' ? 2 : 1;

  // A line of exactly `count` probability fields after `first` leading tokens: one value
  // too few or too many would shift every later field, so HMMER rejects the line too.
  auto read_values = [&](const std::vector<std::string_view>& tokens, std::size_t first, int count,
                         float* out, const char* what) {
    const std::size_t found = tokens.size() > first ? tokens.size() - first : 0;
    if (found != static_cast<std::size_t>(count)) {
      fail(std::string("expected ") + std::to_string(count) + " values on the " + what +
           " line, found " + std::to_string(found));
    }
    for (int i = 0; i < count; ++i) out[i] = probability(tokens[first + i]);
  };
  // A match line is the node number, K emissions, then the format's annotation fields:
  // MAP, CONS (3/e on), RF, MM (3/f on), CS, each '-' when unset. HMMER always writes
  // them; a line without any is accepted too. Counting them is what catches a missing
  // emission value: the MAP number would otherwise be read as the last emission.
  const std::size_t annotations = version >= 'f' ? 5 : version >= 'e' ? 4 : 3;
  const std::string annotation_names = version >= 'f'   ? "MAP, CONS, RF, MM, CS"
                                       : version >= 'e' ? "MAP, CONS, RF, CS"
                                                        : "MAP, RF, CS";
  auto check_match_line = [&](const std::vector<std::string_view>& tokens, int k) {
    const std::size_t fields = tokens.size() - 1;
    const std::size_t emissions = static_cast<std::size_t>(K);
    if (fields != emissions && fields != emissions + annotations) {
      fail("the match emission line of node " + std::to_string(k) + " has " +
           std::to_string(fields) + " fields after the node number; a HMMER" + model.format + " " +
           std::string(model.alphabet->name()) + " model has " + std::to_string(K) +
           " emission values, optionally followed by " + std::to_string(annotations) +
           " annotation fields (" + annotation_names + ")");
    }
    if (fields == emissions) return;
    const std::string_view map = tokens[emissions + 1];
    const bool map_ok = map == "-" || std::all_of(map.begin(), map.end(), [](char c) {
                          return std::isdigit(static_cast<unsigned char>(c)) != 0;
                        });
    if (!map_ok) {
      fail("expected an alignment column or '-' in the MAP field, found '" + std::string(map) +
           "'");
    }
    for (std::size_t i = emissions + 2; i < tokens.size(); ++i) {
      if (tokens[i].size() != 1) {
        fail("expected one character in each annotation field (" + annotation_names + "), found '" +
             std::string(tokens[i]) + "'");
      }
    }
  };

  std::vector<std::string_view>& tokens = fields_;
  need_line("COMPO or the node-0 insert line");
  split_into(line_, tokens);
  if (!tokens.empty() && tokens[0] == "COMPO") {
    model.composition.assign(K, 0.0f);
    read_values(tokens, 1, K, model.composition.data(), "COMPO");
    need_line("the node-0 insert line");
    split_into(line_, tokens);
  }
  read_values(tokens, 0, K, model.insert[0].data(), "node 0 insert emission");
  need_line("the node-0 transition line");
  split_into(line_, tokens);
  read_values(tokens, 0, kNumTransitions, model.t[0].data(), "node 0 transition");

  for (int k = 1; k <= M; ++k) {
    need_line("a match emission line");
    split_into(line_, tokens);
    if (tokens.empty() || tokens[0] == "//") {
      fail("model '" + model.name + "' ends after " + std::to_string(k - 1) + " nodes; LENG says " +
           std::to_string(M));
    }
    if (number(tokens[0], "the node number") != k) {
      fail("expected node " + std::to_string(k) + ", found '" + std::string(tokens[0]) + "'");
    }
    check_match_line(tokens, k);
    for (int x = 0; x < K; ++x) model.match[k][x] = probability(tokens[1 + x]);
    if (tokens.size() > static_cast<std::size_t>(K) + 2 && version >= 'e') {
      model.consensus[k] = tokens[K + 2][0];
    }
    if (tokens.size() == static_cast<std::size_t>(K) + 1 + annotations) {
      if (has_reference) model.reference[k] = tokens[K + 1 + reference_field][0];
      if (has_structure) model.structure[k] = tokens[K + annotations][0];
    }
    need_line("an insert emission line");
    split_into(line_, tokens);
    read_values(tokens, 0, K, model.insert[k].data(), "insert emission");
    need_line("a transition line");
    split_into(line_, tokens);
    read_values(tokens, 0, kNumTransitions, model.t[k].data(), "transition");
  }
  need_line("'//'");
  split_into(line_, tokens);
  if (tokens.empty() || tokens[0] != "//") {
    fail("expected '//' after node " + std::to_string(M) + " (is LENG right?)");
  }
  return true;
}

namespace {

// Files above this size are parsed in parts, in parallel.
constexpr std::size_t kParallelBytes = std::size_t{1} << 20;

// A part of a model file: its text (a view of the whole) and the lines before it.
struct ModelText {
  std::string_view text;
  std::int64_t lines_before = 0;
};

// Cuts `text` into about `parts` pieces of similar size, each ending just after a line
// "//" that the next non-blank line follows with "HMMER3/" (a model's end and the next
// one's start), so that each piece starts where a reader of the whole file would start a
// model. The pieces' lines_before are left to the caller (counted in parallel).
std::vector<ModelText> cut_between_models(std::string_view text, std::size_t parts) {
  std::vector<ModelText> out;
  const std::size_t target = std::max<std::size_t>(1, text.size() / parts);
  std::size_t begin = 0;
  std::size_t pos = 0;
  while (begin < text.size()) {
    std::size_t cut = std::string::npos;
    pos = std::max(pos, begin + target);
    while (pos < text.size()) {
      const std::size_t found = text.find("\n//", pos == 0 ? 0 : pos - 1);
      if (found == std::string::npos) break;
      const std::size_t line_end = text.find('\n', found + 1);
      if (line_end == std::string::npos) break;
      const std::string_view terminator = text.substr(found + 1, line_end - found - 1);
      std::size_t next = line_end + 1;
      while (next < text.size() &&
             (text[next] == '\n' || text[next] == '\r' || text[next] == ' ' || text[next] == '\t'))
        ++next;
      // The first word of the line is "//", as the reader checks.
      const bool ends_model = terminator.size() == 2 || is_space(terminator[2]);
      if (ends_model && text.compare(next, 7, "HMMER3/") == 0) {
        cut = line_end + 1;
        break;
      }
      pos = line_end;
    }
    const std::size_t end = cut == std::string::npos ? text.size() : cut;
    out.push_back(ModelText{text.substr(begin, end - begin), 0});
    begin = end;
  }
  return out;
}

std::vector<HmmModel> read_models(HmmReader& reader) {
  std::vector<HmmModel> models;
  HmmModel model;
  while (reader.next(model)) models.push_back(std::move(model));
  return models;
}

}  // namespace

std::vector<HmmModel> read_hmm_file(const std::string& path) {
  std::vector<HmmModel> models;
  const unsigned threads = part_threads(path, kParallelBytes);
  if (threads == 0) {
    HmmReader reader(path);
    models = read_models(reader);
  } else {
    const WholeText text(path);
    std::vector<ModelText> parts = cut_between_models(text.view(), 4 * threads);
    // Each part's lines, then the lines before it (for line numbers in messages).
    std::vector<std::int64_t> lines(parts.size());
    for_each_part(parts.size(), [&](std::size_t i) {
      lines[i] = std::count(parts[i].text.begin(), parts[i].text.end(), '\n');
    });
    for (std::size_t i = 1; i < parts.size(); ++i)
      parts[i].lines_before = parts[i - 1].lines_before + lines[i - 1];
    std::vector<std::vector<HmmModel>> parsed(parts.size());
    std::vector<std::exception_ptr> failures(parts.size());
    for_each_part(parts.size(), [&](std::size_t i) {
      try {
        HmmReader reader(path, parts[i].text, parts[i].lines_before);
        parsed[i] = read_models(reader);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    });
    // The first part that failed is where a reader of the whole file would have stopped.
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (failures[i]) std::rethrow_exception(failures[i]);
      for (HmmModel& m : parsed[i]) models.push_back(std::move(m));
    }
  }
  if (models.empty()) throw InputError(path, 0, "no profile HMM in the file");
  for (const auto& m : models) {
    if (m.alphabet != models.front().alphabet) {
      throw InputError(path, m.line,
                       "model '" + m.name + "' has a different alphabet from the first model");
    }
  }
  return models;
}

}  // namespace duet
