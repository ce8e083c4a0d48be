// The disk cache of run-time compiled kernels (src/device/jit_cache.hpp): plain C++, no
// GPU, so it runs everywhere (CI included). The GPU side (compile, load, corrupt entries
// recompiled) is tested in gpu_kernels_test.cpp (GpuJit.*).
#include "device/jit_cache.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "test_support.hpp"

namespace duet::device::jit {
namespace {

CacheKey sample_key() {
  CacheKey k;
  k.kernel = "duet_msv_exact_jit";
  k.specialisation = "M260";
  k.source_hash = fnv1a64("kernel source");
  k.options = "--gpu-architecture=sm_90 -std=c++17 -DDUET_JIT_M=260";
  k.arch = "sm_90";
  k.compiler = "nvrtc 13.0";
  return k;
}

TEST(JitCache, Fnv1aKnownValues) {
  // The published FNV-1a 64-bit test vectors.
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  EXPECT_EQ(hex64(0x00ab0000000000cdull), "00ab0000000000cd");
}

// Every field of the key changes its text and its file name.
TEST(JitCache, EveryKeyFieldChangesTheEntry) {
  const CacheKey base = sample_key();
  EXPECT_EQ(base.file_name().rfind("duet_msv_exact_jit-M260-sm_90-", 0), 0u) << base.file_name();
  EXPECT_EQ(base.file_name().substr(base.file_name().size() - 6), ".cubin");
  std::set<std::string> names = {base.file_name()}, texts = {base.text()};
  const auto vary = [&](auto change) {
    CacheKey k = base;
    change(k);
    EXPECT_TRUE(names.insert(k.file_name()).second) << k.text();
    EXPECT_TRUE(texts.insert(k.text()).second) << k.text();
  };
  vary([](CacheKey& k) { k.kernel = "other"; });
  vary([](CacheKey& k) { k.specialisation = "M261"; });
  vary([](CacheKey& k) { k.source_hash = fnv1a64("kernel source "); });
  vary([](CacheKey& k) { k.options += " -DX"; });
  vary([](CacheKey& k) { k.arch = "sm_100"; });
  vary([](CacheKey& k) { k.compiler = "nvrtc 13.1"; });
  EXPECT_EQ(base.text(), sample_key().text());  // deterministic
}

TEST(JitCache, DirectoryFromEnvironment) {
  EXPECT_EQ(cache_directory("/x/jit", "/xdg", "/home/u"), "/x/jit");
  EXPECT_EQ(cache_directory("", "/xdg", "/home/u"), "");  // empty: cache off
  EXPECT_EQ(cache_directory(nullptr, "/xdg", "/home/u"), "/xdg/duet/jit");
  EXPECT_EQ(cache_directory(nullptr, "relative", "/home/u"), "/home/u/.cache/duet/jit");
  EXPECT_EQ(cache_directory(nullptr, "", "/home/u"), "/home/u/.cache/duet/jit");
  EXPECT_EQ(cache_directory(nullptr, nullptr, "/home/u"), "/home/u/.cache/duet/jit");
  EXPECT_EQ(cache_directory(nullptr, nullptr, nullptr), "");
  EXPECT_EQ(cache_directory(nullptr, nullptr, ""), "");
}

// An entry reads back only whole and intact: every single-byte change and every
// truncation is refused, as is the entry of another key.
TEST(JitCache, EntryReadsBackOnlyWhenIntact) {
  const std::string key = sample_key().text();
  const std::string payload = std::string(
      "\x7f"
      "ELF cubin bytes\0\x01\x02",
      20);
  const std::string entry = encode_entry(key, payload);
  ASSERT_EQ(decode_entry(entry, key), payload);
  for (std::size_t i = 0; i < entry.size(); ++i) {
    std::string changed = entry;
    changed[i] = static_cast<char>(changed[i] ^ 0x01);
    EXPECT_FALSE(decode_entry(changed, key)) << "byte " << i << " changed";
  }
  for (std::size_t n = 0; n < entry.size(); ++n)
    EXPECT_FALSE(decode_entry(entry.substr(0, n), key)) << "truncated to " << n;
  EXPECT_FALSE(decode_entry(entry + "x", key)) << "trailing byte";
  CacheKey other = sample_key();
  other.specialisation = "M261";
  EXPECT_FALSE(decode_entry(entry, other.text()));
  EXPECT_FALSE(decode_entry(encode_entry(key, ""), key)) << "an empty payload is no kernel";
}

TEST(JitCache, WriteIsAtomicAndReadsBack) {
  test::TempDir dir;
  const std::string folder = dir.file("a/b/jit");  // created on write
  const CacheKey key = sample_key();
  EXPECT_FALSE(read_entry(folder, key));
  ASSERT_TRUE(write_entry(folder, key, "first"));
  EXPECT_EQ(read_entry(folder, key), "first");
  ASSERT_TRUE(write_entry(folder, key, "second"));  // replaced whole
  EXPECT_EQ(read_entry(folder, key), "second");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(folder)) {
    ++files;
    EXPECT_EQ(e.path().filename().string(), key.file_name()) << "no temporary file left";
  }
  EXPECT_EQ(files, 1);
  CacheKey other = key;
  other.arch = "sm_80";
  EXPECT_FALSE(read_entry(folder, other));
  // A corrupted file reads as absent.
  {
    std::fstream f(folder + "/" + key.file_name(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('!');
  }
  EXPECT_FALSE(read_entry(folder, key));
  // No folder, or one that cannot be created: no cache, no error.
  EXPECT_FALSE(write_entry("", key, "x"));
  EXPECT_FALSE(read_entry("", key));
  std::ofstream(dir.file("plain")) << "a file, not a folder";
  EXPECT_FALSE(write_entry(dir.file("plain") + "/jit", key, "x"));
}

}  // namespace
}  // namespace duet::device::jit
