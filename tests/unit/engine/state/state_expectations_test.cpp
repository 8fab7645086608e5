// Every real report in tests/fixtures/ncu-h100/ and tests/fixtures/ncu-h100-rewrites/ gets the KB
// state and the top-3 techniques a CUDA engineer gives it (each folder's expected_states.json,
// reasoning in EXPECTED_STATES.md and README.md): classified, weighed (kb_evidence), matched by the
// seed KB's matcher and offered the techniques whose needs hold. Also the recorded row_softmax
// profile of issue 19.
#include "engine/evaluate/evaluator.h"
#include "engine/profile/ncu_csv_parser.h"
#include "engine/state/state_classifier.h"
#include "engine/state/state_evidence.h"
#include "kb/knowledge_base.h"
#include "support/files.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

using namespace kblaster;
namespace fs = std::filesystem;

namespace {

fs::path fixtures() { return fs::path(KBLASTER_FIXTURES_DIR) / "ncu-h100"; }
fs::path rewrites() { return fs::path(KBLASTER_FIXTURES_DIR) / "ncu-h100-rewrites"; }

class scratch_kb {
 public:
  scratch_kb() {
    std::string tmpl = (fs::temp_directory_path() / "kblaster-expect-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()));
    dir_ = tmpl;
    kb_ = std::make_unique<kb::knowledge_base>(kb::knowledge_base::open(dir_ / "kb.sqlite"));
  }
  ~scratch_kb() {
    kb_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  kb::knowledge_base& operator*() { return *kb_; }

 private:
  fs::path dir_;
  std::unique_ptr<kb::knowledge_base> kb_;
};

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The evidence of a fixture's first instance, classified from its details and raw pages.
kb::kernel_evidence fixture_evidence(const fs::path& dir, const std::string& name) {
  auto report = engine::parse_ncu_details(support::read_file((dir / (name + ".details.csv")).string()));
  if (fs::exists(dir / (name + ".raw.csv")))
    engine::merge_ncu_raw(report, support::read_file((dir / (name + ".raw.csv")).string()));
  const auto sigs = engine::classify_report(report);
  REQUIRE_FALSE(sigs.empty());
  return engine::kb_evidence(sigs.front());
}

// The evidence of the first profiled evaluation in a recording (the loop's own snapshot).
kb::kernel_evidence recorded_evidence(const fs::path& recording) {
  std::istringstream in(support::read_file(recording.string()));
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    if (!j.contains("evaluation") || !j["evaluation"].contains("profile")) continue;
    const auto e = engine::optimize::evaluation_from_json(j["evaluation"]);
    REQUIRE(e.profile);
    auto ev = e.profile->evidence;
    if (ev.primary.empty()) ev.primary = e.profile->primary;
    return ev;
  }
  FAIL("no profiled evaluation in " << recording);
  return {};
}

std::string describe(const kb::kernel_evidence& e) {
  std::ostringstream o;
  o << e.primary << " (" << e.primary_weight << ")";
  for (const auto& c : e.secondary) o << " + " << c.name << " (" << c.weight << ")";
  for (const auto& f : e.facts) o << " [" << f << "]";
  return o.str();
}

// Checks every expectation of `dir`/expected_states.json; returns how many it checked.
int check_expected_states(const fs::path& dir) {
  const auto expected = nlohmann::json::parse(support::read_file((dir / "expected_states.json").string()));
  const std::string arch = expected.at("$arch").get<std::string>();
  scratch_kb kb;
  int checked = 0;
  for (const auto& [key, want] : expected.items()) {
    if (key.front() == '$') continue;
    const auto at = key.find('@');
    const auto evidence = at == std::string::npos ? fixture_evidence(dir, key) : recorded_evidence(dir / key.substr(at + 1));
    CAPTURE(key);
    CAPTURE(describe(evidence));
    const auto m = (*kb).match_state(evidence, arch);
    REQUIRE(m);
    CHECK(m->state == want.at("state").get<std::string>());
    CHECK_FALSE(m->discovered);
    std::vector<std::string> top;
    for (const auto& o : (*kb).optimizations_for(*m, evidence, arch))
      if (top.size() < 3) top.push_back(o.technique);
    CHECK(joined(top) == joined(want.at("top3").get<std::vector<std::string>>()));
    // The loop's own choice in a fresh KB, greedy: the same three, in the same order.
    kb::selection_request r;
    r.state = m->state;
    r.arch = arch;
    r.k = 3;
    r.temperature = 0;
    r.explore_probability = 0;
    r.evidence = evidence;
    std::vector<std::string> picked;
    for (const auto& c : (*kb).select(r)) picked.push_back(c.opt.technique);
    CHECK(joined(picked) == joined(top));
    ++checked;
  }
  return checked;
}

}  // namespace

TEST_CASE("every recorded H100 report gets the state and the top-3 techniques an engineer gives it") {
  CHECK(check_expected_states(fixtures()) == 10);
}

TEST_CASE("every rewritten kernel recorded on the H100 gets its state and top-3 techniques (issue 36)") {
  CHECK(check_expected_states(rewrites()) == 9);
}

TEST_CASE("row_softmax, as recorded on the GPU, is never matched to launch overhead") {
  const auto e = recorded_evidence(fixtures() / "../../optimize/recordings/mechanical-row_softmax.jsonl");
  CHECK(e.primary == "small_grid");
  CHECK(e.primary_weight == doctest::Approx(0.9394));  // ncu's LaunchConfiguration estimate
  CHECK(e.weight_of("uncoalesced_global_access") == doctest::Approx(0.6785));
  CHECK_FALSE(e.shows("launch_bound"));
  CHECK_FALSE(e.facts.count(kb::fact::short_launch));  // 402 us
  CHECK_FALSE(kb::fits("launch_overhead_reduction", e));
  CHECK_FALSE(kb::fits("tensor_cores_wmma", e));
  // 8 blocks on 132 SMs: a grid-stride loop would launch the same 8 blocks.
  CHECK_FALSE(e.facts.count(kb::fact::many_blocks));
  CHECK_FALSE(kb::fits("grid_stride_loop", e));
}

TEST_CASE("a grid-stride loop is offered only for a grid it would shrink (at least 8 blocks per SM)") {
  engine::performance_signature s;
  s.primary = "small_grid";
  s.primary_weight = 0.9;
  s.launch.grid = {8, 1, 1};  // row_softmax: one thread per row, 1024 rows in blocks of 128
  s.launch.sm_count = 132;
  CHECK_FALSE(kb::fits("grid_stride_loop", engine::kb_evidence(s)));
  s.launch.grid = {1055, 1, 1};  // just under 8 per SM
  CHECK_FALSE(kb::fits("grid_stride_loop", engine::kb_evidence(s)));
  s.launch.grid = {16384, 1, 1};  // vector_add: 2^22 elements in blocks of 256
  CHECK(kb::fits("grid_stride_loop", engine::kb_evidence(s)));
  s.launch.sm_count.reset();
  s.device.sm_count = 132;  // the device's attribute serves where the launch did not say
  CHECK(kb::fits("grid_stride_loop", engine::kb_evidence(s)));
  s.device.sm_count.reset();  // no SM count: the fact cannot be known, so it does not hold
  CHECK_FALSE(kb::fits("grid_stride_loop", engine::kb_evidence(s)));
}

TEST_CASE("a static signature gives unmeasured evidence: resources only, no facts") {
  engine::kernel_resources r;
  r.demangled_name = "gemm_kernel(float*)";
  r.registers = 255;
  r.spill_store_bytes = 64;
  r.arch = "sm_90";
  const auto limits = engine::limits_for("sm_90");
  REQUIRE(limits);
  const auto s = engine::classify_static(r, *limits, 256);
  const auto e = engine::kb_evidence(s);
  CHECK_FALSE(e.measured);
  CHECK(e.primary_weight == 0);
  CHECK(e.shows("register_spills"));
  CHECK(e.facts.empty());  // not even the name's matrix product: a static claim needs a static fact
  scratch_kb kb;
  CHECK_FALSE((*kb).match_state(e, "sm_90"));
  const auto strategies = (*kb).static_strategies(e, "sm_90");
  REQUIRE_FALSE(strategies.empty());
  for (const auto& o : strategies) CHECK((o.technique == "register_pressure_reduction" || o.technique == "launch_bounds"));
}

TEST_CASE("one 9 us launch is not shorter than its launch overhead: nothing to merge, no launch-overhead advice") {
  // The captured row_sum of tests/capture/programs/row_reduce.cu took 9 us in its program, launched
  // once. A launch costs about 3-5 us from the host call to the kernel starting: at 9 us the work
  // dominates, and a single launch has nothing to merge with.
  engine::performance_signature s;
  s.primary = "latency_bound";
  s.primary_weight = 0.5;
  s.sol.duration_us = 9.2;
  s.launches_in_run = 1;
  const auto e = engine::kb_evidence(s);
  CHECK_FALSE(e.facts.count(kb::fact::short_launch));
  CHECK_FALSE(kb::fits("launch_overhead_reduction", e));
  // A 2.9 us launch (the tiny fixture) is that short, and several launches always qualify.
  s.sol.duration_us = 2.9;
  CHECK(kb::fits("launch_overhead_reduction", engine::kb_evidence(s)));
  s.sol.duration_us = 9.2;
  s.launches_in_run = 100;
  CHECK(kb::fits("launch_overhead_reduction", engine::kb_evidence(s)));
}
