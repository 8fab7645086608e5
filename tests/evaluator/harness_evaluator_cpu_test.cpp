// engine.harness_evaluator_cpu: the live evaluator on the CPU path with the real kblaster-harness
// (Debian's LibTorch) and the vector_add example's host-code kernel: a correct candidate, a
// wrong one, one that does not compile, one that crashes the harness (and the evaluator goes
// on), the cache, an unknown task, and a recording replayed. KBLASTER_HARNESS names the harness.
#include "engine/evaluate/harness_evaluator.h"
#include "engine/evaluate/recorded_evaluator.h"
#include "engine/task/task.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stop_token>
#include <thread>

namespace fs = std::filesystem;
using namespace kblaster::engine;
using namespace kblaster::engine::optimize;

namespace {

// The checkout: $KBLASTER_ROOT where the test binary was carried to another machine.
std::string root() {
  const char* r = std::getenv("KBLASTER_ROOT");
  return r && *r ? r : KBLASTER_SOURCE_DIR;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

// Removed when the test ends: sources, builds and recordings of this run.
struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("kblaster-heval-" + std::to_string(::getpid()));
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::path work_dir() {
  static const temp_dir dir;
  return dir.path;
}

struct fixture {
  task_spec task = load_task(root() + "/examples/tasks/vector_add");
  std::string good = read(task.cpu_kernel);
  std::unique_ptr<harness_evaluator> eval;

  fixture() {
    harness_evaluator_options o;
    o.device = "cpu";
    o.work_dir = work_dir();
    o.max_seconds = 0.2;
    o.watchdog = std::chrono::milliseconds(20'000);
    eval = std::make_unique<harness_evaluator>(std::vector<task_spec>{task}, o);
  }
};

}  // namespace

TEST_CASE("live evaluator on the CPU: pass, mismatch, compile error, crash, then pass again") {
  fixture f;
  CHECK(f.eval->device() == "cpu");
  CHECK(f.eval->parallelism() == 1);
  CHECK(f.eval->describe().find("CPU") != std::string::npos);

  SUBCASE("sequence") {
    const auto ok = f.eval->evaluate("vector_add", f.good, {true, true});
    INFO(to_json(ok).dump(2));
    CHECK(ok.compile_ok);
    CHECK(ok.correct);
    CHECK(ok.verdict == "pass");
    CHECK(ok.code_hash == source_hash("vector_add", f.good));
    REQUIRE(ok.runtime_ms);
    REQUIRE(ok.reference_ms);
    CHECK(*ok.runtime_ms > 0);
    CHECK(*ok.reference_ms > 0);
    CHECK(ok.gpu_seconds > 0);
    CHECK(ok.gpu_name == "cpu");
    CHECK(ok.arch == "cpu");
    CHECK_FALSE(ok.profile);  // no GPU profile for host code, and the evaluation says so
    CHECK(ok.profile_note.find("CPU") != std::string::npos);
    CHECK(ok.harness.contains("seeds"));
    // The source landed in the content-addressed work directory.
    CHECK(fs::exists(work_dir() / "vector_add" / ok.code_hash / "kernel.cpp"));

    const auto wrong = f.eval->evaluate("vector_add", replace(f.good, "a[i] + b[i]", "a[i] - b[i]"), {});
    INFO(to_json(wrong).dump(2));
    CHECK(wrong.compile_ok);
    CHECK_FALSE(wrong.correct);
    CHECK(wrong.verdict == "fail");
    CHECK(wrong.check == "tolerance");  // the harness's name for elements outside atol + rtol|ref|
    CHECK(wrong.reason.find("output 0") != std::string::npos);
    CHECK_FALSE(wrong.runtime_ms);

    const auto broken = f.eval->evaluate("vector_add", replace(f.good, "return 0;", "return undeclared_name;"), {});
    CHECK_FALSE(broken.compile_ok);
    CHECK_FALSE(broken.correct);
    CHECK(broken.check == "compile");
    CHECK(broken.compile_log.find("undeclared_name") != std::string::npos);
    CHECK(broken.reason.find("does not compile") == 0);
    CHECK(broken.gpu_seconds == 0);  // never reached the harness

    const auto starts = f.eval->harness_starts();
    const auto crash = f.eval->evaluate(
        "vector_add", replace(f.good, "for (long long i", "*static_cast<volatile float*>(nullptr) = 1.f;\n  for (long long i"),
        {});
    INFO(to_json(crash).dump(2));
    CHECK(crash.compile_ok);
    CHECK_FALSE(crash.correct);
    CHECK(crash.verdict == "error");
    CHECK(crash.check == "crash");
    CHECK(crash.reason.find("signal") != std::string::npos);

    // Still usable: the crash ended the candidate's runner, not the harness (the judge), which
    // answers the next candidate itself.
    const auto again = f.eval->evaluate("vector_add", f.good + "\n// another version\n", {true, false});
    CHECK(again.correct);
    CHECK(f.eval->harness_starts() == starts);
  }

  SUBCASE("the same source is measured once; a lesser request is served by a fuller one") {
    const auto first = f.eval->evaluate("vector_add", f.good, {true, true});
    const auto starts = f.eval->harness_starts();
    const auto second = f.eval->evaluate("vector_add", f.good, {true, true});
    const auto lesser = f.eval->evaluate("vector_add", f.good, {false, false});
    CHECK(second.runtime_ms == first.runtime_ms);  // bit-identical: not measured again
    CHECK(lesser.runtime_ms == first.runtime_ms);
    CHECK(f.eval->harness_starts() == starts);
    // Concurrent calls for one new source share one measurement.
    const auto src = f.good + "\n// concurrent\n";
    evaluation a, b;
    std::thread t1([&] { a = f.eval->evaluate("vector_add", src, {}); });
    std::thread t2([&] { b = f.eval->evaluate("vector_add", src, {}); });
    t1.join();
    t2.join();
    CHECK(a.correct);
    CHECK(a.runtime_ms == b.runtime_ms);
  }

  SUBCASE("prepared ahead, timed without a profile, then profiled: only the profile runs") {
    const auto src = f.good + "\n// prepared\n";
    f.eval->prepare("vector_add", src);  // the build starts now, in the background
    f.eval->prepare("no_such_task", src);  // a hint: nothing happens, nothing throws
    const auto timed = f.eval->evaluate("vector_add", src, {true, false});
    INFO(to_json(timed).dump(2));
    REQUIRE(timed.correct);
    CHECK(timed.profile_note.empty());  // no profile asked for: none taken, none explained
    CHECK(timed.phases.build > 0);
    CHECK(timed.phases.build_wait <= timed.phases.build + 0.05);
    CHECK(timed.phases.verify > 0);
    CHECK(timed.phases.time > 0);
    CHECK(timed.phases.profile == 0);
    CHECK(timed.gpu_seconds >= timed.phases.verify + timed.phases.time);
    const auto starts = f.eval->harness_starts();
    const auto profiled = f.eval->evaluate("vector_add", src, {true, true});
    INFO(to_json(profiled).dump(2));
    CHECK(profiled.runtime_ms == timed.runtime_ms);  // bit-identical: verified and timed once
    CHECK(profiled.phases.verify == timed.phases.verify);
    CHECK(profiled.profile_note.find("CPU") != std::string::npos);  // the profile step ran (the CPU has none)
    CHECK(f.eval->harness_starts() == starts);
    // A failed candidate is never profiled.
    const auto wrong = replace(f.good, "a[i] + b[i]", "a[i] - b[i]");
    CHECK_FALSE(f.eval->evaluate("vector_add", wrong, {true, false}).correct);
    const auto wrong_again = f.eval->evaluate("vector_add", wrong, {true, true});
    CHECK_FALSE(wrong_again.correct);
    CHECK(wrong_again.profile_note.empty());
  }

  SUBCASE("a candidate clearly slower than the time it must beat is timed only until that shows") {
    const auto src = f.good + "\n// against a bound\n";
    evaluation_request request;
    request.profile = false;
    request.beat_ms = 1e-6;  // a nanosecond: nothing real beats it
    const auto slow = f.eval->evaluate("vector_add", src, request);
    INFO(to_json(slow).dump(2));
    REQUIRE(slow.correct);
    CHECK(slow.timed_until_slower);
    REQUIRE(slow.runtime_ms);
    CHECK(*slow.runtime_ms > 0);
    CHECK_FALSE(slow.reference_ms);  // the reference is not timed for it
    CHECK(slow.harness["timing"]["candidate"]["samples"] == 2);
    CHECK(slow.reason.find("timed only until clearly slower") != std::string::npos);
    CHECK(evaluation_from_json(to_json(slow)).timed_until_slower);
    // A bound it beats changes nothing.
    request.beat_ms = 1e6;
    const auto full = f.eval->evaluate("vector_add", f.good + "\n// under a loose bound\n", request);
    CHECK(full.correct);
    CHECK_FALSE(full.timed_until_slower);
    CHECK(full.reference_ms);
  }

  SUBCASE("a reference figure the caller holds is used, not timed again") {
    const auto src = f.good + "\n// against a given reference\n";
    evaluation_request request;
    request.profile = false;
    const auto timed = f.eval->evaluate("vector_add", src, request);
    REQUIRE(timed.correct);
    REQUIRE(timed.runtime_ms);
    REQUIRE(timed.reference_ms);
    CHECK_FALSE(timed.harness["timing"]["reference"].value("given", false));
    CHECK(timed.harness["timing"]["reference"].value("samples", 0) > 0);  // timed here
    // A figure given (half as large again, to tell it from the one timed): taken as it is, no
    // sample of the reference taken.
    request.reference_ms = *timed.reference_ms * 1.5;
    const auto given = f.eval->evaluate("vector_add", src + "// given\n", request);
    INFO(to_json(given).dump(2));
    REQUIRE(given.correct);
    REQUIRE(given.reference_ms);
    CHECK(*given.reference_ms == doctest::Approx(*timed.reference_ms * 1.5));
    CHECK(given.harness["timing"]["reference"].value("given", false));
    CHECK_FALSE(given.harness["timing"]["reference"].contains("samples"));
    CHECK(given.harness["timing"]["method"].get<std::string>().find("not timed again") != std::string::npos);
    CHECK(given.reason.find("a figure the request gave, not timed again") != std::string::npos);
    // The speedup is still judged: against a given figure a hundred times the candidate's, it is
    // flagged for review.
    request.reference_ms = *given.runtime_ms * 100;
    const auto fast = f.eval->evaluate("vector_add", src + "// given, far slower\n", request);
    INFO(to_json(fast).dump(2));
    CHECK(fast.verdict == "needs_review");
    CHECK(fast.check == "speedup_review");
  }

  SUBCASE("verify only: correct without timing") {
    const auto v = f.eval->evaluate("vector_add", f.good + "\n// verify only\n", {false, false});
    CHECK(v.correct);
    CHECK_FALSE(v.runtime_ms);
  }

  SUBCASE("bad input") {
    CHECK_THROWS_WITH_AS(f.eval->evaluate("no_such_task", f.good, {}), doctest::Contains("unknown task 'no_such_task'"),
                         evaluation_error);
    const auto empty = f.eval->evaluate("vector_add", "", {});
    CHECK_FALSE(empty.correct);  // an empty file builds, but has no kb_forward
    CHECK(empty.verdict != "pass");
  }

  SUBCASE("a stop abandons the evaluation in flight: prompt, not cached, not recorded") {
    // A candidate that never returns: without the stop only the 20 s watchdog would end it.
    const auto hang = replace(f.good, "for (long long i", "for (volatile bool forever = true; forever;) {}\n  for (long long i");
    const auto file = work_dir() / "cancel-recording.jsonl";
    fs::remove(file);
    recording_evaluator rec(*f.eval, file);
    std::stop_source stop;
    evaluation_request request;
    request.stop = stop.get_token();
    std::jthread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // built and running by then
      stop.request_stop();
    });
    const auto started = std::chrono::steady_clock::now();
    const auto e = rec.evaluate("vector_add", hang, request);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    INFO(to_json(e).dump(2));
    CHECK(cancelled(e));
    CHECK_FALSE(e.correct);
    CHECK(took < 10);  // the build, then at most a tenth of a second after the stop
    CHECK(rec.recorded() == 0);
    // The harness was killed; the next candidate gets a fresh one and its own verdict.
    const auto starts = f.eval->harness_starts();
    CHECK(f.eval->evaluate("vector_add", f.good + "\n// after a stop\n", {true, false}).correct);
    CHECK(f.eval->harness_starts() == starts + 1);
    // Not cached as the hanging source's result: evaluated again, it is judged (here: cancelled
    // again at once, since the stop stays requested, instead of served from a cache).
    CHECK(cancelled(f.eval->evaluate("vector_add", hang, request)));
  }

