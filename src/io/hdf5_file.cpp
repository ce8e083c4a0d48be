// Hdf5Writer and Hdf5Reader over the HDF5 C API (contracts in hdf5_file.hpp): RAII for
// every HDF5 id, each failure turned into an exception carrying the innermost message of
// HDF5's error stack.
#include "io/hdf5_file.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <system_error>
#include <utility>

#include "core/error.hpp"
#include "core/parallel_parts.hpp"

namespace duet::io {

// The header stores HDF5 ids as std::int64_t to keep <hdf5.h> out of it.
static_assert(std::is_same_v<hid_t, std::int64_t>);

namespace {

namespace fs = std::filesystem;

// Datasets longer than this are stored chunked and compressed.
constexpr std::size_t kChunkThreshold = 4096;
// Datasets up to this long are stored in their object header (compact layout: 16 KiB at
// most, a variable-length string's element in the file being 16 bytes). A query's
// columns are mostly this small; a contiguous dataset of its own costs each of them a
// file allocation and a write (bench/result_writer_bench).
constexpr std::size_t kCompactElements = 1024;
// The metadata cache of a file written: fixed at this size. With HDF5's default (2 MiB,
// growing with use) the writer of a result file of 1,000 queries (about 20,000 small
// datasets) took a fifth more CPU time; larger caches cost more still (bench/RESULTS.md,
// 2026-12-07).
constexpr std::size_t kMetadataCacheBytes = 256 * 1024;
// Elements per chunk: 32 KiB of uint8 to 512 KiB of variable-length string references,
// within HDF5's default 1 MiB chunk cache.
constexpr std::size_t kChunkElements = 32768;

// HDF5 prints its error stack to stderr by default; we report through exceptions instead.
// The setting is per thread in thread-safe builds of HDF5, so every entry point calls this.
void turn_off_hdf5_error_printing() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

// Closes an HDF5 id (file, group, dataset, dataspace, type, property list, attribute)
// when it goes out of scope.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Id() {
    if (id_ >= 0) closer_(id_);
  }
  Id(Id&& other) noexcept : id_(std::exchange(other.id_, -1)), closer_(other.closer_) {}
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  Id& operator=(Id&&) = delete;
  hid_t get() const { return id_; }

 private:
  hid_t id_;
  Closer closer_;
};

// The description of the innermost entry of HDF5's error stack: where the error was
// detected ("object 'x' doesn't exist", "unable to open file: ... No such file").
std::string hdf5_error_detail() {
  std::string detail;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned position, const H5E_error2_t* error, void* data) -> herr_t {
        if (position == 0 && error->desc != nullptr) *static_cast<std::string*>(data) = error->desc;
        return 0;
      },
      &detail);
  // A failed system call: HDF5's description is a dump of its arguments ("file write
  // failed: time = ..., errno = 28, error message = 'No space left on device', ...");
  // the system's message is what the user needs.
  const std::string marker = "error message = '";
  const auto at = detail.find(marker);
  if (at != std::string::npos) {
    const auto begin = at + marker.size();
    const auto end = detail.find('\'', begin);
    if (end != std::string::npos) return detail.substr(begin, end - begin);
  }
  return detail;
}

// "<file>: cannot <action> '<object>': <reason>".
[[noreturn]] void fail(const std::string& file, const std::string& action,
                       const std::string& object, const std::string& reason) {
  std::string message = file + ": cannot " + action + " '" + object + "'";
  if (!reason.empty()) message += ": " + reason;
  throw std::runtime_error(message);
}

// Passes a non-negative HDF5 result (id, status, count, truth value) through; a negative
// one is an error reported with HDF5's own detail.
std::int64_t check(std::int64_t result, const std::string& file, const std::string& action,
                   const std::string& object) {
  if (result < 0) fail(file, action, object, hdf5_error_detail());
  return result;
}

// The canonical absolute form of an object path: "/a/b" for "a/b", "/a//b/" and "/a/b";
// "/" for the root group ("" or "/").
std::string absolute_path(const std::string& path) {
  std::string result;
  std::size_t begin = 0;
  while (begin < path.size()) {
    std::size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    if (end > begin) result.append("/").append(path, begin, end - begin);
    begin = end + 1;
  }
  return result.empty() ? "/" : result;
}

// Whether the last link of `absolute` exists and leads to an object (the groups above it
// must exist).
bool last_link_resolves(hid_t file, const std::string& absolute) {
  return H5Lexists(file, absolute.c_str(), H5P_DEFAULT) > 0 &&
         H5Oexists_by_name(file, absolute.c_str(), H5P_DEFAULT) > 0;
}

// Whether a group or dataset exists at `absolute` (an absolute_path), checking each
// group above it first so that a missing one answers false rather than failing.
bool object_exists(hid_t file, const std::string& absolute) {
  std::size_t end = 0;
  while (end != std::string::npos) {
    end = absolute.find('/', end + 1);
    const std::string prefix = absolute.substr(0, end);
    if (prefix == "/") return true;
    if (!last_link_resolves(file, prefix)) return false;
  }
  return true;
}

