// The timing policy as a request's "timing" object sets it: defaults, clamps, the given
// reference figure, and the engine's wait for a timed request.
#include "engine/task/timing_policy.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;

TEST_CASE("timing policy: a request's timing object, read with its defaults and clamps") {
  SUBCASE("anything but an object is the defaults") {
    for (const auto& j : {nlohmann::json(), nlohmann::json::array(), nlohmann::json(3)}) {
      const auto p = timing_policy_from_json(j);
      CHECK(p.warmup == 3);
      CHECK(p.min_samples == 10);
      CHECK(p.max_seconds == 2.0);
      CHECK(p.slower_than_ms == 0);
      CHECK(p.reference_ms == 0);
    }
  }
  SUBCASE("what the engine sends is read as sent") {
    const auto p = timing_policy_from_json({{"max_seconds", 0.5}, {"slower_than_ms", 1.25}, {"reference_ms", 0.75}});
    CHECK(p.max_seconds == 0.5);
    CHECK(p.slower_than_ms == 1.25);
    CHECK(p.reference_ms == 0.75);
    CHECK(p.warmup == 3);  // the rest keeps its defaults
    CHECK(p.median_se_target == doctest::Approx(0.003));
  }
  SUBCASE("out-of-range fields are clamped, max_samples never under min_samples") {
    const auto p = timing_policy_from_json(
        {{"warmup", -4}, {"min_samples", 1}, {"max_samples", 2}, {"max_seconds", 1e6}, {"rsd_target", 0.0}});
    CHECK(p.warmup == 0);
    CHECK(p.min_samples == 3);
    CHECK(p.max_samples == 3);
    CHECK(p.max_seconds == 600.0);
    CHECK(p.rsd_target == doctest::Approx(1e-5));
  }
  SUBCASE("a field of the wrong type is refused, not read as its default") {
    CHECK_THROWS_AS(timing_policy_from_json({{"max_seconds", "two"}}), nlohmann::json::type_error);
  }
  SUBCASE("the engine waits for the cap twice (candidate, reference) and the warm-ups") {
    CHECK(timing_budget_seconds(timing_policy{}.max_seconds) == doctest::Approx(6.0));
    CHECK(timing_budget_seconds(0.3) == doctest::Approx(0.9));
  }
}
