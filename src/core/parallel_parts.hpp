// Parsing a large file in parts: a helper that runs one body per part on several threads
// (the standard library's: core depends on no threading library).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace duet {

// Runs body(i) for every i < n on up to std::thread::hardware_concurrency() threads, each
// taking the next index left; returns once all are done. body must not throw (catch and
// keep a failure per index).
void for_each_part(std::size_t n, const std::function<void(std::size_t)>& body);

// The threads to read `path` in parts with: std::thread::hardware_concurrency() when it is
// a regular file of at least `min_bytes` and there are several cores; 0 otherwise (read it
// on one thread, as a stream).
unsigned part_threads(const std::string& path, std::uintmax_t min_bytes);

}  // namespace duet