  SUBCASE("a stop while the candidate is built ends its compiler: cancelled there, nothing judged") {
    std::stop_source stop;
    stop.request_stop();
    evaluation_request request;
    request.stop = stop.get_token();
    // A source no build of this run made: its compiler must run, and the caller's stop reaches it.
    const auto e = f.eval->evaluate("vector_add", f.good + "\n// built under a stop\n", request);
    INFO(to_json(e).dump(2));
    CHECK(cancelled(e));
    CHECK(e.reason == "cancelled while the candidate was being built");
    CHECK_FALSE(e.compile_ok);
    CHECK_FALSE(e.harness.contains("verdict"));  // never sent to the judge
  }

  SUBCASE("recorded live, replayed without the harness") {
    const auto file = work_dir() / "cpu-recording.jsonl";
    fs::remove(file);
    const auto wrong_src = replace(f.good, "a[i] + b[i]", "a[i] * b[i]");
    {
      recording_evaluator rec(*f.eval, file);
      rec.evaluate("vector_add", f.good, {});
      rec.evaluate("vector_add", wrong_src, {});
    }
    replay_evaluator replay({file});
    const auto r = replay.evaluate("vector_add", f.good, {});
    CHECK(r.replayed);
    CHECK(r.correct);
    CHECK(r.runtime_ms == f.eval->evaluate("vector_add", f.good, {}).runtime_ms);
    CHECK(replay.evaluate("vector_add", wrong_src, {}).check == "tolerance");
    CHECK(replay.describe().find("recorded on GPU cpu") != std::string::npos);
  }
}

TEST_CASE("live evaluator: no harness, bad device, bad GPU index are evaluation errors") {
  const auto task = load_task(root() + "/examples/tasks/vector_add");
  harness_evaluator_options o;
  o.device = "cpu";
  o.work_dir = work_dir();
  o.harness = "/nonexistent/kblaster-harness";
  CHECK_THROWS_WITH_AS(harness_evaluator({task}, o), doctest::Contains("not executable"), evaluation_error);
  o.harness.clear();
  o.device = "tpu";
  CHECK_THROWS_WITH_AS(harness_evaluator({task}, o), doctest::Contains("device must be cpu, cuda or auto"),
                       evaluation_error);
  o.device = "cpu";
  // A harness that starts but cannot run on the CPU... is not this one; a program that is not
  // a harness at all fails at the first candidate, as an evaluation error, not a verdict.
  o.harness = "/bin/true";
  harness_evaluator not_a_harness({task}, o);
  CHECK_THROWS_WITH_AS(not_a_harness.evaluate("vector_add", read(task.cpu_kernel), {}),
                       doctest::Contains("cannot start"), evaluation_error);
}