// Whether the existing object at `absolute` is a group.
bool is_group(hid_t file, const std::string& file_name, const std::string& absolute) {
  const Id object(check(H5Oopen(file, absolute.c_str(), H5P_DEFAULT), file_name, "open", absolute),
                  H5Oclose);
  return H5Iget_type(object.get()) == H5I_GROUP;
}

// Every write after commit() fails this way.
void require_open(hid_t file, const std::string& file_name, const std::string& action,
                  const std::string& object) {
  if (file < 0) fail(file_name, action, object, "the file is already committed");
}

// Fails unless every existing object above `object` (an absolute_path) is a group, so
// that creating below a dataset names the dataset instead of an HDF5 internal.
void require_group_parents(hid_t file, const std::string& file_name, const std::string& action,
                           const std::string& object) {
  for (std::size_t end = object.find('/', 1); end != std::string::npos;
       end = object.find('/', end + 1)) {
    const std::string parent = object.substr(0, end);
    if (!object_exists(file, parent)) return;
    if (!is_group(file, file_name, parent)) {
      fail(file_name, action, object, "'" + parent + "' is a dataset, not a group");
    }
  }
}

// Link creation properties that create missing groups above a new object.
Id creating_intermediate_groups(const std::string& file_name, const std::string& object) {
  Id links(check(H5Pcreate(H5P_LINK_CREATE), file_name, "create", object), H5Pclose);
  check(H5Pset_create_intermediate_group(links.get(), 1), file_name, "create", object);
  return links;
}

// A variable-length string type in `character_set` (file and memory type alike).
Id variable_string_type(H5T_cset_t character_set, const std::string& file_name,
                        const std::string& object) {
  Id type(check(H5Tcopy(H5T_C_S1), file_name, "access", object), H5Tclose);
  check(H5Tset_size(type.get(), H5T_VARIABLE), file_name, "access", object);
  check(H5Tset_cset(type.get(), character_set), file_name, "access", object);
  return type;
}

// "32-bit floating-point numbers", "unsigned 8-bit integers", "strings": for messages.
std::string describe_type(hid_t type) {
  const std::string bits = std::to_string(H5Tget_size(type) * 8) + "-bit";
  switch (H5Tget_class(type)) {
    case H5T_FLOAT:
      return bits + " floating-point numbers";
    case H5T_INTEGER:
      return (H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned " : "signed ") + bits + " integers";
    case H5T_STRING:
      return "strings";
    case H5T_COMPOUND:
      return "compound values";
    case H5T_ARRAY:
      return "arrays";
    case H5T_VLEN:
      return "variable-length sequences";
    case H5T_ENUM:
      return "enumerated values";
    default:
      return "values of another kind";
  }
}

// Whether every value of type `stored` converts to type `wanted` exactly: same class
// (integer or floating-point) and a size and sign that hold every stored value.
bool converts_without_loss(hid_t stored, hid_t wanted) {
  const H5T_class_t stored_class = H5Tget_class(stored);
  if (stored_class != H5Tget_class(wanted)) return false;
  const std::size_t stored_size = H5Tget_size(stored);
  const std::size_t wanted_size = H5Tget_size(wanted);
  if (stored_class == H5T_FLOAT) return stored_size <= wanted_size;
  if (stored_class != H5T_INTEGER) return false;
  const bool stored_signed = H5Tget_sign(stored) == H5T_SGN_2;
  const bool wanted_signed = H5Tget_sign(wanted) == H5T_SGN_2;
  if (stored_signed == wanted_signed) return stored_size <= wanted_size;
  return !stored_signed && wanted_signed && stored_size < wanted_size;
}

// Transfer properties for writing `count` elements of `memory_type`: for variable-length
// strings, conversion buffers sized to the write. HDF5's default is 1 MiB each, the
// background one zeroed on every write, which for a query's short columns cost more than
// writing them.
Id transfer_properties(hid_t memory_type, std::size_t count, const std::string& file_name,
                       const std::string& action, const std::string& object) {
  if (H5Tis_variable_str(memory_type) <= 0)
    return Id(H5P_DEFAULT, [](hid_t) -> herr_t { return 0; });
  Id transfer(check(H5Pcreate(H5P_DATASET_XFER), file_name, action, object), H5Pclose);
  // A variable-length string's element: 16 bytes in the file, a pointer in memory.
  const std::size_t bytes = std::clamp<std::size_t>(count * 16, 64, std::size_t{1} << 20);
  check(H5Pset_buffer(transfer.get(), bytes, nullptr, nullptr), file_name, action, object);
  return transfer;
}

// Writes the chunked, deflate-compressed dataset `dataset` of `count` elements of `element`
// bytes (in memory as in the file) from `data`: each chunk compressed by zlib, as HDF5's
// deflate filter would, on every core (core/parallel_parts.hpp), then written as it is
// (H5Dwrite_chunk). HDF5 compresses on the writing thread alone, which made the result file
// the longest step of large pair-HMM runs (bench/RESULTS.md).
void write_chunks_in_parallel(hid_t dataset, const std::string& file_name,
                              const std::string& object, std::size_t element, const void* data,
                              std::size_t count) {
  const std::size_t chunk_elements = std::min(count, kChunkElements);  // as write_dataset sets
  const std::size_t chunk_bytes = chunk_elements * element;
  const std::size_t chunks = (count + chunk_elements - 1) / chunk_elements;
  constexpr std::size_t kChunksAtOnce = 256;  // compressed chunks held at once
  std::vector<std::vector<unsigned char>> packed(std::min(chunks, kChunksAtOnce));
  std::vector<int> status(packed.size());
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t first = 0; first < chunks; first += kChunksAtOnce) {
    const std::size_t n = std::min(kChunksAtOnce, chunks - first);
    for_each_part(n, [&](std::size_t i) {
      const std::size_t c = first + i;
      const std::size_t begin = c * chunk_bytes;
      const std::size_t size = std::min(chunk_bytes, count * element - begin);
      // The last chunk is stored whole: the part past the dataset's end zero-filled.
      std::vector<unsigned char> whole;
      const unsigned char* source = bytes + begin;
      if (size < chunk_bytes) {
        whole.assign(chunk_bytes, 0);
        std::memcpy(whole.data(), source, size);
        source = whole.data();
      }
      uLongf length = compressBound(static_cast<uLong>(chunk_bytes));
      packed[i].resize(length);
      status[i] = compress2(packed[i].data(), &length, source, static_cast<uLong>(chunk_bytes), 1);
      packed[i].resize(length);
    });
    for (std::size_t i = 0; i < n; ++i) {
      if (status[i] != Z_OK)
        fail(file_name, "write dataset", object, "zlib could not compress a chunk");
      const hsize_t offset[1] = {(first + i) * chunk_elements};
      check(H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, offset, packed[i].size(), packed[i].data()),
            file_name, "write dataset", object);
    }
  }
}

