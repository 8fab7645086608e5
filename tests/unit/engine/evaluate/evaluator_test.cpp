// The evaluators' value types and the recorder/replayer: hashing, JSON round trips, a recording
// served back by hash, and the errors of a miss and of a corrupt file.
#include "engine/profile/ncu_csv_parser.h"
#include "support/files.h"
#include "engine/evaluate/evaluator.h"
#include "engine/evaluate/harness_evaluator.h"
#include "engine/evaluate/recorded_evaluator.h"

#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace kblaster::engine::optimize;

namespace {

// Answers from a formula of the source so that each source gets a different, checkable verdict.
class fake_evaluator final : public evaluator {
 public:
  std::atomic<int> calls{0};
  evaluation evaluate(const std::string& task, const std::string& source, const evaluation_request& r) override {
    ++calls;
    if (source == "throw") throw evaluation_error("no harness");
    evaluation e;
    e.code_hash = source_hash(task, source);
    e.compile_ok = source.find("syntax error") == std::string::npos;
    e.correct = e.compile_ok && source.find("wrong") == std::string::npos;
    e.verdict = e.correct ? "pass" : "fail";
    e.check = e.correct ? "" : e.compile_ok ? "tolerance" : "compile";
    if (e.correct && r.time) {
      e.runtime_ms = static_cast<double>(source.size()) / 100;
      e.reference_ms = 1.5;
    }
    if (e.correct && r.profile) {
      profile_snapshot p;
      p.kernel = "k";
      p.primary = "memory_bound_dram";
      e.profile = p;
    }
    e.gpu_name = "Fake GPU";
    e.arch = "sm_90";
    return e;
  }
  std::string describe() const override { return "fake"; }
};

fs::path temp_file(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("kblaster-evaluator-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto p = dir / name;
  fs::remove(p);
  return p;
}

evaluation full_evaluation() {
  evaluation e;
  e.code_hash = "0123456789abcdef";
  e.compile_ok = true;
  e.compile_log = "warning: x";
  e.correct = true;
  e.verdict = "needs_review";
  e.check = "speedup_review";
  e.reason = "speedup 12x";
  e.runtime_ms = 0.125;
  e.reference_ms = 1.5;
  profile_snapshot p;
  p.kernel = "vector_add";
  p.primary = "memory_bound_dram";
  p.secondary = {"uncoalesced_global_access", "launch_bound"};
  p.summary = "memory bound\nline 2";
  p.view = {{"name", "vector_add"}, {"sol", {{"dram_pct", 91.5}}}};
  p.elapsed_cycles = 123456789012LL;
  p.source = "static";
  e.profile = p;
  e.gpu_seconds = 2.5;
  e.build_seconds = 1.25;
  e.gpu_name = "NVIDIA H100 80GB HBM3";
  e.arch = "sm_90";
  e.profile_note = "ncu failed: x";
  e.replayed = true;
  e.harness = {{"verdict", "needs_review"}, {"timing", {{"speedup", 12.0}}}};
  return e;
}

}  // namespace

TEST_CASE("source_hash: 16 hex digits, stable, sensitive to task and source") {
  const auto h = source_hash("vector_add", "int x;");
  CHECK(h.size() == 16);
  CHECK(h.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(h == source_hash("vector_add", "int x;"));
  CHECK(h != source_hash("vector_add", "int x; "));
  CHECK(h != source_hash("vector_ad", "int x;"));
  // The separator keeps the boundary between task name and source.
  CHECK(source_hash("ab", "c") != source_hash("a", "bc"));
  // FNV-1a 64 of "" followed by the NUL separator: a known value pins the algorithm.
  CHECK(source_hash("", "") == "44bd2bd473ccf799");
}

TEST_CASE("evaluation JSON round trip keeps every field") {
  const auto e = full_evaluation();
  const auto j = to_json(e);
  const auto back = evaluation_from_json(nlohmann::json::parse(j.dump()));
  CHECK(to_json(back) == j);
  CHECK(back.runtime_ms == doctest::Approx(0.125));
  REQUIRE(back.profile);
  CHECK(back.profile->elapsed_cycles == 123456789012LL);
  CHECK(back.profile->secondary.size() == 2);
  CHECK(back.profile->source == "static");
  CHECK(back.profile_note == "ncu failed: x");
  CHECK(back.replayed);
}

TEST_CASE("evaluation JSON: absent optionals stay absent") {
  evaluation e;
  e.code_hash = "x";
  e.verdict = "fail";
  e.check = "compile";
  const auto j = to_json(e);
  CHECK_FALSE(j.contains("runtime_ms"));
  CHECK_FALSE(j.contains("profile"));
  const auto back = evaluation_from_json(j);
  CHECK_FALSE(back.runtime_ms);
  CHECK_FALSE(back.reference_ms);
  CHECK_FALSE(back.profile);
  CHECK_FALSE(back.compile_ok);
}

TEST_CASE("evaluation JSON: bad input is a clear error") {
  CHECK_THROWS_WITH_AS(evaluation_from_json(nlohmann::json::array()), doctest::Contains("expected an object"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(evaluation_from_json({{"verdict", "pass"}}), doctest::Contains("code_hash"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(evaluation_from_json({{"code_hash", "x"}, {"verdict", "pass"}, {"runtime_ms", "fast"}}),
                       doctest::Contains("evaluation"), std::invalid_argument);
  CHECK_THROWS_AS(snapshot_from_json("nope"), std::invalid_argument);
  const auto p = snapshot_from_json({{"kernel", "k"}, {"primary", "compute_bound"}});
  CHECK(p.source == "ncu");
  CHECK_FALSE(p.elapsed_cycles);
}

TEST_CASE("recorder writes a note then one line per evaluation; the replayer serves them by hash") {
  const auto file = temp_file("rec.jsonl");
  fake_evaluator live;
  {
    recording_evaluator rec(live, file);
    CHECK(rec.describe().find("fake") != std::string::npos);
    const auto e = rec.evaluate("vector_add", "fast kernel", {});
    CHECK(e.correct);
    CHECK_FALSE(e.replayed);
    rec.evaluate("vector_add", "wrong kernel", {});
    rec.evaluate("vector_add", "syntax error", {true, false});
    rec.evaluate("matmul", "fast kernel", {});
    CHECK_THROWS_AS(rec.evaluate("vector_add", "throw", {}), evaluation_error);
    CHECK(rec.recorded() == 4);
  }
  {
    std::ifstream in(file);
    std::string first;
    std::getline(in, first);
    const auto note = nlohmann::json::parse(first);
    REQUIRE(note.contains("$source"));
    CHECK(note["$source"].get<std::string>().find("fake") != std::string::npos);
  }
  replay_evaluator replay({file});
  CHECK(replay.size() == 4);
  CHECK(replay.notes().size() == 1);
  CHECK(replay.describe().find("replay of " + file.string()) == 0);
  CHECK(replay.describe().find("recorded on GPU Fake GPU (sm_90)") != std::string::npos);
  const auto e = replay.evaluate("vector_add", "fast kernel", {});
  CHECK(e.replayed);
  CHECK(e.correct);
  REQUIRE(e.runtime_ms);
  CHECK(*e.runtime_ms == doctest::Approx(0.11));
  REQUIRE(e.profile);
  CHECK(e.profile->primary == "memory_bound_dram");
  const auto w = replay.evaluate("vector_add", "wrong kernel", {});
  CHECK_FALSE(w.correct);
  CHECK(w.check == "tolerance");
  CHECK_FALSE(replay.evaluate("vector_add", "syntax error", {}).compile_ok);
  // The same source under another task is another candidate.
  CHECK(replay.evaluate("matmul", "fast kernel", {}).code_hash == source_hash("matmul", "fast kernel"));
  CHECK(live.calls == 5);  // replays never reach the live evaluator
}

TEST_CASE("replay miss names the task, the hash and how many recordings the task has") {
  const auto file = temp_file("miss.jsonl");
  fake_evaluator live;
  {
    recording_evaluator rec(live, file, "test note");
    rec.evaluate("vector_add", "a", {});
    rec.evaluate("vector_add", "b", {});
  }
  replay_evaluator replay({file});
  CHECK(replay.describe().find("test note") != std::string::npos);
  const auto hash = source_hash("vector_add", "c");
  CHECK_THROWS_WITH_AS(replay.evaluate("vector_add", "c", {}),
                       doctest::Contains(("task 'vector_add' with source hash " + hash).c_str()), evaluation_error);
  CHECK_THROWS_WITH_AS(replay.evaluate("vector_add", "c", {}), doctest::Contains("2 evaluations of this task"),
                       evaluation_error);
  CHECK_THROWS_WITH_AS(replay.evaluate("softmax", "a", {}), doctest::Contains("no evaluation of this task"),
                       evaluation_error);
}

TEST_CASE("replay prefers the recording made with the same request, then one that did more") {
  const auto file = temp_file("fit.jsonl");
  fake_evaluator live;
  {
    recording_evaluator rec(live, file);
    rec.evaluate("t", "k", {true, false});
    rec.evaluate("t", "k", {true, true});
  }
  replay_evaluator replay({file});
  CHECK_FALSE(replay.evaluate("t", "k", {true, false}).profile);
  CHECK(replay.evaluate("t", "k", {true, true}).profile);
  CHECK(replay.evaluate("t", "k", {false, true}).profile);
}

TEST_CASE("a resumed recording serves what it holds and measures (and records) only the rest") {
  const auto file = temp_file("resumed.jsonl");
  fake_evaluator live;
  {
    recording_evaluator rec(live, file);
    rec.evaluate("t", "timed only", {true, false});
    rec.evaluate("t", "profiled", {true, true});
  }
  CHECK(live.calls == 2);
  replay_evaluator earlier({file});
  recording_evaluator rec(live, file);
  recorded_first_evaluator resumed(earlier, rec);
  // Held already: served, not measured again, marked as served from the recording.
  CHECK(resumed.evaluate("t", "timed only", {true, false}).replayed);
  CHECK(resumed.evaluate("t", "profiled", {true, false}).runtime_ms);
  CHECK(live.calls == 2);
  // A profile the recording lacks, and a kernel it never saw: measured live and recorded.
  const auto p = resumed.evaluate("t", "timed only", {true, true});
  CHECK(p.profile);
  CHECK_FALSE(p.replayed);
  CHECK_FALSE(resumed.evaluate("t", "new kernel", {}).replayed);
  CHECK(live.calls == 4);
  CHECK(rec.recorded() == 2);
  // Whoever replays the file now serves each request what this run was served.
  replay_evaluator after({file});
  CHECK_FALSE(after.evaluate("t", "timed only", {true, false}).profile);
  CHECK(after.evaluate("t", "timed only", {true, true}).profile);
  CHECK(after.evaluate("t", "new kernel", {}).correct);
}

TEST_CASE("replay of a corrupt or missing file names the file and the line") {
  const auto file = temp_file("corrupt.jsonl");
  {
    std::ofstream out(file);
    out << R"({"$source": "hand-written for evaluator_test"})" << "\n\n";
    out << R"({"task": "t", "hash": "h", "evaluation": {"code_hash": "h", "verdict": "pass"}})" << "\n";
    out << R"({"task": "t", "hash": "h2", "evaluation": {"code_hash": "h2", "verd)" << "\n";
  }
  CHECK_THROWS_WITH_AS(replay_evaluator({file}), doctest::Contains((file.string() + ":4: corrupt recording").c_str()),
                       evaluation_error);
  {
    std::ofstream out(file);
    out << R"({"task": "t", "evaluation": {}})" << "\n";
  }
  CHECK_THROWS_WITH_AS(replay_evaluator({file}), doctest::Contains(":1: corrupt recording: missing 'hash'"),
                       evaluation_error);
  {
    std::ofstream out(file);
    out << R"({"task": "t", "hash": "h", "evaluation": {"code_hash": "h"}})" << "\n";
  }
  CHECK_THROWS_WITH_AS(replay_evaluator({file}), doctest::Contains(":1: corrupt recording: evaluation: 'code_hash' and 'verdict'"),
                       evaluation_error);
  {
    std::ofstream out(file);
    out << "[1, 2]\n";
  }
  CHECK_THROWS_WITH_AS(replay_evaluator({file}), doctest::Contains(":1: corrupt recording"), evaluation_error);
  CHECK_THROWS_WITH_AS(replay_evaluator({temp_file("absent.jsonl")}), doctest::Contains("cannot read the recording file"),
                       evaluation_error);
  CHECK_THROWS_AS(replay_evaluator(std::vector<fs::path>{}), evaluation_error);
}

TEST_CASE("recorder is thread-safe: every line whole") {
  const auto file = temp_file("threads.jsonl");
  fake_evaluator live;
  {
    recording_evaluator rec(live, file);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&rec, t] {
        for (int i = 0; i < 25; ++i) rec.evaluate("t", "kernel " + std::to_string(t) + "/" + std::to_string(i), {});
      });
    for (auto& th : threads) th.join();
    CHECK(rec.recorded() == 200);
  }
  replay_evaluator replay({file});  // throws on a torn line
  CHECK(replay.size() == 200);
  CHECK(replay.evaluate("t", "kernel 7/24", {}).correct);
}

TEST_CASE("a recording file appended by two sessions holds both notes") {
  const auto file = temp_file("append.jsonl");
  fake_evaluator live;
  { recording_evaluator(live, file, "first").evaluate("t", "a", {}); }
  { recording_evaluator(live, file, "second").evaluate("t", "b", {}); }
  replay_evaluator replay({file});
  CHECK(replay.notes() == std::vector<std::string>{"first", "second"});
  CHECK(replay.size() == 2);
}

TEST_CASE("snapshot from real ncu pages keeps the longest kernel, its state and its cycles") {
  using kblaster::support::read_file;
  const std::string dir = std::string(KBLASTER_FIXTURES_DIR) + "/ncu-h100/";
  std::string error;
  // A whole application's report: vadd x3, matmul_naive (21.8 ms), ..., atomic_sum (29.4 ms, the longest).
  const auto snap = snapshot_from_ncu_pages(read_file(dir + "app_sections.details.csv"), "", "", nullptr, error);
  REQUIRE_MESSAGE(snap, error);
  CHECK(snap->kernel == "atomic_sum");
  CHECK(snap->source == "ncu");
  CHECK(snap->elapsed_cycles == 47253002);
  CHECK_FALSE(snap->primary.empty());
  CHECK(snap->primary == "latency_bound");
  CHECK(snap->view.value("profiled_kernels", 0) == 11);
  CHECK(snap->view.value("primary", "") == snap->primary);
  CHECK(snap->summary.find("atomic_sum") != std::string::npos);
  // One kernel's report with its raw page: no kernel count.
  const auto alone = snapshot_from_ncu_pages(read_file(dir + "matmul_naive.details.csv"),
                                             read_file(dir + "matmul_naive.raw.csv"), "", nullptr, error);
  REQUIRE(alone);
  CHECK(alone->kernel == "matmul_naive");
  CHECK(alone->primary == "memory_bound_l1");
  CHECK_FALSE(alone->view.contains("profiled_kernels"));
  // Pages with nothing in them: an error, not an exception.
  CHECK_FALSE(snapshot_from_ncu_pages("", "", "", nullptr, error));
  CHECK_FALSE(error.empty());
  CHECK_FALSE(snapshot_from_ncu_pages("\"ID\",\"Kernel Name\"\n", "", "", nullptr, error));
}
