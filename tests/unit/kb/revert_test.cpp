// The update log: every change is recorded with its cause, and reverting restores the values.
#include "kb_test_util.h"

using namespace kblaster::kb;
using kb_test::temp_dir;

TEST_CASE("history: attempts, lessons and priors are logged with their cause") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "kb.sqlite");
  const auto id = kb.record_attempt(kb_test::make_attempt("undersized_grid", "grid_size_tuning", 1.5));
  const auto h = kb.history(1);
  REQUIRE(h.size() == 1);
  CHECK(h[0].cause.kind == "numeric");
  CHECK(h[0].cause.attempt_ids == std::vector<std::int64_t>{id});
  const auto full = kb.find_update(h[0].id);
  REQUIRE(full);
  CHECK(full->changes.size() == 2);  // stats for sm_80 and for all
  CHECK(full->changes[0]["table"] == "opt_stats");
  CHECK(full->changes[0]["op"] == "insert");
}

TEST_CASE("history: revert restores earlier values and can itself be reverted") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "kb.sqlite");
  const auto original = kb.export_json();

  SUBCASE("a textual-gradient edit of a prior and a lesson") {
    kb.put_optimization("undersized_grid", "grid_size_tuning", 3.0, "LLM says: much better", update_cause{"textual_gradient", "agent output", {}});
    const auto edit = kb.history(1)[0].id;
    kb.add_lesson({0, "undersized_grid", "", "all", "Small grids need split-K.", "agent", ""}, update_cause{"textual_gradient", "agent", {}});
    const auto lesson = kb.history(1)[0].id;
    CHECK(kb.export_json() != original);
    kb.revert(lesson);
    kb.revert(edit);
    CHECK(kb.export_json() == original);
    // Reverting a revert re-applies the change.
    const auto undo = kb.history(1)[0].id;
    kb.revert(undo);
    CHECK(kb.optimizations("undersized_grid")[0].technique == "grid_size_tuning");
    CHECK(kb.optimizations("undersized_grid")[0].prior_speedup == 3.0);
  }
  SUBCASE("an attempt's numeric update and the whole import") {
    kb.record_attempt(kb_test::make_attempt("undersized_grid", "grid_size_tuning", 1.5));
    kb.revert(kb.history(1)[0].id);
    CHECK(kb.export_json() == original);  // statistics gone; the attempt stays in the replay buffer
    CHECK(kb.attempts().size() == 1);
    // Revert the seed import itself: the KB is empty again.
    const auto seed = kb.history(0).back();
    CHECK(seed.cause.kind == "seed");
    kb.revert(seed.id);
    CHECK(kb.states().empty());
    CHECK(kb.techniques().empty());
  }
}

TEST_CASE("history: a revert that would clobber later changes is refused") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "kb.sqlite");
  kb.record_attempt(kb_test::make_attempt("undersized_grid", "grid_size_tuning", 1.5));
  const auto first = kb.history(1)[0].id;
  kb.record_attempt(kb_test::make_attempt("undersized_grid", "grid_size_tuning", 1.8));
  const auto second = kb.history(1)[0].id;
  try {
    kb.revert(first);
    FAIL("reverted under a later change");
  } catch (const kb_error& e) {
    CHECK(e.kind() == error_kind::conflict);
    CHECK(std::string(e.what()).find(std::to_string(second)) != std::string::npos);
  }
  kb.revert(second);
  kb.revert(first);
  for (const auto& o : kb.optimizations("undersized_grid", "sm_80")) CHECK(o.statistics.attempts == 0);
  CHECK_THROWS_AS(kb.revert(first), kb_error);     // already reverted
  CHECK_THROWS_AS(kb.revert(999999), kb_error);    // no such update
}