// Creates the 1-D dataset `name` of `count` elements in the open group `group` from
// `data`, held in memory as `memory_type` and stored as `file_type`; `object` is its
// absolute path, for messages.
void write_dataset(hid_t group, const std::string& name, const std::string& file_name,
                   const std::string& object, hid_t memory_type, hid_t file_type, const void* data,
                   std::size_t count) {
  const std::string action = "create dataset";
  const hsize_t dimensions[1] = {count};
  const Id space(check(H5Screate_simple(1, dimensions, nullptr), file_name, action, object),
                 H5Sclose);
  // A small dataset's properties are made once per process (the same for every one).
  static const hid_t compact = [] {
    const hid_t p = H5Pcreate(H5P_DATASET_CREATE);
    if (p >= 0 && H5Pset_layout(p, H5D_COMPACT) < 0) {
      H5Pclose(p);
      return hid_t{-1};
    }
    return p;
  }();
  const auto chunked = [&] {
    Id creation(check(H5Pcreate(H5P_DATASET_CREATE), file_name, action, object), H5Pclose);
    const hsize_t chunk[1] = {std::min(count, kChunkElements)};
    check(H5Pset_chunk(creation.get(), 1, chunk), file_name, action, object);
    check(H5Pset_deflate(creation.get(), 1), file_name, action, object);
    return creation;
  };
  const Id creation =
      count > kChunkThreshold ? chunked() : Id(H5P_DEFAULT, [](hid_t) -> herr_t { return 0; });
  const hid_t properties = count > kChunkThreshold     ? creation.get()
                           : count <= kCompactElements ? check(compact, file_name, action, object)
                                                       : H5P_DEFAULT;
  const Id dataset(check(H5Dcreate2(group, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                    properties, H5P_DEFAULT),
                         file_name, action, object),
                   H5Dclose);
  // Fixed-size elements whose memory layout is the file's: compressed here, on every core.
  if (count > kChunkThreshold && H5Tis_variable_str(memory_type) <= 0 &&
      H5Tequal(memory_type, file_type) > 0) {
    write_chunks_in_parallel(dataset.get(), file_name, object, H5Tget_size(file_type), data, count);
  } else if (count > 0) {
    const Id transfer = transfer_properties(memory_type, count, file_name, "write dataset", object);
    check(H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, transfer.get(), data), file_name,
          "write dataset", object);
  }
}

