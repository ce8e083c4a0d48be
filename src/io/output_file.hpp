// The output promise: a run that fails, is stopped by a signal or meets a full disk leaves
// every existing file as it was and no temporary file behind; a run that succeeds replaces
// all its outputs at the end, together.
//
// OutputFile is one file a run writes. Its content goes to a temporary file; commit()
// makes it visible under the name the user gave:
//   - a new name or a regular file: the temporary file is made in the same folder
//     ("<name>.tmp-<pid>-<n>"), flushed to disk, and renamed onto the name (readers see the
//     old file or the whole new one);
//   - a symbolic link is followed: the file it leads to is the one replaced, and the link
//     stays;
//   - a device, FIFO or socket (/dev/null, /dev/stdout on a pipe) is written through: the
//     temporary file (in $TMPDIR) is copied into it at commit, never renamed onto it.
//
// OutputSet is every output of one run. It checks them all before any work starts: each
// can be created (its folder exists and is writable; it is not a folder), none is one of
// the run's inputs, and no two are the same file (except devices written through, such as
// /dev/null twice). commit_all() first flushes every temporary file to disk, so that a full
// disk fails the run before anything is replaced, then renames or copies them all.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace duet::io {

class OutputFile {
 public:
  // Checks `path` (duet::InputError naming it: "cannot create output file: <reason>").
  // Nothing is created yet.
  explicit OutputFile(std::string path);
  ~OutputFile();  // removes the temporary file unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }  // as the user gave it
  // The file that commit() replaces: path() with symbolic links followed.
  const std::string& resolved_path() const { return resolved_; }
  bool written_through() const { return written_through_; }  // a device, FIFO or socket

  // Creates the temporary file, empty, and returns its path (InputError with the system's
  // reason when it cannot). Later calls return the same path.
  const std::string& create_temporary();
  const std::string& temporary_path() const { return temporary_; }

  // Flushes the temporary file's contents to disk (InputError on failure: a full disk);
  // nothing to do for an output written through.
  void sync();
  // Makes the content visible under path() (rename, or copy into a device). InputError
  // when it cannot.
  void commit();
  bool committed() const { return committed_; }
  // Removes the temporary file (no error if it is gone).
  void discard();

 private:
  std::string path_, resolved_, temporary_;
  bool written_through_ = false;
  bool committed_ = false;
};

class OutputSet {
 public:
  // `inputs`: the files the run reads; an output may not be one of them.
  explicit OutputSet(std::vector<std::string> inputs);
  // Adds an output; `option` names it in messages ("-o", "--tblout"). Throws InputError
  // when the path cannot be an output (OutputFile), is an input, or is already an output.
  OutputFile& add(const std::string& path, const std::string& option);
  // Syncs every output, then commits them all: devices and pipes first (their copies can
  // fail), then the renames. Throws InputError on the first failure; before any rename,
  // no file has changed.
  void commit_all();

 private:
  std::vector<std::string> inputs_;
  std::vector<std::pair<std::string, std::unique_ptr<OutputFile>>> outputs_;  // option, file
};

// Whether two paths name the same existing file (device and inode), or, where either does
// not exist, the same location once made absolute and normalised.
bool same_file(const std::string& a, const std::string& b);

// Writes a text output into its temporary file (`fill` writes the text); OutputSet's
// commit_all makes it visible. InputError naming the file where it cannot be created or
// written (a full disk).
void write_text_file(OutputFile& output, const std::function<void(std::ostream&)>& fill);

}  // namespace duet::io
