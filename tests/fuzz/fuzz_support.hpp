// What the fuzz targets share: the fuzzer's bytes as a file (duet's readers take paths),
// plain or gzip-compressed, in one scratch folder per process under $TMPDIR; and the way a
// target reports a finding that is not a crash (a broken promise between two readers).
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace duet::fuzz {

// The process's scratch folder, removed at exit (run.sh points TMPDIR at a folder it
// removes, for the runs that end in a crash).
inline const std::filesystem::path& scratch_folder() {
  struct Folder {
    std::filesystem::path path;
    Folder() {
      path = std::filesystem::temp_directory_path() / ("duet-fuzz-" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~Folder() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Folder folder;
  return folder.path;
}

// Writes the bytes to the scratch file `name` and returns its path.
inline std::string write_input(const std::string& name, std::string_view bytes) {
  const std::string path = (scratch_folder() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

// Writes the bytes gzip-compressed to the scratch file `name` and returns its path.
inline std::string write_gzip_input(const std::string& name, std::string_view bytes) {
  const std::string path = (scratch_folder() / name).string();
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr || (!bytes.empty() && gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) !=
                                             static_cast<int>(bytes.size()))) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  gzclose(f);
  return path;
}

inline bool starts_with_gzip_magic(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// A broken promise: printed, then abort(), which libFuzzer reports as a crash and saves
// the input.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace duet::fuzz
