// order_longest_first (src/device/hmmsearch/target_order.hpp, host code of the GPU engines): the
// same order as std::stable_sort by key descending, on both of its paths.
#include "device/hmmsearch/target_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "test_support.hpp"

namespace {

std::vector<int> stable_sorted(const std::vector<int>& keys) {
  std::vector<int> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys[a] > keys[b]; });
  return order;
}

TEST(TargetOrder, LongestFirstAsStableSort) {
  std::mt19937_64 rng(duet::test::test_seed());
  std::vector<std::int64_t> scratch;
  // Key ranges: many ties (counting sort), wide ranges (counting sort up to 4n + 65536,
  // the comparison sort beyond), and a negative key (comparison sort).
  for (const int range : {1, 2, 50, 1000, 70000, 1 << 20, 1 << 30}) {
    for (const int n : {0, 1, 2, 7, 100, 5000}) {
      std::vector<int> keys(static_cast<std::size_t>(n));
      for (int& k : keys) k = static_cast<int>(rng() % static_cast<unsigned>(range));
      if (range == 2 && n > 1) keys[1] = -3;
      std::vector<int> order(keys.size(), -1);
      duet::device::order_longest_first(
          n, order.data(), [&](int i) { return keys[static_cast<std::size_t>(i)]; }, scratch);
      EXPECT_EQ(order, stable_sorted(keys)) << "range " << range << ", n " << n;
    }
  }
}

}  // namespace
