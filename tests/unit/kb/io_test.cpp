// Seed content, JSON export/import round trip, merging, and rejection of malformed documents.
#include "kb/seed.h"
#include "kb/state_match.h"
#include "kb_test_util.h"

#include <algorithm>
#include <set>

using namespace kblaster::kb;
using kb_test::temp_dir;
using json = nlohmann::json;

namespace {

// A KB with learnt content: attempts on two architectures, a lesson, a transition, a discovery.
void learn_something(knowledge_base& kb) {
  for (int i = 0; i < 5; ++i) kb.record_attempt(kb_test::make_attempt("uncoalesced_global_memory", "memory_coalescing", 1.5 + 0.1 * i));
  auto a = kb_test::make_attempt("uncoalesced_global_memory", "shared_memory_tiling", 1.7, "sm_90");
  a.state_after = "matmul_without_tensor_cores";
  kb.record_attempt(a);
  kb.record_attempt(kb_test::failed_attempt("uncoalesced_global_memory", "vectorized_memory_access"));
  auto d = kb_test::make_attempt("a_new_state_found_by_the_llm", "an_invented_technique", 1.1);
  kb.record_attempt(d);
  kb.add_lesson({0, "uncoalesced_global_memory", "memory_coalescing", "sm_80", "Transpose via shared memory first.",
                 "textual_gradient gpt-4o iteration 2", ""},
                update_cause{"textual_gradient", "lesson", {1, 2}});
}

}  // namespace

TEST_CASE("seed: enough states and techniques, each usable by the classifier and the LLM") {
  const auto doc = json::parse(seed_kb_json());
  CHECK(doc.contains("$source"));
  std::set<std::string> used_techniques, primaries;
  int states = 0;
  const auto& known_p = primary_bottlenecks();
  const auto& known_s = secondary_characteristics();
  for (const auto& [name, s] : doc.items()) {
    if (name[0] == '$') continue;
    ++states;
    CAPTURE(name);
    CHECK(std::find(known_p.begin(), known_p.end(), s["primary_bottleneck"].get<std::string>()) != known_p.end());
    for (const auto& x : s["secondary_characteristics"])
      CHECK(std::find(known_s.begin(), known_s.end(), x.get<std::string>()) != known_s.end());
    CHECK(s["criteria"].size() >= 1);
    CHECK(s["description"].get<std::string>().size() > 40);
    CHECK(s["optimizations"].size() >= 3);
    primaries.insert(s["primary_bottleneck"].get<std::string>());
    for (const auto& o : s["optimizations"]) used_techniques.insert(o["technique"].get<std::string>());
  }
  CHECK(states >= 14);
  CHECK(primaries.size() == known_p.size());  // every primary bottleneck has a state
  CHECK(doc["$techniques"].size() >= 30);
  for (const auto& [name, t] : doc["$techniques"].items()) {
    CAPTURE(name);
    CHECK(t["description"].get<std::string>().size() > 80);
    CHECK(used_techniques.count(name) == 1);
  }
  // Every secondary characteristic appears in some state.
  std::set<std::string> secondaries;
  for (const auto& [name, s] : doc.items())
    if (name[0] != '$')
      for (const auto& x : s["secondary_characteristics"]) secondaries.insert(x.get<std::string>());
  CHECK(secondaries.size() == known_s.size());
}

TEST_CASE("json: export, import into an empty KB, export again is identical") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "a.sqlite");
  learn_something(kb);
  const json first = kb.export_json();
  // The text survives a file round trip too.
  const json reparsed = json::parse(first.dump(2));
  auto other = kb_test::open_empty(dir / "b.sqlite");
  const auto r = other.import_json(reparsed, update_cause{"import", "test", {}});
  CHECK(r.states == static_cast<std::int64_t>(kb.states().size()));
  const json second = other.export_json();
  CHECK(first == second);
  CHECK(first.dump() == second.dump());
  // Sanity: what was learnt is in the export.
  const auto& opt = first["uncoalesced_global_memory"]["optimizations"];
  const auto it = std::find_if(opt.begin(), opt.end(), [](const json& o) { return o["technique"] == "memory_coalescing"; });
  REQUIRE(it != opt.end());
  CHECK((*it)["attempts"] == 5);
  CHECK((*it)["by_arch"]["sm_80"]["attempts"] == 5);
  CHECK(first["uncoalesced_global_memory"]["transitions"].size() == 1);
  CHECK(first["uncoalesced_global_memory"]["lessons"].size() == 1);
  CHECK(first["a_new_state_found_by_the_llm"]["origin"] == "discovered");
}

