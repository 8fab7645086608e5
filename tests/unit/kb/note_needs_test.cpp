// Notes that fit the state (issue 36 item 4): a seeded note is written for its state, names the
// operations it speaks of in note_needs, and is not shown for a kernel that lacks them; the needs
// are stored, exported, imported (checked) and carried into a discovered state; a KB seeded
// before gets the rewritten notes when it is upgraded.
#include "kb/note_needs.h"
#include "kb/schema.h"
#include "kb/seed.h"
#include "kb/state_match.h"
#include "kb_test_util.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <set>
#include <string>

using namespace kblaster::kb;
using kb_test::temp_dir;

namespace {

const optimization& find_opt(const std::vector<optimization>& opts, const std::string& technique) {
  for (const auto& o : opts)
    if (o.technique == technique) return o;
  FAIL("no optimization " << technique);
  static optimization none;
  return none;
}

}  // namespace

TEST_CASE("note_fits: every clause needs one of its operations; an unknown kernel sees every note") {
  optimization o;
  o.note = "combine the lanes' partial results with shuffles";
  o.note_needs = {{"reduction"}, {"shared_memory", "per_thread_array"}};
  CHECK(note_fits(o, std::set<std::string>{"reduction", "shared_memory"}));
  CHECK(note_fits(o, std::set<std::string>{"reduction", "per_thread_array"}));
  CHECK_FALSE(note_fits(o, std::set<std::string>{"reduction"}));
  CHECK_FALSE(note_fits(o, std::set<std::string>{}));
  CHECK(note_fits(o, std::nullopt));
  CHECK(shown_note(o, std::set<std::string>{"shared_memory"}).empty());
  o.note_needs.clear();
  CHECK(shown_note(o, std::set<std::string>{}) == o.note);
  CHECK(clauses_from_json(nlohmann::json::parse(R"([["a", 1, "b"], "c", [], 7])")) ==
        std::vector<std::vector<std::string>>{{"a", "b"}, {"c"}});
}

TEST_CASE("the seed's notes are written for their state and name only operations the engine can see") {
  const auto seed = nlohmann::json::parse(seed_kb_json());
  const auto& known = note_operations();
  int with_needs = 0;
  for (const auto& [state, body] : seed.items()) {
    if (state.front() == '$') continue;
    for (const auto& o : body["optimizations"]) {
      CAPTURE(state);
      CAPTURE(o.dump());
      const std::string note = o.value("note", "");
      // Written for one kernel, not for the state (issue 36: a softmax's hint shown for an SpMV).
      for (const char* word : {"softmax", "max and sum", "the row's", "one thread per row", "along the row"})
        CHECK(note.find(word) == std::string::npos);
      if (!o.contains("note_needs")) continue;
      ++with_needs;
      for (const auto& clause : clauses_from_json(o["note_needs"]))
        for (const auto& name : clause) CHECK(std::find(known.begin(), known.end(), name) != known.end());
    }
  }
  CHECK(with_needs >= 8);
}

TEST_CASE("a fresh KB stores each seeded note's needs, and hides the SpMV's shuffle note from a transpose") {
  temp_dir dir;
  auto kb = knowledge_base::open(dir / "kb.sqlite");
  const auto opts = kb.optimizations("undersized_grid_uncoalesced");
  const auto& shuffle = find_opt(opts, "warp_shuffle_reduction");
  CHECK(shuffle.note_needs == std::vector<std::vector<std::string>>{{"reduction"}});
  CHECK(shuffle.note.find("max") == std::string::npos);
  CHECK_FALSE(shown_note(shuffle, std::set<std::string>{"reduction"}).empty());   // an SpMV sums its row
  CHECK(shown_note(shuffle, std::set<std::string>{"shared_memory"}).empty());     // a transpose sums nothing
  const auto& coalesce = find_opt(opts, "memory_coalescing");
  CHECK(coalesce.note_needs.empty());  // true of every kernel in the state
  CHECK_FALSE(shown_note(coalesce, std::set<std::string>{}).empty());

  // Export writes them, an import of the export reads them back.
  const auto doc = kb.export_json();
  bool exported = false;
  for (const auto& o : doc["undersized_grid_uncoalesced"]["optimizations"])
    if (o["technique"] == "warp_shuffle_reduction") exported = o["note_needs"] == nlohmann::json::parse(R"([["reduction"]])");
  CHECK(exported);
  temp_dir dir2;
  auto copy = kb_test::open_empty(dir2 / "kb.sqlite");
  copy.import_json(doc, update_cause{"import", "test", {}});
  const auto copied = copy.optimizations("undersized_grid_uncoalesced");
  CHECK(find_opt(copied, "warp_shuffle_reduction").note_needs == shuffle.note_needs);
}