// Creates (or replaces) the scalar attribute `name` on the open object `target` (at
// `object`, for messages).
void write_scalar_attribute(hid_t target, const std::string& file_name, const std::string& object,
                            const std::string& name, hid_t memory_type, hid_t file_type,
                            const void* value) {
  const std::string action = "set attribute '" + name + "' on";
  if (check(H5Aexists(target, name.c_str()), file_name, action, object) > 0) {
    check(H5Adelete(target, name.c_str()), file_name, action, object);
  }
  const Id space(check(H5Screate(H5S_SCALAR), file_name, action, object), H5Sclose);
  const Id attribute(
      check(H5Acreate2(target, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
            file_name, action, object),
      H5Aclose);
  check(H5Awrite(attribute.get(), memory_type, value), file_name, action, object);
}

// The parent group's path and the last component of `object` (an absolute_path other
// than "/").
std::pair<std::string, std::string> parent_and_name(const std::string& object) {
  const std::size_t slash = object.rfind('/');
  return {slash == 0 ? "/" : object.substr(0, slash), object.substr(slash + 1)};
}

// Reads `count` strings stored as `stored` (variable- or fixed-length) through `read`,
// which fills a buffer laid out as the memory type it is given (H5Dread or H5Aread).
std::vector<std::string> read_string_values(
    hid_t stored, hid_t space, std::size_t count, const std::string& file_name,
    const std::string& action, const std::string& object,
    const std::function<herr_t(hid_t memory_type, void* buffer)>& read) {
  if (H5Tget_class(stored) != H5T_STRING) {
    fail(file_name, action, object, "it holds " + describe_type(stored) + ", not strings");
  }
  const H5T_cset_t character_set = H5Tget_cset(stored);
  std::vector<std::string> values;
  values.reserve(count);
  if (check(H5Tis_variable_str(stored), file_name, action, object) > 0) {
    const Id memory = variable_string_type(character_set, file_name, object);
    std::vector<char*> pointers(count, nullptr);
    check(read(memory.get(), pointers.data()), file_name, action, object);
    // HDF5 allocated each string; give them back however this function ends.
    const auto reclaim = [&] {
      H5Dvlen_reclaim(memory.get(), space, H5P_DEFAULT, pointers.data());
    };
    try {
      for (const char* pointer : pointers) values.emplace_back(pointer == nullptr ? "" : pointer);
    } catch (...) {
      reclaim();
      throw;
    }
    reclaim();
  } else {
    const std::size_t width = H5Tget_size(stored);
    const Id memory(check(H5Tcopy(H5T_C_S1), file_name, action, object), H5Tclose);
    check(H5Tset_size(memory.get(), width), file_name, action, object);
    check(H5Tset_cset(memory.get(), character_set), file_name, action, object);
    check(H5Tset_strpad(memory.get(), H5T_STR_NULLPAD), file_name, action, object);
    std::vector<char> buffer(width * count);
    check(read(memory.get(), buffer.data()), file_name, action, object);
    for (std::size_t i = 0; i < count; ++i) {
      const char* begin = buffer.data() + i * width;
      values.emplace_back(begin, std::find(begin, begin + width, '\0'));
    }
  }
  return values;
}

// An open 1-D dataset with its stored type and length.
struct OpenDataset {
  Id dataset;
  Id stored_type;
  Id space;
  std::size_t count;
};

OpenDataset open_dataset(hid_t file, const std::string& file_name, const std::string& object) {
  const std::string action = "read dataset";
  Id dataset(check(H5Dopen2(file, object.c_str(), H5P_DEFAULT), file_name, action, object),
             H5Dclose);
  Id stored_type(check(H5Dget_type(dataset.get()), file_name, action, object), H5Tclose);
  Id space(check(H5Dget_space(dataset.get()), file_name, action, object), H5Sclose);
  const auto rank = check(H5Sget_simple_extent_ndims(space.get()), file_name, action, object);
  if (rank != 1) {
    fail(file_name, action, object, "it has " + std::to_string(rank) + " dimensions, not 1");
  }
  hsize_t dimensions[1] = {0};
  check(H5Sget_simple_extent_dims(space.get(), dimensions, nullptr), file_name, action, object);
  return {std::move(dataset), std::move(stored_type), std::move(space),
          static_cast<std::size_t>(dimensions[0])};
}

// A whole 1-D numeric dataset read as `memory_type` (the native type of T).
template <class T>
std::vector<T> read_numbers(hid_t file, const std::string& file_name, const std::string& path,
                            hid_t memory_type) {
  turn_off_hdf5_error_printing();
  const std::string object = absolute_path(path);
  const OpenDataset opened = open_dataset(file, file_name, object);
  if (!converts_without_loss(opened.stored_type.get(), memory_type)) {
    fail(file_name, "read dataset", object,
         "it holds " + describe_type(opened.stored_type.get()) + ", not " +
             describe_type(memory_type));
  }
  std::vector<T> values(opened.count);
  if (opened.count > 0) {
    check(H5Dread(opened.dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
          file_name, "read dataset", object);
  }
  return values;
}

// An open scalar attribute with its stored type.
struct OpenAttribute {
  Id attribute;
  Id stored_type;
  Id space;
};

OpenAttribute open_attribute(hid_t file, const std::string& file_name,
                             const std::string& object_path, const std::string& name) {
  const std::string object = absolute_path(object_path);
  const std::string action = "read attribute '" + name + "' of";
  if (!object_exists(file, object)) fail(file_name, action, object, "no such group or dataset");
  Id attribute(check(H5Aopen_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                     file_name, action, object),
               H5Aclose);
  Id stored_type(check(H5Aget_type(attribute.get()), file_name, action, object), H5Tclose);
  Id space(check(H5Aget_space(attribute.get()), file_name, action, object), H5Sclose);
  if (check(H5Sget_simple_extent_npoints(space.get()), file_name, action, object) != 1) {
    fail(file_name, action, object, "it is not a single value");
  }
  return {std::move(attribute), std::move(stored_type), std::move(space)};
}

// A scalar numeric attribute read as `memory_type`.
template <class T>
T read_number_attribute(hid_t file, const std::string& file_name, const std::string& object_path,
                        const std::string& name, hid_t memory_type) {
  turn_off_hdf5_error_printing();
  const std::string object = absolute_path(object_path);
  const std::string action = "read attribute '" + name + "' of";
  const OpenAttribute opened = open_attribute(file, file_name, object, name);
  if (!converts_without_loss(opened.stored_type.get(), memory_type)) {
    fail(file_name, action, object,
         "it holds " + describe_type(opened.stored_type.get()) + ", not " +
             describe_type(memory_type));
  }
  T value{};
  check(H5Aread(opened.attribute.get(), memory_type, &value), file_name, action, object);
  return value;
}

}  // namespace

// ---- Hdf5Writer ----

Hdf5Writer::Hdf5Writer(OutputFile& output) : output_(&output), final_path_(output.path()) {
  open_temporary();
}

Hdf5Writer::Hdf5Writer(std::string final_path)
    : owned_output_(std::make_unique<OutputFile>(std::move(final_path))),
      output_(owned_output_.get()),
      final_path_(output_->path()) {
  open_temporary();
}

void Hdf5Writer::open_temporary() {
  turn_off_hdf5_error_printing();
  temporary_path_ = output_->create_temporary();
  // Closing the file closes anything still open in it, so close() leaves a whole file.
  const Id access(check(H5Pcreate(H5P_FILE_ACCESS), final_path_, "create", temporary_path_),
                  H5Pclose);
  check(H5Pset_fclose_degree(access.get(), H5F_CLOSE_STRONG), final_path_, "create",
        temporary_path_);
  H5AC_cache_config_t cache{};
  cache.version = H5AC__CURR_CACHE_CONFIG_VERSION;
  check(H5Pget_mdc_config(access.get(), &cache), final_path_, "create", temporary_path_);
  cache.set_initial_size = true;
  cache.initial_size = cache.min_size = cache.max_size = kMetadataCacheBytes;
  cache.incr_mode = H5C_incr__off;
  cache.flash_incr_mode = H5C_flash_incr__off;
  cache.decr_mode = H5C_decr__off;
  check(H5Pset_mdc_config(access.get(), &cache), final_path_, "create", temporary_path_);
  file_ = H5Fcreate(temporary_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get());
  if (file_ < 0) {
    throw InputError(final_path_, 0, "cannot create output file: " + hdf5_error_detail());
  }
}

Hdf5Writer::~Hdf5Writer() {
  // A close that fails (a full disk) leaves nothing to undo: the temporary file is the
  // OutputFile's to delete.
  close_group();
  if (file_ >= 0) H5Fclose(file_);
}

std::int64_t Hdf5Writer::open_group(const std::string& group, const std::string& action,
                                    const std::string& object) {
  if (group_ >= 0 && group == group_path_) return group_;
  close_group();
  if (group == "/" || groups_.contains(group)) {
    group_ = check(H5Gopen2(file_, group.c_str(), H5P_DEFAULT), final_path_, action, object);
    group_path_ = group;
    return group_;
  }
  // Below a known group only the last link needs looking up.
  const bool parent_known = groups_.contains(parent_and_name(group).first);
  if (!parent_known) require_group_parents(file_, final_path_, action, object);
  const bool exists = parent_known ? last_link_resolves(file_, group) : object_exists(file_, group);
  if (exists) {
    if (!is_group(file_, final_path_, group))
      fail(final_path_, action, object, "'" + group + "' is a dataset, not a group");
    group_ = check(H5Gopen2(file_, group.c_str(), H5P_DEFAULT), final_path_, action, object);
  } else {
    const Id links = creating_intermediate_groups(final_path_, group);
    group_ = check(H5Gcreate2(file_, group.c_str(), links.get(), H5P_DEFAULT, H5P_DEFAULT),
                   final_path_, action, object);
  }
  group_path_ = group;
  // The group and every group above it are groups from here on (nothing is unlinked).
  for (std::size_t end = group.find('/', 1); end != std::string::npos;
       end = group.find('/', end + 1))
    groups_.insert(group.substr(0, end));
  groups_.insert(group);
  return group_;
}

void Hdf5Writer::close_group() {
  if (group_ >= 0) H5Gclose(group_);
  group_ = -1;
  group_path_.clear();
}

void Hdf5Writer::create_group(const std::string& path) {
  turn_off_hdf5_error_printing();
  const std::string object = absolute_path(path);
  const std::string action = "create group";
  require_open(file_, final_path_, action, object);
  open_group(object, action, object);
}

void Hdf5Writer::write_values(const std::string& path, std::int64_t memory_type,
                              std::int64_t file_type, const void* data, std::size_t count) {
  const std::string object = absolute_path(path);
  const auto [parent, name] = parent_and_name(object);
  write_dataset(open_group(parent, "create dataset", object), name, final_path_, object,
                memory_type, file_type, data, count);
}

void Hdf5Writer::write(const std::string& path, const std::vector<float>& values) {
  turn_off_hdf5_error_printing();
  require_open(file_, final_path_, "create dataset", absolute_path(path));
  write_values(path, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, values.data(), values.size());
}

void Hdf5Writer::write(const std::string& path, const std::vector<double>& values) {
  turn_off_hdf5_error_printing();
  require_open(file_, final_path_, "create dataset", absolute_path(path));
  write_values(path, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, values.data(), values.size());
}

void Hdf5Writer::write(const std::string& path, const std::vector<std::int32_t>& values) {
  turn_off_hdf5_error_printing();
  require_open(file_, final_path_, "create dataset", absolute_path(path));
  write_values(path, H5T_NATIVE_INT32, H5T_STD_I32LE, values.data(), values.size());
}

void Hdf5Writer::write(const std::string& path, const std::vector<std::int64_t>& values) {
  turn_off_hdf5_error_printing();
  require_open(file_, final_path_, "create dataset", absolute_path(path));
  write_values(path, H5T_NATIVE_INT64, H5T_STD_I64LE, values.data(), values.size());
}

void Hdf5Writer::write(const std::string& path, const std::vector<std::uint8_t>& values) {
  turn_off_hdf5_error_printing();
  require_open(file_, final_path_, "create dataset", absolute_path(path));
  write_values(path, H5T_NATIVE_UINT8, H5T_STD_U8LE, values.data(), values.size());
}

void Hdf5Writer::write(const std::string& path, const std::vector<std::string>& values) {
  turn_off_hdf5_error_printing();
  require_open(file_, final_path_, "create dataset", absolute_path(path));
  std::vector<const char*> pointers;
  pointers.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].find('\0') != std::string::npos) {
      fail(final_path_, "create dataset", absolute_path(path),
           "string " + std::to_string(i) + " holds a NUL byte");
    }
    pointers.push_back(values[i].c_str());
  }
  const Id type = variable_string_type(H5T_CSET_UTF8, final_path_, absolute_path(path));
  write_values(path, type.get(), type.get(), pointers.data(), pointers.size());
}

