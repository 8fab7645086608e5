// The program-level Optimize: the plan, and the turns' decisions with the GPU's steps replaced
// (the profile and each kernel's loop are given; the end-to-end timing runs real processes).
#include "engine/program/program_optimize.h"
#include "support/files.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <unistd.h>

using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

kernel_time kernel(const std::string& name, double share, double total_us, std::optional<double> headroom) {
  kernel_time k;
  k.function = k.name = name;
  k.share_pct = share;
  k.total_us = total_us;
  k.mean_us = total_us;
  k.launches = 1;
  k.headroom = headroom;
  return k;
}

program_profile two_kernels() {
  program_profile p;
  p.kernels = {kernel("relu_rowsum", 93.0, 208.6, 8.0), kernel("scale_bias", 6.5, 14.7, 2.0), kernel("tiny", 0.5, 1.1, 4.0)};
  p.gpu.span_us = 260;
  p.gpu.busy_us = 224.4;
  return p;
}

// A program folder with a .cu that defines main().
struct program_folder {
  fs::path dir = fs::temp_directory_path() / ("kblaster-program-test-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(reinterpret_cast<std::uintptr_t>(this)));
  fs::path file = dir / "app.cu";
  program_folder() {
    fs::create_directories(dir);
    kblaster::support::write_file_atomically(file, "__global__ void relu_rowsum() {}\n__global__ void scale_bias() {}\nint main() {}\n");
  }
  ~program_folder() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// The loop of each kernel, as told: `faster` kernels come back rewritten (and re-captured).
struct scripted_loops {
  explicit scripted_loops(std::vector<std::string> kernels_made_faster, std::string marks = "// ")
      : faster(std::move(kernels_made_faster)), comment(std::move(marks)) {}
  std::vector<std::string> faster;
  std::vector<std::string> asked;
  std::string comment = "// ";          // how the rewrite marks itself in the program's text
  std::vector<std::string> seen;        // the program's text each loop was given
  optimize::optimize_outcome operator()(const optimize::optimize_request& q, const optimize::service_events&, std::stop_token) {
    asked.push_back(q.kernel);
    optimize::optimize_outcome o;
    const auto text = kblaster::support::read_file(q.file);
    seen.push_back(text);
    o.result.input_source = "kernel";
    o.result.best_source = "kernel";
    if (std::find(faster.begin(), faster.end(), q.kernel) == faster.end()) return o;
    o.result.best_source = "kernel, faster";
    o.result.best_speedup = 3;
    program_rewrite r;
    r.check = rewrite_check::reproduced;
    r.recaptured_ms = 0.1;
    fs::create_directories(q.out_dir);
    r.edited_path = (q.out_dir / "app.cu").string();
    kblaster::support::write_file_atomically(r.edited_path, text + comment + q.kernel + " rewritten\n");
    o.rewrite = r;
    capture_result c;
    c.capture.time_ms = 0.25;
    o.captured = c;
    return o;
  }
};

// Builds for timing: a program's run time is 80 ms per kernel not yet rewritten over a base of
// 40 ms (or slower ones). Differences of tens of milliseconds, not a few: a process start on a
// loaded machine (ctest -j, a sandbox) costs that much, and smaller gaps made the verdicts flaky.
program_command timed_by_rewrites(const std::string& source, bool slower_rewrites) {
  const auto text = kblaster::support::read_file(source);
  int rewritten = 0;
  for (std::size_t at = 0; (at = text.find(" rewritten", at)) != std::string::npos; ++at) ++rewritten;
  const double seconds = slower_rewrites ? 0.1 + 0.1 * rewritten : 0.2 - 0.08 * rewritten;
  return {{"/bin/sh", "-c", "sleep " + std::to_string(seconds)}, "", {}};
}

program_steps steps_with(scripted_loops& loops, bool slower_rewrites = false) {
  program_steps s;
  s.profile = [](const program_optimize_request&) {
    profile_outcome p;
    p.program = two_kernels();
    return p;
  };
  s.optimize_kernel = std::ref(loops);
  s.build = [slower_rewrites](const std::string& source, const capture_request&, const fs::path&, bool, std::stop_token) {
    return timed_by_rewrites(source, slower_rewrites);
  };
  s.measure = measure_end_to_end;
  return s;
}

program_optimize_request request_for(const program_folder& f) {
  program_optimize_request r;
  r.base.file = f.file.string();
  r.out_dir = f.dir / "out";
  r.end_to_end.min_pairs = 8;
  r.end_to_end.budget = std::chrono::duration<double>(0);
  return r;
}

}  // namespace

TEST_CASE("the plan ranks kernels by the GPU time they can give back, and bounds the program") {
  const auto plan = plan_program(two_kernels());
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[0].function == "relu_rowsum");
  CHECK(plan.kernels[0].bound_saving_us == doctest::Approx(208.6 * 7 / 8));
  CHECK(plan.kernels[1].function == "scale_bias");
  REQUIRE(plan.left_out.size() == 1);
  CHECK(plan.left_out[0].find("tiny: 0.5% of GPU time, below 5%") == 0);
  CHECK(plan.amdahl_bound == doctest::Approx(260 / (260 - 208.6 * 7 / 8 - 14.7 / 2)));
  const auto text = plan_text(plan);
  CHECK(text.find("plan: relu_rowsum (93% of GPU time, headroom ~8.0x") == 0);
  CHECK(text.find("Amdahl bound: the program's GPU span at most 3.7") != std::string::npos);
}