TEST_CASE("json: importing on another GPU's KB pools the statistics") {
  temp_dir dir;
  auto a = kb_test::open_kb(dir / "a.sqlite");
  auto b = kb_test::open_kb(dir / "b.sqlite");
  for (double s : {1.2, 1.4}) a.record_attempt(kb_test::make_attempt("undersized_grid", "grid_size_tuning", s, "sm_80"));
  for (double s : {2.0, 1.6, 1.8}) b.record_attempt(kb_test::make_attempt("undersized_grid", "grid_size_tuning", s, "sm_90"));
  b.import_json(a.export_json(), update_cause{"import", "from the A100", {}});
  const auto opts = b.optimizations("undersized_grid");
  const auto it = std::find_if(opts.begin(), opts.end(), [](const optimization& o) { return o.technique == "grid_size_tuning"; });
  REQUIRE(it != opts.end());
  CHECK(it->statistics.attempts == 5);
  double mean = 0;
  for (double s : {1.2, 1.4, 2.0, 1.6, 1.8}) mean += std::log(s) / 5;
  CHECK(it->statistics.mean_log_speedup == doctest::Approx(mean));
  for (const auto& o : b.optimizations("undersized_grid", "sm_80"))
    if (o.technique == "grid_size_tuning") CHECK(o.arch == "sm_80");
}

TEST_CASE("json: malformed documents are rejected with the place of the error, and nothing changes") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "a.sqlite");
  const auto before = kb.export_json();
  const std::vector<std::pair<json, std::string>> bad{
      {json::array(), "JSON object"},
      {{{"$format", "something-else/9"}}, "unsupported format"},
      {{{"s", {{"primary_bottleneck", 3}}}}, "'primary_bottleneck' must be a string"},
      {{{"s", {{"secondary_characteristics", "x"}, {"primary_bottleneck", "balanced"}}}}, "must be an array"},
      {{{"s", {{"primary_bottleneck", "balanced"}, {"optimizations", {{{"description", "no name"}}}}}}}, "needs a 'technique'"},
      {{{"s", {{"primary_bottleneck", "balanced"}, {"optimizations", {{{"technique", "t"}, {"attempts", -1}}}}}}}, "non-negative"},
      {{{"s", {{"primary_bottleneck", "balanced"}, {"optimizations", {{{"technique", "t"}, {"attempts", 1}, {"successes", 5}}}}}}}, "inconsistent"},
  };
  for (const auto& [doc, message] : bad) {
    CAPTURE(doc.dump());
    try {
      kb.import_json(doc, update_cause{"import", "bad", {}});
      FAIL("accepted a malformed document");
    } catch (const kb_error& e) {
      CHECK(e.kind() == error_kind::invalid_argument);
      CHECK(std::string(e.what()).find(message) != std::string::npos);
    }
  }
  CHECK(kb.export_json() == before);
}

TEST_CASE("match: signatures map to the closest state") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "a.sqlite");
  auto m = kb.match_state("memory_bound_dram", {"uncoalesced_global_access"});
  REQUIRE(m);
  CHECK(m->state == "uncoalesced_global_memory");
  CHECK(m->exact);
  m = kb.match_state("latency_bound", {"occupancy_limited_by_registers", "register_spills"});
  REQUIRE(m);
  CHECK((m->state == "latency_bound_register_limited" || m->state == "register_spilling"));
  CHECK_FALSE(m->exact);
  // Architecture-scoped states only match their architecture.
  CHECK(kb.match_state("compute_bound", {"tensor_cores_unused"}, "sm_90")->state == "hopper_gemm_without_wgmma");
  CHECK(kb.match_state("compute_bound", {"tensor_cores_unused"}, "sm_80")->state == "matmul_without_tensor_cores");
  CHECK(kb.match_state("compute_bound", {"tensor_cores_unused"})->state == "matmul_without_tensor_cores");
  // A state added by another connection is seen.
  auto other = kb_test::open_kb(dir / "a.sqlite");
  state s;
  s.name = "exotic";
  s.primary_bottleneck = "balanced";
  s.secondary = {"atomic_contention", "warp_divergence"};
  other.put_state(s, update_cause{});
  CHECK(kb.match_state("balanced", {"warp_divergence", "atomic_contention"})->state == "exotic");
  CHECK(kb.match_state("balanced", {})->state == "balanced_near_roofline");
  // A state written with raw SQL on this very connection (as the agents' KB edits do) is seen too.
  kb.db().exec(R"(INSERT INTO states(name, primary_bottleneck, secondary, origin)
                  VALUES ('raw_written', 'balanced', '["launch_bound","register_spills"]', 'discovered'))");
  CHECK(kb.match_state("balanced", {"register_spills", "launch_bound"})->state == "raw_written");
}
