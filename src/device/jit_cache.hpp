// The disk cache of kernels compiled at run time (nvrtc_jit.hpp), in plain C++ (no CUDA:
// it is tested on machines without a GPU).
//
// A cache entry holds one compiled kernel (a cubin) under a key text that names everything
// the compiled bytes depend on: the kernel's source (its 64-bit FNV-1a hash), the entry
// point, the compile options (the specialisation's -D values among them), the GPU
// architecture and the NVRTC version. The file name is the kernel name, the
// specialisation and a hash of the key text; the file repeats the whole key text, so two
// keys whose names collide are told apart. File layout (integers little-endian 64-bit):
//   "DUETJIT1" | key length | key text | payload length | FNV-1a of the payload | payload
// An entry is read back only when every field checks (magic, key, lengths, hash): a
// truncated, corrupted or foreign file reads as absent, and the caller recompiles and
// writes it again. Writes are atomic: a temporary file in the same folder, renamed over
// the entry, so a reader never sees half a file and concurrent writers of one key leave
// one whole entry.
//
// Where: $DUET_JIT_CACHE if set (an empty value turns the disk cache off), else
// $XDG_CACHE_HOME/duet/jit, else $HOME/.cache/duet/jit; none of these: no disk cache.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace duet::device::jit {

std::uint64_t fnv1a64(std::string_view data);
std::string hex64(std::uint64_t value);  // 16 lower-case hex digits

struct CacheKey {
  std::string kernel;          // entry point, e.g. duet_msv_exact_jit
  std::string specialisation;  // short text for the file name, e.g. M260
  std::uint64_t source_hash = 0;
  std::string options;   // compile options, one string
  std::string arch;      // e.g. sm_90
  std::string compiler;  // e.g. nvrtc 13.0
  // The text stored in the entry and hashed into its file name.
  std::string text() const;
  // <kernel>-<specialisation>-<arch>-<16 hex digits of fnv1a64(text())>.cubin
  std::string file_name() const;
};

// The cache folder from the three variables' values (nullptr = unset); "" = no disk cache.
std::string cache_directory(const char* duet_jit_cache, const char* xdg_cache_home,
                            const char* home);
// The same, from this process's environment.
std::string cache_directory_from_environment();

std::string encode_entry(const std::string& key_text, std::string_view payload);
// The payload, or nothing when `file` is not a whole, intact entry for `key_text`.
std::optional<std::string> decode_entry(std::string_view file, const std::string& key_text);

// Reads `directory`/key.file_name(); nothing when absent, unreadable or not intact.
std::optional<std::string> read_entry(const std::string& directory, const CacheKey& key);
// Writes the entry atomically, creating the folder; returns false (and leaves no partial
// file) when it cannot: a cache that cannot be written is not an error.
bool write_entry(const std::string& directory, const CacheKey& key, std::string_view payload);

}  // namespace duet::device::jit
