// Files that are not a usable KB: each gives a clear error of the right kind and stays untouched.
#include "kb_test_util.h"

#include <sqlite3.h>

using namespace kblaster::kb;
using kb_test::temp_dir;

namespace {

// Opens `path` with integrity checking as the CLI does; returns the error or fails.
kb_error open_error(const std::filesystem::path& path, open_options::access_mode mode = open_options::access_mode::read_write) {
  open_options o;
  o.access = mode;
  o.check_integrity = true;
  try {
    auto kb = knowledge_base::open(path, o);
    kb.summary();
    kb.export_json();
  } catch (const kb_error& e) {
    return e;
  }
  FAIL("opening " << path << " succeeded");
  return kb_error(error_kind::internal, "unreachable");
}

bool mentions(const kb_error& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("bad files: a text file is not an SQLite database") {
  temp_dir dir;
  const auto path = dir / "notes.txt";
  kb_test::write_bytes(path, "these are my notes, not a database\n");
  const auto e = open_error(path);
  CHECK(e.kind() == error_kind::not_sqlite);
  CHECK(mentions(e, "not an SQLite database"));
  CHECK(mentions(e, path.string()));
  CHECK(kb_test::read_bytes(path) == "these are my notes, not a database\n");
  CHECK_FALSE(std::filesystem::exists(dir / "notes.txt-wal"));
}

TEST_CASE("bad files: another application's SQLite database") {
  temp_dir dir;
  const auto path = dir / "places.sqlite";
  {
    sql::database db(path.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec("CREATE TABLE bookmarks(url TEXT); INSERT INTO bookmarks VALUES('https://example.org')");
  }
  const std::string before = kb_test::read_bytes(path);
  const auto e = open_error(path);
  CHECK(e.kind() == error_kind::foreign);
  CHECK(mentions(e, "another application"));
  CHECK(kb_test::read_bytes(path) == before);  // still in rollback-journal mode, no KB tables
  // And one that set its own application_id.
  {
    sql::database db(path.string(), SQLITE_OPEN_READWRITE);
    db.exec("PRAGMA application_id = 1234");
  }
  const std::string before2 = kb_test::read_bytes(path);
  CHECK(open_error(path).kind() == error_kind::foreign);
  CHECK(kb_test::read_bytes(path) == before2);
}

TEST_CASE("bad files: a corrupt KB") {
  temp_dir dir;
  const auto path = dir / "kb.sqlite";
  {
    auto kb = knowledge_base::open(path);  // seeded: several pages
    for (int i = 0; i < 200; ++i) kb.record_attempt(kb_test::make_attempt("memory_bandwidth_saturated", "kernel_fusion", 1.2));
  }
  std::string bytes = kb_test::read_bytes(path);
  REQUIRE(bytes.size() > 8 * 4096);

  SUBCASE("damaged pages") {
    for (std::size_t i = 2 * 4096; i < 6 * 4096; ++i) bytes[i] = static_cast<char>(i * 7);
    kb_test::write_bytes(path, bytes);
    const auto e = open_error(path);
    CHECK(e.kind() == error_kind::corrupt);
    CHECK(mentions(e, "corrupt"));
    CHECK(kb_test::read_bytes(path) == bytes);
  }
  SUBCASE("damaged header after the magic string") {
    for (std::size_t i = 16; i < 100; ++i) bytes[i] = '\xff';
    kb_test::write_bytes(path, bytes);
    const auto e = open_error(path);
    CHECK(e.kind() == error_kind::corrupt);
    CHECK(kb_test::read_bytes(path) == bytes);
  }
  SUBCASE("truncated") {
    bytes.resize(3 * 4096 + 100);
    kb_test::write_bytes(path, bytes);
    const auto e = open_error(path);
    CHECK(e.kind() == error_kind::corrupt);
    CHECK(kb_test::read_bytes(path) == bytes);
  }
}

TEST_CASE("bad files: a directory where the KB should be") {
  temp_dir dir;
  std::filesystem::create_directory(dir / "kb.sqlite");
  const auto e = open_error(dir / "kb.sqlite");
  CHECK(e.kind() == error_kind::cannot_open);
  CHECK(mentions(e, "directory"));
}

TEST_CASE("bad files: read-only locations") {
  temp_dir dir;
  SUBCASE("unwritable directory, no file yet") {
    const auto sub = dir / "ro";
    std::filesystem::create_directory(sub);
    kb_test::unwritable guard(sub);
    if (!guard.ok()) {
      MESSAGE("cannot make a directory unwritable here; checked /proc instead");
      CHECK(open_error("/proc/kblaster-test/kb.sqlite").kind() == error_kind::read_only);
      return;
    }
    const auto e = open_error(sub / "kb.sqlite");
    CHECK(e.kind() == error_kind::read_only);
    CHECK(mentions(e, "not writable"));
    CHECK_FALSE(std::filesystem::exists(sub / "kb.sqlite"));
  }
  SUBCASE("read-only file") {
    const auto path = dir / "kb.sqlite";
    { auto kb = knowledge_base::open(path); kb.record_attempt(kb_test::make_attempt("undersized_grid", "grid_size_tuning", 1.5)); }
    const std::string before = kb_test::read_bytes(path);
    kb_test::unwritable guard(path);
    REQUIRE_MESSAGE(guard.ok(), "cannot make a file unwritable on this machine");
    const auto e = open_error(path);
    CHECK(e.kind() == error_kind::read_only);
    CHECK(mentions(e, "read-only"));
    // Reading still works when asked for automatically.
    open_options o;
    o.access = open_options::access_mode::automatic;
    auto kb = knowledge_base::open(path, o);
    CHECK(kb.read_only());
    CHECK(kb.summary().attempts == 1);
    try {
      kb.record_attempt(kb_test::make_attempt("undersized_grid", "grid_size_tuning", 1.5));
      FAIL("wrote to a read-only KB");
    } catch (const kb_error& err) {
      CHECK(err.kind() == error_kind::read_only);
    }
    CHECK(kb_test::read_bytes(path) == before);
  }
}
