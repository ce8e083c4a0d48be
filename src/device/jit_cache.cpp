// The disk cache of run-time compiled kernels (contract in jit_cache.hpp).
#include "device/jit_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

namespace duet::device::jit {
namespace {

constexpr std::string_view kMagic = "DUETJIT1";

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
}

bool get_u64(std::string_view& in, std::uint64_t& v) {
  if (in.size() < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
  in.remove_prefix(8);
  return true;
}

}  // namespace

std::uint64_t fnv1a64(std::string_view data) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : data) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex64(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i) {
    s[static_cast<std::size_t>(i)] = kDigits[value & 0xfu];
    value >>= 4;
  }
  return s;
}

std::string CacheKey::text() const {
  std::ostringstream s;
  s << "duet jit cache entry 1\nkernel " << kernel << "\nspecialisation " << specialisation
    << "\nsource " << hex64(source_hash) << "\noptions " << options << "\narch " << arch
    << "\ncompiler " << compiler << "\n";
  return s.str();
}

std::string CacheKey::file_name() const {
  return kernel + "-" + specialisation + "-" + arch + "-" + hex64(fnv1a64(text())) + ".cubin";
}

std::string cache_directory(const char* duet_jit_cache, const char* xdg_cache_home,
                            const char* home) {
  if (duet_jit_cache != nullptr) return duet_jit_cache;  // "" turns the cache off
  if (xdg_cache_home != nullptr && xdg_cache_home[0] == '/')
    return std::string(xdg_cache_home) + "/duet/jit";
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/duet/jit";
  return "";
}

std::string cache_directory_from_environment() {
  return cache_directory(std::getenv("DUET_JIT_CACHE"), std::getenv("XDG_CACHE_HOME"),
                         std::getenv("HOME"));
}

std::string encode_entry(const std::string& key_text, std::string_view payload) {
  std::string out(kMagic);
  put_u64(out, key_text.size());
  out += key_text;
  put_u64(out, payload.size());
  put_u64(out, fnv1a64(payload));
  out.append(payload);
  return out;
}

std::optional<std::string> decode_entry(std::string_view file, const std::string& key_text) {
  if (file.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  file.remove_prefix(kMagic.size());
  std::uint64_t key_size = 0, payload_size = 0, payload_hash = 0;
  if (!get_u64(file, key_size) || key_size != key_text.size() || file.size() < key_size)
    return std::nullopt;
  if (file.substr(0, key_size) != key_text) return std::nullopt;
  file.remove_prefix(key_size);
  if (!get_u64(file, payload_size) || !get_u64(file, payload_hash)) return std::nullopt;
  if (payload_size == 0 || file.size() != payload_size) return std::nullopt;
  if (fnv1a64(file) != payload_hash) return std::nullopt;
  return std::string(file);
}

std::optional<std::string> read_entry(const std::string& directory, const CacheKey& key) {
  if (directory.empty()) return std::nullopt;
  std::ifstream in(directory + "/" + key.file_name(), std::ios::binary);
  if (!in) return std::nullopt;
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return decode_entry(file, key.text());
}

bool write_entry(const std::string& directory, const CacheKey& key, std::string_view payload) {
  if (directory.empty()) return false;
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) return false;
  static std::atomic<unsigned> counter{0};
  const std::string path = directory + "/" + key.file_name();
  const std::string temporary =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  const std::string bytes = encode_entry(key.text(), payload);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(temporary, error);
      return false;
    }
  }
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    return false;
  }
  return true;
}

}  // namespace duet::device::jit
