// HDF5 files over the HDF5 C API: Hdf5Writer writes 1-D datasets and scalar attributes
// into the temporary file of an OutputFile (io/output_file.hpp), committed onto the final
// path only when the run succeeds, so that a run that fails never leaves a partial output
// file nor touches an earlier one; Hdf5Reader reads them back. Every HDF5 failure becomes a
// std::runtime_error naming the file and the object path; HDF5's own printing of errors to stderr
// is switched off.
//
// Object paths are absolute or relative to the root group ("/hits/score", "hits/score").
// Each object is opened and closed within one call, except the writer's last group
// written into, kept open for the next call, and an Hdf5Writer::Appendable, which keeps
// its dataset open while values are added.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "io/output_file.hpp"

namespace duet::io {

// Integer types other than std::int64_t (which has its own overload) and bool.
template <class T>
concept OtherInteger = std::integral<T> && !std::same_as<T, bool> && !std::same_as<T, std::int64_t>;

class Hdf5Writer {
 public:
  // Writes into the temporary file of `output`, which commits it (with the run's other
  // outputs, OutputSet::commit_all) once close() succeeded. Throws duet::InputError(path,
  // 0, "cannot create output file: <reason>") when the temporary file cannot be created.
  explicit Hdf5Writer(OutputFile& output);
  // A writer with an OutputFile of its own, committed by commit(): the checks of
  // OutputFile(final_path) come first. An existing file at final_path is untouched until
  // commit().
  explicit Hdf5Writer(std::string final_path);
  ~Hdf5Writer();  // not committed: closes the file; an owned OutputFile deletes it
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;

  const std::string& final_path() const { return final_path_; }
  const std::string& temporary_path() const { return temporary_path_; }

  // Creates the group and any missing groups above it; an existing group is left as is.
  void create_group(const std::string& path);

  // One 1-D dataset per call, creating missing groups above it; the path must be new.
  // Up to 1024 elements: stored in the dataset's object header (compact); more than 4096:
  // chunked and compressed (deflate level 1).
  // Empty vectors give datasets of length 0.
  void write(const std::string& path, const std::vector<float>& values);
  void write(const std::string& path, const std::vector<double>& values);
  void write(const std::string& path, const std::vector<std::int32_t>& values);
  void write(const std::string& path, const std::vector<std::int64_t>& values);
  void write(const std::string& path, const std::vector<std::uint8_t>& values);
  // Variable-length UTF-8 strings (h5py reads them as bytes, or as str with .asstr());
  // a string holding a NUL byte is an error.
  void write(const std::string& path, const std::vector<std::string>& values);

  // A 1-D dataset that grows at its end, for results written while they are computed:
  // stored chunked (32,768 elements) and compressed (deflate level 1); its values are the
  // same as one write() of them all. The dataset is created, with its element type, by
  // the first append() (an empty vector creates it empty); a later call of another type
  // is a std::logic_error; with no append() at all there is no dataset. Like the writer (HDF5 is
  // not thread-safe), it is used by one thread at a time, and is closed (destroyed) before
  // commit().
  class Appendable {
   public:
    ~Appendable();
    Appendable(Appendable&& other) noexcept;
    Appendable(const Appendable&) = delete;
    Appendable& operator=(const Appendable&) = delete;
    Appendable& operator=(Appendable&&) = delete;
    void append(const std::vector<float>& values);
    void append(const std::vector<double>& values);
    void append(const std::vector<std::int32_t>& values);
    void append(const std::vector<std::int64_t>& values);
    void append(const std::vector<std::uint8_t>& values);
    void append(const std::vector<std::string>& values);  // as write(): no NUL bytes
    std::uint64_t size() const { return size_; }

   private:
    friend class Hdf5Writer;
    Appendable(const Hdf5Writer& file, std::string path) : file_(&file), path_(std::move(path)) {}
    void append_raw(int kind, const void* data, std::uint64_t count);
    void close();
    const Hdf5Writer* file_;
    std::string path_;
    std::int64_t dataset_ = -1;  // created by the first append
    int kind_ = -1;
    std::uint64_t size_ = 0;
  };
  // The path must be new; missing groups above it are created with the dataset.
  Appendable appendable(const std::string& path);

