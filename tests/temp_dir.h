// A test's own folder under the system's temporary one: created empty, removed with the object.
// Named by what it is for, the process and a counter, so that tests running at once (ctest -j,
// or several in one binary) never share one.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <system_error>

namespace kblaster::testing {

struct temp_dir {
  std::filesystem::path path;

  explicit temp_dir(const std::string& what) {
    static std::atomic<int> made{0};
    path = std::filesystem::temp_directory_path() /
           ("kblaster-" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(made++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

}  // namespace kblaster::testing
