// OutputFile and OutputSet: see output_file.hpp.
#include "io/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/error.hpp"

namespace duet::io {

namespace {

namespace fs = std::filesystem;

std::string system_message(int error) {
  return std::generic_category().message(error);
}

// A name for the next temporary file of this process: outputs never share one, even
// when two of them would be the same file.
std::string temporary_suffix() {
  static std::atomic<int> counter{0};
  return ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

// Writes all of `size` bytes, retrying after partial writes and interruptions.
bool write_all(int descriptor, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(descriptor, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code error;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, error), error);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, error), error);
  return ca == cb;
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  const auto cannot_create = [this](const std::string& reason) {
    return InputError(path_, 0, "cannot create output file: " + reason);
  };
  if (path_.empty()) throw cannot_create("no file name given");
  std::error_code error;
  resolved_ = path_;
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {  // follows symbolic links
    if (S_ISDIR(st.st_mode)) throw cannot_create("it is a folder");
    if (S_ISSOCK(st.st_mode)) throw cannot_create("it is a socket");
    if (!S_ISREG(st.st_mode)) {
      // A device, FIFO or pipe (also behind a link, as /dev/stdout): written through at
      // commit, opened by its own name, so it must be writable itself.
      written_through_ = true;
      if (::access(path_.c_str(), W_OK) != 0) throw cannot_create(system_message(errno));
      return;
    }
  } else if (errno != ENOENT && errno != ENOTDIR) {  // the folder's problem is said below
    throw cannot_create(system_message(errno));
  }
  if (fs::is_symlink(path_, error)) {
    // A link to a regular file, or a dangling one: the file it leads to is replaced.
    resolved_ = fs::weakly_canonical(fs::absolute(path_, error), error).string();
    if (error) throw cannot_create("cannot follow the link: " + error.message());
  }
  // A new or regular file: its temporary file and the rename need a writable folder.
  fs::path folder = fs::path(resolved_).parent_path();
  if (folder.empty()) folder = ".";
  const fs::file_status folder_status = fs::status(folder, error);
  if (error && error != std::errc::no_such_file_or_directory) {
    throw cannot_create("folder '" + folder.string() + "': " + error.message());
  }
  if (!fs::exists(folder_status)) {
    throw cannot_create("folder '" + folder.string() + "' does not exist");
  }
  if (!fs::is_directory(folder_status)) {
    throw cannot_create("'" + folder.string() + "' is not a folder");
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw cannot_create("folder '" + folder.string() + "': " + system_message(errno));
  }
}

OutputFile::~OutputFile() {
  discard();
}

const std::string& OutputFile::create_temporary() {
  if (!temporary_.empty()) return temporary_;
  std::string name;
  if (written_through_) {
    std::error_code error;
    const fs::path folder = fs::temp_directory_path(error);
    if (error) throw InputError(path_, 0, "cannot create output file: no temporary folder");
    name = (folder / ("duet" + temporary_suffix())).string();
  } else {
    name = resolved_ + temporary_suffix();
  }
  // A name taken already was left by a process that had this id before and crashed: it
  // is not ours to remove, so the next name is tried.
  for (int attempt = 0;; ++attempt) {
    const int descriptor = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (descriptor >= 0) {
      ::close(descriptor);
      break;
    }
    if (errno != EEXIST || attempt == 100) {
      throw InputError(path_, 0, "cannot create output file: " + system_message(errno));
    }
    const std::string suffix = temporary_suffix();
    name = (written_through_ ? name.substr(0, name.rfind(".tmp-")) : resolved_) + suffix;
  }
  temporary_ = name;
  return temporary_;
}

void OutputFile::sync() {
  if (temporary_.empty()) create_temporary();
  // Written through: the temporary file is read back at once (from the page cache), and
  // its copy is the output; its own blocks on disk matter to nothing.
  if (written_through_) return;
  const int descriptor = ::open(temporary_.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0 || ::fsync(descriptor) != 0) {
    const int error = errno;
    if (descriptor >= 0) ::close(descriptor);
    throw InputError(path_, 0, "cannot write: " + system_message(error));
  }
  ::close(descriptor);
}

void OutputFile::commit() {
  if (committed_) return;
  if (temporary_.empty()) create_temporary();
  if (!written_through_) {
    if (std::rename(temporary_.c_str(), resolved_.c_str()) != 0) {
      throw InputError(path_, 0, "cannot replace it: " + system_message(errno));
    }
    committed_ = true;
    return;
  }
  // A device or FIFO: its content is copied in; the special file itself stays.
  const int in = ::open(temporary_.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw InputError(path_, 0, "cannot write: " + system_message(errno));
  const int out = ::open(resolved_.c_str(), O_WRONLY | O_CLOEXEC);
  if (out < 0) {
    const int error = errno;
    ::close(in);
    throw InputError(
        path_, 0,
        error == EINTR ? "interrupted before writing" : "cannot open: " + system_message(error));
  }
  constexpr std::size_t kCopyBytes = 1 << 18;
  const auto buffer = std::make_unique_for_overwrite<char[]>(kCopyBytes);
  int error = 0;
  for (;;) {
    const ssize_t n = ::read(in, buffer.get(), kCopyBytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno;
      break;
    }
    if (n == 0) break;
    if (!write_all(out, buffer.get(), static_cast<std::size_t>(n))) {
      error = errno;
      break;
    }
  }
  ::close(in);
  if (::close(out) != 0 && error == 0 && errno != EINTR) error = errno;
  if (error != 0) throw InputError(path_, 0, "cannot write: " + system_message(error));
  committed_ = true;
  ::unlink(temporary_.c_str());
}

void OutputFile::discard() {
  if (temporary_.empty()) return;
  if (!committed_ || written_through_) ::unlink(temporary_.c_str());
  temporary_.clear();
}

OutputSet::OutputSet(std::vector<std::string> inputs) : inputs_(std::move(inputs)) {}

OutputFile& OutputSet::add(const std::string& path, const std::string& option) {
  auto file = std::make_unique<OutputFile>(path);
  if (!file->written_through()) {
    for (const std::string& input : inputs_) {
      if (!input.empty() && same_file(input, file->resolved_path())) {
        throw InputError(path, 0,
                         "cannot create output file (" + option + "): it is an input of this run");
      }
    }
  }
  for (const auto& [other_option, other] : outputs_) {
    if (file->written_through() && other->written_through()) continue;
    if (same_file(other->resolved_path(), file->resolved_path())) {
      throw InputError(
          path, 0,
          "cannot create output file: " + other_option + " and " + option + " name the same file");
    }
  }
  outputs_.emplace_back(option, std::move(file));
  return *outputs_.back().second;
}

void OutputSet::commit_all() {
  for (auto& [option, file] : outputs_) file->sync();
  // Copies into devices and pipes first: they can fail (a closed pipe), and then no file
  // has been replaced yet. The renames that follow do not fail once the contents are on
  // disk in the same folder.
  for (auto& [option, file] : outputs_)
    if (file->written_through()) file->commit();
  for (auto& [option, file] : outputs_)
    if (!file->written_through()) file->commit();
}

void write_text_file(OutputFile& output, const std::function<void(std::ostream&)>& fill) {
  std::ofstream out(output.create_temporary(), std::ios::trunc);
  if (!out) throw InputError(output.path(), 0, "cannot create output file");
  fill(out);
  out.flush();
  if (!out) throw InputError(output.path(), 0, "cannot write (is the disk full?)");
}

}  // namespace duet::io
