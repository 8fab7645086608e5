// Schema migrations: files of every earlier version open, upgrade in place and keep their data;
// a newer file is refused untouched.
#include "kb/schema.h"
#include "kb_test_util.h"

#include <algorithm>

#include <sqlite3.h>

#include <map>

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
    // Version 7: who taught each attempt and update; what was there before is attributed to no one.
    const auto attempt_columns = kb.db().columns_of("attempts"), update_columns = kb.db().columns_of("updates");
    CHECK(std::count(attempt_columns.begin(), attempt_columns.end(), "taught_by") == 1);
    CHECK(std::count(update_columns.begin(), update_columns.end(), "taught_by") == 1);
    CHECK(kb.db().query_int("SELECT count(*) FROM updates WHERE taught_by <> ''") == 0);
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

namespace {

// A version-3 file with a consistent update log in that version's format (whole JSON objects
// per change): the import of a state, technique and optimization, an edit of the prior, an
// attempt's statistics and the deletion of a lesson. Returns the logged changes per update.
std::map<std::int64_t, nlohmann::json> make_v3_log_file(const std::filesystem::path& p) {
  using nlohmann::json;
  sql::database db(p.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  db.exec("BEGIN");
  schema::migrate(db, 3);
  db.exec(R"sql(
    INSERT INTO states(id, name, primary_bottleneck) VALUES(1, 'old_state', 'compute_bound');
    INSERT INTO techniques(id, name, category, description) VALUES(1, 'old_tech', 'compute', 'do it');
    INSERT INTO optimizations(state_id, technique_id, prior_speedup) VALUES(1, 1, 1.5);
    INSERT INTO opt_stats(state_id, technique_id, arch, attempts, n_measured, successes, mean_log_speedup, last_used)
      VALUES(1, 1, 'all', 1, 1, 1, 0.25, '2024-01-01T00:00:01.000Z');
    INSERT INTO meta(key, value) VALUES('seeded_at', 'long ago');
  )sql");
  const json state_row{{"id", 1}, {"name", "old_state"}, {"primary_bottleneck", "compute_bound"}, {"secondary", "[]"},
                       {"criteria", "[]"}, {"scope", "all"}, {"origin", "seed"}, {"description", ""}, {"notes", ""}};
  const json tech_row{{"id", 1}, {"name", "old_tech"}, {"category", "compute"}, {"description", "do it"}};
  const json okey{{"state_id", 1}, {"technique_id", 1}};
  const json skey{{"state_id", 1}, {"technique_id", 1}, {"arch", "all"}};
  json stats_row = skey;
  stats_row.update(json{{"attempts", 1}, {"compile_failures", 0}, {"incorrect", 0}, {"successes", 1},
                        {"n_measured", 1}, {"mean_log_speedup", 0.25}, {"m2_log_speedup", 0.0},
                        {"last_used", "2024-01-01T00:00:01.000Z"}});
  const json lesson_row{{"id", 7}, {"state_id", 1}, {"technique", ""}, {"arch", "all"}, {"text", "gone"},
                        {"provenance", "agent"}, {"created_at", "x"}};
  auto change = [](const char* table, const json& key, const char* op, const json& before, const json& after) {
    return json{{"table", table}, {"key", key}, {"op", op}, {"before", before}, {"after", after}};
  };
  json opt_row = okey;
  opt_row.update(json{{"prior_speedup", 1.2}, {"note", ""}});
  std::map<std::int64_t, json> log{
      {1, json::array({change("states", {{"id", 1}}, "insert", nullptr, state_row),
                       change("techniques", {{"id", 1}}, "insert", nullptr, tech_row),
                       change("optimizations", okey, "insert", nullptr, opt_row)})},
      {2, json::array({change("optimizations", okey, "update", {{"prior_speedup", 1.2}}, {{"prior_speedup", 1.5}})})},
      {3, json::array({change("opt_stats", skey, "insert", nullptr, stats_row)})},
      {4, json::array({change("lessons", {{"id", 7}}, "delete", lesson_row, nullptr)})},
  };
  const char* causes[] = {"", "import", "manual", "numeric", "manual"};
  for (const auto& [id, changes] : log) {
    auto u = db.prepare("INSERT INTO updates(id, created_at, cause) VALUES(?, 'then', ?)");
    u.bind(1, id).bind(2, causes[id]).run();
    for (std::size_t i = 0; i < changes.size(); ++i) {
      const auto& c = changes[i];
      auto s = db.prepare(
          "INSERT INTO update_changes(update_id, seq, table_name, row_key, op, before, after) VALUES(?, ?, ?, ?, ?, ?, ?)");
      s.bind(1, id).bind(2, static_cast<std::int64_t>(i)).bind(3, c["table"].get<std::string>());
      s.bind(4, c["key"].dump()).bind(5, c["op"].get<std::string>());
      c["before"].is_null() ? s.bind_null(6) : s.bind(6, c["before"].dump());
      c["after"].is_null() ? s.bind_null(7) : s.bind(7, c["after"].dump());
      s.run();
    }
  }
  db.exec("COMMIT");
  return log;
}

}  // namespace

TEST_CASE("schema: a version-3 update log is converted, reads the same and stays revertible") {
  temp_dir dir;
  const auto path = dir / "v3.sqlite";
  const auto log = make_v3_log_file(path);
  auto kb = knowledge_base::open(path);
  REQUIRE(schema::current_version(kb.db()) == schema::latest_version());
  CHECK(kb.db().query_int("SELECT count(*) FROM sqlite_master WHERE name = 'update_changes_v3'") == 0);
  for (const auto& [id, changes] : log) {
    CAPTURE(id);
    const auto u = kb.find_update(id);
    REQUIRE(u);
    CHECK(u->changes == changes);  // every value, type and key as version 3 stored it
  }
  CHECK(kb.history(0).size() == 4);
  CHECK(kb.history(0).back().changes == 3);  // history lists the number of changes
  CHECK(kb.optimizations("old_state")[0].prior_speedup == 1.5);

  kb.revert(4);  // a deleted lesson comes back
  REQUIRE(kb.lessons("old_state").size() == 1);
  CHECK(kb.lessons("old_state")[0].text == "gone");
  kb.revert(3);
  CHECK(kb.optimizations("old_state")[0].statistics.attempts == 0);
  kb.revert(2);
  CHECK(kb.optimizations("old_state")[0].prior_speedup == 1.2);
  kb.revert(1);  // the import: state, technique and optimization go
  CHECK(kb.states().empty());
  CHECK(kb.techniques().empty());
}

TEST_CASE("schema: a damaged version-3 update log stops the upgrade with a clear error") {
  temp_dir dir;
  const auto path = dir / "v3.sqlite";
  make_v3_log_file(path);
  {
    sql::database db(path.string(), SQLITE_OPEN_READWRITE);
    db.exec("UPDATE update_changes SET op = 'frobnicate' WHERE update_id = 2");
  }
  try {
    knowledge_base::open(path);
    FAIL("upgraded a damaged log");
  } catch (const kb_error& e) {
    CHECK(e.kind() == error_kind::corrupt);
    CHECK(std::string(e.what()).find("update 2") != std::string::npos);
  }
  sql::database db(path.string(), SQLITE_OPEN_READONLY);
  CHECK(schema::current_version(db) == 3);  // the migration rolled back
}
