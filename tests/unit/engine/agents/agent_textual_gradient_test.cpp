// The textual gradient over HTTP, one request for its three parts: an answer with prose before
// the JSON is refused, one whose edits break the schema and name unknown techniques too; the
// corrected edits are applied in one logged, revertible KB update. Predictions that held edit
// nothing, and a run that never produces valid edits leaves the KB untouched.
#include "engine/agents/textual_gradient.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace kblaster::engine::agents;
namespace kb = kblaster::kb;

namespace {

std::vector<kb::attempt> iteration(kb::knowledge_base& k) {
  auto make = [](const std::string& state, const std::string& technique, double predicted, double measured) {
    kb::attempt a;
    a.task = "vadd";
    a.trajectory = "t0";
    a.state_before = state;
    a.state_after = state;
    a.technique = technique;
    a.predicted_speedup = predicted;
    a.measured_speedup = measured;
    a.compile_ok = true;
    a.correct = true;
    a.arch = "sm_90";
    return a;
  };
  std::vector<kb::attempt> batch{make("memory_bandwidth_saturated", "vectorized_memory_access", 1.2, 1.02),
                                 make("memory_bandwidth_saturated", "vectorized_memory_access", 1.2, 0.98),
                                 make("uncoalesced_global_memory", "shared_memory_tiling", 1.5, 2.9)};
  const auto ids = k.record_attempts(batch);
  for (std::size_t i = 0; i < ids.size(); ++i) batch[i].id = ids[i];
  return batch;
}

double prior_of(kb::knowledge_base& k, const std::string& state, const std::string& technique) {
  for (const auto& o : k.optimizations(state))
    if (o.technique == technique) return o.prior_speedup;
  return -1;
}

}  // namespace

TEST_CASE("textual gradient: evaluation, analysis and a corrected update in one request, applied in one logged transaction") {
  llm_test::seeded_kb k;
  const auto attempts = iteration(k.kb);
  REQUIRE(attempts[0].id == 1);
  llm_test::served s("textual_gradient.jsonl");
  const auto updates_before = k.kb.summary().updates;
  const double tiling_before = prior_of(k.kb, "uncoalesced_global_memory", "shared_memory_tiling");
  auto g = run_textual_gradient(*s.client, k.kb, attempts);
  REQUIRE(g.trace.status == agent_status::ok);
  // One request, asked again only while the answer was unusable: prose before the JSON, then
  // edits that break the schema (an op that does not exist; the schema is checked before the
  // names, so the message is about the op).
  CHECK(g.trace.calls == 3);
  REQUIRE(g.trace.problems.size() == 2);
  CHECK(g.trace.problems[0].kind == problem_kind::not_json);
  CHECK(g.trace.problems[1].message.find("$.operations[1]: op must be one of") != std::string::npos);
  REQUIRE(g.evaluation);
  CHECK(g.evaluation->departures.size() == 2);
  CHECK(g.evaluation->departures[0].direction == "overpredicted");
  REQUIRE(g.gaps);
  CHECK(g.gaps->size() == 2);
  REQUIRE(g.update);
  CHECK(g.update->applied.operations == 4);
  // One update record, of the textual gradient, citing the attempts.
  CHECK(k.kb.summary().updates == updates_before + 1);
  const auto rec = k.kb.find_update(g.update->applied.update_id);
  REQUIRE(rec);
  CHECK(rec->cause.kind == "textual_gradient");
  CHECK(rec->cause.attempt_ids == std::vector<std::int64_t>{1, 2, 3});
  CHECK(rec->changes.size() == 4);  // one row changed twice (prediction, confidence), one row, one lesson
  CHECK(prior_of(k.kb, "memory_bandwidth_saturated", "vectorized_memory_access") ==
        doctest::Approx(std::exp(std::log(1.03) * 0.5)));
  CHECK(prior_of(k.kb, "uncoalesced_global_memory", "shared_memory_tiling") == doctest::Approx(2.5));
  CHECK(k.kb.lessons("memory_bandwidth_saturated").back().text.find("DRAM roofline") != std::string::npos);
  // The whole update reverts as one.
  k.kb.revert(rec->id);
  CHECK(prior_of(k.kb, "uncoalesced_global_memory", "shared_memory_tiling") == doctest::Approx(tiling_before));
  const auto roles = s.client->usage().by_role();
  CHECK(roles.at("textual_gradient").calls == 3);
  CHECK(roles.size() == 1);
}

