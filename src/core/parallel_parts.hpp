// Parsing a large file in parts: a helper that runs one body per part on several threads
// (the standard library's: core depends on no threading library).
#pragma once

#include <cstddef>
#include <functional>

namespace duet {

// Runs body(i) for every i < n on up to std::thread::hardware_concurrency() threads, each
// taking the next index left; returns once all are done. body must not throw (catch and
// keep a failure per index).
void for_each_part(std::size_t n, const std::function<void(std::size_t)>& body);

}  // namespace duet
