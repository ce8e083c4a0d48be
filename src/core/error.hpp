// Errors that reach the user: bad input (with the file and, where there is one, the
// line) and bad usage. Every command catches these, prints what() once and exits non-zero.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace duet {

// A file the user gave cannot be used: missing, unreadable, malformed.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::int64_t line, const std::string& message)
      : std::runtime_error(format(file, line, message)), file_(std::move(file)), line_(line) {}
  const std::string& file() const { return file_; }
  std::int64_t line() const { return line_; }  // 0 when the problem has no line

 private:
  static std::string format(const std::string& file, std::int64_t line, const std::string& message) {
    return line > 0 ? file + ":" + std::to_string(line) + ": " + message : file + ": " + message;
  }
  std::string file_;
  std::int64_t line_;
};

// The command line or configuration asks for something impossible.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace duet