TEST_CASE("an import naming an operation the engine cannot see is refused, naming it") {
  temp_dir dir;
  auto kb = kb_test::open_empty(dir / "kb.sqlite");
  const auto doc = nlohmann::json::parse(R"({"s": {"primary_bottleneck": "compute_bound",
    "optimizations": [{"technique": "t", "note": "n", "note_needs": [["softmax"]]}]}})");
  try {
    kb.import_json(doc, update_cause{"import", "test", {}});
    FAIL("accepted an unknown operation");
  } catch (const kb_error& e) {
    CHECK(std::string(e.what()).find("'note_needs' names \"softmax\"") != std::string::npos);
    CHECK(std::string(e.what()).find("reduction") != std::string::npos);  // the known ones are listed
  }
  const auto bad_shape = nlohmann::json::parse(R"({"s": {"primary_bottleneck": "compute_bound",
    "optimizations": [{"technique": "t", "note_needs": "reduction"}]}})");
  CHECK_THROWS_AS(kb.import_json(bad_shape, update_cause{"import", "test", {}}), kb_error);
}

TEST_CASE("a discovered state carries its components' notes with their needs") {
  temp_dir dir;
  auto kb = knowledge_base::open(dir / "kb.sqlite");
  // Undersized and uncoalesced, with spills: no seeded state names all three.
  auto e = evidence_of("small_grid", {"uncoalesced_global_access", "register_spills", "warp_divergence"});
  e.primary_weight = 0.3;
  const auto m = kb.match_state(e, "sm_90");
  REQUIRE(m);
  REQUIRE(m->discovered);
  const auto name = kb.adopt_discovered(*m, e);
  const auto adopted = kb.optimizations(name);
  const auto& shuffle = find_opt(adopted, "warp_shuffle_reduction");
  CHECK(shuffle.note.find("from undersized_grid_uncoalesced") == 0);
  CHECK(shuffle.note_needs == std::vector<std::vector<std::string>>{{"reduction"}});
}

TEST_CASE("upgrading a KB seeded before: the old notes are rewritten and get their needs; edited ones stay") {
  temp_dir dir;
  const auto path = dir / "old.sqlite";
  {
    sql::database db(path.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec("BEGIN");
    schema::migrate(db, 4);
    db.exec(R"sql(
      INSERT INTO states(id, name, primary_bottleneck) VALUES(1, 'undersized_grid_uncoalesced', 'small_grid');
      INSERT INTO states(id, name, primary_bottleneck) VALUES(2, 'fp32_compute_saturated', 'compute_bound');
      INSERT INTO techniques(id, name) VALUES(1, 'warp_shuffle_reduction'), (2, 'fast_math_intrinsics'),
                                             (3, 'index_math_strength_reduction'), (4, 'algebraic_simplification');
      INSERT INTO optimizations(state_id, technique_id, prior_speedup, note) VALUES
        (1, 1, 1.8, 'the row''s max and sum across the lanes that now share it'),
        (2, 2, 1.3, 'transcendentals dominate [confidence x0.80: a user''s reason]'),
        (2, 3, 1.15, 'integer division and modulo are slow'),
        (2, 4, 1.4, 'remove redundant arithmetic');
      INSERT INTO meta(key, value) VALUES('seeded_at', 'long ago');
    )sql");
    db.exec("COMMIT");
  }
  auto kb = knowledge_base::open(path);
  REQUIRE(schema::current_version(kb.db()) == schema::latest_version());
  const auto upgraded = kb.optimizations("undersized_grid_uncoalesced");
  const auto& shuffle = find_opt(upgraded, "warp_shuffle_reduction");
  CHECK(shuffle.note.find("max and sum") == std::string::npos);
  CHECK(shuffle.note_needs == std::vector<std::vector<std::string>>{{"reduction"}});
  const auto fp32 = kb.optimizations("fp32_compute_saturated");
  CHECK(find_opt(fp32, "fast_math_intrinsics").note == "transcendentals dominate [confidence x0.80: a user's reason]");
  CHECK(find_opt(fp32, "fast_math_intrinsics").note_needs.empty());  // edited since: left alone
  CHECK(find_opt(fp32, "index_math_strength_reduction").note_needs == std::vector<std::vector<std::string>>{{"division"}});
  CHECK(find_opt(fp32, "algebraic_simplification").note == "remove redundant arithmetic");  // as seeded: kept
}
