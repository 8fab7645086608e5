// The live evaluator when the machinery fails rather than the candidate (issue 35), against a
// stand-in harness (tests/unit/engine/evaluate/judge_fake.sh, no LibTorch): a harness killed
// mid-request, or one that says its own memory ran out, is retried on a fresh harness and then
// thrown as evaluation_error, never kept as the candidate's verdict; a runner that died is the
// candidate's verdict and is kept; and a warm harness outlives the thread that started it.
#include "engine/evaluate/harness_evaluator.h"
#include "engine/task/task.h"
#include "support/sandbox.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace fs = std::filesystem;
using namespace kblaster::engine;
using namespace kblaster::engine::optimize;

namespace {

// Sources, builds and the evaluator's folders of one test; removed at its end.
struct judge_fixture {
  fs::path dir = fs::temp_directory_path() / ("kblaster-judge-test-" + std::to_string(::getpid()));
  task_spec task = load_task(std::string(KBLASTER_SOURCE_DIR) + "/examples/tasks/vector_add");
  std::unique_ptr<harness_evaluator> eval;

  judge_fixture() {
    fs::remove_all(dir);
    harness_evaluator_options o;
    o.device = "cpu";
    o.harness = std::string(KBLASTER_SOURCE_DIR) + "/tests/unit/engine/evaluate/judge_fake.sh";
    o.work_dir = dir;
    o.watchdog = std::chrono::milliseconds(20'000);
    eval = std::make_unique<harness_evaluator>(std::vector<task_spec>{task}, o);
  }
  ~judge_fixture() {
    eval.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  // A host candidate that builds; `marker` lands in its library, where the stand-in reads how to behave.
  static std::string candidate(const std::string& marker) {
    return "extern \"C\" const char kblaster_fake_judge[] = \"" + marker +
           "\";\n"
           "extern \"C\" int kb_forward(const void*, int, void*, int, void*) { return kblaster_fake_judge[0] == 0; }\n";
  }
  evaluation evaluate(const std::string& source) { return eval->evaluate(task.name, source, {true, false}); }
};

}  // namespace

TEST_CASE("a harness killed by SIGKILL, not by the candidate, is retried, then an evaluator error: never a verdict, never kept") {
  judge_fixture f;
  MESSAGE("evaluator: " << f.eval->describe());
  REQUIRE(f.evaluate(judge_fixture::candidate("pass")).correct);
  CHECK(f.eval->harness_starts() == 1);

  const auto victim = judge_fixture::candidate("judge:killed");
  std::string error;
  try {
    f.evaluate(victim);
    FAIL("a harness killed mid-request came back as the candidate's verdict");
  } catch (const evaluation_error& e) {
    error = e.what();
  }
  MESSAGE("the evaluator error: " << error);
  CHECK(error.find("evaluator error, not the candidate's") != std::string::npos);
  CHECK(error.find("failed 3 times on 'evaluate'") != std::string::npos);
  CHECK(error.find("signal 9") != std::string::npos);
  CHECK(error.find("fake judge: killed while the candidate ran") != std::string::npos);  // its last words
  CHECK(error.find("out_of_memory") == std::string::npos);  // a kill is not called the candidate's memory
  CHECK(f.eval->harness_starts() == 3);  // the warm one, then two fresh ones: three tries

  // Not kept: the same source is measured again (three more tries), not served a verdict.
  CHECK_THROWS_AS(f.evaluate(victim), evaluation_error);
  CHECK(f.eval->harness_starts() == 6);

  // The evaluator goes on with the next candidate.
  CHECK(f.evaluate(judge_fixture::candidate("pass again")).correct);
  CHECK(f.eval->harness_starts() == 7);
}

TEST_CASE("the judge's own out-of-memory is retried, then an evaluator error") {
  judge_fixture f;
  try {
    f.evaluate(judge_fixture::candidate("judge:oom"));
    FAIL("the judge's own out-of-memory came back as the candidate's verdict");
  } catch (const evaluation_error& e) {
    MESSAGE("the evaluator error: " << std::string(e.what()));
    CHECK(std::string(e.what()).find("CUDA out of memory allocating the judge's copy") != std::string::npos);
  }
  CHECK(f.eval->harness_starts() == 3);
}

TEST_CASE("a runner killed while the candidate ran is the candidate's verdict, kept and not retried") {
  judge_fixture f;
  const auto source = judge_fixture::candidate("runner:killed");
  const auto e = f.evaluate(source);
  CHECK_FALSE(e.correct);
  CHECK(e.verdict == "error");
  CHECK(e.check == "out_of_memory");
  CHECK_FALSE(e.harness.contains("judge_retries"));
  CHECK(f.eval->harness_starts() == 1);
  const auto again = f.evaluate(source);  // served from the cache: the same measurement
  CHECK(again.gpu_seconds == e.gpu_seconds);
  CHECK(f.eval->harness_starts() == 1);
}

TEST_CASE("a warm harness outlives the thread that started it (the SIGKILL of two candidates at once)") {
  // The harness runs under bwrap --die-with-parent, whose parent-death signal fires when the
  // thread that spawned it ends. A resumed run starts the harness on a worker thread, which ends
  // while another worker still evaluates on it.
  judge_fixture f;
  MESSAGE("sandbox: " << kblaster::support::sandbox_support().summary);
  evaluation first;
  std::thread([&] { first = f.evaluate(judge_fixture::candidate("on a worker")); }).join();
  REQUIRE(first.correct);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a parent-death signal would have landed
  const auto second = f.evaluate(judge_fixture::candidate("on another thread"));
  CHECK(second.correct);
  CHECK_FALSE(second.harness.contains("judge_retries"));
  CHECK(f.eval->harness_starts() == 1);  // the same harness, alive
}
