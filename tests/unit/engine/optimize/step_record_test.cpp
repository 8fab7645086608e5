// The loop's step record: the JSON it writes to steps.jsonl reads back to the same record, the
// on-disk field names stay those of earlier checkpoints, and a journal line that is whole JSON
// but no step record stops a resume with the line and the field named.
#include "engine/optimize/run_journal.h"
#include "engine/optimize/step_record.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

#include <fstream>

namespace {
using namespace kblaster::engine::optimize;
using json = nlohmann::json;

step_record model_step() {
  step_record r;
  r.iteration = 1;
  r.trajectory = 2;
  r.step = 3;
  r.start = "aaaa";
  r.start_ms = 0.5;
  r.state_before = "memory_bound_dram";
  r.state_score = 0.8;
  r.tier = step_tier::llm;
  r.technique = "vectorized_loads";
  r.reason = "top prediction";
  r.predicted = 1.3;
  r.confidence = 0.4;
  r.repairs = 1;
  r.failures = std::vector<std::string>{"mismatch at index 3"};
  r.agent_status = "ok";
  r.add_tokens("lowering", 120);
  r.add_tokens("lowering", 30);
  r.add_tokens("verifier", 0);  // nothing spent: no entry
  candidate_record c;
  c.technique = "vectorized_loads";
  c.label = "llm";
  c.hash = "bbbb";
  c.eval.code_hash = "bbbb";
  c.eval.compile_ok = true;
  c.eval.correct = true;
  c.eval.verdict = "pass";
  c.eval.runtime_ms = 0.25;
  c.eval.gpu_seconds = 2.5;
  c.state_after = "balanced_near_roofline";
  c.measured_speedup = 2.0;
  c.soft_verifier = soft_verdict{true, "same computation"};
  r.candidates.push_back(c);
  r.result = "bbbb";
  r.gpu_seconds = r.candidates_gpu_seconds();
  return r;
}

TEST_CASE("step record: JSON round trip keeps every field and the checkpoint's field names") {
  const auto r = model_step();
  const json j = to_json(r);
  CHECK(j.at("tier") == "llm");
  CHECK(j.at("predicted") == 1.3);
  CHECK(j.at("tokens") == json{{"lowering", 150}});
  CHECK(j.at("candidates").at(0).at("evaluation").at("runtime_ms") == 0.25);
  CHECK(j.at("candidates").at(0).at("soft_verifier").at("summary") == "same computation");
  const auto back = step_record_from_json(json::parse(j.dump()));
  CHECK(to_json(back) == j);
  CHECK(back.technique == "vectorized_loads");
  REQUIRE(back.failures);
  CHECK(back.failures->size() == 1);
  CHECK(back.candidates.at(0).measured_speedup == 2.0);
  CHECK(back.gpu_seconds == doctest::Approx(2.5));
}

TEST_CASE("step record: an ended step has no technique, tier or figures of a choice") {
  step_record r;
  r.start = r.result = "cccc";
  r.end = true;
  r.note = "no mechanical transformation applies any more";
  const json j = to_json(r);
  for (const char* absent : {"technique", "tier", "predicted", "repairs", "gpu_seconds"}) CHECK_FALSE(j.contains(absent));
  const auto back = step_record_from_json(j);
  CHECK(back.end);
  CHECK_FALSE(back.technique);
  CHECK(back.note == r.note);
}

TEST_CASE("step record: a malformed record names what is wrong") {
  auto j = to_json(model_step());
  j.erase("start");
  CHECK_THROWS_WITH_AS(step_record_from_json(j), doctest::Contains("start"), std::invalid_argument);
  j = to_json(model_step());
  j["candidates"][0]["evaluation"]["runtime_ms"] = "fast";
  CHECK_THROWS_WITH_AS(step_record_from_json(j), doctest::Contains("evaluation"), std::invalid_argument);
  j = to_json(model_step());
  j["tier"] = "oracle";
  CHECK_THROWS_WITH_AS(step_record_from_json(j), doctest::Contains("oracle"), std::invalid_argument);
}

TEST_CASE("step record: a count that is no integer, or too large for one, is refused, not cast") {
  // fuzz_step_record's finding (tests/fuzz/regressions/fuzz_step_record/step-float-as-int): a
  // trajectory of 4.4e55 was converted to int by a cast, undefined behaviour.
  auto j = to_json(model_step());
  j["trajectory"] = 4.4e55;
  CHECK_THROWS_WITH_AS(step_record_from_json(j), doctest::Contains("trajectory"), std::invalid_argument);
  j = to_json(model_step());
  j["step"] = 1.5;
  CHECK_THROWS_WITH_AS(step_record_from_json(j), doctest::Contains("step"), std::invalid_argument);
  j = to_json(model_step());
  j["iteration"] = std::int64_t{1} << 40;
  CHECK_THROWS_WITH_AS(step_record_from_json(j), doctest::Contains("iteration"), std::invalid_argument);
  j = to_json(model_step());
  j["tokens"] = {{"lowering", 1e300}};
  CHECK_THROWS_WITH_AS(step_record_from_json(j), doctest::Contains("tokens"), std::invalid_argument);
  j = to_json(model_step());
  j["repairs"] = -1e20;
  CHECK_THROWS_WITH_AS(step_record_from_json(j), doctest::Contains("repairs"), std::invalid_argument);
  j = to_json(model_step());
  j["trajectory"] = 7;
  CHECK(step_record_from_json(j).trajectory == 7);
}

TEST_CASE("run journal: typed steps survive a reopen; a torn last line is dropped; a foreign line is refused") {
  llm_test::temp_dir dir;
  const json identity{{"task", "t"}, {"seed", 1}};
  {
    run_journal j(dir.path(), identity);
    j.append_step(model_step());
  }
  {
    std::ofstream torn(dir.path() / "steps.jsonl", std::ios::app);
    torn << R"({"iteration": 0, "trajec)";  // killed mid-write
  }
  {
    run_journal j(dir.path(), identity);
    CHECK(j.resumed());
    REQUIRE(j.steps().size() == 1);
    const auto found = j.find_step(1, 2, 3);
    REQUIRE(found);
    CHECK(to_json(*found) == to_json(model_step()));
    CHECK_FALSE(j.find_step(0, 0, 0));
  }
  {
    std::ofstream foreign(dir.path() / "steps.jsonl", std::ios::app);
    foreign << R"({"iteration": 0, "trajectory": 0, "step": 1})" << "\n";  // no "start"
  }
  CHECK_THROWS_WITH_AS(run_journal(dir.path(), identity), doctest::Contains("line 2"), std::invalid_argument);
}

}  // namespace
