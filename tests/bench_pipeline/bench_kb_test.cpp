// The bench's KBs (engine/bench/bench_kb.h) without a server: where private KBs go, how a server's
// is shown, and the file KBs the arms start from. The server's side runs in
// bench_pipeline.learning_pg (learning_pg_test.py, on a throwaway server).
#include "engine/bench/bench_kb.h"
#include "engine/bench/result_store.h"
#include "tests/temp_dir.h"

#include <doctest/doctest.h>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace kblaster::engine::bench;

namespace {

// A fresh folder for each test.
struct temp_dir : kblaster::testing::temp_dir {
  temp_dir() : kblaster::testing::temp_dir("bench-kb") {}
};

}  // namespace

TEST_CASE("bench KBs: a server's URI is never made a path, nor shown with its password") {
  const fs::path uri = "postgresql://kb:s3cret@db.example:5432/team?sslmode=require";
  CHECK(on_server(uri));
  CHECK_FALSE(on_server("runs/kb.sqlite"));
  CHECK(shown_kb(uri) == "postgresql://kb:***@db.example:5432/team?sslmode=require");
  CHECK(shown_kb("kb.sqlite") == (fs::current_path() / "kb.sqlite").string());
}

TEST_CASE("bench KBs: a private KB is the given file, or a database beside the server's named after the run") {
  temp_dir t;
  CHECK(private_kb(t.path / "kb.sqlite", t.path / "warm-s1", "L1_22_Tanh", t.path / "w" / "kb.sqlite") ==
        t.path / "w" / "kb.sqlite");
  const fs::path uri = "postgresql://kb:s3cret@db.example/team?sslmode=require";
  const auto start = private_kb(uri, t.path / "warm-s1", "", "unused").string();
  const auto problem = private_kb(uri, t.path / "warm-s1", "L1_22_Tanh", "unused").string();
  CHECK(start.starts_with("postgresql://kb:s3cret@db.example/team_warm_s1_"));  // the password connects it
  CHECK(start.ends_with("?sslmode=require"));
  CHECK(problem.find(start.substr(0, start.find('?')) + "_l1_22_tanh?") == 0);
  // Two run folders of the same name get databases of their own.
  CHECK(private_kb(uri, t.path / "other" / "warm-s1", "", "unused").string() != start);
  CHECK(private_kb(uri, t.path / "warm-s1" / "", "", "unused").string() == start);
}

TEST_CASE("bench KBs: empty, blank, seed and copied file KBs") {
  temp_dir t;
  CHECK_FALSE(kb_exists(t.path / "none.sqlite"));
  CHECK(attempts_in(t.path / "none.sqlite") == 0);
  make_empty_kb(t.path / "a" / "empty.sqlite");
  CHECK(kb_exists(t.path / "a" / "empty.sqlite"));
  CHECK(export_kb(t.path / "a" / "empty.sqlite").size() <= 2);  // no state: "$format" (and "$techniques")
  make_seed_kb(t.path / "seed.sqlite");
  make_blank_kb(t.path / "blank.sqlite");
  const auto seed = export_kb(t.path / "seed.sqlite"), blank = export_kb(t.path / "blank.sqlite");
  CHECK(seed.size() == blank.size());
  copy_kb(t.path / "seed.sqlite", t.path / "b" / "copy.sqlite");
  CHECK(export_kb(t.path / "b" / "copy.sqlite") == seed);
  CHECK_THROWS_AS(copy_kb(t.path / "seed.sqlite", t.path / "b" / "copy.sqlite"), store_error);
  import_kb(t.path / "c" / "imported.sqlite", seed, "test");
  CHECK(export_kb(t.path / "c" / "imported.sqlite") == seed);
  CHECK(attempts_in(t.path / "seed.sqlite") == 0);
  drop_private_kb(t.path / "seed.sqlite");  // a file stays: its run folder keeps it
  CHECK(kb_exists(t.path / "seed.sqlite"));
}
