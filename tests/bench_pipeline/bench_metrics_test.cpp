// Bench metrics, Table-3 rendering and the HTML report against figures computed by hand (see the
// comments beside each expectation).
#include "engine/bench/metrics.h"
#include "engine/bench/report_html.h"
#include "engine/bench/report_markdown.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace kblaster::engine::bench;

namespace {

problem_result make(int level, const std::string& name, bool valid, std::optional<double> eager,
                    std::optional<double> compile, std::optional<double> reference, std::optional<double> best,
                    std::int64_t tokens = 0, std::string status = "ok") {
  problem_result r;
  r.level = level;
  r.problem = name;
  r.valid = valid;
  r.eager_ms = eager;
  r.compile_ms = compile;
  r.reference_ms = reference;
  r.best_ms = best;
  r.tokens = tokens;
  r.status = std::move(status);
  return r;
}

// Hand-computed speedups (eager / compile / best of both):
//   L1 a: ref 2 / best 1 = 2; compile on the harness clock 2 x (0.5 / 1) / 1 = 1; best 1
//   L1 b: no ref: 3 / 1.5 = 2; 6 / 1.5 = 4; best 2
//   L1 c: invalid; L1 d: import failed
//   L2 e: 1 / 2 = 0.5; no compile time; best 0.5
//   L2 f: 8 / 1 = 8; 4 / 1 = 4; best 4
std::vector<problem_result> sample() {
  return {make(1, "1_a", true, 1.0, 0.5, 2.0, 1.0, 1000), make(1, "2_b", true, 3.0, 6.0, std::nullopt, 1.5, 3000),
          make(1, "3_c", false, 1.0, 1.0, std::nullopt, std::nullopt),
          make(1, "4_d", false, std::nullopt, std::nullopt, std::nullopt, std::nullopt, 0, "import_failed"),
          make(2, "1_e", true, 1.0, std::nullopt, std::nullopt, 2.0, 2000), make(2, "2_f", true, 8.0, 4.0, std::nullopt, 1.0)};
}

}  // namespace

TEST_CASE("speedups of one result") {
  const auto s = speedups_of(sample()[0]);
  CHECK(*s.eager == doctest::Approx(2.0));
  CHECK(*s.compile == doctest::Approx(1.0));
  CHECK(*s.best_baseline == doctest::Approx(1.0));
  const auto e = speedups_of(sample()[4]);
  CHECK(!e.compile);
  CHECK(*e.best_baseline == doctest::Approx(0.5));
  CHECK(!speedups_of(sample()[2]).eager);  // invalid: no speedup at all
}

TEST_CASE("summary statistics") {
  const auto s = summarize({1, 2, 0.5, 4});
  CHECK(s.n == 4);
  CHECK(s.mean == doctest::Approx(1.875));
  CHECK(s.geomean == doctest::Approx(std::sqrt(2.0)));  // (1*2*0.5*4)^(1/4) = 4^(1/4)
  CHECK(s.median == doctest::Approx(1.5));
  CHECK(s.min == doctest::Approx(0.5));
  CHECK(s.max == doctest::Approx(4));
  CHECK(s.share_above_1 == doctest::Approx(0.5));
  CHECK(summarize({3, 1, 2}).median == doctest::Approx(2));
  CHECK(summarize({}).n == 0);
  CHECK(summarize({-1, 0, 2}).n == 1);  // non-positive speedups are not speedups
}

TEST_CASE("fast_p thresholds and curve") {
  const auto& t = fast_p_thresholds();
  REQUIRE(t.size() == 41);
  CHECK(t[10] == 1.0);
  CHECK(t[40] == 4.0);
  const auto c = fast_p_curve({1.0, 2.0, std::nullopt, 1.05}, 5);
  CHECK(c[0] == doctest::Approx(3.0 / 5));   // every present speedup is > 0
  CHECK(c[10] == doctest::Approx(2.0 / 5));  // 1.0 is not > 1
  CHECK(c[20] == doctest::Approx(0.0));      // 2.0 is not > 2
  CHECK(c[19] == doctest::Approx(1.0 / 5));
}

