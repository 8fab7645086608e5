// Selection policies: the weighted policy follows its stated distribution (chi-square), Thompson
// sampling is fair between equals and favours the better record, both are deterministic under a
// seed, untried techniques get their chance and failing ones lose it.
#include "kb/selection_policy.h"
#include "kb_test_util.h"

#include <cmath>
#include <map>
#include <set>

using namespace kblaster::kb;
using kb_test::temp_dir;

namespace {

// Chi-square statistic of observed counts against expected probabilities.
double chi_square(const std::map<std::string, int>& observed, const std::map<std::string, double>& p, int n) {
  double x2 = 0;
  for (const auto& [name, prob] : p) {
    const double expected = prob * n;
    const double o = observed.count(name) ? observed.at(name) : 0;
    x2 += (o - expected) * (o - expected) / expected;
  }
  return x2;
}

std::map<std::string, int> draw(knowledge_base& kb, selection_request req, int n) {
  std::map<std::string, int> counts;
  for (int i = 0; i < n; ++i) {
    req.seed = static_cast<std::uint64_t>(i) * 7919u + 1;
    for (const auto& c : kb.select(req)) ++counts[c.opt.technique];
  }
  return counts;
}

// Four techniques with one correct attempt each, so that none is untried.
void four_tried(knowledge_base& kb) {
  kb_test::add_state(kb, "s", {{"a", 2.0}, {"b", 1.5}, {"c", 1.2}, {"d", 1.05}});
  for (const char* t : {"a", "b", "c", "d"}) kb.record_attempt(kb_test::make_attempt("s", t, 1.3));
}

}  // namespace

TEST_CASE("selection: weighted policy matches softmax(log gain / T) over the pool") {
  temp_dir dir;
  auto kb = kb_test::open_empty(dir / "kb.sqlite");
  four_tried(kb);
  selection_request req;
  req.state = "s";
  req.k = 1;
  req.temperature = 0.3;
  // Expected distribution, computed here from the documented formula.
  std::map<std::string, double> p;
  double total = 0;
  for (const auto& o : kb.optimizations("s")) total += p[o.technique] = std::exp(std::log(o.predicted_speedup) / req.temperature);
  for (auto& [name, w] : p) w /= total;
  const int n = 20000;
  const auto counts = draw(kb, req, n);
  const double x2 = chi_square(counts, p, n);
  MESSAGE("chi-square " << x2 << " (df 3, critical 16.27 at p=0.001)");
  CHECK(x2 < 16.27);
  // Not greedy: the best is chosen most often but not always.
  CHECK(counts.at("a") > counts.at("b"));
  CHECK(counts.at("a") < n);

  SUBCASE("pool limits the choice to the top entries") {
    req.pool = 2;
    const auto top2 = draw(kb, req, 2000);
    CHECK(top2.size() == 2);
    CHECK(top2.count("a") == 1);
    CHECK(top2.count("b") == 1);
  }
  SUBCASE("zero temperature is greedy") {
    req.temperature = 0;
    CHECK(draw(kb, req, 200) == std::map<std::string, int>{{"a", 200}});
  }
}

TEST_CASE("selection: thompson is uniform between identical records and favours the better one") {
  temp_dir dir;
  auto kb = kb_test::open_empty(dir / "kb.sqlite");
  kb_test::add_state(kb, "s", {{"x", 1.3}, {"y", 1.3}, {"z", 1.3}});
  for (const char* t : {"x", "y", "z"})
    for (double s : {1.1, 1.4, 1.25}) kb.record_attempt(kb_test::make_attempt("s", t, s));
  selection_request req;
  req.state = "s";
  req.policy = selection_policy::thompson;
  const int n = 9000;
  const auto counts = draw(kb, req, n);
  const double x2 = chi_square(counts, {{"x", 1.0 / 3}, {"y", 1.0 / 3}, {"z", 1.0 / 3}}, n);
  MESSAGE("chi-square " << x2 << " (df 2, critical 13.82 at p=0.001)");
  CHECK(x2 < 13.82);

  // Give x a clearly better record: it should win almost always, but not always.
  for (int i = 0; i < 20; ++i) kb.record_attempt(kb_test::make_attempt("s", "x", 2.0));
  for (int i = 0; i < 20; ++i) kb.record_attempt(kb_test::make_attempt("s", "y", 1.05));
  const auto after = draw(kb, req, 2000);
  CHECK(after.at("x") > 1900);
  CHECK(after.count("x") == 1);
  // k = 2 returns two distinct techniques.
  req.k = 2;
  for (int i = 0; i < 50; ++i) {
    req.seed = static_cast<std::uint64_t>(i);
    const auto picks = kb.select(req);
    REQUIRE(picks.size() == 2);
    CHECK(picks[0].opt.technique != picks[1].opt.technique);
  }
}

