// Schema migrations: files of every earlier version open, upgrade in place and keep their data;
// a newer file is refused untouched.
#include "kb/schema.h"
#include "kb_test_util.h"

#include <sqlite3.h>

using namespace kblaster::kb;
using kb_test::temp_dir;

namespace {

// Writes a file at schema `version` holding one state, technique, optimization, stats row and
// attempt (and a lesson from version 2 on), with only the columns that version had.
void make_old_file(const std::filesystem::path& p, int version) {
  sql::database db(p.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  db.exec("BEGIN");
  schema::migrate(db, version);
  db.exec(R"sql(
    INSERT INTO states(id, name, primary_bottleneck, secondary) VALUES(1, 'old_state', 'compute_bound', '["warp_divergence"]');
    INSERT INTO techniques(id, name, category, description) VALUES(1, 'old_tech', 'compute', 'do it');
    INSERT INTO optimizations(state_id, technique_id, prior_speedup) VALUES(1, 1, 1.5);
    INSERT INTO opt_stats(state_id, technique_id, arch, attempts, n_measured, successes, mean_log_speedup)
      VALUES(1, 1, 'all', 1, 1, 1, 0.5);
    INSERT INTO attempts(task, state_before_id, technique_id, compile_ok, correct, measured_speedup, started_at, finished_at)
      VALUES('old_task', 1, 1, 1, 1, 1.6487, '2024-01-01T00:00:00Z', '2024-01-01T00:00:01Z');
    INSERT INTO meta(key, value) VALUES('seeded_at', 'long ago');
  )sql");
  if (version >= 2)
    db.exec("INSERT INTO lessons(state_id, technique, text, created_at) VALUES(1, 'old_tech', 'an old lesson', 'x')");
  db.exec("COMMIT");
}

}  // namespace

TEST_CASE("schema: latest version creates every table") {
  temp_dir dir;
  auto kb = kb_test::open_empty(dir / "kb.sqlite");
  CHECK(schema::current_version(kb.db()) == schema::latest_version());
  CHECK(kb.db().query_int("PRAGMA application_id") == schema::application_id);
  CHECK(kb.db().query_text("PRAGMA journal_mode") == "wal");
  for (const char* t : {"states", "techniques", "optimizations", "opt_stats", "attempts", "transitions",
                        "lessons", "updates", "update_changes"})
    CHECK_MESSAGE(kb.db().query_int(std::string("SELECT count(*) FROM sqlite_master WHERE name='") + t + "'") == 1, t);
}

TEST_CASE("schema: migration from every earlier version keeps the data") {
  for (int v = 1; v < schema::latest_version(); ++v) {
    CAPTURE(v);
    temp_dir dir;
    const auto path = dir / "old.sqlite";
    make_old_file(path, v);
    auto kb = knowledge_base::open(path);  // seed on: must not seed a KB that has content
    CHECK(schema::current_version(kb.db()) == schema::latest_version());
    CHECK(kb.db().query_int("SELECT count(*) FROM schema_version") == schema::latest_version());
    REQUIRE(kb.states().size() == 1);
    const auto st = kb.find_state("old_state");
    REQUIRE(st);
    CHECK(st->secondary == std::vector<std::string>{"warp_divergence"});
    const auto opts = kb.optimizations("old_state");
    REQUIRE(opts.size() == 1);
    CHECK(opts[0].statistics.attempts == 1);
    CHECK(opts[0].statistics.mean_log_speedup == doctest::Approx(0.5));
    auto atts = kb.attempts();
    REQUIRE(atts.size() == 1);
    CHECK(atts[0].task == "old_task");
    CHECK(atts[0].code_hash.empty());  // column added by version 3 gets its default
    CHECK(kb.lessons("old_state").size() == (v >= 2 ? 1u : 0u));
    // The upgraded file takes new data in the new columns and tables.
    auto a = kb_test::make_attempt("old_state", "old_tech", 2.0);
    a.code_hash = "abc";
    a.tokens_by_role = {{"lowering", 1200}};
    kb.record_attempt(a);
    CHECK(kb.attempts(1)[0].code_hash == "abc");
    CHECK(kb.attempts(1)[0].tokens_by_role.at("lowering") == 1200);
    CHECK(kb.history().size() == 1);
  }
}

TEST_CASE("schema: an empty file and an empty SQLite database become a new KB") {
  temp_dir dir;
  kb_test::write_bytes(dir / "zero.sqlite", "");
  auto a = knowledge_base::open(dir / "zero.sqlite");
  CHECK(a.states().size() >= 14);
  { sql::database raw((dir / "empty.sqlite").string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE); raw.exec("VACUUM"); }
  auto b = knowledge_base::open(dir / "empty.sqlite");
  CHECK(b.states().size() >= 14);
}

TEST_CASE("schema: a file from a newer KernelBlaster is refused and left untouched") {
  temp_dir dir;
  const auto path = dir / "new.sqlite";
  { auto kb = kb_test::open_empty(path); kb.db().exec("INSERT INTO schema_version VALUES(99, 'future')"); }
  const std::string before = kb_test::read_bytes(path);
  try {
    knowledge_base::open(path);
    FAIL("opened a too-new file");
  } catch (const kb_error& e) {
    CHECK(e.kind() == error_kind::too_new);
    CHECK(std::string(e.what()).find("schema version 99") != std::string::npos);
  }
  CHECK(kb_test::read_bytes(path) == before);
}
