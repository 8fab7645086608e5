// The bench result store (atomic files, resume, manifest check, merge) and problem selection.
#include "engine/bench/problem_set.h"
#include "engine/bench/result_store.h"
#include "tests/temp_dir.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>

namespace fs = std::filesystem;
using namespace kblaster::engine::bench;

namespace {

// A fresh folder for each test.
struct temp_dir : kblaster::testing::temp_dir {
  temp_dir() : kblaster::testing::temp_dir("bench-store") {}
};

problem_result result(int level, const std::string& name, double best, const std::string& finished) {
  problem_result r;
  r.level = level;
  r.problem = name;
  r.valid = true;
  r.eager_ms = 1;
  r.best_ms = best;
  r.finished_at = finished;
  r.techniques = {{"block_size_tuning", true}};
  return r;
}

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "# test problem\n";
}

}  // namespace

TEST_CASE("results round-trip and mark problems done") {
  temp_dir t;
  result_store store(t.path / "run");
  CHECK(!store.has("L1_23_Softmax"));
  store.put(result(1, "23_Softmax", 0.5, "2026-01-01T00:00:00Z"));
  CHECK(store.has("L1_23_Softmax"));
  const auto rs = store.results();
  REQUIRE(rs.size() == 1);
  CHECK(*rs[0].best_ms == 0.5);
  CHECK(rs[0].techniques.at(0).technique == "block_size_tuning");
  // No temporary is left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(t.path / "run" / "results")) ++files;
  CHECK(files == 1);
  const auto j = read_json_file(store.result_path("L1_23_Softmax"));
  CHECK(j["speedup"]["eager"].get<double>() == doctest::Approx(2.0));
}

TEST_CASE("a corrupt result names its file") {
  temp_dir t;
  result_store store(t.path / "run");
  std::ofstream(store.result_path("L1_x")) << "{\"problem\": \"x\"";
  CHECK_THROWS_WITH_AS(store.results(), doctest::Contains("L1_x.json"), store_error);
  std::ofstream(store.result_path("L1_x"), std::ios::trunc) << "{\"problem\": \"x\", \"level\": \"one\"}";
  CHECK_THROWS_WITH_AS(store.results(), doctest::Contains("mistyped"), store_error);
}

TEST_CASE("the manifest refuses a resume with other settings") {
  temp_dir t;
  result_store store(t.path / "run");
  store.ensure_manifest({{"hyperparameters", {{"breadth", 8}}}, {"gpu", "H100"}});
  store.ensure_manifest({{"hyperparameters", {{"breadth", 8}}}, {"gpu", "H100"}});  // same: fine
  CHECK_THROWS_WITH_AS(store.ensure_manifest({{"hyperparameters", {{"breadth", 4}}}}), doctest::Contains("other settings"),
                       store_error);
  CHECK(store.manifest()->at("gpu") == "H100");
}

TEST_CASE("merging shard directories keeps the result finished last") {
  temp_dir t;
  result_store a(t.path / "a"), b(t.path / "b");
  a.ensure_manifest({{"hyperparameters", {{"breadth", 1}}}});
  a.put(result(1, "1_x", 2.0, "2026-01-01T00:00:00Z"));
  a.put(result(1, "2_y", 1.0, "2026-01-01T00:00:00Z"));
  b.put(result(1, "1_x", 0.5, "2026-01-02T00:00:00Z"));
  b.put(result(2, "1_z", 1.0, "2026-01-01T00:00:00Z"));
  CHECK(merge_stores({t.path / "a", t.path / "b"}, t.path / "m") == 3);
  result_store m(t.path / "m");
  const auto rs = m.results();
  REQUIRE(rs.size() == 3);
  CHECK(*rs[0].best_ms == 0.5);  // L1_1_x from b, the later one
  CHECK(m.manifest()->at("hyperparameters")["breadth"] == 1);
  CHECK_THROWS_AS(merge_stores({t.path / "nothing"}, t.path / "m2"), store_error);
}

TEST_CASE("problems are found, selected and sharded") {
  temp_dir t;
  for (const char* f : {"1_Square_matmul.py", "2_Conv.py", "10_Softmax.py", "23_LayerNorm.py", "__init__.py"})
    touch(t.path / "KernelBench" / "level1" / f);
  const auto all = find_problems(t.path, 1);
  REQUIRE(all.size() == 4);
  CHECK(all[2].name == "10_Softmax");  // by id, not by text
  CHECK(all[2].id == 10);
  CHECK_THROWS_WITH_AS(find_problems(t.path, 3), doctest::Contains("level3"), problem_set_error);
  CHECK(select_problems(all, "").size() == 4);
  CHECK(select_problems(all, "1-10").size() == 3);
  const auto named = select_problems(all, "softmax, 23");
  REQUIRE(named.size() == 2);
  CHECK(named[0].name == "10_Softmax");
  CHECK_THROWS_WITH_AS(select_problems(all, "99"), doctest::Contains("matches no problem"), problem_set_error);
  CHECK_THROWS_WITH_AS(select_problems(all, "5-2"), doctest::Contains("ends before"), problem_set_error);
  CHECK_THROWS_AS(select_problems(all, "1,,2"), problem_set_error);
  const auto s0 = shard(all, 0, 3), s1 = shard(all, 1, 3);
  CHECK(s0.size() == 2);
  CHECK(s0[1].name == "23_LayerNorm");
  CHECK(s1.size() == 1);
  CHECK_THROWS_AS(shard(all, 3, 3), problem_set_error);
  // A folder of problems directly under KERNELBENCH_DIR/levelN works too.
  touch(t.path / "flat" / "level2" / "1_Fused.py");
  CHECK(find_problems(t.path / "flat", 2).size() == 1);
}