// ---- Hdf5Writer::Appendable ----

namespace {

// The element kinds of an appendable dataset: memory and file types.
enum AppendKind { kF32, kF64, kI32, kI64, kU8, kUtf8 };

}  // namespace

Hdf5Writer::Appendable Hdf5Writer::appendable(const std::string& path) {
  turn_off_hdf5_error_printing();
  const std::string object = absolute_path(path);
  require_open(file_, final_path_, "create dataset", object);
  if (object_exists(file_, object)) fail(final_path_, "create dataset", object, "it exists");
  return Appendable(*this, object);
}

Hdf5Writer::Appendable::Appendable(Appendable&& other) noexcept
    : file_(other.file_),
      path_(std::move(other.path_)),
      dataset_(std::exchange(other.dataset_, -1)),
      kind_(other.kind_),
      size_(other.size_) {}

Hdf5Writer::Appendable::~Appendable() {
  close();
}

void Hdf5Writer::Appendable::close() {
  if (dataset_ >= 0) H5Dclose(dataset_);
  dataset_ = -1;
}

void Hdf5Writer::Appendable::append_raw(int kind, const void* data, std::uint64_t count) {
  turn_off_hdf5_error_printing();
  const std::string& file_name = file_->final_path_;
  const hid_t file = file_->file_;
  require_open(file, file_name, "write dataset", path_);
  if (kind_ >= 0 && kind != kind_) {
    throw std::logic_error(file_name + ": '" + path_ + "': values of another type appended");
  }
  const std::string action = "write dataset";
  const Id string_type =
      kind == kUtf8 ? variable_string_type(H5T_CSET_UTF8, file_name, path_) : Id(-1, H5Tclose);
  hid_t memory = string_type.get(), stored = string_type.get();
  switch (kind) {
    case kF32:
      memory = H5T_NATIVE_FLOAT, stored = H5T_IEEE_F32LE;
      break;
    case kF64:
      memory = H5T_NATIVE_DOUBLE, stored = H5T_IEEE_F64LE;
      break;
    case kI32:
      memory = H5T_NATIVE_INT32, stored = H5T_STD_I32LE;
      break;
    case kI64:
      memory = H5T_NATIVE_INT64, stored = H5T_STD_I64LE;
      break;
    case kU8:
      memory = H5T_NATIVE_UINT8, stored = H5T_STD_U8LE;
      break;
    default:
      break;
  }
  if (dataset_ < 0) {
    const hsize_t initial[1] = {0};
    const hsize_t unlimited[1] = {H5S_UNLIMITED};
    const Id space(check(H5Screate_simple(1, initial, unlimited), file_name, action, path_),
                   H5Sclose);
    const Id creation(check(H5Pcreate(H5P_DATASET_CREATE), file_name, action, path_), H5Pclose);
    const hsize_t chunk[1] = {kChunkElements};
    check(H5Pset_chunk(creation.get(), 1, chunk), file_name, action, path_);
    check(H5Pset_deflate(creation.get(), 1), file_name, action, path_);
    require_group_parents(file, file_name, action, path_);
    const Id links = creating_intermediate_groups(file_name, path_);
    // A chunk cache of one chunk (a string's element in the file is a 16-byte heap
    // reference): a full chunk is compressed and written once the next one starts, while
    // the search runs, rather than all at once when the dataset closes.
    const std::size_t element = kind == kUtf8 ? 16 : H5Tget_size(stored);
    const Id access(check(H5Pcreate(H5P_DATASET_ACCESS), file_name, action, path_), H5Pclose);
    check(H5Pset_chunk_cache(access.get(), 7, kChunkElements * element, 1.0), file_name, action,
          path_);
    dataset_ = check(H5Dcreate2(file, path_.c_str(), stored, space.get(), links.get(),
                                creation.get(), access.get()),
                     file_name, action, path_);
    kind_ = kind;
  }
  if (count == 0) return;
  const hsize_t total[1] = {size_ + count};
  check(H5Dset_extent(dataset_, total), file_name, action, path_);
  const Id space(check(H5Dget_space(dataset_), file_name, action, path_), H5Sclose);
  const hsize_t start[1] = {size_};
  const hsize_t length[1] = {count};
  check(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, length, nullptr),
        file_name, action, path_);
  const Id memory_space(check(H5Screate_simple(1, length, nullptr), file_name, action, path_),
                        H5Sclose);
  const Id transfer = transfer_properties(memory, count, file_name, action, path_);
  check(H5Dwrite(dataset_, memory, memory_space.get(), space.get(), transfer.get(), data),
        file_name, action, path_);
  size_ += count;
}