TEST_CASE("textual gradient: the request shows the attempts and what the KB says of every state and technique tried") {
  llm_test::seeded_kb k;
  const auto attempts = iteration(k.kb);
  const auto [system, user] = gradient_prompts(k.kb, attempts);
  CHECK(system.find("\"evaluation\"") != std::string::npos);
  CHECK(system.find("\"add_lesson\"") != std::string::npos);  // the edit schema, whole
  CHECK(system.find("{{") == std::string::npos);
  CHECK(user.find("1 | vadd | memory_bandwidth_saturated -> memory_bandwidth_saturated | vectorized_memory_access | 1.20x | 1.02x") !=
        std::string::npos);
  CHECK(user.find("Lessons (uncoalesced_global_memory / shared_memory_tiling)") != std::string::npos);
  CHECK(user.find("State uncoalesced_global_memory:\n") != std::string::npos);  // its KB entries
  CHECK(user.find("Technique vectorized_memory_access: ") != std::string::npos);
}

TEST_CASE("textual gradient: predictions that held ask for no explanation and edit nothing") {
  llm_test::seeded_kb k;
  const auto attempts = iteration(k.kb);
  llm_test::served s("textual_gradient_held.jsonl");
  const auto before = k.kb.export_json();
  auto g = run_textual_gradient(*s.client, k.kb, attempts);
  CHECK(g.trace.status == agent_status::ok);
  CHECK(g.trace.calls == 1);
  REQUIRE(g.evaluation);
  CHECK(g.evaluation->departures.empty());
  CHECK_FALSE(g.gaps);
  CHECK_FALSE(g.update);
  CHECK(k.kb.export_json() == before);
}

TEST_CASE("textual gradient: invalid edits three times: gives up and the KB is untouched") {
  llm_test::seeded_kb k;
  const auto attempts = iteration(k.kb);
  llm_test::served s("textual_gradient_gives_up.jsonl");
  const auto before = k.kb.export_json();
  const auto history_before = k.kb.history(0).size();
  auto g = run_textual_gradient(*s.client, k.kb, attempts);
  CHECK_FALSE(g.update);
  CHECK(g.trace.status == agent_status::gave_up);
  REQUIRE(g.trace.problems.size() == 3);
  CHECK(g.trace.problems[0].message.find("rejected, nothing was applied") != std::string::npos);
  CHECK(g.trace.problems[1].message.find("no state named 'no_such_state'") != std::string::npos);
  CHECK(g.trace.problems[2].kind == problem_kind::truncated);
  CHECK(k.kb.export_json() == before);
  CHECK(k.kb.history(0).size() == history_before);
}

TEST_CASE("kb edits: checks see earlier operations of the same batch; a failing batch applies nothing") {
  llm_test::seeded_kb k;
  nlohmann::json edits = {
      {"rationale", "new state and its first technique"},
      {"operations",
       {{{"op", "add_discovered_state"}, {"state", "tiny_atomic_scatter"}, {"primary_bottleneck", "latency_bound"},
         {"secondary", {"atomic_contention"}}, {"description", "few threads scatter with atomics"}},
        {{"op", "add_technique"}, {"state", "tiny_atomic_scatter"}, {"technique", "warp_aggregated_atomics"},
         {"category", "synchronization"}, {"description", "combine a warp's atomics with __match_any_sync first"},
         {"predicted_speedup", 1.8}},
        {{"op", "deprecate_technique"}, {"state", "memory_bandwidth_saturated"}, {"technique", "kernel_fusion"},
         {"reason", "test"}}}}};
  CHECK(check_kb_edits(edits, k.kb).empty());
  auto bad = edits;
  bad["operations"].push_back({{"op", "adjust_prediction"}, {"state", "memory_bandwidth_saturated"},
                               {"technique", "kernel_fusion"}, {"predicted_speedup", 1.1}, {"reason", "after drop"}});
  const auto problems = check_kb_edits(bad, k.kb);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("not listed") != std::string::npos);
  const auto before = k.kb.export_json();
  CHECK_THROWS_AS(apply_kb_edits(bad, k.kb, {"textual_gradient", "t", {}}), kb::kb_error);
  CHECK(k.kb.export_json() == before);
  const auto r = apply_kb_edits(edits, k.kb, {"textual_gradient", "t", {}});
  CHECK(r.update_id > 0);
  CHECK(k.kb.find_state("tiny_atomic_scatter")->origin == "discovered");
  CHECK(k.kb.optimizations("tiny_atomic_scatter").at(0).technique == "warp_aggregated_atomics");
  CHECK(prior_of(k.kb, "memory_bandwidth_saturated", "kernel_fusion") < 0);
}
