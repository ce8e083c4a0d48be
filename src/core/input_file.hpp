// InputFile: an input opened once, by the thread that starts the run, and read through
// descriptors duplicated from it. A FIFO, pipe or process substitution can be opened only
// once and read only once; opening it a second time may wait forever for a writer. The
// open is interruptible: a signal that sets `stop` ends the wait (with
// sigaction handlers installed without SA_RESTART, as the duet command does).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace duet {

class InputFile {
 public:
  // Opens `path` for reading. InputError naming it when it is missing, a folder, or
  // unreadable, or when a signal that set `stop` interrupted the open.
  InputFile(std::string path, const std::atomic<bool>* stop = nullptr);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& path() const { return path_; }
  // A regular file: it can be read again from the start (a later pass of a search).
  bool rereadable() const { return regular_; }
  // The size of the text a regular file holds, estimated from its size on disk: exact for
  // plain text, three times the compressed size for gzip. 0 when not a regular file.
  std::uint64_t estimated_text_bytes() const;
  // A new descriptor of the file (the caller closes it), positioned at its start when the
  // file is regular. InputError when the system has none left.
  int duplicate() const;

 private:
  std::string path_;
  int descriptor_ = -1;
  bool regular_ = false;
};

}  // namespace duet
