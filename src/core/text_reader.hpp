// Line reader over a plain or gzip-compressed text file (zlib reads both), counting
// lines for error messages. Streams: memory does not grow with the file.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace duet {

// White space as std::isspace has it in the C locale, the one duet runs in (space, \t,
// \n, \v, \f, \r), by table: the text readers test every byte.
inline constexpr std::array<bool, 256> kWhiteSpace = [] {
  std::array<bool, 256> space{};
  for (const unsigned char c : {' ', '\t', '\n', '\v', '\f', '\r'}) space[c] = true;
  return space;
}();
inline bool is_space(char c) {
  return kWhiteSpace[static_cast<unsigned char>(c)];
}

// The text of zlib's last error on `gz_file` (a gzFile) without the name zlib puts in
// front of it (`opened_as`: the path given to gzopen, or "<fd:N>" for gzdopen), so that
// every reader's message names the file once, the same way whichever call opened it.
std::string zlib_error_text(void* gz_file, const std::string& opened_as);

// The whole text of a plain or gzip file, held in memory of its own: an anonymous mapping
// with huge pages where the system gives them, so that a file of hundreds of MB is read
// without a page fault per 4 KiB (filling a std::string of that size was mostly page
// faults; bench/RESULTS.md). InputError as TextReader.
class WholeText {
 public:
  explicit WholeText(const std::string& path);
  ~WholeText();
  WholeText(const WholeText&) = delete;
  WholeText& operator=(const WholeText&) = delete;
  std::string_view view() const { return {data_ == nullptr ? "" : data_, size_}; }

 private:
  void grow(std::size_t capacity);
  char* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

class TextReader {
 public:
  // Throws InputError when the file cannot be opened.
  explicit TextReader(const std::string& path);
  // Lines of `text` already in memory (not copied: it must outlive the reader): a part of
  // the file `path` that starts after its line `lines_before` (line numbers in messages
  // are the file's).
  TextReader(std::string path, std::string_view text, std::int64_t lines_before);
  ~TextReader();
  TextReader(const TextReader&) = delete;
  TextReader& operator=(const TextReader&) = delete;

  // Next line without its end-of-line ('\n' or "\r\n"); false at end of file.
  // Throws InputError on a read or decompression error.
  bool next_line(std::string& line);
  std::int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  // Total bytes of the file on disk (compressed size for gzip), 0 if unknown.
  std::uint64_t file_size() const { return file_size_; }
  // Bytes consumed from the file so far (compressed offset for gzip).
  std::uint64_t bytes_read() const;

 private:
  friend class WholeText;
  bool fill();

  // The text lines are cut from: the buffer, or the text given to the constructor.
  const char* base() const { return view_ != nullptr ? view_ : buffer_.data(); }

  std::string path_;
  void* gz_ = nullptr;  // gzFile
  std::vector<char> buffer_;
  const char* view_ = nullptr;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  bool eof_ = false;
  std::int64_t line_number_ = 0;
  std::uint64_t file_size_ = 0;
};

}  // namespace duet