TEST_CASE("a kernel near its speed of light ranks below a smaller one far from it") {
  program_profile p;
  p.kernels = {kernel("near_sol", 60, 600, 1.1), kernel("far", 40, 400, 10)};
  p.gpu.span_us = 1000;
  const auto plan = plan_program(p);
  REQUIRE(plan.kernels.size() == 2);
  CHECK(plan.kernels[0].function == "far");
  // Without a headroom, its whole time is the bound.
  p.kernels = {kernel("unprofiled", 60, 600, std::nullopt)};
  CHECK(plan_program(p).kernels[0].bound_saving_us == 600);
}

TEST_CASE("the budget is split by what each kernel can give, at least one candidate each") {
  const auto plan = plan_program(two_kernels());
  const auto split = split_budget(20, plan);
  REQUIRE(split.size() == 2);
  CHECK(split[0] == 19);
  CHECK(split[1] == 1);
  CHECK(split_budget(0, plan) == std::vector<int>{0, 0});
}

TEST_CASE("the program: the dominant kernel first, a rewrite kept only when the program got faster, the total measured") {
  program_folder f;
  scripted_loops loops{{"relu_rowsum"}};
  std::vector<std::string> said;
  optimize::service_events events;
  events.say = [&](const std::string& l) { said.push_back(l); };
  const auto out = optimize_program(request_for(f), events, {}, steps_with(loops));
  CHECK(loops.asked == std::vector<std::string>{"relu_rowsum", "scale_bias"});
  REQUIRE(out.turns.size() == 2);
  CHECK(out.turns[0].status == "kept");
  CHECK(out.turns[0].kept);
  CHECK(out.turns[0].harness_speedup == 3);
  REQUIRE(out.turns[0].in_program_speedup);
  CHECK(*out.turns[0].in_program_speedup == doctest::Approx(2.5));
  CHECK(out.turns[1].status == "no faster kernel found");
  CHECK(out.improved());
  CHECK(out.final_text.find("// relu_rowsum rewritten") != std::string::npos);
  REQUIRE(out.total);
  CHECK(out.total->faster());
  CHECK(out.total->speedup.median > 1.2);
  CHECK(fs::exists(f.dir / "out" / "program.diff"));
  CHECK(fs::exists(f.dir / "out" / "program-report.json"));
  CHECK(kblaster::support::read_file(f.file).find("rewritten") == std::string::npos);  // not applied
  // The plan was said before any kernel was optimized.
  REQUIRE(said.size() > 2);
  CHECK(said[1].find("plan: relu_rowsum") == 0);
  CHECK(program_outcome_text(out).find("end to end (original against optimized") != std::string::npos);

  SUBCASE("the same request again reads the decisions back: nothing is optimized or measured twice") {
    scripted_loops never{{}};
    auto steps = steps_with(never);
    int measured = 0;
    steps.measure = [&](const program_command& a, const program_command& b, const end_to_end_options& o,
                        const std::function<void(const std::string&)>& p, std::stop_token s) {
      ++measured;
      return measure_end_to_end(a, b, o, p, s);
    };
    const auto again = optimize_program(request_for(f), {}, {}, steps);
    CHECK(never.asked.empty());
    CHECK(measured == 1);  // the total only
    REQUIRE(again.turns.size() == 2);
    CHECK(again.turns[0].kept);
    CHECK(again.turns[0].end_to_end->ok());
    CHECK(again.final_text == out.final_text);
  }
}

