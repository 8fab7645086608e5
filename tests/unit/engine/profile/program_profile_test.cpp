// The program's profile from its timeline: reading the collector's lines, aggregating launches
// per kernel, the GPU's busy time as a union over streams, which kernels ncu profiles and in
// how many runs, and the table and editor lines.
#include "engine/profile/program_profile.h"
#include "support/files.h"

#include <doctest/doctest.h>

#include <numeric>
#include <string>

using namespace kblaster::engine;

namespace {

std::string kernel_line(const std::string& mangled, const std::string& name, long start, long end, int stream, int correlation) {
  return R"({"kind":"kernel","mangled":")" + mangled + R"(","name":")" + name + R"(","start":)" + std::to_string(start) +
         R"(,"end":)" + std::to_string(end) + R"(,"device":0,"stream":)" + std::to_string(stream) + R"(,"correlation":)" +
         std::to_string(correlation) + R"(,"grid":[4,1,1],"block":[256,1,1]})" + "\n";
}

constexpr const char* header = R"({"kind":"header","collector":"kblaster_timeline","version":1})" "\n";
constexpr const char* end_line = R"({"kind":"end","dropped":0})" "\n";

std::string fixture(const std::string& path) {
  return kblaster::support::read_file(std::string(KBLASTER_FIXTURES_DIR) + "/" + path);
}

}  // namespace

TEST_CASE("the collector's lines are read: kernels demangled to their short name, copies, the end line") {
  const auto t = parse_timeline(std::string(header) + kernel_line("_Z3addPfi", "add(float*, int)", 1000, 3000, 7, 4) +
                                R"({"kind":"memcpy","copy":"HtoD","bytes":64,"start":0,"end":900,"device":0,"stream":7,"correlation":2})" "\n"
                                R"({"kind":"future_kind","start":1})" "\n" + end_line);
  REQUIRE(t.activities.size() == 2);
  CHECK(t.activities[0].function == "add");
  CHECK(t.activities[0].mangled == "_Z3addPfi");
  CHECK(t.activities[0].duration_ns() == 2000);
  CHECK(t.activities[0].grid[0] == 4);
  CHECK(t.activities[1].kind == activity_kind::memcpy);
  CHECK(t.activities[1].copy == "HtoD");
  CHECK(t.complete);
  CHECK(timeline_warnings(t).empty());
}

TEST_CASE("a timeline cut by a crash keeps what came before and says so; a broken line inside is an error") {
  const std::string cut = std::string(header) + kernel_line("_Z3addPfi", "add(float*, int)", 0, 10, 7, 1) + R"({"kind":"kern)";
  const auto t = parse_timeline(cut);
  CHECK(t.activities.size() == 1);
  CHECK_FALSE(t.complete);
  REQUIRE(timeline_warnings(t).size() == 1);
  CHECK(timeline_warnings(t)[0].find("did not exit") != std::string::npos);
  CHECK_THROWS_AS(parse_timeline(std::string(header) + "not json\n" + end_line), timeline_parse_error);
  CHECK_THROWS_AS(parse_timeline(R"({"kind":"kernel","name":"x"})" "\n"), timeline_parse_error);  // no times
}

TEST_CASE("launches in a loop are one kernel; shares sum to 100 and the largest comes first") {
  std::string text = header;
  text += kernel_line("_Z4initPf", "init(float*)", 0, 100, 7, 1);
  long t = 200;
  for (int i = 0; i < 40; ++i, t += 300) text += kernel_line("_Z4stepPf", "step(float*)", t, t + 250, 7, 2 + i);
  text += end_line;
  const auto p = aggregate_timeline(parse_timeline(text));
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[0].function == "step");
  CHECK(p.kernels[0].launches == 40);
  CHECK(p.kernels[0].total_us == doctest::Approx(10.0));
  CHECK(p.kernels[0].mean_us == doctest::Approx(0.25));
  CHECK(p.kernels[1].launches == 1);
  const double shares = std::accumulate(p.kernels.begin(), p.kernels.end(), 0.0, [](double s, const auto& k) { return s + k.share_pct; });
  CHECK(shares == doctest::Approx(100));
  CHECK(p.kernels[0].share_pct == doctest::Approx(100 * 10.0 / 10.1));
  // Busy: 0.1 us + 40 x 0.25 us; the span runs from 0 to the last launch's end.
  CHECK(p.gpu.busy_us == doctest::Approx(10.1));
  CHECK(p.gpu.span_us == doctest::Approx((200 + 39 * 300 + 250) / 1000.0));
  CHECK(p.gpu.idle_us == doctest::Approx(p.gpu.span_us - 10.1));
}