TEST_CASE("per-level and overall metrics") {
  const auto m = compute_metrics("r", sample());
  REQUIRE(m.levels.size() == 2);
  const auto& l1 = m.levels[0];
  CHECK(l1.problems == 4);
  CHECK(l1.valid == 2);
  CHECK(l1.valid_rate == doctest::Approx(0.5));
  CHECK(l1.eager.geomean == doctest::Approx(2.0));
  CHECK(l1.compile.mean == doctest::Approx(2.5));
  CHECK(l1.compile.geomean == doctest::Approx(2.0));
  CHECK(l1.compile.share_above_1 == doctest::Approx(0.5));
  CHECK(l1.best.geomean == doctest::Approx(std::sqrt(2.0)));
  CHECK(l1.fast_p_best[0] == doctest::Approx(0.5));
  CHECK(l1.fast_p_best[10] == doctest::Approx(0.25));
  CHECK(l1.fast_p_best[20] == doctest::Approx(0.0));
  CHECK(l1.statuses.at("import_failed") == 1);
  CHECK(l1.tokens == 4000);
  // 4000 tokens over 4 problems = 0.001 M per problem; geomean sqrt(2) / 0.001
  CHECK(*l1.speedup_per_mtoken == doctest::Approx(std::sqrt(2.0) * 1000));
  const auto& l2 = m.levels[1];
  CHECK(l2.best.mean == doctest::Approx(2.25));
  CHECK(l2.compile.n == 1);
  CHECK(l2.fast_p_best[10] == doctest::Approx(0.5));
  const auto& all = m.overall;
  CHECK(all.problems == 6);
  CHECK(all.valid_rate == doctest::Approx(4.0 / 6));
  CHECK(all.eager.geomean == doctest::Approx(2.0));  // (2*2*0.5*8)^(1/4) = 16^(1/4)
  CHECK(all.best.median == doctest::Approx(1.5));
  CHECK(all.fast_p_best[0] == doctest::Approx(4.0 / 6));
  CHECK(all.fast_p_best[10] == doctest::Approx(2.0 / 6));
  CHECK(all.fast_p_best[30] == doctest::Approx(1.0 / 6));
  CHECK(all.fast_p_best[40] == doctest::Approx(0.0));
  CHECK(!compute_metrics("r", {sample()[5]}).overall.speedup_per_mtoken);  // no tokens: undefined
}

TEST_CASE("technique and state counts") {
  auto rs = sample();
  rs[0].techniques = {{"block_size_tuning", true}, {"loop_unrolling", false}};
  rs[1].techniques = {{"block_size_tuning", false}};
  rs[0].states_visited = {"memory_bound", "latency_bound"};
  rs[1].states_visited = {"memory_bound"};
  const auto m = compute_metrics("r", rs);
  CHECK(m.techniques.at("block_size_tuning").success == 1);
  CHECK(m.techniques.at("block_size_tuning").failure == 1);
  CHECK(m.techniques.at("loop_unrolling").failure == 1);
  CHECK(m.states.at("memory_bound") == 2);
}

TEST_CASE("Table 3 in Markdown") {
  report_run run{"mech", nlohmann::json::object(), sample(), compute_metrics("mech", sample())};
  const auto t = table3_markdown({run});
  // level 1: 4 problems, 50 % valid, geomeans 2 / 2 / sqrt(2), fast_1 1 of 4
  CHECK(t.find("| mech | level 1 | 4 | 50.0% | 2.00x | 2.00x | 1.41x | 25.0% |") != std::string::npos);
  // level 2: compile geomean over the one problem that has it (4); best sqrt(0.5*4)
  CHECK(t.find("| mech | level 2 | 2 | 100.0% | 2.00x | 4.00x | 1.41x | 50.0% |") != std::string::npos);
  // all: (1*4*4)^(1/3) = 2.52 over torch.compile
  CHECK(t.find("| mech | all | 6 | 66.7% | 2.00x | 2.52x | 1.41x | 33.3% |") != std::string::npos);
  const auto md = report_markdown({run});
  CHECK(md.find("import_failed 1") != std::string::npos);
  CHECK(md.find("| 1 | 2_b | ok | yes | 3.0000 | 6.0000 | - | - | 1.5000 | 2.00x | 4.00x | 2.00x |") != std::string::npos);
}

TEST_CASE("HTML report is self-contained and carries the data") {
  report_run run{"mech</script>", {{"gpu", "H100"}}, sample(), compute_metrics("mech", sample())};
  CHECK_THROWS_AS(report_html({run}, ""), std::invalid_argument);
  const auto html = report_html({run}, "/* chart.js stand-in */");
  CHECK(html.find("/* chart.js stand-in */") != std::string::npos);
  for (const char* id : {"fastp", "distribution", "techniques", "states", "tokens"})
    CHECK(html.find(std::string("id=\"") + id + "\"") != std::string::npos);
  CHECK(html.find("mech<\\/script>") != std::string::npos);  // cannot end the data element early
  CHECK(html.find("src=") == std::string::npos);             // nothing loaded from elsewhere
  const auto data = report_data({run});
  // valid best speedups 1, 2, 0.5, 4 fall in the bins [0.5,0.8), [0.95,1.05), [2,3) and [3,5)
  const auto h = data["runs"][0]["histogram"];
  CHECK(h[1] == 1);  // 0.5
  CHECK(h[3] == 1);  // 1.0
  CHECK(h[7] == 1);  // 2.0
  CHECK(h[8] == 1);  // 4.0
  CHECK(data["runs"][0]["points"].size() == 4);
}

