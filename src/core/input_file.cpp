// InputFile: see input_file.hpp.
#include "core/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace duet {

InputFile::InputFile(std::string path, const std::atomic<bool>* stop) : path_(std::move(path)) {
  for (;;) {
    descriptor_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor_ >= 0) break;
    if (errno == EINTR) {
      if (stop != nullptr && stop->load()) throw InputError(path_, 0, "interrupted while opening");
      continue;
    }
    throw InputError(path_, 0, std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(descriptor_, &st) != 0) {
    const int error = errno;
    ::close(descriptor_);
    throw InputError(path_, 0, std::string("cannot open: ") + std::strerror(error));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(descriptor_);
    throw InputError(path_, 0, "is a folder, not a file");
  }
  regular_ = S_ISREG(st.st_mode);
}

InputFile::~InputFile() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

std::uint64_t InputFile::estimated_text_bytes() const {
  struct stat st {};
  if (!regular_ || ::fstat(descriptor_, &st) != 0) return 0;
  unsigned char magic[2] = {0, 0};
  const bool gzip = ::pread(descriptor_, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  return gzip ? 3 * size : size;
}

int InputFile::duplicate() const {
  const int copy = ::fcntl(descriptor_, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) throw InputError(path_, 0, std::string("cannot open: ") + std::strerror(errno));
  // Duplicates share the file offset: a new pass starts from the beginning. Passes over
  // one file run one after another, never at once.
  if (regular_ && ::lseek(copy, 0, SEEK_SET) != 0) {
    const int error = errno;
    ::close(copy);
    throw InputError(path_, 0, std::string("cannot read: ") + std::strerror(error));
  }
  return copy;
}

}  // namespace duet
