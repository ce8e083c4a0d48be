// TextReader: buffered line reading through zlib's gz* functions.
#include "core/text_reader.hpp"

#include <sys/mman.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/huge_pages.hpp"

namespace duet {

namespace {

// Lines are cut from reads of 64 KiB, through zlib's input buffer of 64 KiB; the line
// buffer doubles for a longer line. Small, so that opening a small file costs little next
// to parsing it (the fuzz targets in tests/fuzz open one per input; buffers of 1 MiB cost
// them page faults and mmap calls under AddressSanitizer).
constexpr std::size_t kInitialBuffer = std::size_t{1} << 16;
constexpr unsigned kZlibBuffer = 1u << 16;
// A whole text at least this large has its buffer's pages touched in parallel.
constexpr std::uint64_t kPrefaultBytes = std::uint64_t{32} << 20;

}  // namespace

std::string zlib_error_text(void* gz_file, const std::string& opened_as) {
  int code = 0;
  const std::string text = gzerror(static_cast<gzFile>(gz_file), &code);
  const std::string prefix = opened_as + ": ";
  return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
}

TextReader::TextReader(const std::string& path) : path_(path), buffer_(kInitialBuffer) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, 0, "is a folder, not a file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno ? errno : ENOENT));
  }
  gzbuffer(f, kZlibBuffer);
  gz_ = f;
  const auto size = std::filesystem::file_size(path, ec);
  file_size_ = ec ? 0 : size;
}

TextReader::TextReader(std::string path, std::string_view text, std::int64_t lines_before)
    : path_(std::move(path)),
      view_(text.data()),
      end_(text.size()),
      eof_(true),
      line_number_(lines_before) {
  if (view_ == nullptr) view_ = "";
  file_size_ = text.size();
}

WholeText::WholeText(const std::string& path) {
  TextReader reader(path);
  gzFile f = static_cast<gzFile>(reader.gz_);
  // Sized from the file (a compressed one grows as it inflates): for a plain file one
  // allocation, read into directly, its pages zeroed on every core first.
  grow(std::max<std::uint64_t>(reader.file_size_ + 1, kInitialBuffer));
  if (reader.file_size_ >= kPrefaultBytes) prefault_in_parallel(data_, capacity_);
  for (;;) {
    if (size_ == capacity_) grow(2 * capacity_);
    const std::size_t room = std::min<std::size_t>(capacity_ - size_, 1u << 30);
    const int n = gzread(f, data_ + size_, static_cast<unsigned>(room));
    if (n < 0) throw InputError(path, 1, "read error: " + zlib_error_text(f, path));
    if (n == 0) {
      int code = 0;
      gzerror(f, &code);
      if (code != Z_OK && code != Z_STREAM_END)
        throw InputError(path, 1, "read error: " + zlib_error_text(f, path));
      break;
    }
    size_ += static_cast<std::size_t>(n);
  }
}

WholeText::~WholeText() {
  if (data_ != nullptr) ::munmap(data_, capacity_);
}

void WholeText::grow(std::size_t capacity) {
  capacity = huge_page_bytes(capacity);
  data_ = static_cast<char*>(map_huge_pages(capacity, data_, capacity_));
  capacity_ = capacity;
}

TextReader::~TextReader() {
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
}

std::uint64_t TextReader::bytes_read() const {
  if (gz_ == nullptr) return static_cast<std::uint64_t>(begin_);
  const auto offset = gzoffset(static_cast<gzFile>(gz_));
  return offset < 0 ? 0 : static_cast<std::uint64_t>(offset);
}

bool TextReader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
  gzFile f = static_cast<gzFile>(gz_);
  const int n = gzread(f, buffer_.data() + end_, static_cast<unsigned>(buffer_.size() - end_));
  if (n < 0) {
    throw InputError(path_, line_number_ + 1, "read error: " + zlib_error_text(f, path_));
  }
  if (n == 0) {
    int code = 0;
    gzerror(f, &code);
    if (code != Z_OK && code != Z_STREAM_END) {
      throw InputError(path_, line_number_ + 1, "read error: " + zlib_error_text(f, path_));
    }
    eof_ = true;
    return false;
  }
  end_ += static_cast<std::size_t>(n);
  return true;
}

bool TextReader::next_line(std::string& line) {
  for (;;) {
    const char* start = base() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      std::size_t len = static_cast<const char*>(nl) - start;
      std::size_t take = len;
      if (take > 0 && start[take - 1] == '\r') --take;
      line.assign(start, take);
      begin_ += len + 1;
      ++line_number_;
      return true;
    }
    if (!fill()) {
      if (begin_ == end_) return false;
      std::size_t take = end_ - begin_;
      const char* s = base() + begin_;
      if (take > 0 && s[take - 1] == '\r') --take;
      line.assign(s, take);
      begin_ = end_;
      ++line_number_;
      return true;
    }
  }
}

}  // namespace duet
