// Readers of the pair-HMM input formats (see pairhmm_input.hpp).
#include "core/pairhmm/pairhmm_input.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <memory_resource>
#include <string_view>

#include "core/error.hpp"
#include "core/huge_pages.hpp"
#include "core/parallel_parts.hpp"
#include "core/text_reader.hpp"

namespace duet::pairhmm {

namespace {

bool is_separator(char c) {
  return c == ' ' || c == '\t';
}

// The first space or tab in [p, end), or end. Eight bytes at a time on a little-endian
// machine (reads and quality strings are a hundred characters or more): a byte of x is
// zero where (x - 0x01..) & ~x has its high bit, and the lowest such byte is exact.
const char* find_separator(const char* p, const char* end) {
  if constexpr (std::endian::native == std::endian::little) {
    constexpr std::uint64_t kOnes = 0x0101010101010101u, kHighs = 0x8080808080808080u;
    const auto zero_bytes = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
    for (; end - p >= 8; p += 8) {
      std::uint64_t x;
      std::memcpy(&x, p, sizeof x);
      const std::uint64_t found = zero_bytes(x ^ (kOnes * ' ')) | zero_bytes(x ^ (kOnes * '\t'));
      if (found != 0) return p + std::countr_zero(found) / 8;
    }
  }
  while (p < end && !is_separator(*p)) ++p;
  return p;
}

// The fields of a line (separated by spaces and tabs), into `fields`: its capacity is
// reused from line to line.
void split_fields(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  const char* p = line.data();
  const char* const end = p + line.size();
  while (p < end) {
    while (p < end && is_separator(*p)) ++p;
    if (p == end) break;
    const char* const start = p;
    p = find_separator(p, end);
    fields.emplace_back(start, static_cast<std::size_t>(p - start));
  }
}

// BaseCode by character; 0: not a base.
constexpr std::array<std::uint8_t, 256> kBaseCodes = [] {
  std::array<std::uint8_t, 256> codes{};
  codes['A'] = kA;
  codes['C'] = kC;
  codes['G'] = kG;
  codes['T'] = kT;
  codes['N'] = kN;
  return codes;
}();

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t") == line.npos;
}

// Reads and haplotypes are allocated from `arena`.
class Parser {
 public:
  Parser(const TextReader& text, std::pmr::memory_resource* arena) : text_(text), arena_(arena) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw InputError(text_.path(), text_.line_number(), message);
  }

  // Every character is converted before any is checked (no branch per base); the first
  // bad one, if any, is then found for the message.
  Bytes bases(std::string_view field, const char* what) const {
    if (field.empty()) fail(std::string("empty ") + what);
    Bytes codes(field.size(), arena_);
    bool bad = false;
    for (std::size_t i = 0; i < field.size(); ++i) {
      codes[i] = kBaseCodes[static_cast<unsigned char>(field[i])];
      bad |= codes[i] == 0;
    }
    if (bad) {
      const std::size_t i = static_cast<std::size_t>(
          std::find(codes.begin(), codes.end(), std::uint8_t{0}) - codes.begin());
      fail(std::string("illegal base '") + field[i] + "' in " + what + " (A, C, G, T or N)");
    }
    return codes;
  }

  Bytes qualities(std::string_view field, std::size_t length, const char* what) const {
    if (field.size() != length) {
      fail(std::string(what) + " has " + std::to_string(field.size()) +
           " characters for a read of " + std::to_string(length) + " bases");
    }
    Bytes q(field.size(), arena_);
    bool bad = false;
    for (std::size_t i = 0; i < field.size(); ++i) {
      // Phred+33: '!' (33) to '~' (126); anything else wraps past 93.
      const auto phred = static_cast<std::uint8_t>(static_cast<unsigned char>(field[i]) - 33u);
      q[i] = phred;
      bad |= phred > 93;
    }
    if (bad) fail(std::string("illegal quality character in ") + what + " (Phred+33: '!' to '~')");
    return q;
  }

  // The five read columns starting at fields[first]: bases and four quality strings.
  // (Built in place: assigning an arena's vector to a default one would copy it.)
  Read read(const std::vector<std::string_view>& fields, std::size_t first) const {
    Bytes read_bases = bases(fields[first], "read");
    const std::size_t n = read_bases.size();
    return Read{std::move(read_bases), qualities(fields[first + 1], n, "base qualities"),
                qualities(fields[first + 2], n, "insertion qualities"),
                qualities(fields[first + 3], n, "deletion qualities"),
                qualities(fields[first + 4], n, "gap-continuation qualities")};
  }

  std::int64_t count(std::string_view field, const char* what) const {
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), n);
    if (ec != std::errc() || end != field.data() + field.size() || n < 1 || n > (1 << 30)) {
      fail(std::string("expected a positive number of ") + what + ", found '" + std::string(field) +
           "'");
    }
    return n;
  }

  double number(std::string_view field) const {
    double x = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), x);
    if (ec != std::errc() || end != field.data() + field.size() || !std::isfinite(x)) {
      fail("expected log10 likelihood is not a number: '" + std::string(field) + "'");
    }
    return x;
  }

 private:
  const TextReader& text_;
  std::pmr::memory_resource* arena_;
};

