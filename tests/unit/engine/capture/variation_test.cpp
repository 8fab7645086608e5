// An original kernel that varies from run to run (the agent's second run, docs/capture-format.md):
// reading the second run's contents, widening the tolerance of the varying output only, refusing
// what no tolerance covers, and the two runs compared by dtype.
#include "engine/capture/capture_task.h"
#include "engine/capture/capture_variation.h"
#include "engine/capture/kernel_capture.h"
#include "engine/capture/program_edit.h"
#include "engine/task/task.h"
#include "support/files.h"
#include "tests/unit/engine/capture/capture_fixture.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using namespace kblaster::engine;
namespace fs = std::filesystem;
using kblaster::support::read_file;
using kblaster::support::write_file_atomically;
using kblaster::test::fixture_copy;

namespace {

// The program the synthetic capture below is of: float sums built with atomics (which vary), a
// plain float output and int counts.
const char* const accumulate_source =
    "__global__ void accumulate(const float* in, float* sums, float* out, int* counts, int n) {\n"
    "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) { atomicAdd(&sums[i % 64], in[i]); out[i] = 2 * in[i]; atomicAdd(&counts[i % 64], 1); }\n"
    "}\n"
    "int main() { return 0; }\n";

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> values_of(const std::string& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// A capture of `accumulate`, built from the recorded stencil2d capture (its device, launch and
// memory): allocation 0 `in` (its input), 1 `sums` (its output: float32, varies between the two
// runs at elements 70 and 90), 2 `out` (its output again: float32, the same in both runs), 3
// `counts` (int32[64], written, the same in both runs).
struct varying_capture {
  fixture_copy f{"stencil2d"};
  double max_diff = 0;       // how far the second run's sums[70] is from the first's, in float32
  double needed_atol = 0;    // four times that, less what float32's rtol covers at that value

  varying_capture() {
    const auto& d = f.dir;
    fs::copy_file(d / "alloc-1.before.bin", d / "alloc-2.before.bin");
    fs::copy_file(d / "alloc-1.after.bin", d / "alloc-2.after.bin");
    std::vector<std::int32_t> counts(64);
    write_file_atomically(d / "alloc-3.before.bin", bytes_of(counts));
    for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = static_cast<std::int32_t>(48 + i % 3);
    write_file_atomically(d / "alloc-3.after.bin", bytes_of(counts));
    vary_sums(1e-4f);

    auto j = f.json();
    const auto pointer = [](std::size_t allocation) {
      return nlohmann::json{{"at", 0}, {"allocation", allocation}, {"offset", 0}};
    };
    j["kernel"]["requested"] = "accumulate";
    j["kernel"]["name"] = "accumulate(float const*, float*, float*, int*, int)";
    j["params"] = nlohmann::json::array();
    for (std::size_t p = 0; p < 4; ++p)
      j["params"].push_back({{"offset", 8 * p}, {"size", 8}, {"bytes", "0000000a00700000"}, {"pointers", {pointer(p)}}});
    j["params"].push_back({{"offset", 32}, {"size", 4}, {"bytes", "000c0000"}, {"pointers", nlohmann::json::array()}});
    const auto alloc = [](int i, std::uint64_t bytes, bool written, bool varies) {
      const std::string stem = "alloc-" + std::to_string(i);
      nlohmann::json a{{"index", i}, {"bytes", bytes}, {"before", stem + ".before.bin"}, {"written", written}, {"varies", varies}};
      if (written) a["after"] = stem + ".after.bin";
      if (varies) a["again"] = stem + ".again.bin";
      return a;
    };
    j["allocations"] = {alloc(0, 12288, false, false), alloc(1, 12288, true, true), alloc(2, 12288, true, false),
                        alloc(3, 256, true, false)};
    j["determinism"] = {{"checked", true}};
    f.write(j);
  }

  // The second run's sums: the first's with sums[70] moved by `shift` and sums[90] by a third of it.
  void vary_sums(float shift) {
    auto sums = values_of<float>(read_file(f.dir / "alloc-1.after.bin"));
    const float first70 = sums[70];
    sums[70] += shift;
    sums[90] -= shift / 3;
    max_diff = std::fabs(static_cast<double>(sums[70]) - static_cast<double>(first70));
    needed_atol = 4 * max_diff - 1e-4 * std::fabs(static_cast<double>(first70));
    write_file_atomically(f.dir / "alloc-1.again.bin", bytes_of(sums));
  }

  nlohmann::json json() const { return f.json(); }
  void write(const nlohmann::json& j) const { f.write(j); }
  std::string dir() const { return f.dir.string(); }
  capture_task task() const { return write_capture_task(read_capture(dir()), accumulate_source, "launch 0 of accumulate.cu"); }
  nlohmann::json task_json(const capture_task& t) const { return nlohmann::json::parse(read_file(fs::path(t.dir) / "task.json")); }
};

std::string read_error(const std::string& dir) {
  try {
    read_capture(dir);
  } catch (const capture_error& e) {
    return e.what();
  }
  return "";
}

std::string task_error_of(const varying_capture& c) {
  try {
    c.task();
  } catch (const capture_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a capture says which allocations vary between the agent's two runs") {
  varying_capture c;
  const auto capture = read_capture(c.dir());
  REQUIRE(capture.determinism);
  CHECK(capture.determinism->checked);
  REQUIRE(capture.allocations.size() == 4);
  CHECK(capture.allocations[1].varies);
  CHECK(capture.allocations[1].again == (c.f.dir / "alloc-1.again.bin").string());
  CHECK_FALSE(capture.allocations[2].varies);
  CHECK(capture.allocations[2].again.empty());
  // A capture from an agent that ran the launch once says nothing, and reads.
  auto j = c.json();
  j.erase("determinism");
  for (auto& a : j["allocations"]) {
    a.erase("varies");
    a.erase("again");
  }
  c.write(j);
  const auto once = read_capture(c.dir());
  CHECK_FALSE(once.determinism);
  CHECK_FALSE(once.allocations[1].varies);
  CHECK(once.allocations[1].again.empty());
}

TEST_CASE("the tolerance widens on the varying output only, and the task says so") {
  varying_capture c;
  REQUIRE(c.needed_atol > 3e-4);  // over float32's 1e-4
  const auto written = c.task();
  const auto spec = c.task_json(written);
  REQUIRE(spec["outputs"].size() == 3);
  REQUIRE(spec["outputs"][0].contains("atol"));
  CHECK(spec["outputs"][0]["atol"].get<double>() == doctest::Approx(c.needed_atol));
  CHECK_FALSE(spec["outputs"][0].contains("rtol"));  // the runs differ by little in relative L2
  CHECK_FALSE(spec["outputs"][1].contains("atol"));  // out: the same in both runs
  CHECK_FALSE(spec["outputs"][2].contains("atol"));  // counts
  CHECK_FALSE(spec.contains("tolerance"));           // nothing task-wide

  const auto task = load_task(written.dir);
  CHECK(tolerance_for("float32", task, 0).atol == doctest::Approx(c.needed_atol));
  CHECK(tolerance_for("float32", task, 0).rtol == doctest::Approx(1e-4));
  CHECK(tolerance_for("float32", task, 1).atol == doctest::Approx(1e-4));
  CHECK(tolerance_for("int32", task, 2).atol == 0);

  REQUIRE(written.notes.size() == 1);
  const auto& note = written.notes[0];
  INFO(note);
  CHECK(note.find("the original varies between two runs on output 0 (sums, parameter 1)") != std::string::npos);
  CHECK(note.find("2 of 3072 elements differ") != std::string::npos);
  CHECK(note.find("by up to 1.0e-04") != std::string::npos);
  CHECK(note.find("its atol is widened to 3.6e-04 for that output only") != std::string::npos);
}

TEST_CASE("a variation within the dtype's tolerance leaves it as it is, and says so") {
  varying_capture c;
  c.vary_sums(2e-7f);
  const auto written = c.task();
  CHECK_FALSE(c.task_json(written)["outputs"][0].contains("atol"));
  REQUIRE(written.notes.size() == 1);
  CHECK(written.notes[0].find("within float32's tolerance (atol 1.0e-04), which stays") != std::string::npos);
}

TEST_CASE("an output that varies where no tolerance applies is refused, naming the kernel and the output") {
  varying_capture c;
  SUBCASE("integers, compared bit for bit") {
    auto counts = values_of<std::int32_t>(read_file(c.f.dir / "alloc-3.after.bin"));
    counts[5] += 1;
    write_file_atomically(c.f.dir / "alloc-3.again.bin", bytes_of(counts));
    auto j = c.json();
    j["allocations"][3]["varies"] = true;
    j["allocations"][3]["again"] = "alloc-3.again.bin";
    c.write(j);
    const auto error = task_error_of(c);
    INFO(error);
    CHECK(error.find("the original accumulate(float const*, float*, float*, int*, int) gives different results from run to run") !=
          std::string::npos);
    CHECK(error.find("1 of 64 elements of output 2 (counts, parameter 3) (allocation 3)") != std::string::npos);
    CHECK(error.find("first at [5]: 50, then 51") != std::string::npos);
    CHECK(error.find("int32 is compared bit for bit") != std::string::npos);
    CHECK_FALSE(fs::exists(c.f.dir / "task" / "task.json"));  // no task is left behind
  }
  SUBCASE("a NaN in one run only") {
    auto sums = values_of<float>(read_file(c.f.dir / "alloc-1.again.bin"));
    sums[12] = std::nanf("");
    write_file_atomically(c.f.dir / "alloc-1.again.bin", bytes_of(sums));
    const auto error = task_error_of(c);
    INFO(error);
    CHECK(error.find("element [12] of output 0 (sums, parameter 1)") != std::string::npos);
    CHECK(error.find("then nan") != std::string::npos);
  }
}

TEST_CASE("the second run's record is checked like the rest of the capture") {
  varying_capture c;
  SUBCASE("a second run's file of the wrong size") {
    fs::resize_file(c.f.dir / "alloc-1.again.bin", 100);
    CHECK(read_error(c.dir()).find("holds 100 bytes") != std::string::npos);
  }
  SUBCASE("a second run's file outside the folder") {
    auto j = c.json();
    j["allocations"][1]["again"] = "../alloc-1.again.bin";
    c.write(j);
    CHECK(read_error(c.dir()).find("not a file name inside the capture folder") != std::string::npos);
  }
  SUBCASE("varying, without the file") {
    auto j = c.json();
    j["allocations"][1].erase("again");
    c.write(j);
    CHECK(read_error(c.dir()).find("'again' is missing") != std::string::npos);
  }
  SUBCASE("a file without 'varies'") {
    auto j = c.json();
    j["allocations"][1]["varies"] = false;
    c.write(j);
    CHECK(read_error(c.dir()).find("'varies' is not true") != std::string::npos);
  }
  SUBCASE("'varies' that is not a boolean") {
    auto j = c.json();
    j["allocations"][1]["varies"] = "yes";
    c.write(j);
    CHECK(read_error(c.dir()).find("'varies' must be true or false") != std::string::npos);
  }
  SUBCASE("varying on an allocation the launch did not write") {
    auto j = c.json();
    j["allocations"][0]["varies"] = true;
    j["allocations"][0]["again"] = "alloc-1.again.bin";
    c.write(j);
    CHECK(read_error(c.dir()).find("not 'written'") != std::string::npos);
  }
  SUBCASE("varying, in a capture that says the launch ran once") {
    auto j = c.json();
    j["determinism"] = {{"checked", false}, {"reason", "the second run was turned off (KBLASTER_CAPTURE_REPEAT=0)"}};
    c.write(j);
    CHECK(read_error(c.dir()).find("was not run twice") != std::string::npos);
  }
  SUBCASE("a determinism check without its outcome") {
    auto j = c.json();
    j["determinism"] = {{"checked", "yes"}};
    c.write(j);
    CHECK(read_error(c.dir()).find("'checked' must be true or false") != std::string::npos);
    j["determinism"] = {{"checked", false}};
    c.write(j);
    CHECK(read_error(c.dir()).find("'reason' is missing") != std::string::npos);
  }
}

TEST_CASE("a capture whose determinism was not checked says so in the task's notes") {
  varying_capture c;
  auto j = c.json();
  j["determinism"] = {{"checked", false}, {"reason", "the second run of accumulate failed: CUDA_ERROR_LAUNCH_FAILED"}};
  for (auto& a : j["allocations"]) {
    a.erase("varies");
    a.erase("again");
  }
  c.write(j);
  const auto written = c.task();
  CHECK_FALSE(c.task_json(written)["outputs"][0].contains("atol"));
  REQUIRE(written.notes.size() == 1);
  CHECK(written.notes[0].find("was not checked (the second run of accumulate failed: CUDA_ERROR_LAUNCH_FAILED)") != std::string::npos);
}

TEST_CASE("a re-capture is compared with the original's widened tolerance where the original varies") {
  varying_capture want;
  const auto expected = read_capture(want.dir());
  const auto views = want.task().views;
  fixture_copy got("stencil2d");
  for (const auto& name : {"alloc-2.before.bin", "alloc-2.after.bin", "alloc-3.before.bin", "alloc-3.after.bin", "capture.json"})
    fs::copy_file(want.f.dir / name, got.dir / name, fs::copy_options::overwrite_existing);
  auto j = got.json();
  for (auto& a : j["allocations"]) {
    a["varies"] = false;
    a.erase("again");
  }
  got.write(j);
  const auto set = [&](const char* file, std::size_t index, float shift) {
    auto values = values_of<float>(read_file(want.f.dir / file));
    values[index] += shift;
    write_file_atomically(got.dir / file, bytes_of(values));
  };
  // Just beyond float32's tolerance at element 40 (atol 1e-4 + rtol 1e-4 × |value|), and within
  // the widened one (atol 3.6e-4).
  const float y = values_of<float>(read_file(want.f.dir / "alloc-1.after.bin"))[40];
  const float shift = 1e-4f + 1e-4f * std::fabs(y) + 1e-5f;
  set("alloc-1.after.bin", 40, shift);
  CHECK_FALSE(compare_capture_outputs(expected, read_capture(got.dir.string()), views));
  set("alloc-2.after.bin", 40, shift);  // `out` holds the same values and does not vary: float32's tolerance
  const auto m = compare_capture_outputs(expected, read_capture(got.dir.string()), views);
  REQUIRE(m);
  CHECK(m->name == "out, parameter 2");
  CHECK(m->element == 40);
  set("alloc-2.after.bin", 40, 0);
  set("alloc-1.after.bin", 40, 1e-3f);  // beyond the widened tolerance too
  const auto sums = compare_capture_outputs(expected, read_capture(got.dir.string()), views);
  REQUIRE(sums);
  CHECK(sums->name == "sums, parameter 1");
}

TEST_CASE("two runs compare by the allocation's dtype") {
  SUBCASE("float16 and bfloat16, by value") {
    const std::vector<std::uint16_t> one_half{0x3C00}, next_half{0x3C01};  // 1 and 1 + 2^-10
    const auto h = compare_runs(bytes_of(one_half), bytes_of(next_half), "float16");
    CHECK(h.differing == 1);
    CHECK(h.max_abs == doctest::Approx(std::ldexp(1.0, -10)));
    CHECK(h.within_tolerance);
    const std::vector<std::uint16_t> one_bf{0x3F80, 0x4000}, next_bf{0x3F81, 0x4000};  // 1 and 1 + 2^-7; 2
    const auto b = compare_runs(bytes_of(one_bf), bytes_of(next_bf), "bfloat16");
    CHECK(b.differing == 1);
    CHECK(b.max_abs == doctest::Approx(std::ldexp(1.0, -7)));
    CHECK(b.relative_l2 == doctest::Approx(std::ldexp(1.0, -7) / std::sqrt(5.0)));
  }
  SUBCASE("float64") {
    const auto d = compare_runs(bytes_of(std::vector<double>{1.0, 2.0, 3.0}), bytes_of(std::vector<double>{1.0, 2.5, 3.0}), "float64");
    CHECK(d.differing == 1);
    CHECK(d.first == 1);
    CHECK(d.max_abs == doctest::Approx(0.5));
  }
  SUBCASE("signed zeros and NaN payloads differ in bits, not in value") {
    std::uint32_t nan1 = 0x7FC00000u, nan2 = 0x7FC00001u;
    float a[3] = {0.f, 1.f, 0.f}, b[3] = {-0.f, 1.f, 0.f};
    std::memcpy(&a[2], &nan1, 4);
    std::memcpy(&b[2], &nan2, 4);
    const auto v = compare_runs(std::string(reinterpret_cast<char*>(a), 12), std::string(reinterpret_cast<char*>(b), 12), "float32");
    CHECK(v.differing == 2);
    CHECK(v.max_abs == 0);
    CHECK(v.within_tolerance);
  }
  SUBCASE("an infinity in one run only, and integers, are beyond any tolerance") {
    const auto inf = compare_runs(bytes_of(std::vector<float>{1.f, 2.f}), bytes_of(std::vector<float>{1.f, INFINITY}), "float32");
    CHECK_FALSE(inf.within_tolerance);
    CHECK(inf.first_nonfinite == 1);
    CHECK(inf.nonfinite_values == "2, then inf");
    const auto ints = compare_runs(bytes_of(std::vector<std::int64_t>{7, 8}), bytes_of(std::vector<std::int64_t>{7, 9}), "int64");
    CHECK_FALSE(ints.within_tolerance);
    CHECK(ints.first_value == "8");
    CHECK(ints.second_value == "9");
  }
}

TEST_CASE("the widened tolerance: four times what the runs showed, less what rtol covers, never below the dtype's") {
  // 1000 and 1000.0625: 4 × 0.0625 less 1e-4 × 1000; 0 and 0.001: all of 4 × 0.001.
  const auto big = compare_runs(bytes_of(std::vector<float>{1000.f, 0.f}), bytes_of(std::vector<float>{1000.0625f, 0.f}), "float32");
  CHECK(big.needed_atol == doctest::Approx(0.25 - 0.1));
  CHECK(varying_tolerance("float32", big).atol == doctest::Approx(0.15));
  const auto small = compare_runs(bytes_of(std::vector<float>{0.f}), bytes_of(std::vector<float>{1e-3f}), "float32");
  CHECK(small.needed_atol == doctest::Approx(4e-3));
  run_variation v;
  v.needed_atol = 1e-6;
  CHECK(varying_tolerance("float32", v).atol == doctest::Approx(1e-4));  // float32's own
  v.relative_l2 = 1e-5;
  CHECK(varying_tolerance("float32", v).rtol == doctest::Approx(1e-4));  // 4e-5: within the harness's relative-L2 floor of 1e-3
  v.relative_l2 = 1e-3;
  CHECK(varying_tolerance("float32", v).rtol == doctest::Approx(4e-4));  // its relative-L2 limit becomes 10 × 4e-4
  v.relative_l2 = 0.01;
  CHECK(varying_tolerance("float16", v).rtol == doctest::Approx(1e-2));  // 4 × 0.01 is within float16's max(10 × 1e-2, 1e-3)
  CHECK(varying_tolerance("float16", v).atol == doctest::Approx(1e-2));
}

TEST_CASE("a recorded capture of float atomics varies, within float32's tolerance") {
  fixture_copy f("bin_sum");  // bin_sum.cu 16384 32, recorded on the H100
  const auto capture = read_capture(f.dir.string());
  REQUIRE(capture.determinism);
  CHECK(capture.determinism->checked);
  REQUIRE(capture.allocations.size() == 2);
  CHECK_FALSE(capture.allocations[0].varies);
  CHECK(capture.allocations[1].varies);
  const auto v = variation_of(capture.allocations[1], "float32");
  CHECK(v.elements == 32);
  CHECK(v.differing > 0);
  CHECK(v.max_abs > 0);
  CHECK(v.max_abs < 1e-4);
  const auto written = write_capture_task(capture, kblaster::test::capture_program("bin_sum"), "launch 0 of bin_sum.cu 16384 32");
  CHECK_FALSE(nlohmann::json::parse(read_file(fs::path(written.dir) / "task.json"))["outputs"][0].contains("atol"));
  REQUIRE(written.notes.size() == 1);
  CHECK(written.notes[0].find("the original varies between two runs on output 0 (sums, parameter 1)") != std::string::npos);
  CHECK(written.notes[0].find("which stays") != std::string::npos);
}
