// Large allocations in anonymous mappings with huge pages where the system gives them
// (transparent huge pages in "madvise" mode): hundreds of MB filled at once take a page
// fault per 2 MiB instead of per 4 KiB.
#pragma once

#include <cstddef>
#include <memory_resource>

namespace duet {

// `bytes` rounded up to whole huge pages (2 MiB; at least one).
std::size_t huge_page_bytes(std::size_t bytes);

// A mapping of huge_page_bytes(bytes), advised to take huge pages: new, or `old` (a mapping
// of `old_bytes` from here) grown with mremap, its contents kept. Throws std::bad_alloc.
// Unmap it with munmap(memory, huge_page_bytes(bytes)).
void* map_huge_pages(std::size_t bytes, void* old = nullptr, std::size_t old_bytes = 0);

// A memory resource of such mappings, one per allocation, for the few large blocks of an
// arena (std::pmr::monotonic_buffer_resource's upstream). Sizes are rounded up to 2 MiB.
// Throws std::bad_alloc when the system has no memory.
std::pmr::memory_resource* huge_page_resource();

// Touches every page of [data, data + bytes) from several threads (for_each_part), so that
// the kernel zeroes the pages on every core rather than on the one thread that then
// fills them (a read() into a fresh buffer of 658 MB spent 0.3 s in page zeroing).
void prefault_in_parallel(char* data, std::size_t bytes);

}  // namespace duet