  // Scalar attributes on an existing group or dataset; an attribute of the same name is
  // replaced. Strings are variable-length UTF-8 (h5py reads them as str).
  void set_attribute(const std::string& object_path, const std::string& name,
                     const std::string& value);
  void set_attribute(const std::string& object_path, const std::string& name, double value);
  void set_attribute(const std::string& object_path, const std::string& name, std::int64_t value);
  // Any other integer type (int, std::size_t...) is stored as a 64-bit integer; bool is
  // refused at compile time rather than stored as a number.
  template <OtherInteger Integer>
  void set_attribute(const std::string& object_path, const std::string& name, Integer value) {
    if constexpr (std::is_unsigned_v<Integer> && sizeof(Integer) >= sizeof(std::int64_t)) {
      if (value > static_cast<Integer>(std::numeric_limits<std::int64_t>::max())) {
        throw std::runtime_error(final_path_ + ": cannot set attribute '" + name + "' on '" +
                                 object_path + "': value too large for a signed 64-bit integer");
      }
    }
    set_attribute(object_path, name, static_cast<std::int64_t>(value));
  }

  // Flushes and closes the file (a full disk fails here or earlier, as a
  // std::runtime_error naming the file and the system's reason). No write may follow.
  void close();
  // close(), then commits the writer's own OutputFile: flushed to disk and renamed onto
  // final_path (atomic on POSIX file systems: readers see the old file or the new one).
  // Only for a writer made from a path. No other call may follow.
  void commit();

 private:
  void open_temporary();
  // The open group at `group` (an absolute path), created with any missing groups above
  // it once every existing object above it is checked to be a group; `object`, being
  // created in it, is named in errors. The last group stays open (a query's columns and
  // attributes go to one group, one after another), so they are not looked up by path
  // each time; and a group this writer has created or checked is not checked again (a
  // many-model run makes two groups per query below the same two parents).
  std::int64_t open_group(const std::string& group, const std::string& action,
                          const std::string& object);
  void close_group();
  void write_values(const std::string& path, std::int64_t memory_type, std::int64_t file_type,
                    const void* data, std::size_t count);
  void set_scalar_attribute(const std::string& object_path, const std::string& name,
                            std::int64_t memory_type, std::int64_t file_type, const void* value);
  std::unique_ptr<OutputFile> owned_output_;  // the writer made from a path
  OutputFile* output_ = nullptr;
  std::string final_path_;
  std::string temporary_path_;
  std::int64_t file_ = -1;   // HDF5 file id (hid_t); -1 once closed
  std::int64_t group_ = -1;  // the open group of open_group, at group_path_
  std::string group_path_;
  std::unordered_set<std::string> groups_;  // absolute paths known to be groups
  bool committed_ = false;
};

class Hdf5Reader {
 public:
  // Opens an existing HDF5 file read-only; a missing or non-HDF5 file is a
  // duet::InputError(path, 0, ...).
  explicit Hdf5Reader(const std::string& path);
  ~Hdf5Reader();
  Hdf5Reader(const Hdf5Reader&) = delete;
  Hdf5Reader& operator=(const Hdf5Reader&) = delete;

  // Whole 1-D datasets. The stored type must be of the same kind and convert without loss
  // (a 32-bit float dataset reads as doubles, an int32 one as int64, uint8 as int32);
  // anything else is an error naming the stored type.
  std::vector<float> read_floats(const std::string& path) const;
  std::vector<double> read_doubles(const std::string& path) const;
  std::vector<std::int32_t> read_int32(const std::string& path) const;
  std::vector<std::int64_t> read_int64(const std::string& path) const;
  std::vector<std::uint8_t> read_uint8(const std::string& path) const;
  // Variable-length or fixed-length strings.
  std::vector<std::string> read_strings(const std::string& path) const;

  // Scalar attributes, under the same type rules as datasets.
  std::string attribute_string(const std::string& object_path, const std::string& name) const;
  double attribute_double(const std::string& object_path, const std::string& name) const;
  std::int64_t attribute_int(const std::string& object_path, const std::string& name) const;

  // Whether a group or dataset exists at `path` (false, not an error, when a group above
  // it is missing).
  bool exists(const std::string& path) const;
  // Names of the members of a group, sorted.
  std::vector<std::string> list(const std::string& group_path) const;

 private:
  std::string path_;
  std::int64_t file_ = -1;  // HDF5 file id (hid_t)
};

}  // namespace duet::io