TEST_CASE("overlapping streams count once in the busy time, and the shares still sum to 100") {
  // Stream 7: [0, 1000) and [2000, 3000); stream 8: [500, 2500), overlapping both; a copy inside.
  const auto p = aggregate_timeline(parse_timeline(
      std::string(header) + kernel_line("_Z1av", "a()", 0, 1000, 7, 1) + kernel_line("_Z1av", "a()", 2000, 3000, 7, 3) +
      kernel_line("_Z1bv", "b()", 500, 2500, 8, 2) +
      R"({"kind":"memcpy","copy":"DtoD","bytes":8,"start":2600,"end":2700,"device":0,"stream":7,"correlation":4})" "\n" + end_line));
  CHECK(p.gpu.busy_us == doctest::Approx(3.0));
  CHECK(p.gpu.span_us == doctest::Approx(3.0));
  CHECK(p.gpu.idle_us == doctest::Approx(0));
  CHECK(p.gpu.kernel_us == doctest::Approx(4.0));  // the sum counts the overlap twice
  CHECK(p.gpu.memcpys == 1);
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[0].share_pct + p.kernels[1].share_pct == doctest::Approx(100));
  CHECK(p.kernels[0].share_pct == doctest::Approx(50));
}

TEST_CASE("two instantiations of a template are two kernels; the editor finds them by the plain name") {
  const auto p = aggregate_timeline(parse_timeline(
      std::string(header) + kernel_line("_Z4tileILi16EEvPf", "void tile<16>(float*)", 0, 300, 7, 1) +
      kernel_line("_Z4tileILi32EEvPf", "void tile<32>(float*)", 400, 500, 7, 2) + end_line));
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[0].function == "tile<16>");
  REQUIRE(p.kernel("tile") != nullptr);
  CHECK(p.kernel("tile")->function == "tile<16>");  // the largest
  CHECK(p.kernel("tile<32>")->total_us == doctest::Approx(0.1));
  CHECK(p.kernel("nothing") == nullptr);
}

TEST_CASE("headroom is 100 over the busier of SM and memory throughput") {
  CHECK(*headroom_of(12.5, 3.0) == doctest::Approx(8));
  CHECK(*headroom_of(std::nullopt, 50.0) == doctest::Approx(2));
  CHECK(*headroom_of(120.0, 10.0) == doctest::Approx(1));
  CHECK_FALSE(headroom_of(std::nullopt, std::nullopt));
  CHECK_FALSE(headroom_of(0.0, 0.0));
}

TEST_CASE("the kernels worth ncu's time: a share of 5 % or more, at most three, and the largest always") {
  program_profile p;
  for (const auto& [name, share] : std::vector<std::pair<std::string, double>>{{"a", 60}, {"b", 20}, {"c", 10}, {"d", 6}, {"e", 4}})
    p.kernels.push_back({name, name + "()", "_Z1" + name + "v", 1, share, share, share, std::nullopt});
  auto chosen = kernels_worth_profiling(p);
  REQUIRE(chosen.size() == 3);
  CHECK(chosen[2]->function == "c");
  chosen = kernels_worth_profiling(p, {.min_share_pct = 15, .max_kernels = 5});
  CHECK(chosen.size() == 2);
  program_profile flat;  // a hundred equal kernels: none reaches 5 %, the first is still profiled
  for (int i = 0; i < 100; ++i) flat.kernels.push_back({"k" + std::to_string(i), "", "", 1, 1, 1, 1, std::nullopt});
  CHECK(kernels_worth_profiling(flat).size() == 1);
}

