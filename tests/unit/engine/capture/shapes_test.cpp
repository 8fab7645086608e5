// More than one captured shape: a rewrite of the first shape's task moved onto another's
// launcher, and the evaluator that verifies every correct candidate on every shape.
#include "engine/capture/capture_shapes.h"
#include "engine/capture/capture_task.h"
#include "support/files.h"
#include "tests/unit/engine/capture/capture_fixture.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace kblaster::engine;
namespace fs = std::filesystem;
namespace opt = kblaster::engine::optimize;
using kblaster::test::fixture_copy;
using kblaster::test::replaced;

namespace {

// The stencil capture as recorded (64 x 48, grid (4, 3, 1)), and the same launch made into a
// 32 x 24 one (grid (2, 2, 1), allocations a quarter the size): another shape of the kernel.
struct two_shapes {
  fixture_copy first{"stencil2d"}, second{"stencil2d"};
  std::string source = kblaster::test::capture_program("stencil2d");
  capture_task first_task, second_task;
  std::string first_generated, second_generated;

  two_shapes() {
    auto j = second.json();
    j["params"][2]["bytes"] = "20000000";
    j["params"][3]["bytes"] = "18000000";
    j["grid"] = {2, 2, 1};
    for (auto& a : j["allocations"]) {
      a["bytes"] = 32 * 24 * 4;
      for (const char* side : {"before", "after"})
        if (a.contains(side)) fs::resize_file(second.dir / a[side].get<std::string>(), 32 * 24 * 4);
    }
    second.write(j);
    first_task = write_capture_task(read_capture(first.dir.string()), source, "launch 1 of stencil2d.cu 64 48");
    second_task = write_capture_task(read_capture(second.dir.string()), source, "launch 1 of stencil2d.cu 32 24", "stencil2d_shape2");
    first_generated = kblaster::support::read_file(first_task.kernel_path);
    second_generated = kblaster::support::read_file(second_task.kernel_path);
  }
};

// Answers as a harness would: the first task's candidates pass; another task's candidate fails
// when it holds `failing` (a mismatch the harness names), else passes. Remembers every call.
class scripted_evaluator final : public opt::evaluator {
 public:
  std::string failing = "\x01never";            // fails on the other shapes only
  std::string failing_everywhere = "\x01never";
  std::vector<std::pair<std::string, std::string>> calls;  // task, source
  std::vector<opt::evaluation_request> requests;

  opt::evaluation evaluate(const std::string& task, const std::string& source, const opt::evaluation_request& r) override {
    calls.emplace_back(task, source);
    requests.push_back(r);
    opt::evaluation e;
    e.compile_ok = true;
    e.gpu_seconds = 1;
    const bool bad = source.find(failing) != std::string::npos;
    e.correct = (!bad || task == "stencil2d") && source.find(failing_everywhere) == std::string::npos;
    e.verdict = e.correct ? "pass" : "fail";
    e.check = e.correct ? "" : "mismatch";
    e.reason = e.correct ? "" : "output 0 (out, parameter 1): 24 of 768 elements outside atol; first at [31] (got 0, expected 0.4)";
    if (e.correct && r.time) e.runtime_ms = 0.01;
    return e;
  }
  std::string describe() const override { return "scripted"; }
};

}  // namespace

TEST_CASE("the original moved onto another shape is that shape's own launcher") {
  two_shapes s;
  CHECK(transplant_rewrite(s.first_generated, s.first_generated, s.second_generated) == s.second_generated);
}

TEST_CASE("a rewrite moved onto another shape takes that shape's values and keeps its own code") {
  two_shapes s;
  const auto body = replaced(s.first_generated, "out[i] = 0.2f * (", "out[i] = 0.2f * __fadd_rn(0.f, ");

  SUBCASE("the kernel's change goes with it; the captured values are the other shape's") {
    const auto moved = transplant_rewrite(s.first_generated, body, s.second_generated);
    CHECK(moved.find("__fadd_rn(0.f, ") != std::string::npos);
    CHECK(moved.find("const int nx = 32;") != std::string::npos);
    CHECK(moved.find("const int nx = 64;") == std::string::npos);
    CHECK(moved.find("stencil2d<<<dim3(2, 2, 1), dim3(16, 16, 1), 0, kb_stream>>>(in, out, nx, ny);") != std::string::npos);
  }
  SUBCASE("a block the rewrite chose is kept; the grid it left as generated is the other shape's") {
    const auto relaunched = replaced(body, "dim3(16, 16, 1), 0, kb_stream", "dim3(32, 8, 1), 0, kb_stream");
    const auto moved = transplant_rewrite(s.first_generated, relaunched, s.second_generated);
    CHECK(moved.find("stencil2d<<<dim3(2, 2, 1), dim3(32, 8, 1), 0, kb_stream>>>") != std::string::npos);
  }
  SUBCASE("a grid computed from the parameters follows the shape; a constant one stays, to be verified") {
    const auto computed = replaced(body, "<<<dim3(4, 3, 1), dim3(16, 16, 1)", "<<<dim3((nx + 31) / 32, (ny + 7) / 8, 1), dim3(32, 8, 1)");
    CHECK(transplant_rewrite(s.first_generated, computed, s.second_generated).find("<<<dim3((nx + 31) / 32, (ny + 7) / 8, 1), dim3(32, 8, 1), 0, kb_stream>>>") !=
          std::string::npos);
    const auto constant = replaced(body, "<<<dim3(4, 3, 1), dim3(16, 16, 1)", "<<<dim3(2, 6, 1), dim3(32, 8, 1)");
    CHECK(transplant_rewrite(s.first_generated, constant, s.second_generated).find("<<<dim3(2, 6, 1), dim3(32, 8, 1)") != std::string::npos);
  }
  SUBCASE("a line the rewrite added is kept as written") {
    const auto added = replaced(body, "  const int nx = 64;\n", "  const int nx = 64;\n  const int kb_tiles = 12;\n");
    const auto moved = transplant_rewrite(s.first_generated, added, s.second_generated);
    CHECK(moved.find("  const int nx = 32;\n  const int kb_tiles = 12;\n") != std::string::npos);
  }
  SUBCASE("a changed line that holds a captured value is refused: it would carry 64 into the other shape") {
    const auto changed = replaced(body, "const int nx = 64;", "const int nx = 64, kb_half = nx / 2;");
    CHECK_THROWS_WITH_AS(transplant_rewrite(s.first_generated, changed, s.second_generated),
                         doctest::Contains("\"const int nx = 64;\", which holds a value of the captured launch"), capture_error);
  }
  SUBCASE("a rewrite without the launcher's marker cannot be moved") {
    CHECK_THROWS_WITH_AS(transplant_rewrite(s.first_generated, body.substr(0, body.find(launcher_marker)), s.second_generated),
                         doctest::Contains("dropped the line"), capture_error);
  }
}

