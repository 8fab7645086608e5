// The recorded captures (tests/fixtures/captures/) and private copies of them for the capture
// tests to damage, extend or write tasks into.
#pragma once

#include "support/files.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace kblaster::test {

inline const std::filesystem::path capture_fixtures = std::filesystem::path(KBLASTER_FIXTURES_DIR) / "captures";
inline const std::filesystem::path capture_programs = std::filesystem::path(KBLASTER_SOURCE_DIR) / "tests" / "capture" / "programs";

/// A private copy of a fixture, which a test may damage or write a task into; removed at the end.
struct fixture_copy {
  std::filesystem::path dir;
  explicit fixture_copy(const std::string& name) {
    static int copies = 0;  // one counter for every test file (an inline function's static)
    dir = std::filesystem::temp_directory_path() /
          ("kblaster-capture-test-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(++copies));
    std::filesystem::remove_all(dir);
    std::filesystem::copy(capture_fixtures / name, dir, std::filesystem::copy_options::recursive);
  }
  ~fixture_copy() { std::filesystem::remove_all(dir); }
  fixture_copy(const fixture_copy&) = delete;
  fixture_copy& operator=(const fixture_copy&) = delete;
  nlohmann::json json() const { return nlohmann::json::parse(support::read_file(dir / "capture.json")); }
  void write(const nlohmann::json& j) const { support::write_file_atomically(dir / "capture.json", j.dump()); }
};

/// The source of a test program in tests/capture/programs/.
inline std::string capture_program(const std::string& name) { return support::read_file(capture_programs / (name + ".cu")); }

/// `text` with the first `from` replaced by `to`; `from` must be there.
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace kblaster::test
