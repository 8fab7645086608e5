// The replay buffer and the numeric update it drives.
#include "kb/stats_math.h"
#include "kb_test_util.h"

#include <cmath>

using namespace kblaster::kb;
using kb_test::temp_dir;

TEST_CASE("attempts: stored in full and counted in statistics") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "kb.sqlite");
  auto a = kb_test::make_attempt("uncoalesced_global_memory", "memory_coalescing", 2.0);
  a.iteration = 3;
  a.step = 2;
  a.state_after = "memory_bandwidth_saturated";
  a.predicted_speedup = 1.8;
  a.elapsed_cycles = 123456;
  a.runtime_ms = 0.25;
  a.tokens_by_role = {{"lowering", 5000}, {"state_extractor", 800}};
  a.code_hash = "sha256:abcd";
  const auto id = kb.record_attempt(a);
  kb.record_attempt(kb_test::failed_attempt("uncoalesced_global_memory", "memory_coalescing"));
  auto wrong = kb_test::make_attempt("uncoalesced_global_memory", "memory_coalescing", 3.0);
  wrong.correct = false;
  kb.record_attempt(wrong);
  kb.record_attempt(kb_test::make_attempt("uncoalesced_global_memory", "memory_coalescing", 0.5));

  const auto all = kb.attempts();
  REQUIRE(all.size() == 4);
  const auto& got = all.back();
  CHECK(got.id == id);
  CHECK(got.iteration == 3);
  CHECK(got.state_after == "memory_bandwidth_saturated");
  CHECK(got.elapsed_cycles == 123456);
  CHECK(got.tokens_by_role.at("state_extractor") == 800);
  CHECK(got.gpu_name == "NVIDIA A100");
  CHECK_FALSE(got.started_at.empty());

  const auto o = kb.optimizations("uncoalesced_global_memory", "sm_80");
  const auto& s = std::find_if(o.begin(), o.end(), [](const optimization& x) { return x.technique == "memory_coalescing"; })->statistics;
  CHECK(s.attempts == 4);
  CHECK(s.compile_failures == 1);
  CHECK(s.incorrect == 1);
  CHECK(s.successes == 1);
  CHECK(s.n_measured == 2);
  CHECK(s.mean_log_speedup == doctest::Approx(0.0));                      // log 2 and log 0.5
  CHECK(s.variance_log_speedup() == doctest::Approx(2 * std::log(2.0) * std::log(2.0)));
  const auto t = kb.transitions_from("uncoalesced_global_memory");
  REQUIRE(t.size() == 1);
  CHECK(t[0].to_state == "memory_bandwidth_saturated");
  CHECK(t[0].mean_log_speedup == doctest::Approx(std::log(2.0)));
}

TEST_CASE("attempts: prediction moves from the prior towards the evidence") {
  stats s;
  const double prior = 1.5;
  const double p0 = predicted_speedup(s, prior);
  CHECK(p0 == doctest::Approx(0.8 * 1.5 + 0.2));
  for (int i = 0; i < 50; ++i) add_outcome(s, true, true, 1.1, "t");
  CHECK(predicted_speedup(s, prior) < 1.15);
  CHECK(predicted_speedup(s, prior) > 1.05);
  CHECK(confidence(s) > 0.9);
  stats f;
  for (int i = 0; i < 10; ++i) add_outcome(f, false, false, std::nullopt, "t");
  CHECK(predicted_speedup(f, prior) < 1.1);
}

TEST_CASE("attempts: unknown states and techniques are added as discovered") {
  temp_dir dir;
  auto kb = kb_test::open_empty(dir / "kb.sqlite");
  kb.record_attempt(kb_test::make_attempt("brand_new_state", "brand_new_trick", 1.4));
  REQUIRE(kb.find_state("brand_new_state"));
  CHECK(kb.find_state("brand_new_state")->origin == "discovered");
  CHECK(kb.optimizations("brand_new_state").size() == 1);
}

TEST_CASE("attempts: invalid attempts are refused and store nothing") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "kb.sqlite");
  auto a = kb_test::make_attempt("undersized_grid", "grid_size_tuning", 1.5);
  auto no_task = a;
  no_task.task.clear();
  auto negative = a;
  negative.measured_speedup = -1;
  auto nan = a;
  nan.measured_speedup = std::nan("");
  auto no_speedup = a;
  no_speedup.measured_speedup.reset();
  auto dollar = a;
  dollar.state_before = "$weird";
  for (const auto& bad : {no_task, negative, nan, no_speedup, dollar}) {
    try {
      kb.record_attempt(bad);
      FAIL("accepted a bad attempt");
    } catch (const kb_error& e) {
      CHECK(e.kind() == error_kind::invalid_argument);
    }
  }
  CHECK(kb.attempts().empty());
  CHECK(kb.history().size() == 1);  // only the seed
}

TEST_CASE("attempts: a batch is stored all or nothing") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "kb.sqlite");
  std::vector<attempt> batch{kb_test::make_attempt("undersized_grid", "grid_size_tuning", 1.5),
                             kb_test::make_attempt("undersized_grid", "split_k_parallelization", 2.5)};
  auto bad = batch;
  bad.push_back(kb_test::make_attempt("undersized_grid", "grid_size_tuning", -3));
  CHECK_THROWS_AS(kb.record_attempts(bad), kb_error);
  CHECK(kb.attempts().empty());
  const auto ids = kb.record_attempts(batch);
  REQUIRE(ids.size() == 2);
  CHECK(ids[1] == ids[0] + 1);
  CHECK(kb.attempts().size() == 2);
  CHECK(kb.history(2)[0].cause.attempt_ids == std::vector<std::int64_t>{ids[1]});
}

TEST_CASE("attempts: a run's or an iteration's attempts by trajectory prefix, oldest first") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "kb.sqlite");
  auto add = [&](const std::string& task, const std::string& trajectory) {
    auto a = kb_test::make_attempt("uncoalesced_global_memory", "memory_coalescing", 1.5);
    a.task = task;
    a.trajectory = trajectory;
    return kb.record_attempt(a);
  };
  const auto first = add("vector_add", "run-1/i0/t0");
  add("vector_add", "run-1/i1/t0");
  const auto third = add("vector_add", "run-1/i0/t1");
  add("vector_add", "run-10/i0/t0");  // another run whose name merely starts the same
  add("row_softmax", "run-1/i0/t0");  // another task
  const auto it0 = kb.attempts_of("vector_add", "run-1/i0/");
  REQUIRE(it0.size() == 2);
  CHECK(it0[0].id == first);
  CHECK(it0[1].id == third);
  CHECK(it0[1].trajectory == "run-1/i0/t1");
  CHECK(kb.attempts_of("vector_add", "run-1/").size() == 3);
  CHECK(kb.attempts_of("vector_add", "run-2/").empty());
  CHECK(kb.attempts_of("layer_norm", "run-1/").empty());
}