TEST_CASE("one ncu run reaches the first launch of each chosen kernel, by mangled name") {
  // init once, then a loop of (step, check): step and check are chosen; init is not.
  std::string text = header;
  text += kernel_line("_Z4initv", "init()", 0, 10, 7, 1);
  for (int i = 0; i < 10; ++i) {
    text += kernel_line("_Z4stepv", "step()", 100 + i * 100, 150 + i * 100, 7, 2 + 2 * i);
    text += kernel_line("_Z5checkv", "check()", 150 + i * 100, 160 + i * 100, 7, 3 + 2 * i);
  }
  const auto timeline = parse_timeline(text + end_line);
  const auto p = aggregate_timeline(timeline);
  const auto passes = plan_ncu_passes(timeline, {p.kernel("step"), p.kernel("check")});
  REQUIRE(passes.size() == 1);
  CHECK(passes[0].mangled_regex == "^(_Z4stepv|_Z5checkv)$");
  CHECK(passes[0].launch_count == 2);
  const auto alone = plan_ncu_passes(timeline, {p.kernel("step")});
  REQUIRE(alone.size() == 1);
  CHECK(alone[0].mangled_regex == "^_Z4stepv$");
  CHECK(alone[0].launch_count == 1);
}

TEST_CASE("a kernel first launched after a long loop of another gets an ncu run of its own") {
  std::string text = header;
  for (int i = 0; i < 40; ++i) text += kernel_line("_Z4stepv", "step()", i * 100, i * 100 + 90, 7, 1 + i);
  text += kernel_line("_Z6finishv", "finish()", 5000, 9000, 7, 41);
  const auto timeline = parse_timeline(text + end_line);
  const auto p = aggregate_timeline(timeline);
  const auto passes = plan_ncu_passes(timeline, {p.kernel("finish"), p.kernel("step")});
  REQUIRE(passes.size() == 2);
  CHECK(passes[0].mangled_regex == "^_Z6finishv$");
  CHECK(passes[0].launch_count == 1);
  CHECK(passes[1].functions == std::vector<std::string>{"step"});
  CHECK(plan_ncu_passes(timeline, {}).empty());
}

TEST_CASE("the table, the program's line and a kernel's line in the editor") {
  auto p = aggregate_timeline(parse_timeline(fixture("programs/relu_rowsum/relu_rowsum.timeline.handwritten.jsonl")));
  REQUIRE(p.kernels.size() == 3);
  CHECK(p.kernels[0].function == "relu_rowsum");
  p.kernels[0].headroom = 8.2;
  const std::string table = program_table_text(p);
  INFO(table);
  CHECK(table.find("kernel       launches       total        mean   share  headroom") != std::string::npos);
  CHECK(table.find("relu_rowsum         1    208.6 us    208.6 us   83.2%       ~8x") != std::string::npos);
  CHECK(table.find("scale_bias          8     14.7 us      1.8 us    5.9%         -") != std::string::npos);
  CHECK(table.find("program: GPU busy 0.25 ms, idle 0.04 ms (13 %) over 0.29 ms; 1 copy, 1.4 us") != std::string::npos);
  CHECK(kernel_time_line(p.kernels[0]) == "83% of GPU time · 1 launch · 209 us · headroom ~8x");
  CHECK(kernel_time_line(p.kernels[1]) == "11% of GPU time · 1 launch · 27.4 us");
  CHECK(kernel_time_line(p.kernels[2]) == "6% of GPU time · 8 launches · 14.7 us (1.8 us each)");
  CHECK(program_line(p) == "program: GPU busy 0.25 ms, idle 0.04 ms · 3 kernels");
  const auto j = to_json(p);
  CHECK(j["kernels"][0]["launches"] == 1);
  CHECK(j["gpu"]["busy_us"].get<double>() == doctest::Approx(p.gpu.busy_us));
}