void Hdf5Writer::Appendable::append(const std::vector<float>& values) {
  append_raw(kF32, values.data(), values.size());
}
void Hdf5Writer::Appendable::append(const std::vector<double>& values) {
  append_raw(kF64, values.data(), values.size());
}
void Hdf5Writer::Appendable::append(const std::vector<std::int32_t>& values) {
  append_raw(kI32, values.data(), values.size());
}
void Hdf5Writer::Appendable::append(const std::vector<std::int64_t>& values) {
  append_raw(kI64, values.data(), values.size());
}
void Hdf5Writer::Appendable::append(const std::vector<std::uint8_t>& values) {
  append_raw(kU8, values.data(), values.size());
}
void Hdf5Writer::Appendable::append(const std::vector<std::string>& values) {
  std::vector<const char*> pointers;
  pointers.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].find('\0') != std::string::npos) {
      fail(file_->final_path_, "write dataset", path_,
           "string " + std::to_string(size_ + i) + " holds a NUL byte");
    }
    pointers.push_back(values[i].c_str());
  }
  append_raw(kUtf8, pointers.data(), pointers.size());
}

void Hdf5Writer::set_attribute(const std::string& object_path, const std::string& name,
                               const std::string& value) {
  turn_off_hdf5_error_printing();
  const std::string action = "set attribute '" + name + "' on";
  require_open(file_, final_path_, action, absolute_path(object_path));
  if (value.find('\0') != std::string::npos) {
    fail(final_path_, action, object_path, "the value holds a NUL byte");
  }
  const Id type = variable_string_type(H5T_CSET_UTF8, final_path_, object_path);
  const char* pointer = value.c_str();
  set_scalar_attribute(object_path, name, type.get(), type.get(), &pointer);
}