TEST_CASE("selection: deterministic under a seed, varied across seeds") {
  temp_dir dir;
  for (auto policy : {selection_policy::weighted, selection_policy::thompson}) {
    CAPTURE(to_string(policy));
    const auto path = dir / (std::string(to_string(policy)) + ".sqlite");
    { auto kb = kb_test::open_kb(path); kb.record_attempt(kb_test::make_attempt("uncoalesced_global_memory", "memory_coalescing", 1.9)); }
    auto kb1 = kb_test::open_kb(path);
    auto kb2 = kb_test::open_kb(path);  // another connection sees the same answers
    selection_request req;
    req.state = "uncoalesced_global_memory";
    req.policy = policy;
    req.k = 2;
    std::set<std::vector<std::string>> distinct;
    for (std::uint64_t seed = 0; seed < 60; ++seed) {
      req.seed = seed;
      std::vector<std::string> a, b;
      for (const auto& c : kb1.select(req)) a.push_back(c.opt.technique);
      for (const auto& c : kb2.select(req)) b.push_back(c.opt.technique);
      CHECK(a == b);
      distinct.insert(a);
    }
    CHECK(distinct.size() > 2);
  }
}

TEST_CASE("selection: untried techniques get a guaranteed chance, failing ones are retired") {
  temp_dir dir;
  auto kb = kb_test::open_empty(dir / "kb.sqlite");
  kb_test::add_state(kb, "s", {{"good1", 2.0}, {"good2", 1.9}, {"good3", 1.8}, {"newbie", 0.95}, {"broken", 3.0}});
  for (const char* t : {"good1", "good2", "good3"}) kb.record_attempt(kb_test::make_attempt("s", t, 2.0));
  for (int i = 0; i < 3; ++i) kb.record_attempt(kb_test::failed_attempt("s", "broken"));
  selection_request req;
  req.state = "s";

  // With k >= 2 one slot is reserved for an untried technique, however poor its prior.
  req.k = 2;
  for (auto policy : {selection_policy::weighted, selection_policy::thompson}) {
    req.policy = policy;
    const auto counts = draw(kb, req, 300);
    CHECK(counts.at("newbie") == 300);
    CHECK(counts.count("broken") == 0);
  }
  // With k == 1 the untried technique is picked with about explore_probability.
  req.k = 1;
  req.policy = selection_policy::weighted;
  const auto counts = draw(kb, req, 4000);
  const double share = counts.count("newbie") ? counts.at("newbie") / 4000.0 : 0.0;
  CHECK(share > 0.2);
  CHECK(share < 0.4);
  CHECK(counts.count("broken") == 0);
  // Once tried and failing it loses the reserved slot too.
  for (int i = 0; i < 3; ++i) kb.record_attempt(kb_test::failed_attempt("s", "newbie"));
  req.k = 2;
  CHECK(draw(kb, req, 200).count("newbie") == 0);
  // When everything keeps failing, selection still answers and says so.
  kb_test::add_state(kb, "hopeless", {{"broken", 1.0}});
  for (int i = 0; i < 3; ++i) kb.record_attempt(kb_test::failed_attempt("hopeless", "broken"));
  req.state = "hopeless";
  const auto picks = kb.select(req);
  REQUIRE(picks.size() == 1);
  CHECK(picks[0].reason == "fallback");
}

TEST_CASE("selection: restricted to an architecture, falling back to all") {
  temp_dir dir;
  auto kb = kb_test::open_empty(dir / "kb.sqlite");
  kb_test::add_state(kb, "s", {{"a", 1.2}, {"b", 1.2}});
  for (int i = 0; i < 10; ++i) kb.record_attempt(kb_test::make_attempt("s", "a", 3.0, "sm_90"));
  for (int i = 0; i < 10; ++i) kb.record_attempt(kb_test::make_attempt("s", "a", 0.8, "sm_80"));
  kb.record_attempt(kb_test::make_attempt("s", "b", 1.3, "sm_80"));
  auto on = [&](const std::string& arch, const std::string& t) {
    for (const auto& o : kb.optimizations("s", arch))
      if (o.technique == t) return o;
    FAIL("missing " << t);
    return optimization{};
  };
  CHECK(on("sm_90", "a").arch == "sm_90");
  CHECK(on("sm_90", "a").predicted_speedup > 2.0);
  CHECK(on("sm_80", "a").predicted_speedup < 1.0);
  CHECK(on("sm_90", "b").arch == "all");  // b was never tried on sm_90: all-architecture record
  CHECK(on("", "a").statistics.attempts == 20);
  selection_request req;
  req.state = "s";
  req.temperature = 0;
  req.arch = "sm_90";
  CHECK(kb.select(req).at(0).opt.technique == "a");
  req.arch = "sm_80";
  CHECK(kb.select(req).at(0).opt.technique == "b");
}

TEST_CASE("selection: bad requests") {
  temp_dir dir;
  auto kb = kb_test::open_kb(dir / "kb.sqlite");
  selection_request req;
  req.state = "no_such_state";
  CHECK_THROWS_AS(kb.select(req), kb_error);
  req.state = "undersized_grid";
  req.k = 0;
  CHECK(kb.select(req).empty());
  req.k = 100;
  CHECK(kb.select(req).size() == kb.optimizations("undersized_grid").size());
  CHECK_FALSE(parse_policy("greedy"));
}
