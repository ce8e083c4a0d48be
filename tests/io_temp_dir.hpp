// A fresh, empty folder under the system temporary folder for one test, removed with
// everything in it when the test ends.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace duet::io::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string test_name =
        test == nullptr ? "none" : std::string(test->test_suite_name()) + "." + test->name();
    std::string name =
        "duet-io-" + test_name + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterised test names hold slashes
    }
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The path of `name` inside the folder, as a string.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace duet::io::testing