TEST_CASE("shapes whose launchers do not line up, or whose programs differ, are refused") {
  two_shapes s;
  const auto fewer = replaced(s.second_generated, "  const int ny = 24;\n", "");
  CHECK_THROWS_WITH_AS(transplant_rewrite(s.first_generated, s.first_generated, fewer), doctest::Contains("laid out differently"),
                       capture_error);
  const auto other_program = replaced(s.second_generated, "__global__", "__global__ /* edited */");
  CHECK_THROWS_WITH_AS(transplant_rewrite(s.first_generated, s.first_generated, other_program),
                       doctest::Contains("different sources"), capture_error);
}

TEST_CASE("every correct candidate is verified on every shape, and fails naming the shape where it fails") {
  two_shapes s;
  scripted_evaluator inner;
  shape_check check{"stencil2d", "launch 1 of stencil2d.cu 64 48", s.first_generated,
                    {{"stencil2d_shape2", "launch 1 of stencil2d.cu 32 24", s.second_generated}}};
  shape_checking_evaluator eval(inner, check);
  CHECK(eval.describe().find("verified on 2 captured shapes") != std::string::npos);

  SUBCASE("the original passes on both; the other shape only verifies (no timing, no profile)") {
    const auto e = eval.evaluate("stencil2d", s.first_generated, {});
    CHECK(e.correct);
    REQUIRE(inner.calls.size() == 2);
    CHECK(inner.calls[1].first == "stencil2d_shape2");
    CHECK(inner.calls[1].second == s.second_generated);
    CHECK_FALSE(inner.requests[1].time);
    CHECK_FALSE(inner.requests[1].profile);
    CHECK(e.gpu_seconds == 2);  // both shapes' device time
  }
  SUBCASE("a rewrite correct on the first shape and wrong on the other fails with the other's mismatch") {
    inner.failing = "kb_tail_dropped";
    const auto rewrite = replaced(s.first_generated, "out[i] = 0.2f * (", "/* kb_tail_dropped */ out[i] = 0.2f * (");
    const auto e = eval.evaluate("stencil2d", rewrite, {});
    CHECK_FALSE(e.correct);
    CHECK(e.check == "mismatch");
    CHECK(e.reason.find("correct on launch 1 of stencil2d.cu 64 48, but not on launch 1 of stencil2d.cu 32 24: output 0 (out, "
                        "parameter 1): 24 of 768") != std::string::npos);
    CHECK_FALSE(e.runtime_ms);
  }
  SUBCASE("a rewrite that cannot be moved fails with check \"shape\" and why") {
    const auto rewrite = replaced(s.first_generated, "const int ny = 48;", "const int ny = 48 / 1;");
    const auto e = eval.evaluate("stencil2d", rewrite, {});
    CHECK_FALSE(e.correct);
    CHECK(e.check == "shape");
    CHECK(e.reason.find("cannot be checked on launch 1 of stencil2d.cu 32 24") != std::string::npos);
    CHECK(inner.calls.size() == 1);
  }
  SUBCASE("a candidate wrong on the first shape is not run on the others") {
    inner.failing_everywhere = "kb_broken";
    const auto e = eval.evaluate("stencil2d", replaced(s.first_generated, "out[i] = 0.2f", "out[i] = 0.3f /* kb_broken */"), {});
    CHECK_FALSE(e.correct);
    CHECK(e.reason.find("not on") == std::string::npos);
    CHECK(inner.calls.size() == 1);
  }
  SUBCASE("another task passes straight through") {
    inner.failing = "kb_broken";
    const auto e = eval.evaluate("other_task", "kb_broken", {});
    CHECK_FALSE(e.correct);
    CHECK(inner.calls.size() == 1);
  }
}
