// The per-candidate cost summary: medians per phase, the device total, what was profiled.
#include "engine/optimize/candidate_cost.h"

#include <doctest/doctest.h>

using namespace kblaster::engine::optimize;

namespace {
phase_seconds candidate(double verify, double time, double profile, double build, double waited) {
  phase_seconds p;
  p.verify = verify;
  p.time = time;
  p.profile = profile;
  p.build = build;
  p.build_wait = waited;
  return p;
}
}  // namespace

TEST_CASE("candidate cost: medians resist the one profiled candidate; the device total and mean count it") {
  // Three verified-and-timed candidates and one that ncu profiled for 9 s.
  const std::vector<phase_seconds> c = {candidate(0.1, 0.4, 0, 1.5, 0), candidate(0.2, 0.5, 0, 1.6, 0.8),
                                        candidate(0.3, 0.6, 9, 1.4, 1.4), candidate(0.1, 0.3, 0, 1.5, 0)};
  const auto s = summarize_costs(c);
  CHECK(s.candidates == 4);
  CHECK(s.profiled == 1);
  // Device seconds per candidate: 0.5, 0.7, 9.9, 0.4 -> median (0.5 + 0.7) / 2.
  CHECK(s.median_device == doctest::Approx(0.6));
  CHECK(s.total_device == doctest::Approx(11.5));
  CHECK(s.mean_device == doctest::Approx(11.5 / 4));
  CHECK(s.median.profile == doctest::Approx(0));
  CHECK(s.median.verify == doctest::Approx(0.15));
  CHECK(s.median.build == doctest::Approx(1.5));
  CHECK(s.median.build_wait == doctest::Approx(0.4));
  // Wall per candidate: device + build waited: 0.5, 1.5, 11.3, 0.4 -> (0.5 + 1.5) / 2.
  CHECK(s.median_wall == doctest::Approx(1.0));
  const auto j = to_json(s);
  CHECK(j["profiled"] == 1);
  CHECK(j["median_phase_seconds"]["time"].get<double>() == doctest::Approx(0.45));
  CHECK(describe_costs(s).find("median 0.60 s of device time per candidate") == 0);
  CHECK(describe_costs(s).find("1 of 4 profiled") != std::string::npos);
}

TEST_CASE("candidate cost: ncu writing its report after the profiled runner is gone is wall time, not device time") {
  auto profiled = candidate(0.1, 0.4, 1.2, 1.0, 1.0);
  profiled.profile_report = 0.13;
  const auto s = summarize_costs({profiled});
  CHECK(profiled.device() == doctest::Approx(1.7));  // verify, time, profile: not the report's wait
  CHECK(s.median_device == doctest::Approx(1.7));
  CHECK(s.median_wall == doctest::Approx(1.7 + 1.0 + 0.13));
  CHECK(s.median.profile_report == doctest::Approx(0.13));
  const auto back = phases_from_json(to_json(profiled));
  CHECK(back.profile_report == doctest::Approx(0.13));
  auto sum = profiled;
  sum += profiled;
  CHECK(sum.profile_report == doctest::Approx(0.26));
}

TEST_CASE("candidate cost: the input kernel's line says what it cost once, and whether its profile was kept") {
  const auto input = candidate(0.1, 1.9, 4.5, 1.2, 1.2);
  CHECK(describe_input_cost(input, false) ==
        "6.50 s of device time, once (harness start 0.00 s, verify 0.10 s, time 1.90 s with the reference's, profile 4.50 s)");
  auto kept = input;
  kept.profile = 0;
  CHECK(describe_input_cost(kept, true).find("profile 0.00 s: ncu's pages kept from an earlier profile") != std::string::npos);
  CHECK(describe_costs(summarize_costs({input}), "input kernel").find("per input kernel") != std::string::npos);
  CHECK(describe_costs(summarize_costs({}), "input kernel") == "no input kernel evaluated");
}

TEST_CASE("candidate cost: nothing evaluated says so; phases read back, old records as one request") {
  CHECK(summarize_costs({}).candidates == 0);
  CHECK(describe_costs(summarize_costs({})) == "no candidate evaluated");
  const auto p = phases_from_json(to_json(candidate(0.1, 0.2, 3, 1, 0.5)));
  CHECK(p.profile == 3);
  CHECK(p.build_wait == 0.5);
  CHECK(p.device() == doctest::Approx(3.3));
  // An evaluation recorded before phases existed: its build, and the rest undivided.
  nlohmann::json old{{"code_hash", "x"}, {"verdict", "pass"}, {"gpu_seconds", 4.0}, {"build_seconds", 1.5}};
  const auto e = evaluation_from_json(old);
  CHECK(e.phases.build == 1.5);
  CHECK(e.phases.device() == doctest::Approx(4.0));
}
