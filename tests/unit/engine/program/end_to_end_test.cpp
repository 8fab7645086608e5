// The end-to-end measurement: the median ratio's interval, and alternating real processes.
#include "engine/program/end_to_end.h"

#include <doctest/doctest.h>

#include <thread>

using namespace kblaster::engine;

namespace {
program_command shell(const std::string& script) { return {{"/bin/sh", "-c", script}, "", {}}; }
}  // namespace

TEST_CASE("the median's interval comes from order statistics") {
  // Ten pairs: [x(2), x(9)] holds the median with 97.9 %; [x(3), x(8)] would hold it with 89 % only.
  const auto s = summarize_ratios({1.10, 1.02, 1.30, 1.12, 1.08, 1.15, 1.11, 1.09, 1.20, 1.13});
  CHECK(s.pairs == 10);
  CHECK(s.median == doctest::Approx(1.115));
  CHECK(s.low == doctest::Approx(1.08));
  CHECK(s.high == doctest::Approx(1.20));
  CHECK(s.coverage == doctest::Approx(1 - 2 * 11.0 / 1024));
  // Five pairs cannot give 95 %: the whole range, and the coverage says so.
  const auto few = summarize_ratios({1.0, 2.0, 3.0, 4.0, 5.0});
  CHECK(few.low == 1.0);
  CHECK(few.high == 5.0);
  CHECK(few.coverage < 0.95);
  CHECK(summarize_ratios({}).pairs == 0);
}

TEST_CASE("a program twice as slow measures about 2x, faster with confidence") {
  end_to_end_options o;
  o.min_pairs = 10;
  o.budget = std::chrono::duration<double>(0);
  std::vector<std::string> lines;
  const auto r = measure_end_to_end(shell("sleep 0.08"), shell("sleep 0.04"), o,
                                    [&](const std::string& l) { lines.push_back(l); }, {});
  REQUIRE(r.ok());
  CHECK(r.ratios.size() == 10);
  CHECK(r.original_seconds.size() == 10);
  CHECK(r.speedup.median > 1.5);
  CHECK(r.speedup.median < 2.5);
  CHECK(r.faster());
  CHECK(lines.size() == 11);  // one warm-up, ten pairs
  CHECK(r.text().find("95% CI") != std::string::npos);
}

TEST_CASE("a slower rewrite is not faster") {
  end_to_end_options o;
  o.min_pairs = 6;
  o.budget = std::chrono::duration<double>(0);
  const auto r = measure_end_to_end(shell("sleep 0.02"), shell("sleep 0.06"), o, {}, {});
  REQUIRE(r.ok());
  CHECK(r.speedup.median < 1);
  CHECK_FALSE(r.faster());
}

TEST_CASE("a failing run ends the measurement with what it printed") {
  end_to_end_options o;
  o.min_pairs = 4;
  const auto r = measure_end_to_end(shell("true"), shell("echo 'cudaErrorIllegalAddress' >&2; exit 3"), o, {}, {});
  CHECK_FALSE(r.ok());
  CHECK_FALSE(r.faster());
  CHECK(r.error.find("optimized program exited with status 3") != std::string::npos);
  CHECK(r.error.find("cudaErrorIllegalAddress") != std::string::npos);
}

TEST_CASE("the programs get their folder and environment") {
  const program_command p{{"/bin/sh", "-c", "test \"$KBLASTER_E2E_PROBE\" = yes && test \"$(pwd)\" = /"},
                          std::string("/"),
                          {std::string("KBLASTER_E2E_PROBE=yes")}};
  end_to_end_options o;
  o.min_pairs = 2;
  o.budget = std::chrono::duration<double>(0);
  const auto r = measure_end_to_end(p, p, o, {}, {});
  CHECK(r.ok());
  CHECK(r.error.empty());
}

TEST_CASE("a stop kills the running program and concludes nothing") {
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  end_to_end_options o;
  const auto started = std::chrono::steady_clock::now();
  const auto r = measure_end_to_end(shell("sleep 30"), shell("sleep 30"), o, {}, stop.get_token());
  CHECK(r.cancelled);
  CHECK_FALSE(r.ok());
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
}