void Hdf5Writer::set_attribute(const std::string& object_path, const std::string& name,
                               double value) {
  turn_off_hdf5_error_printing();
  require_open(file_, final_path_, "set attribute '" + name + "' on", absolute_path(object_path));
  set_scalar_attribute(object_path, name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, &value);
}

void Hdf5Writer::set_attribute(const std::string& object_path, const std::string& name,
                               std::int64_t value) {
  turn_off_hdf5_error_printing();
  require_open(file_, final_path_, "set attribute '" + name + "' on", absolute_path(object_path));
  set_scalar_attribute(object_path, name, H5T_NATIVE_INT64, H5T_STD_I64LE, &value);
}

void Hdf5Writer::set_scalar_attribute(const std::string& object_path, const std::string& name,
                                      std::int64_t memory_type, std::int64_t file_type,
                                      const void* value) {
  const std::string object = absolute_path(object_path);
  if (group_ >= 0 && object == group_path_) {
    write_scalar_attribute(group_, final_path_, object, name, memory_type, file_type, value);
    return;
  }
  const std::string action = "set attribute '" + name + "' on";
  if (!object_exists(file_, object)) fail(final_path_, action, object, "no such group or dataset");
  const Id target(check(H5Oopen(file_, object.c_str(), H5P_DEFAULT), final_path_, action, object),
                  H5Oclose);
  write_scalar_attribute(target.get(), final_path_, object, name, memory_type, file_type, value);
}