void read_gkl(TextReader& text, Input& input, std::string& line, bool have_line) {
  Parser parse(text, input.arenas.back().get());
  std::vector<std::string_view> fields;
  for (; have_line || text.next_line(line); have_line = false) {
    if (is_blank(line) || line[0] == '#') continue;
    split_fields(line, fields);
    if (fields.size() != 6 && fields.size() != 7) {
      parse.fail(
          "expected 6 or 7 columns (haplotype, read, base, insertion, deletion and "
          "gap-continuation qualities, optional expected log10), found " +
          std::to_string(fields.size()));
    }
    Batch batch;
    batch.first_pair = static_cast<std::int64_t>(input.expected.size());
    batch.haplotypes.push_back(Haplotype{parse.bases(fields[0], "haplotype")});
    batch.reads.push_back(parse.read(fields, 1));
    input.expected.push_back(fields.size() == 7 ? parse.number(fields[6])
                                                : std::numeric_limits<double>::quiet_NaN());
    input.batches.push_back(std::move(batch));
  }
}

void read_batches(TextReader& text, Input& input, std::string& line, bool have_line) {
  Parser parse(text, input.arenas.back().get());
  auto next_content_line = [&](const char* expecting) {
    while (text.next_line(line))
      if (!is_blank(line)) return;
    throw InputError(text.path(), text.line_number(),
                     std::string("unexpected end of file: expected ") + expecting);
  };
  std::int64_t pairs = 0;
  std::vector<std::string_view> fields;
  for (; have_line || text.next_line(line); have_line = false) {
    if (is_blank(line)) continue;
    split_fields(line, fields);
    if (fields.size() != 2) {
      parse.fail("expected a batch header 'R H' (numbers of reads and haplotypes), found " +
                 std::to_string(fields.size()) + " columns");
    }
    Batch batch;
    batch.first_pair = pairs;
    const std::int64_t reads = parse.count(fields[0], "reads");
    const std::int64_t haplotypes = parse.count(fields[1], "haplotypes");
    for (std::int64_t i = 0; i < reads; ++i) {
      next_content_line("a read line");
      split_fields(line, fields);
      if (fields.size() != 5) {
        parse.fail(
            "expected a read line with 5 columns (bases, base, insertion, deletion and "
            "gap-continuation qualities), found " +
            std::to_string(fields.size()));
      }
      batch.reads.push_back(parse.read(fields, 0));
    }
    for (std::int64_t i = 0; i < haplotypes; ++i) {
      next_content_line("a haplotype line");
      split_fields(line, fields);
      if (fields.size() != 1) {
        parse.fail("expected a haplotype line with 1 column, found " +
                   std::to_string(fields.size()));
      }
      batch.haplotypes.push_back(Haplotype{parse.bases(fields[0], "haplotype")});
    }
    pairs += batch.pairs();
    input.batches.push_back(std::move(batch));
  }
}

}  // namespace

char base_symbol(std::uint8_t code) {
  switch (code) {
    case kA:
      return 'A';
    case kC:
      return 'C';
    case kG:
      return 'G';
    case kT:
      return 'T';
    case kN:
      return 'N';
    default:
      return '?';
  }
}

Format parse_format(const std::string& name) {
  if (name == "gkl") return Format::gkl;
  if (name == "batch") return Format::batch;
  if (name == "auto") return Format::automatic;
  throw UsageError("unknown pair-HMM input format '" + name + "' (gkl, batch or auto)");
}

const char* format_name(Format format) {
  switch (format) {
    case Format::gkl:
      return "gkl";
    case Format::batch:
      return "batch";
    case Format::automatic:
      return "auto";
  }
  return "?";
}

std::int64_t Input::pairs() const {
  std::int64_t n = 0;
  for (const Batch& b : batches) n += b.pairs();
  return n;
}

std::int64_t Input::cells() const {
  std::int64_t n = 0;
  for (const Batch& b : batches) {
    std::int64_t rows = 0, columns = 0;
    for (const Read& r : b.reads) rows += r.length();
    for (const Haplotype& h : b.haplotypes) columns += h.length();
    n += rows * columns;
  }
  return n;
}

std::vector<Pair> Input::pair_list() const {
  std::vector<Pair> list;
  list.reserve(static_cast<std::size_t>(pairs()));
  for (const Batch& b : batches)
    for (const Read& r : b.reads)
      for (const Haplotype& h : b.haplotypes) list.push_back(Pair{&r, &h});
  return list;
}

