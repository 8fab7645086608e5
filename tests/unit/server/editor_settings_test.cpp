// Editor settings: the optimizer options that make an editor run follow a recorded one (seed,
// breadth, depth, iterations, top-k, policy), and one message per unusable value.
#include "server/features/editor_settings.h"

#include <doctest/doctest.h>

using kblaster::protocol::json;
using kblaster::server::read_editor_settings;

TEST_CASE("defaults are the loop's own") {
  const auto s = read_editor_settings(json::object());
  CHECK(s.breadth == 8);
  CHECK(s.depth == 4);
  CHECK(s.iterations == 2);
  CHECK(s.top_k == 3);
  CHECK(s.policy == "ucb");
  CHECK(s.seed == 1);
  CHECK(s.harness.empty());
}

TEST_CASE("the recorded run's options are read from the optimize section") {
  std::vector<std::string> problems;
  const auto s = read_editor_settings(
      json::parse(R"({"optimize": {"breadth": 2, "depth": 2, "iterations": 2, "topK": 5, "policy": "greedy", "seed": 42,
                      "harness": "/opt/kblaster-harness", "replayHarness": "rec.jsonl"}})"),
      &problems);
  CHECK(problems.empty());
  CHECK(s.breadth == 2);
  CHECK(s.depth == 2);
  CHECK(s.iterations == 2);
  CHECK(s.top_k == 5);
  CHECK(s.policy == "greedy");
  CHECK(s.seed == 42);
  CHECK(s.harness == "/opt/kblaster-harness");
  CHECK(s.replay_harness == "rec.jsonl");
}

TEST_CASE("bad values keep the default and are named") {
  std::vector<std::string> problems;
  const auto s = read_editor_settings(
      json::parse(R"({"optimize": {"topK": 0, "policy": "random", "seed": -1, "breadth": "wide"}})"), &problems);
  CHECK(s.top_k == 3);
  CHECK(s.policy == "ucb");
  CHECK(s.seed == 1);
  CHECK(s.breadth == 8);
  REQUIRE(problems.size() == 4);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  CHECK(all.find("kblaster.optimize.topK") != std::string::npos);
  CHECK(all.find("kblaster.optimize.policy must be ucb, weighted, mean, thompson or greedy (got \"random\")") != std::string::npos);
  CHECK(all.find("kblaster.optimize.seed") != std::string::npos);
  CHECK(all.find("kblaster.optimize.breadth") != std::string::npos);
}

TEST_CASE("how the program runs: its arguments, and the program and build of the user's own build") {
  std::vector<std::string> problems;
  const auto s = read_editor_settings(
      json::parse(R"({"run": {"args": ["1000"], "command": ["./build/app", "--fast"], "build": ["make", "-C", "build", "app"],
                              "cwd": "/ws", "launch": 2}})"),
      &problems);
  CHECK(problems.empty());
  const auto r = kblaster::server::program_run_of(s);
  CHECK(r.run.args == std::vector<std::string>{"1000"});
  CHECK(r.run.command == std::vector<std::string>{"./build/app", "--fast"});
  CHECK(r.run.build == std::vector<std::string>{"make", "-C", "build", "app"});
  CHECK(r.run.cwd == "/ws");
  CHECK(r.launch == 2);
  // A kernel's file without main runs as a program once the program is named.
  CHECK(kblaster::engine::runs_as_program("__global__ void k() {}\n", r.run));
  CHECK_FALSE(kblaster::engine::runs_as_program("__global__ void k() {}\n", kblaster::server::program_run_of(read_editor_settings(json::object())).run));
}
