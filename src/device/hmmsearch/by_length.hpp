// A value that depends on a target's length (the length terms the GPU kernels take from
// the host: MsvScores::tjb, ViterbiScores::ncj_move, ForwardScores::ncj), computed once per
// length. Plain C++ (host code only).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace duet::device {

// Lengths below kTabled are kept in a table grown on demand; longer ones are computed
// on every call: a table indexed by length would take gigabytes for a target of
// 2^31 - 1 residues, and such targets are few, each worth far more work than one call.
template <typename T>
class ByLength {
 public:
  static constexpr int kTabled = 1 << 17;

  explicit ByLength(std::function<T(int)> compute) : compute_(std::move(compute)) {}

  T operator()(int L) {
    if (L >= kTabled) return compute_(L);
    const auto index = static_cast<std::size_t>(L);
    if (index >= table_.size()) {
      const std::size_t old = table_.size();
      table_.resize(std::min(std::max(index + 1, 2 * old), static_cast<std::size_t>(kTabled)));
      for (std::size_t l = old; l < table_.size(); ++l) table_[l] = compute_(static_cast<int>(l));
    }
    return table_[index];
  }

 private:
  std::function<T(int)> compute_;
  std::vector<T> table_;
};

}  // namespace duet::device