namespace {

// Reads `text` (the whole file, or a part of it) from its first line on: leading blank and
// comment lines skipped, the format detected when automatic. A part may hold no pair.
// `text_bytes`: the text's size where known (0: not), for the arena's first allocation
// (the reads' bytes take at most the text's).
Input read_text(TextReader& text, Format format, std::size_t text_bytes, bool part = false) {
  Input input;
  input.path = text.path();
  // Large text: the arena's blocks in huge pages.
  constexpr std::size_t kArenaMinimum = std::size_t{64} << 10, kHugeArena = std::size_t{4} << 20;
  input.arenas.push_back(std::make_shared<std::pmr::monotonic_buffer_resource>(
      std::max(kArenaMinimum, text_bytes),
      text_bytes >= kHugeArena ? huge_page_resource() : std::pmr::get_default_resource()));
  std::string line;
  bool have_line = false;
  while (text.next_line(line)) {
    if (is_blank(line) || line[0] == '#') continue;
    have_line = true;
    break;
  }
  if (!have_line && part) return input;
  if (!have_line) throw InputError(text.path(), 0, "no pairs: the file is empty");
  if (format == Format::automatic) {
    std::vector<std::string_view> fields;
    split_fields(line, fields);
    format = fields.size() == 2 ? Format::batch : Format::gkl;
  }
  input.format = format;
  if (format == Format::gkl) {
    read_gkl(text, input, line, have_line);
  } else {
    read_batches(text, input, line, have_line);
  }
  return input;
}

// Files above this size are read in parts, in parallel.
constexpr std::uint64_t kParallelBytes = std::uint64_t{8} << 20;

// Where a part may start: a line that begins a batch whatever the lines before it. In the
// batch format that is a line of two fields (a header: read lines have five, haplotype
// lines one); in gkl every line is a batch.
bool starts_batch(std::string_view line, Format format) {
  if (format == Format::gkl) return true;
  std::vector<std::string_view> fields;
  split_fields(line, fields);
  return fields.size() == 2;
}

// `text` cut into about `parts` pieces, each starting at a line where starts_batch holds
// (the first at the text's start).
std::vector<std::string_view> cut_at_batches(std::string_view text, Format format,
                                             std::size_t parts) {
  std::vector<std::string_view> out;
  const std::size_t target = std::max<std::size_t>(1, text.size() / parts);
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t cut = text.size();
    for (std::size_t pos = text.find('\n', std::min(text.size(), begin + target));
         pos != std::string_view::npos && pos + 1 < text.size(); pos = text.find('\n', pos + 1)) {
      const std::size_t end = std::min(text.find('\n', pos + 1), text.size());
      if (starts_batch(text.substr(pos + 1, end - pos - 1), format)) {
        cut = pos + 1;
        break;
      }
    }
    out.push_back(text.substr(begin, cut - begin));
    begin = cut;
  }
  return out;
}

}  // namespace

Input read_input(const std::string& path, Format format) {
  const unsigned threads = part_threads(path, kParallelBytes);
  if (threads == 0) {
    TextReader text(path);
    return read_text(text, format, text.file_size());
  }
  // A large file: its text in memory, cut between batches, the parts parsed at once.
  const WholeText whole(path);
  std::string_view text = whole.view();
  // The format, from the first lines (a reader of the whole file would read them first).
  TextReader head(path, text.substr(0, text.find('\n', 1 << 16)), 0);
  std::string line;
  while (head.next_line(line) && (is_blank(line) || line[0] == '#')) {
  }
  if (format == Format::automatic) {
    std::vector<std::string_view> fields;
    split_fields(line, fields);
    format = fields.size() == 2 ? Format::batch : Format::gkl;
  }
  const std::vector<std::string_view> parts = cut_at_batches(text, format, 4 * threads);
  std::vector<std::int64_t> lines_before(parts.size() + 1, 0);
  for_each_part(parts.size(), [&](std::size_t i) {
    lines_before[i + 1] = std::count(parts[i].begin(), parts[i].end(), '\n');
  });
  for (std::size_t i = 1; i <= parts.size(); ++i) lines_before[i] += lines_before[i - 1];
  std::vector<Input> parsed(parts.size());
  std::vector<std::exception_ptr> failures(parts.size());
  for_each_part(parts.size(), [&](std::size_t i) {
    try {
      TextReader reader(path, parts[i], lines_before[i]);
      parsed[i] = read_text(reader, format, parts[i].size(), i > 0);
    } catch (...) {
      failures[i] = std::current_exception();
    }
  });
  // A part that failed: the whole text again on one thread, for the message a reader of
  // the whole file gives (a bad line may have cut the parts where no batch starts).
  for (const std::exception_ptr& failure : failures) {
    if (!failure) continue;
    TextReader reader(path, text, 0);
    (void)read_text(reader, format, text.size());
    std::rethrow_exception(failure);  // not reached: the whole text fails too
  }
  Input input;
  input.path = path;
  input.format = format;
  std::int64_t pairs = 0;
  for (Input& part : parsed) {
    for (Batch& b : part.batches) {
      b.first_pair = pairs;
      pairs += b.pairs();
      input.batches.push_back(std::move(b));
    }
    input.expected.insert(input.expected.end(), part.expected.begin(), part.expected.end());
    input.arenas.insert(input.arenas.end(), part.arenas.begin(), part.arenas.end());
  }
  return input;
}

}  // namespace duet::pairhmm
