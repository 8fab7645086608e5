// optimize_session::run_rounds: the one loop over a deferred model's rounds that Optimize, the
// bench and the learning curve share. A round that waits hands its questions over; with `wait`
// the answers are awaited and the round runs again, until one does not wait; without it, or at
// a stop, the first hand-over ends it; a model that answers at once runs one round.
#include "engine/optimize/service.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

namespace {
using namespace kblaster::engine;
using namespace kblaster::engine::optimize;
using llm_test::temp_dir;

// A files:DIR model (answers arrive later), no evaluator: the rounds alone.
optimize_session session_with_deferred_model(const temp_dir& dir) {
  model_settings m;
  m.deferred = "files:" + (dir / "batch").string();
  m.config_file = dir / "no-config.json";
  return optimize_session(std::nullopt, m, {});
}

struct rounds_seen {
  int rounds = 0, handed = 0, resumed = 0;
};

// Runs rounds that wait `waiting` times, then one that does not.
rounds_seen count_rounds(optimize_session& session, const model_rounds& how, std::stop_token stop, int waiting) {
  rounds_seen c;
  session.run_rounds(
      how, stop, [&] { return ++c.rounds <= waiting; }, [&](const llm::hand_over_report&) { ++c.handed; },
      [&] { ++c.resumed; });
  return c;
}

}  // namespace

TEST_CASE("run_rounds: with wait, rounds run again once answers are in, until one does not wait") {
  temp_dir dir;
  auto session = session_with_deferred_model(dir);
  REQUIRE(session.model().deferred != nullptr);
  CHECK(session.evaluators() == nullptr);
  const auto c = count_rounds(session, {.wait = true, .poll_seconds = 0.01}, std::stop_source().get_token(), 2);
  CHECK(c.rounds == 3);
  CHECK(c.handed == 2);
  CHECK(c.resumed == 2);
}

TEST_CASE("run_rounds: without wait, the first hand-over ends them") {
  temp_dir dir;
  auto session = session_with_deferred_model(dir);
  const auto c = count_rounds(session, {.wait = false, .poll_seconds = 0.01}, std::stop_source().get_token(), 2);
  CHECK(c.rounds == 1);
  CHECK(c.handed == 1);
  CHECK(c.resumed == 0);
}

TEST_CASE("run_rounds: a stop ends the wait for answers") {
  temp_dir dir;
  auto session = session_with_deferred_model(dir);
  std::stop_source stopped;
  stopped.request_stop();
  const auto c = count_rounds(session, {.wait = true, .poll_seconds = 3600}, stopped.get_token(), 2);
  CHECK(c.rounds == 1);
  CHECK(c.handed == 1);
  CHECK(c.resumed == 0);
}

TEST_CASE("run_rounds: a model that answers at once (or none) runs one round") {
  model_settings none;
  none.disabled = true;
  optimize_session session(std::nullopt, none, {});
  CHECK(session.model().deferred == nullptr);
  const auto c = count_rounds(session, {.wait = true, .poll_seconds = 0.01}, std::stop_source().get_token(), 2);
  CHECK(c.rounds == 1);
  CHECK(c.handed == 0);
}
