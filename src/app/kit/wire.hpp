// Results as bytes, for the ranks of a distributed run to send to rank 0
// (kit/cluster.hpp): a writer appending plain values, strings and vectors in order, and a
// reader taking them back in the same order. Both ends are the same build on machines of
// one byte order: values travel as their bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "scheduler/scheduler.hpp"

namespace duet::app {

class WireWriter {
 public:
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void value(const T& v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void text(std::string_view s) {
    value(static_cast<std::uint64_t>(s.size()));
    bytes_.append(s);
  }
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void values(const std::vector<T>& v) {
    value(static_cast<std::uint64_t>(v.size()));
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  template <class T>
  requires std::is_trivially_copyable_v<T> T value() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  std::string text() {
    const auto n = static_cast<std::size_t>(value<std::uint64_t>());
    return std::string(take(n), n);
  }
  template <class T>
  requires std::is_trivially_copyable_v<T> std::vector<T> values() {
    const auto n = static_cast<std::size_t>(value<std::uint64_t>());
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), take(n * sizeof(T)), n * sizeof(T));
    return v;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  const char* take(std::size_t n) {
    if (n > bytes_.size() - at_) throw std::runtime_error("a rank's results are truncated");
    const char* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

// A pass's scheduler summary, trace rows included.
void write_run_summary(WireWriter& out, const scheduler::RunSummary& s);
scheduler::RunSummary read_run_summary(WireReader& in);

}  // namespace duet::app