TEST_CASE("a degenerate problem is marked and left out of the aggregate figures") {
  // sample() plus L2 3_g: valid, 100x over eager and 50x over torch.compile, on a problem whose
  // reference is always 0 over its declared inputs. Every aggregate must equal sample()'s.
  auto rs = sample();
  auto g = make(2, "3_g", true, 100.0, 50.0, std::nullopt, 1.0, 500);
  g.degenerate = "degenerate: output constant over the declared inputs";
  rs.push_back(g);
  const auto back = problem_result_from_json(to_json(g));  // stored and read back
  CHECK(back.degenerate == g.degenerate);
  CHECK(problem_result_from_json(to_json(sample()[0])).degenerate.empty());

  const auto m = compute_metrics("mech", rs);
  const auto clean = compute_metrics("mech", sample());
  const auto& l2 = m.levels[1];
  CHECK(l2.problems == 3);
  CHECK(l2.degenerate == 1);
  CHECK(l2.valid == 2);
  CHECK(l2.valid_rate == doctest::Approx(1.0));
  CHECK(l2.best.n == 2);
  CHECK(l2.best.mean == doctest::Approx(2.25));
  CHECK(l2.eager.max == doctest::Approx(8.0));  // not 100
  CHECK(l2.fast_p_best == clean.levels[1].fast_p_best);
  CHECK(l2.tokens == 2500);  // what it cost still counts
  const auto& all = m.overall;
  CHECK(all.problems == 7);
  CHECK(all.degenerate == 1);
  CHECK(all.valid_rate == doctest::Approx(clean.overall.valid_rate));
  CHECK(all.eager.geomean == doctest::Approx(clean.overall.eager.geomean));
  CHECK(all.best.geomean == doctest::Approx(clean.overall.best.geomean));
  CHECK(all.fast_p_best == clean.overall.fast_p_best);
  CHECK(to_json(all)["degenerate"] == 1);

  const report_run run{"mech", nlohmann::json::object(), rs, m};
  const auto md = report_markdown({run});
  // Table 3: the count says how many were left out; the figures are sample()'s.
  CHECK(md.find("| mech | level 2 | 3 (1 degenerate) | 100.0% | 2.00x | 4.00x | 1.41x | 50.0% |") != std::string::npos);
  CHECK(md.find("| mech | all | 7 (1 degenerate) | 66.7% | 2.00x | 2.52x | 1.41x | 33.3% |") != std::string::npos);
  CHECK(md.find("left out of the valid rate, the speedups and fast_p") != std::string::npos);
  CHECK(md.find("- L2_3_g: degenerate: output constant over the declared inputs") != std::string::npos);
  // Its own row: speedups in parentheses, the reason in the note.
  CHECK(md.find("| 2 | 3_g | ok | yes | 100.0000 | 50.0000 | - | - | 1.0000 | (100.00x) | (50.00x) | (50.00x) | 500 | "
                "degenerate: output constant over the declared inputs (left out of the aggregates) |") != std::string::npos);
  // A run without degenerate problems reads as before.
  CHECK(report_markdown({report_run{"mech", nlohmann::json::object(), sample(), clean}}).find("degenerate") ==
        std::string::npos);
  MESSAGE(table3_markdown({run}));

  // The HTML: listed, and in no chart.
  const auto data = report_data({run});
  CHECK(data["runs"][0]["points"].size() == 4);
  CHECK(data["runs"][0]["histogram"] == report_data({report_run{"mech", {}, sample(), clean}})["runs"][0]["histogram"]);
  REQUIRE(data["runs"][0]["degenerate"].size() == 1);
  CHECK(data["runs"][0]["degenerate"][0]["problem"] == "L2_3_g");
  const auto html = report_html({run}, "/* chart.js stand-in */");
  CHECK(html.find("<li>L2_3_g: degenerate: output constant over the declared inputs</li>") != std::string::npos);
  CHECK(html.find("7 (1 degenerate)") != std::string::npos);
}
