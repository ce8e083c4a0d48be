// The order in which the GPU kernels take their targets: longest first, so that a launch
// does not end waiting on one long target started last. Plain C++ (host code only).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace duet::device {

// Writes the indices 0..n-1 into order[0..n) by key(i) descending, equal keys in index
// order: the order std::stable_sort gives with `key(a) > key(b)`. Keys are lengths (>= 0).
// A counting sort over the key range when that range is not much larger than n (a batch
// holds tens of thousands of targets: a comparison sort there cost the feeder measurable
// time per batch), std::stable_sort otherwise. `counts` is scratch kept by the caller.
template <class Key>
void order_longest_first(int n, int* order, const Key& key, std::vector<std::int64_t>& counts) {
  if (n <= 0) return;
  int longest = 0;
  bool negative = false;
  for (int i = 0; i < n; ++i) {
    const int k = key(i);
    longest = std::max(longest, k);
    negative = negative || k < 0;
  }
  if (negative || static_cast<std::int64_t>(longest) > 4 * static_cast<std::int64_t>(n) + 65536) {
    std::iota(order, order + n, 0);
    std::stable_sort(order, order + n, [&](int a, int b) { return key(a) > key(b); });
    return;
  }
  // counts[longest - k]: first position of key k, longest first.
  counts.assign(static_cast<std::size_t>(longest) + 2, 0);
  for (int i = 0; i < n; ++i) ++counts[static_cast<std::size_t>(longest - key(i)) + 1];
  for (std::size_t b = 1; b < counts.size(); ++b) counts[b] += counts[b - 1];
  for (int i = 0; i < n; ++i) order[counts[static_cast<std::size_t>(longest - key(i))]++] = i;
}

}  // namespace duet::device
