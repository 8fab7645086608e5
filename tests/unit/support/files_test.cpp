// support/files: atomic writes, whole-file reads, the per-user scratch folder.
#include "support/files.h"

#include <doctest/doctest.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace kblaster::support;

namespace {
fs::path fresh_dir(const std::string& name) {
  const auto d = fs::temp_directory_path() / ("kblaster-files-test-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST_CASE("write_file_atomically then read_file gives the bytes back; no temporary is left") {
  const auto d = fresh_dir("roundtrip");
  const std::string bytes("a\0b\nc", 5);
  write_file_atomically(d / "sub" / "x.bin", bytes);
  CHECK(read_file(d / "sub" / "x.bin") == bytes);
  CHECK(std::distance(fs::directory_iterator(d / "sub"), fs::directory_iterator()) == 1);
  CHECK_THROWS_AS(read_file(d / "missing"), file_error);
  CHECK_FALSE(read_file_if_exists(d / "missing").has_value());
  fs::remove_all(d);
}

TEST_CASE("concurrent writers of one path never expose half a file") {
  // Two daemons analysing the same text write the same content-addressed copy at once.
  const auto d = fresh_dir("race");
  const auto path = d / "kernel.cu";
  const std::string a(200000, 'a'), b(200000, 'b');
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::thread reader([&] {
    while (!done) {
      if (auto text = read_file_if_exists(path); text && !text->empty() && *text != a && *text != b) ++torn;
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      for (int i = 0; i < 50; ++i) write_file_atomically(path, w ? a : b);
    });
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  CHECK(torn == 0);
  fs::remove_all(d);
}

TEST_CASE("temporary_sibling: beside the file, and never the same name twice, across threads of one process") {
  const fs::path target = "/some/folder/lib.so";
  std::vector<std::string> names(8 * 50);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) names[static_cast<std::size_t>(t * 50 + i)] = kblaster::support::temporary_sibling(target).string();
    });
  for (auto& t : threads) t.join();
  std::set<std::string> distinct(names.begin(), names.end());
  CHECK(distinct.size() == names.size());
  for (const auto& n : names) CHECK(fs::path(n).parent_path() == target.parent_path());
  CHECK(names.front().rfind("/some/folder/lib.so.tmp", 0) == 0);
}

TEST_CASE("the user's scratch root is private and refused when it is not ours") {
  const auto root = user_scratch_root();
  struct stat st {};
  REQUIRE(::lstat(root.c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK((st.st_mode & 077) == 0);
  CHECK(root.filename().string() == "kblaster-" + std::to_string(::getuid()));

  // A plain file (or a link) where the folder should be is not used.
  const auto d = fresh_dir("foreign");
  const auto old = std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string();
  ::setenv("TMPDIR", d.c_str(), 1);
  fs::create_directory_symlink("/", d / ("kblaster-" + std::to_string(::getuid())));
  CHECK_THROWS_AS(user_scratch_root(), file_error);
  if (old.empty()) ::unsetenv("TMPDIR");
  else ::setenv("TMPDIR", old.c_str(), 1);
  fs::remove_all(d);
}

TEST_CASE("remove_entries_older_than keeps what is recent") {
  const auto d = fresh_dir("prune");
  write_file_atomically(d / "old" / "x", "1");
  write_file_atomically(d / "new" / "x", "2");
  fs::last_write_time(d / "old", fs::file_time_type::clock::now() - std::chrono::hours(24 * 30));
  remove_entries_older_than(d, std::chrono::hours(24 * 7));
  CHECK_FALSE(fs::exists(d / "old"));
  CHECK(fs::exists(d / "new" / "x"));
  fs::remove_all(d);
}

TEST_CASE("write_secret_file is 0600 from the start, whatever the umask, and replaces the old file") {
  const auto d = fresh_dir("secret");
  const mode_t old_mask = ::umask(0);  // the mode must not depend on a permissive umask
  write_secret_file(d / "run" / "token", "one\n");
  write_secret_file(d / "run" / "token", "two\n");
  ::umask(old_mask);
  struct stat st {};
  REQUIRE(::stat((d / "run" / "token").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(read_file(d / "run" / "token") == "two\n");
  CHECK(std::distance(fs::directory_iterator(d / "run"), fs::directory_iterator()) == 1);
  fs::remove_all(d);
}

TEST_CASE("private_directory makes a 0700 folder, closes an open one of ours, and refuses a file") {
  const auto d = fresh_dir("private");
  const auto made = private_directory(d / "a" / "b");
  struct stat st {};
  REQUIRE(::stat(made.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  ::chmod(made.c_str(), 0775);
  private_directory(made);
  REQUIRE(::stat(made.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  write_file_atomically(d / "file", "x");
  CHECK_THROWS_AS(private_directory(d / "file"), file_error);
  fs::remove_all(d);
}

TEST_CASE("the runtime folder is $XDG_RUNTIME_DIR/kblaster, else one in the scratch folder") {
  const auto d = fresh_dir("runtime");
  const auto old = std::getenv("XDG_RUNTIME_DIR") ? std::string(std::getenv("XDG_RUNTIME_DIR")) : std::string();
  ::setenv("XDG_RUNTIME_DIR", d.c_str(), 1);
  CHECK(user_runtime_dir() == d / "kblaster");
  ::unsetenv("XDG_RUNTIME_DIR");
  const auto fallback = user_runtime_dir();
  CHECK(fallback == user_scratch_root() / "run");
  struct stat st {};
  REQUIRE(::stat(fallback.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  if (!old.empty()) ::setenv("XDG_RUNTIME_DIR", old.c_str(), 1);
  fs::remove_all(d);
}
