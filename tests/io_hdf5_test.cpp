// Tests of the HDF5 writer and reader (src/io/hdf5_file): every dataset type written and
// read back (empty, small, and chunked-and-compressed above 4096 elements), attributes,
// groups, type checks, and the temporary-file protocol (no file without commit, commit
// replaces, a missing output folder is an InputError before anything is created).
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_file.hpp"
#include "io_temp_dir.hpp"
#include "test_support.hpp"

namespace duet::io {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Names of the entries of a folder, sorted.
std::vector<std::string> folder_entries(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Whether calling `action` throws a std::runtime_error whose message contains every
// one of `fragments`; the message is printed when it does not.
template <class Action>
::testing::AssertionResult throws_containing(Action action,
                                             const std::vector<std::string>& fragments) {
  try {
    action();
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    for (const std::string& fragment : fragments) {
      if (message.find(fragment) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message \"" << message << "\" lacks \"" << fragment << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no exception";
}

// The layout and filters of a dataset, read with the HDF5 C API directly.
struct StorageLayout {
  H5D_layout_t layout;
  int filters;
  H5Z_filter_t first_filter;
  unsigned deflate_level;
  hsize_t stored_bytes;
};

StorageLayout storage_layout(const std::string& file_path, const std::string& dataset_path) {
  const hid_t file = H5Fopen(file_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t dataset = H5Dopen2(file, dataset_path.c_str(), H5P_DEFAULT);
  const hid_t creation = H5Dget_create_plist(dataset);
  StorageLayout result{H5Pget_layout(creation), H5Pget_nfilters(creation), H5Z_FILTER_NONE, 0,
                       H5Dget_storage_size(dataset)};
  if (result.filters > 0) {
    unsigned flags = 0;
    std::size_t count = 1;
    unsigned values[1] = {0};
    result.first_filter = H5Pget_filter2(creation, 0, &flags, &count, values, 0, nullptr, nullptr);
    result.deflate_level = values[0];
  }
  H5Pclose(creation);
  H5Dclose(dataset);
  H5Fclose(file);
  return result;
}

// ---- every dataset type ----

class IoHdf5 : public ::testing::Test {
 protected:
  TempDir folder_;
  std::string path_ = folder_.file("out.h5");
};

std::vector<float> some_floats(std::size_t count) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<float>(i) * 0.37f - 100.5f;
  return values;
}

TEST_F(IoHdf5, FloatsRoundTrip) {
  const std::vector<float> special = {0.0f,
                                      -0.0f,
                                      1.5f,
                                      -3.25e-20f,
                                      std::numeric_limits<float>::infinity(),
                                      -std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::denorm_min(),
                                      std::numeric_limits<float>::max()};
  const std::vector<float> large = some_floats(10000);
  {
    Hdf5Writer writer(path_);
    writer.write("/special", special);
    writer.write("/large", large);
    writer.write("/empty", std::vector<float>{});
    writer.write("/nan", std::vector<float>{std::numeric_limits<float>::quiet_NaN()});
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.read_floats("/special"), special);
  EXPECT_TRUE(std::signbit(reader.read_floats("/special")[1]));
  EXPECT_EQ(reader.read_floats("/large"), large);
  EXPECT_TRUE(reader.read_floats("/empty").empty());
  EXPECT_TRUE(std::isnan(reader.read_floats("/nan").at(0)));
}

TEST_F(IoHdf5, DoublesRoundTrip) {
  const std::vector<double> small = {0.1, -2.0, 1e-300, 4.9406564584124654e-324,
                                     std::numeric_limits<double>::max()};
  std::vector<double> large(5000);
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = std::sqrt(static_cast<double>(i));
  {
    Hdf5Writer writer(path_);
    writer.write("small", small);
    writer.write("large", large);
    writer.write("empty", std::vector<double>{});
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.read_doubles("small"), small);
  EXPECT_EQ(reader.read_doubles("large"), large);
  EXPECT_TRUE(reader.read_doubles("empty").empty());
}

TEST_F(IoHdf5, Int32RoundTrip) {
  const std::vector<std::int32_t> small = {0, -1, 1, std::numeric_limits<std::int32_t>::min(),
                                           std::numeric_limits<std::int32_t>::max()};
  std::vector<std::int32_t> large(4097);
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<std::int32_t>(i * i) - 7;
  {
    Hdf5Writer writer(path_);
    writer.write("/small", small);
    writer.write("/large", large);
    writer.write("/empty", std::vector<std::int32_t>{});
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.read_int32("/small"), small);
  EXPECT_EQ(reader.read_int32("/large"), large);
  EXPECT_TRUE(reader.read_int32("/empty").empty());
}

TEST_F(IoHdf5, Int64RoundTrip) {
  const std::vector<std::int64_t> small = {0, -1, std::numeric_limits<std::int64_t>::min(),
                                           std::numeric_limits<std::int64_t>::max()};
  std::vector<std::int64_t> large(100000);
  for (std::size_t i = 0; i < large.size(); ++i) {
    large[i] = static_cast<std::int64_t>(i) * 1000003 - 5'000'000'000;
  }
  {
    Hdf5Writer writer(path_);
    writer.write("/small", small);
    writer.write("/large", large);
    writer.write("/empty", std::vector<std::int64_t>{});
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.read_int64("/small"), small);
  EXPECT_EQ(reader.read_int64("/large"), large);
  EXPECT_TRUE(reader.read_int64("/empty").empty());
}

TEST_F(IoHdf5, Uint8RoundTrip) {
  const std::vector<std::uint8_t> small = {0, 1, 127, 128, 255};
  std::vector<std::uint8_t> large(70000);
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<std::uint8_t>(i % 29);
  {
    Hdf5Writer writer(path_);
    writer.write("/small", small);
    writer.write("/large", large);
    writer.write("/empty", std::vector<std::uint8_t>{});
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.read_uint8("/small"), small);
  EXPECT_EQ(reader.read_uint8("/large"), large);
  EXPECT_TRUE(reader.read_uint8("/empty").empty());
}

TEST_F(IoHdf5, StringsRoundTrip) {
  const std::vector<std::string> small = {"", "PF00001.23", "7tm_1",
                                          "\xCE\xB1\xCE\xB2\xCE\xB3 UTF-8 \xE2\x9C\x93",
                                          std::string(100000, 'M')};
  std::vector<std::string> large(6000);
  for (std::size_t i = 0; i < large.size(); ++i) {
    large[i] = "sp|P" + std::to_string(i) + "|" + std::string(i % 50, 'A');
  }
  {
    Hdf5Writer writer(path_);
    writer.write("/names/small", small);
    writer.write("/names/large", large);
    writer.write("/names/empty", std::vector<std::string>{});
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.read_strings("/names/small"), small);
  EXPECT_EQ(reader.read_strings("/names/large"), large);
  EXPECT_TRUE(reader.read_strings("/names/empty").empty());
}

TEST_F(IoHdf5, StringWithNulByteIsRefused) {
  Hdf5Writer writer(path_);
  EXPECT_TRUE(throws_containing(
      [&] {
        writer.write("/names", std::vector<std::string>{"ok", std::string("a\0b", 3)});
      },
      {path_, "'/names'", "string 1 holds a NUL byte"}));
  EXPECT_TRUE(throws_containing([&] { writer.set_attribute("/", "label", std::string("a\0b", 3)); },
                                {path_, "NUL"}));
}

TEST_F(IoHdf5, LargeDatasetsAreChunkedAndCompressed) {
  {
    Hdf5Writer writer(path_);
    writer.write("/at_threshold", std::vector<float>(4096, 1.0f));
    writer.write("/above_threshold", std::vector<float>(4097, 1.0f));
    writer.write("/strings", std::vector<std::string>(5000, "x"));
    writer.write("/empty", std::vector<std::int32_t>{});
    writer.commit();
  }
  const StorageLayout at = storage_layout(path_, "/at_threshold");
  EXPECT_EQ(at.layout, H5D_CONTIGUOUS);
  EXPECT_EQ(at.filters, 0);
  for (const char* dataset : {"/above_threshold", "/strings"}) {
    const StorageLayout above = storage_layout(path_, dataset);
    EXPECT_EQ(above.layout, H5D_CHUNKED) << dataset;
    EXPECT_EQ(above.filters, 1) << dataset;
    EXPECT_EQ(above.first_filter, H5Z_FILTER_DEFLATE) << dataset;
    EXPECT_EQ(above.deflate_level, 1u) << dataset;
  }
  // 4097 identical floats compress to far less than their 16 KiB.
  EXPECT_LT(storage_layout(path_, "/above_threshold").stored_bytes, 1024u);
}

// Large datasets are compressed chunk by chunk on several threads and written as chunks:
// what HDF5 reads back (through its deflate filter) is what was written, whatever the
// element type, with a partial last chunk and with a single chunk shorter than the usual.
TEST_F(IoHdf5, ChunksCompressedInParallelReadBackExactly) {
  std::mt19937_64 rng(test::test_seed());
  const auto values = [&](std::size_t n, auto cast) {
    std::vector<decltype(cast(std::uint64_t{}))> v(n);
    for (auto& x : v) x = cast(rng());
    return v;
  };
  const auto as_double = [](std::uint64_t r) { return static_cast<double>(r % 100000) / 7.0; };
  const auto as_float = [](std::uint64_t r) { return static_cast<float>(r % 1000) / 3.0f; };
  const auto as_i32 = [](std::uint64_t r) { return static_cast<std::int32_t>(r % 50); };
  const auto as_i64 = [](std::uint64_t r) { return static_cast<std::int64_t>(r); };
  const auto as_u8 = [](std::uint64_t r) { return static_cast<std::uint8_t>(r % 2); };
  for (const std::size_t n : {std::size_t{5000}, std::size_t{32768 * 9 + 17}}) {
    const auto d = values(n, as_double);
    const auto f = values(n, as_float);
    const auto i = values(n, as_i32);
    const auto l = values(n, as_i64);
    const auto u = values(n, as_u8);
    {
      Hdf5Writer writer(path_);
      writer.write("/d", d);
      writer.write("/f", f);
      writer.write("/i", i);
      writer.write("/l", l);
      writer.write("/u", u);
      writer.commit();
    }
    const Hdf5Reader reader(path_);
    EXPECT_EQ(reader.read_doubles("/d"), d) << n;
    EXPECT_EQ(reader.read_floats("/f"), f) << n;
    EXPECT_EQ(reader.read_int32("/i"), i) << n;
    EXPECT_EQ(reader.read_int64("/l"), l) << n;
    EXPECT_EQ(reader.read_uint8("/u"), u) << n;
    const StorageLayout layout = storage_layout(path_, "/d");
    EXPECT_EQ(layout.layout, H5D_CHUNKED);
    EXPECT_EQ(layout.first_filter, H5Z_FILTER_DEFLATE);
    // 2 of 50 values a byte: the stored chunks are compressed.
    EXPECT_LT(storage_layout(path_, "/u").stored_bytes, n / 2) << n;
  }
}

// ---- appendable datasets ----

TEST_F(IoHdf5, AppendedPiecesReadAsOneDataset) {
  const std::vector<float> floats = some_floats(70000);  // more than two chunks
  std::vector<std::string> names(40000);
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = "t" + std::to_string(i * 7);
  {
    Hdf5Writer writer(path_);
    Hdf5Writer::Appendable f = writer.appendable("/grown/floats");
    Hdf5Writer::Appendable d = writer.appendable("/grown/doubles");
    Hdf5Writer::Appendable i32 = writer.appendable("/grown/int32");
    Hdf5Writer::Appendable i64 = writer.appendable("/grown/int64");
    Hdf5Writer::Appendable u8 = writer.appendable("/grown/uint8");
    Hdf5Writer::Appendable s = writer.appendable("/grown/strings");
    Hdf5Writer::Appendable empty = writer.appendable("/grown/empty");
    // Uneven pieces, an empty one among them.
    for (std::size_t begin = 0, piece = 1; begin < floats.size();
         begin += piece, piece = piece * 3 + 1) {
      const std::size_t end = std::min(floats.size(), begin + piece);
      f.append(std::vector<float>(floats.begin() + begin, floats.begin() + end));
      f.append(std::vector<float>{});
    }
    for (std::size_t begin = 0; begin < names.size(); begin += 9999) {
      const std::size_t end = std::min(names.size(), begin + 9999);
      s.append(std::vector<std::string>(names.begin() + begin, names.begin() + end));
    }
    d.append(std::vector<double>{1.5, -2.25});
    d.append(std::vector<double>{1e-300});
    i32.append(std::vector<std::int32_t>{-7, 8});
    i64.append(std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min()});
    i64.append(std::vector<std::int64_t>{42});
    u8.append(std::vector<std::uint8_t>{0, 255});
    empty.append(std::vector<std::int32_t>{});
    EXPECT_EQ(f.size(), floats.size());
    EXPECT_THROW(d.append(std::vector<float>{1.0f}), std::logic_error);
    writer.appendable("/grown/never");  // no append: no dataset
  }                                     // not committed: nothing is left
  EXPECT_FALSE(fs::exists(path_));
  {
    Hdf5Writer writer(path_);
    {
      Hdf5Writer::Appendable f = writer.appendable("/grown/floats");
      for (std::size_t begin = 0; begin < floats.size(); begin += 5000) {
        const std::size_t end = std::min(floats.size(), begin + 5000);
        f.append(std::vector<float>(floats.begin() + begin, floats.begin() + end));
      }
      Hdf5Writer::Appendable s = writer.appendable("/grown/strings");
      s.append(names);
      Hdf5Writer::Appendable e = writer.appendable("/grown/empty");
      e.append(std::vector<std::uint8_t>{});
      writer.appendable("/grown/never");
    }
    EXPECT_TRUE(throws_containing([&] { writer.appendable("/grown/floats"); },
                                  {path_, "'/grown/floats'", "exists"}));
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.read_floats("/grown/floats"), floats);
  EXPECT_EQ(reader.read_strings("/grown/strings"), names);
  EXPECT_TRUE(reader.read_uint8("/grown/empty").empty());
  EXPECT_EQ(reader.list("/grown"), (std::vector<std::string>{"empty", "floats", "strings"}));
  const StorageLayout layout = storage_layout(path_, "/grown/floats");
  EXPECT_EQ(layout.layout, H5D_CHUNKED);
  EXPECT_EQ(layout.first_filter, H5Z_FILTER_DEFLATE);
}

TEST_F(IoHdf5, AppendedStringWithNulByteIsRefused) {
  Hdf5Writer writer(path_);
  Hdf5Writer::Appendable s = writer.appendable("/names");
  s.append(std::vector<std::string>{"a", "b"});
  EXPECT_TRUE(throws_containing(
      [&] {
        s.append(std::vector<std::string>{"ok", std::string("a\0b", 3)});
      },
      {path_, "'/names'", "string 3 holds a NUL byte"}));
}

// ---- groups, attributes, listing ----

TEST_F(IoHdf5, GroupsAreCreatedWithTheirParents) {
  {
    Hdf5Writer writer(path_);
    writer.create_group("/search/hits/domains");
    writer.create_group("/search/hits");  // exists already: nothing to do
    writer.create_group("/");
    writer.write("/models/names", std::vector<std::string>{"a"});  // creates /models
    writer.write("scores", std::vector<double>{1.0});              // relative to the root
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_TRUE(reader.exists("/"));
  EXPECT_TRUE(reader.exists("/search"));
  EXPECT_TRUE(reader.exists("search/hits/"));
  EXPECT_TRUE(reader.exists("/search/hits/domains"));
  EXPECT_TRUE(reader.exists("/models/names"));
  EXPECT_TRUE(reader.exists("/scores"));
  EXPECT_FALSE(reader.exists("/nothing"));
  EXPECT_FALSE(reader.exists("/nothing/below"));
  EXPECT_FALSE(reader.exists("/scores/below"));  // below a dataset
  EXPECT_EQ(reader.list("/"), (std::vector<std::string>{"models", "scores", "search"}));
  EXPECT_EQ(reader.list(""), reader.list("/"));
  EXPECT_EQ(reader.list("/search"), std::vector<std::string>{"hits"});
  EXPECT_TRUE(reader.list("/search/hits/domains").empty());
}

// The writer keeps the last group it wrote into open: going back and forth between groups,
// and between a group and its datasets' attributes, writes each where it belongs.
TEST_F(IoHdf5, WritesAlternatingBetweenGroupsLandWhereNamed) {
  Hdf5Writer writer(path_);
  writer.write("/q/a/x", std::vector<float>{1.0f});
  writer.write("/q/b/y", std::vector<std::string>{"y"});
  writer.set_attribute("/q/a", "n", std::int64_t{1});
  writer.write("/q/a/z", std::vector<double>(2000, 0.5));  // contiguous, not compact
  writer.set_attribute("/q/a/x", "unit", std::string("bits"));
  writer.create_group("/q/b");
  writer.set_attribute("/q/b", "n", std::int64_t{2});
  writer.write("/q/b/w", std::vector<std::uint8_t>(5000, 3));  // chunked
  EXPECT_TRUE(throws_containing([&] { writer.write("/q/a/x", std::vector<float>{2.0f}); },
                                {path_, "cannot create dataset '/q/a/x'"}));
  writer.commit();
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.list("/q/a"), (std::vector<std::string>{"x", "z"}));
  EXPECT_EQ(reader.list("/q/b"), (std::vector<std::string>{"w", "y"}));
  EXPECT_EQ(reader.read_floats("/q/a/x"), std::vector<float>{1.0f});
  EXPECT_EQ(reader.read_strings("/q/b/y"), std::vector<std::string>{"y"});
  EXPECT_EQ(reader.read_doubles("/q/a/z"), std::vector<double>(2000, 0.5));
  EXPECT_EQ(reader.read_uint8("/q/b/w"), std::vector<std::uint8_t>(5000, 3));
  EXPECT_EQ(reader.attribute_int("/q/a", "n"), 1);
  EXPECT_EQ(reader.attribute_int("/q/b", "n"), 2);
  EXPECT_EQ(reader.attribute_string("/q/a/x", "unit"), "bits");
}

TEST_F(IoHdf5, ListIsSorted) {
  {
    Hdf5Writer writer(path_);
    for (const char* name : {"zeta", "alpha", "Mu", "beta10", "beta2"}) {
      writer.write(std::string("/g/") + name, std::vector<std::uint8_t>{1});
    }
    writer.commit();
  }
  EXPECT_EQ(Hdf5Reader(path_).list("/g"),
            (std::vector<std::string>{"Mu", "alpha", "beta10", "beta2", "zeta"}));
}

TEST_F(IoHdf5, AttributesRoundTrip) {
  {
    Hdf5Writer writer(path_);
    writer.create_group("/run");
    writer.write("/run/scores", std::vector<float>{1.0f});
    writer.set_attribute("/", "program", std::string("duet"));
    writer.set_attribute("/run", "isa", std::string("avx2"));
    writer.set_attribute("/run", "label", "\xCE\xB1 UTF-8");  // a string literal
    writer.set_attribute("/run", "empty", std::string());
    writer.set_attribute("/run", "E", 1e-3);
    writer.set_attribute("/run", "targets", std::int64_t{-9'000'000'000});
    writer.set_attribute("/run", "cpu", 16);                // int
    writer.set_attribute("/run", "bytes", std::size_t{7});  // unsigned
    writer.set_attribute("/run/scores", "unit", std::string("bits"));
    writer.set_attribute("/run/scores", "scale", 0.6931471805599453);
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.attribute_string("/", "program"), "duet");
  EXPECT_EQ(reader.attribute_string("/run", "isa"), "avx2");
  EXPECT_EQ(reader.attribute_string("run", "label"), "\xCE\xB1 UTF-8");
  EXPECT_EQ(reader.attribute_string("/run", "empty"), "");
  EXPECT_EQ(reader.attribute_double("/run", "E"), 1e-3);
  EXPECT_EQ(reader.attribute_int("/run", "targets"), -9'000'000'000);
  EXPECT_EQ(reader.attribute_int("/run", "cpu"), 16);
  EXPECT_EQ(reader.attribute_int("/run", "bytes"), 7);
  EXPECT_EQ(reader.attribute_string("/run/scores", "unit"), "bits");
  EXPECT_EQ(reader.attribute_double("/run/scores", "scale"), 0.6931471805599453);
  // Attributes are not members.
  EXPECT_EQ(reader.list("/run"), std::vector<std::string>{"scores"});
}

TEST_F(IoHdf5, AttributeIsReplaced) {
  {
    Hdf5Writer writer(path_);
    writer.set_attribute("/", "status", std::string("running"));
    writer.set_attribute("/", "status", std::string("done"));
    writer.set_attribute("/", "count", std::int64_t{1});
    writer.set_attribute("/", "count", 2.5);  // a new type too
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.attribute_string("/", "status"), "done");
  EXPECT_EQ(reader.attribute_double("/", "count"), 2.5);
}

TEST_F(IoHdf5, TooLargeUnsignedAttributeIsRefused) {
  Hdf5Writer writer(path_);
  EXPECT_TRUE(throws_containing(
      [&] { writer.set_attribute("/", "n", std::numeric_limits<std::uint64_t>::max()); },
      {path_, "'n'", "too large"}));
}

// ---- errors while writing and reading ----

TEST_F(IoHdf5, WriterErrorsNameFileAndObject) {
  Hdf5Writer writer(path_);
  writer.write("/scores", std::vector<double>{1.0});
  EXPECT_TRUE(throws_containing([&] { writer.write("/scores", std::vector<double>{2.0}); },
                                {path_, "cannot create dataset '/scores'"}));
  EXPECT_TRUE(throws_containing([&] { writer.create_group("/scores"); },
                                {path_, "cannot create group '/scores'", "a dataset"}));
  EXPECT_TRUE(throws_containing([&] { writer.write("/scores/below", std::vector<float>{}); },
                                {path_, "'/scores/below'", "'/scores' is a dataset"}));
  EXPECT_TRUE(throws_containing([&] { writer.create_group("/scores/a/b"); },
                                {path_, "'/scores/a/b'", "'/scores' is a dataset"}));
  EXPECT_TRUE(throws_containing([&] { writer.set_attribute("/missing", "a", 1.0); },
                                {path_, "cannot set attribute 'a' on '/missing'"}));
  writer.commit();
  EXPECT_TRUE(throws_containing([&] { writer.write("/late", std::vector<float>{1.0f}); },
                                {path_, "'/late'", "already committed"}));
  EXPECT_TRUE(throws_containing([&] { writer.set_attribute("/", "late", 1.0); },
                                {path_, "already committed"}));
  EXPECT_TRUE(throws_containing([&] { writer.commit(); }, {path_, "already committed"}));
  // The failed calls did not spoil the committed file.
  EXPECT_EQ(Hdf5Reader(path_).read_doubles("/scores"), std::vector<double>{1.0});
}

TEST_F(IoHdf5, ReaderErrorsNameFileAndObject) {
  {
    Hdf5Writer writer(path_);
    writer.write("/floats", std::vector<float>{1.0f});
    writer.write("/doubles", std::vector<double>{1.0});
    writer.write("/int64", std::vector<std::int64_t>{1});
    writer.write("/names", std::vector<std::string>{"a"});
    writer.set_attribute("/", "text", std::string("t"));
    writer.set_attribute("/", "number", 1.0);
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_TRUE(throws_containing([&] { reader.read_floats("/missing"); },
                                {path_, "cannot read dataset '/missing'"}));
  EXPECT_TRUE(throws_containing(
      [&] { reader.read_floats("/doubles"); },
      {path_, "'/doubles'", "64-bit floating-point numbers", "not 32-bit floating-point numbers"}));
  EXPECT_TRUE(throws_containing([&] { reader.read_int32("/int64"); },
                                {path_, "'/int64'", "signed 64-bit integers"}));
  EXPECT_TRUE(throws_containing([&] { reader.read_uint8("/floats"); }, {path_, "'/floats'"}));
  EXPECT_TRUE(
      throws_containing([&] { reader.read_doubles("/names"); }, {path_, "'/names'", "strings"}));
  EXPECT_TRUE(throws_containing([&] { reader.read_strings("/doubles"); },
                                {path_, "'/doubles'", "not strings"}));
  EXPECT_TRUE(
      throws_containing([&] { reader.attribute_double("/", "missing"); }, {path_, "'missing'"}));
  EXPECT_TRUE(throws_containing([&] { reader.attribute_double("/", "text"); },
                                {path_, "'text'", "strings"}));
  EXPECT_TRUE(throws_containing([&] { reader.attribute_string("/", "number"); },
                                {path_, "'number'", "not strings"}));
  EXPECT_TRUE(throws_containing([&] { reader.attribute_int("/", "number"); }, {path_, "'number'"}));
  EXPECT_TRUE(
      throws_containing([&] { reader.attribute_int("/nowhere", "a"); }, {path_, "'/nowhere'"}));
  EXPECT_TRUE(throws_containing([&] { reader.list("/doubles"); }, {path_, "'/doubles'"}));
  EXPECT_TRUE(throws_containing([&] { reader.list("/missing"); }, {path_, "'/missing'"}));
}

TEST_F(IoHdf5, LosslessWideningIsRead) {
  {
    Hdf5Writer writer(path_);
    writer.write("/floats", std::vector<float>{1.25f, -3.0f});
    writer.write("/int32", std::vector<std::int32_t>{-5, 7});
    writer.write("/uint8", std::vector<std::uint8_t>{0, 255});
    writer.set_attribute("/", "count", std::int64_t{3});
    writer.commit();
  }
  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.read_doubles("/floats"), (std::vector<double>{1.25, -3.0}));
  EXPECT_EQ(reader.read_int64("/int32"), (std::vector<std::int64_t>{-5, 7}));
  EXPECT_EQ(reader.read_int32("/uint8"), (std::vector<std::int32_t>{0, 255}));
  EXPECT_EQ(reader.read_int64("/uint8"), (std::vector<std::int64_t>{0, 255}));
  EXPECT_TRUE(
      throws_containing([&] { reader.read_uint8("/int32"); },
                        {"'/int32'", "signed 32-bit integers", "not unsigned 8-bit integers"}));
  EXPECT_TRUE(throws_containing([&] { reader.attribute_double("/", "count"); }, {"'count'"}));
}

TEST_F(IoHdf5, FixedLengthStringsAreRead) {
  // Written with the C API as other tools (numpy "S" arrays through h5py) do.
  const hid_t file = H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, 4);
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  const hsize_t dimensions[1] = {3};
  const hid_t space = H5Screate_simple(1, dimensions, nullptr);
  const hid_t dataset =
      H5Dcreate2(file, "/codes", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const char data[12] = {'a', 'b', 'c', 'd', 'x', '\0', '\0', '\0', 'p', 'q', 'r', '\0'};
  H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t attribute = H5Acreate2(file, "tag", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attribute, type, "hi\0\0");
  H5Aclose(attribute);
  H5Sclose(scalar);
  H5Dclose(dataset);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(file);

  const Hdf5Reader reader(path_);
  EXPECT_EQ(reader.read_strings("/codes"), (std::vector<std::string>{"abcd", "x", "pqr"}));
  EXPECT_EQ(reader.attribute_string("/", "tag"), "hi");
}

TEST(IoHdf5Reader, MissingOrForeignFileIsInputError) {
  const TempDir folder;
  const std::string missing = folder.file("missing.h5");
  try {
    Hdf5Reader reader(missing);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), missing);
    EXPECT_EQ(error.line(), 0);
  }
  const std::string text = folder.file("text.h5");
  std::ofstream(text) << "not HDF5\n";
  try {
    Hdf5Reader reader(text);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), text);
    EXPECT_NE(std::string(error.what()).find("cannot open HDF5 file"), std::string::npos);
  }
}

// ---- the temporary file and commit ----

TEST_F(IoHdf5, WritesGoToTemporaryFileUntilCommit) {
  Hdf5Writer writer(path_);
  EXPECT_EQ(writer.final_path(), path_);
  const std::string prefix = path_ + ".tmp-" + std::to_string(::getpid()) + "-";
  EXPECT_EQ(writer.temporary_path().rfind(prefix, 0), 0u) << writer.temporary_path();
  writer.write("/x", std::vector<std::int32_t>{1, 2, 3});
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_TRUE(fs::exists(writer.temporary_path()));
  writer.commit();
  EXPECT_TRUE(fs::exists(path_));
  EXPECT_FALSE(fs::exists(writer.temporary_path()));
  EXPECT_EQ(folder_entries(folder_.path()), std::vector<std::string>{"out.h5"});
  EXPECT_EQ(Hdf5Reader(path_).read_int32("/x"), (std::vector<std::int32_t>{1, 2, 3}));
}

TEST_F(IoHdf5, UncommittedWriterLeavesNothing) {
  {
    Hdf5Writer writer(path_);
    writer.create_group("/a/b");
    writer.write("/a/b/values", some_floats(10000));
    writer.set_attribute("/a", "n", 1.0);
  }
  EXPECT_TRUE(folder_entries(folder_.path()).empty());
  { const Hdf5Writer untouched(path_); }
  EXPECT_TRUE(folder_entries(folder_.path()).empty());
}

TEST_F(IoHdf5, WriterDestroyedByExceptionLeavesNothing) {
  try {
    Hdf5Writer writer(path_);
    writer.write("/x", std::vector<double>{1.0});
    writer.write("/x", std::vector<double>{2.0});  // throws: exists already
    writer.commit();
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(folder_entries(folder_.path()).empty());
}

TEST_F(IoHdf5, CommitReplacesExistingFile) {
  {
    Hdf5Writer writer(path_);
    writer.write("/old", std::vector<std::int32_t>{1});
    writer.commit();
  }
  Hdf5Writer writer(path_);
  writer.write("/new", std::vector<std::int32_t>{2});
  {
    const Hdf5Reader before(path_);  // the old file is still whole and readable
    EXPECT_TRUE(before.exists("/old"));
    EXPECT_FALSE(before.exists("/new"));
  }
  writer.commit();
  const Hdf5Reader after(path_);
  EXPECT_FALSE(after.exists("/old"));
  EXPECT_EQ(after.read_int32("/new"), std::vector<std::int32_t>{2});
  EXPECT_EQ(folder_entries(folder_.path()), std::vector<std::string>{"out.h5"});
}

TEST_F(IoHdf5, ExistingFileIsUntouchedWithoutCommit) {
  const std::string precious = "results of an earlier run\n";
  std::ofstream(path_, std::ios::binary) << precious;
  const auto modified = fs::last_write_time(path_);
  {
    Hdf5Writer writer(path_);
    writer.write("/x", some_floats(5000));
  }
  EXPECT_EQ(read_bytes(path_), precious);
  EXPECT_EQ(fs::last_write_time(path_), modified);
  EXPECT_EQ(folder_entries(folder_.path()), std::vector<std::string>{"out.h5"});
}

TEST_F(IoHdf5, TwoWritersForOnePathHaveTheirOwnTemporaryFiles) {
  Hdf5Writer first(path_);
  Hdf5Writer second(path_);
  EXPECT_NE(first.temporary_path(), second.temporary_path());
  first.write("/x", std::vector<std::int32_t>{1});
  second.write("/y", std::vector<std::int32_t>{2});
  first.commit();
  second.commit();  // the last commit is the file
  const Hdf5Reader reader(path_);
  EXPECT_FALSE(reader.exists("/x"));
  EXPECT_EQ(reader.read_int32("/y"), std::vector<std::int32_t>{2});
  EXPECT_EQ(folder_entries(folder_.path()), std::vector<std::string>{"out.h5"});
}

// A temporary file left by a crashed process that had this process id is not ours: it is
// neither reused nor removed.
TEST_F(IoHdf5, StaleTemporaryFileIsLeftAlone) {
  const std::string stale = path_ + ".tmp-" + std::to_string(::getpid()) + "-0";
  std::ofstream(stale) << "left by a crashed process with the same id\n";
  {
    Hdf5Writer writer(path_);
    EXPECT_NE(writer.temporary_path(), stale);
    writer.write("/x", std::vector<std::int32_t>{1});
    writer.commit();
  }
  EXPECT_EQ(Hdf5Reader(path_).read_int32("/x"), std::vector<std::int32_t>{1});
  EXPECT_EQ(folder_entries(folder_.path()),
            (std::vector<std::string>{"out.h5", fs::path(stale).filename().string()}));
}

// ---- output that cannot be created ----

// Expects Hdf5Writer(final_path) to throw InputError(final_path, 0, "cannot create output
// file: ...") whose message contains `reason`.
void expect_cannot_create(const std::string& final_path, const std::string& reason) {
  try {
    Hdf5Writer writer(final_path);
    ADD_FAILURE() << "no error for " << final_path;
  } catch (const InputError& error) {
    EXPECT_EQ(error.file(), final_path);
    EXPECT_EQ(error.line(), 0);
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(final_path + ": cannot create output file: ", 0), 0u) << message;
    EXPECT_NE(message.find(reason), std::string::npos) << message;
  }
}

TEST(IoHdf5Output, MissingFolderIsInputErrorAndCreatesNothing) {
  const TempDir folder;
  const std::string final_path = folder.file("no/such/folder/out.h5");
  expect_cannot_create(final_path, "does not exist");
  EXPECT_FALSE(fs::exists(folder.path() / "no"));
  EXPECT_TRUE(folder_entries(folder.path()).empty());
}

TEST(IoHdf5Output, FolderThatIsAFileIsInputError) {
  const TempDir folder;
  std::ofstream(folder.file("plain")) << "a file\n";
  expect_cannot_create(folder.file("plain/out.h5"), "is not a folder");
  EXPECT_EQ(folder_entries(folder.path()), std::vector<std::string>{"plain"});
}

TEST(IoHdf5Output, OutputThatIsAFolderIsInputError) {
  const TempDir folder;
  fs::create_directory(folder.path() / "out.h5");
  expect_cannot_create(folder.file("out.h5"), "is a folder");
  EXPECT_EQ(folder_entries(folder.path()), std::vector<std::string>{"out.h5"});
}

TEST(IoHdf5Output, EmptyPathIsInputError) {
  expect_cannot_create("", "no file name");
}

TEST(IoHdf5Output, FolderNotWritableIsInputError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write into any folder";
  const TempDir folder;
  const fs::path locked = folder.path() / "locked";
  fs::create_directory(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  expect_cannot_create((locked / "out.h5").string(), "Permission denied");
  EXPECT_TRUE(folder_entries(locked).empty());
  fs::permissions(locked, fs::perms::owner_all);
}

}  // namespace
}  // namespace duet::io
