// huge_page_resource and prefault_in_parallel: see huge_pages.hpp.
#include "core/huge_pages.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <new>

#include "core/parallel_parts.hpp"

namespace duet {

namespace {

class HugePageResource final : public std::pmr::memory_resource {
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (alignment > huge_page_bytes(1)) throw std::bad_alloc();
    return map_huge_pages(bytes);
  }
  void do_deallocate(void* memory, std::size_t bytes, std::size_t) override {
    ::munmap(memory, huge_page_bytes(bytes));
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }
};

}  // namespace

std::size_t huge_page_bytes(std::size_t bytes) {
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  return (std::max<std::size_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage;
}

void* map_huge_pages(std::size_t bytes, void* old, std::size_t old_bytes) {
  const std::size_t size = huge_page_bytes(bytes);
  void* memory = old == nullptr ? ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                : ::mremap(old, huge_page_bytes(old_bytes), size, MREMAP_MAYMOVE);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  // Advice only: without transparent huge pages the memory comes in 4 KiB pages.
  (void)::madvise(memory, size, MADV_HUGEPAGE);
  return memory;
}

std::pmr::memory_resource* huge_page_resource() {
  static HugePageResource resource;
  return &resource;
}

void prefault_in_parallel(char* data, std::size_t bytes) {
  constexpr std::size_t kPart = std::size_t{16} << 20, kPage = 4096;
  for_each_part((bytes + kPart - 1) / kPart, [&](std::size_t part) {
    const std::size_t end = std::min(bytes, (part + 1) * kPart);
    for (std::size_t at = part * kPart; at < end; at += kPage) data[at] = 0;
  });
}

}  // namespace duet