void Hdf5Writer::close() {
  turn_off_hdf5_error_printing();
  require_open(file_, final_path_, "close", temporary_path_);
  close_group();
  const herr_t flushed = H5Fflush(file_, H5F_SCOPE_GLOBAL);
  const std::string flush_detail = flushed < 0 ? hdf5_error_detail() : "";
  const herr_t closed = H5Fclose(file_);
  file_ = -1;
  if (flushed < 0) fail(final_path_, "write", temporary_path_, flush_detail);
  if (closed < 0) fail(final_path_, "close", temporary_path_, hdf5_error_detail());
}

void Hdf5Writer::commit() {
  if (!owned_output_) throw std::logic_error("Hdf5Writer::commit: the OutputSet commits");
  close();
  owned_output_->sync();
  owned_output_->commit();
}

// ---- Hdf5Reader ----

Hdf5Reader::Hdf5Reader(const std::string& path) : path_(path) {
  turn_off_hdf5_error_printing();
  std::error_code error;
  if (!fs::exists(path_, error)) throw InputError(path_, 0, "cannot open HDF5 file: no such file");
  file_ = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file_ < 0) throw InputError(path_, 0, "cannot open HDF5 file: " + hdf5_error_detail());
}

Hdf5Reader::~Hdf5Reader() {
  if (file_ >= 0) H5Fclose(file_);
}

std::vector<float> Hdf5Reader::read_floats(const std::string& path) const {
  return read_numbers<float>(file_, path_, path, H5T_NATIVE_FLOAT);
}

std::vector<double> Hdf5Reader::read_doubles(const std::string& path) const {
  return read_numbers<double>(file_, path_, path, H5T_NATIVE_DOUBLE);
}

std::vector<std::int32_t> Hdf5Reader::read_int32(const std::string& path) const {
  return read_numbers<std::int32_t>(file_, path_, path, H5T_NATIVE_INT32);
}

std::vector<std::int64_t> Hdf5Reader::read_int64(const std::string& path) const {
  return read_numbers<std::int64_t>(file_, path_, path, H5T_NATIVE_INT64);
}

std::vector<std::uint8_t> Hdf5Reader::read_uint8(const std::string& path) const {
  return read_numbers<std::uint8_t>(file_, path_, path, H5T_NATIVE_UINT8);
}

std::vector<std::string> Hdf5Reader::read_strings(const std::string& path) const {
  turn_off_hdf5_error_printing();
  const std::string object = absolute_path(path);
  const OpenDataset opened = open_dataset(file_, path_, object);
  const hid_t dataset = opened.dataset.get();
  return read_string_values(opened.stored_type.get(), opened.space.get(), opened.count, path_,
                            "read dataset", object, [dataset](hid_t memory_type, void* buffer) {
                              return H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                             buffer);
                            });
}

std::string Hdf5Reader::attribute_string(const std::string& object_path,
                                         const std::string& name) const {
  turn_off_hdf5_error_printing();
  const std::string object = absolute_path(object_path);
  const OpenAttribute opened = open_attribute(file_, path_, object, name);
  const hid_t attribute = opened.attribute.get();
  return read_string_values(opened.stored_type.get(), opened.space.get(), 1, path_,
                            "read attribute '" + name + "' of", object,
                            [attribute](hid_t memory_type, void* buffer) {
                              return H5Aread(attribute, memory_type, buffer);
                            })
      .front();
}

double Hdf5Reader::attribute_double(const std::string& object_path, const std::string& name) const {
  return read_number_attribute<double>(file_, path_, object_path, name, H5T_NATIVE_DOUBLE);
}

std::int64_t Hdf5Reader::attribute_int(const std::string& object_path,
                                       const std::string& name) const {
  return read_number_attribute<std::int64_t>(file_, path_, object_path, name, H5T_NATIVE_INT64);
}

bool Hdf5Reader::exists(const std::string& path) const {
  turn_off_hdf5_error_printing();
  return object_exists(file_, absolute_path(path));
}

std::vector<std::string> Hdf5Reader::list(const std::string& group_path) const {
  turn_off_hdf5_error_printing();
  const std::string object = absolute_path(group_path);
  const std::string action = "list group";
  const Id group(check(H5Gopen2(file_, object.c_str(), H5P_DEFAULT), path_, action, object),
                 H5Gclose);
  H5G_info_t info{};
  check(H5Gget_info(group.get(), &info), path_, action, object);
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const auto length = check(H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i,
                                                 nullptr, 0, H5P_DEFAULT),
                              path_, action, object);
    std::vector<char> name(static_cast<std::size_t>(length) + 1, '\0');
    check(H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(),
                             name.size(), H5P_DEFAULT),
          path_, action, object);
    names.emplace_back(name.data(), static_cast<std::size_t>(length));
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace duet::io