TEST_CASE("a rewrite that makes the program slower end to end is not kept") {
  program_folder f;
  scripted_loops loops{{"relu_rowsum", "scale_bias"}};
  auto r = request_for(f);
  r.apply = true;
  const auto out = optimize_program(r, {}, {}, steps_with(loops, /*slower_rewrites=*/true));
  REQUIRE(out.turns.size() == 2);
  CHECK(out.turns[0].status == "not faster end to end");
  CHECK_FALSE(out.turns[0].kept);
  CHECK(out.turns[0].harness_speedup == 3);  // the harness said 3x; the program said otherwise
  CHECK(out.turns[1].status == "not faster end to end");
  CHECK_FALSE(out.improved());
  CHECK_FALSE(out.total);
  CHECK(out.applied_to.empty());
  CHECK(kblaster::support::read_file(f.file).find("rewritten") == std::string::npos);
}

TEST_CASE("apply writes the faster program over the file and keeps the original") {
  program_folder f;
  scripted_loops loops{{"relu_rowsum", "scale_bias"}};
  auto r = request_for(f);
  r.apply = true;
  const auto out = optimize_program(r, {}, {}, steps_with(loops));
  CHECK(out.turns[0].kept);
  CHECK(out.turns[1].kept);  // on top of the first rewrite
  const auto now = kblaster::support::read_file(f.file);
  CHECK(now.find("// relu_rowsum rewritten") != std::string::npos);
  CHECK(now.find("// scale_bias rewritten") != std::string::npos);
  CHECK(out.applied_to == f.file);
  CHECK(kblaster::support::read_file(out.applied_backup) == out.original_text);
}

TEST_CASE("not a program kblaster builds: refused before anything runs") {
  program_folder f;
  kblaster::support::write_file_atomically(f.file, "__global__ void k() {}\n");
  scripted_loops loops{{}};
  CHECK_THROWS_AS(optimize_program(request_for(f), {}, {}, steps_with(loops)), optimize::optimize_refusal);
  CHECK(loops.asked.empty());
}

TEST_CASE("a program the user's own build makes: each turn's loop and timing see the program as kept so far, and the file is put back") {
  // The "program" is a shell script its "build" copies into place: what a rewrite changes is how
  // long it sleeps, so the end-to-end timing (real processes, in the sandbox where there is one)
  // sees what was kept.
  program_folder f;
  kblaster::support::write_file_atomically(f.file, "#!/bin/sh\n# relu_rowsum scale_bias\nsleep 0.20\n");
  const auto original = kblaster::support::read_file(f.file);
  scripted_loops loops{{"relu_rowsum", "scale_bias"}, "# "};
  auto steps = steps_with(loops);
  steps.build = default_program_steps().build;
  // The script sleeps 0.20 s less 0.08 s for each rewrite in it.
  auto r = request_for(f);
  r.base.program.run.command = {"./app"};
  r.base.program.run.build = {"/bin/sh", "-c",
                              "n=$(grep -c rewritten app.cu); printf '#!/bin/sh\\nsleep 0.%02d\\n' $((20 - 8 * n)) > app && chmod +x app"};
  r.base.program.run.cwd = f.dir.string();
  const auto out = optimize_program(r, {}, {}, steps);
  REQUIRE(out.turns.size() == 2);
  CHECK(out.turns[0].kept);
  CHECK(out.turns[1].kept);
  // Turn 2's loop ran on the program with turn 1's rewrite in it, in the user's own file.
  REQUIRE(loops.seen.size() == 2);
  CHECK(loops.seen[0] == original);
  CHECK(loops.seen[1].find("relu_rowsum rewritten") != std::string::npos);
  // Put back whatever happened: the user's text, and their build run again on it.
  CHECK(kblaster::support::read_file(f.file) == original);
  CHECK(kblaster::support::read_file(f.dir / "app").find("sleep 0.20") != std::string::npos);
  REQUIRE(out.total);
  CHECK(out.total->faster());
  CHECK(out.total->speedup.median > 1.5);
}
