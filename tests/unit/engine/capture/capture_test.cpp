// Captures recorded on an H100 (tests/fixtures/captures/): reading them, refusing damaged ones,
// the allocations' dtypes, the generated launcher and the task written from them.
#include "engine/capture/capture_task.h"
#include "engine/capture/kernel_capture.h"
#include "engine/capture/program_edit.h"
#include "engine/task/task.h"
#include "support/files.h"
#include "tests/unit/engine/capture/capture_fixture.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <string>

using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

const fs::path& fixtures = kblaster::test::capture_fixtures;
using kblaster::test::fixture_copy;
using kblaster::test::replaced;

std::string program(const std::string& name) { return kblaster::test::capture_program(name); }

std::string error_of(const fs::path& dir) {
  try {
    read_capture(dir.string());
  } catch (const capture_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a recorded capture reads back with its launch, parameters and allocations") {
  const auto c = read_capture((fixtures / "stencil2d").string());
  CHECK_FALSE(c.refusal);
  CHECK(c.requested == "stencil2d");
  CHECK(c.name == "stencil2d(float const*, float*, int, int)");
  CHECK(c.launch == 1);
  CHECK(c.grid == std::array<unsigned, 3>{4, 3, 1});
  CHECK(c.block == std::array<unsigned, 3>{16, 16, 1});
  CHECK(c.device_name.find("H100") != std::string::npos);
  REQUIRE(c.params.size() == 4);
  CHECK(c.params[2].size == 4);
  CHECK(c.params[2].bytes == std::vector<unsigned char>{64, 0, 0, 0});  // nx
  REQUIRE(c.params[1].pointers.size() == 1);
  CHECK(c.params[1].pointers[0].allocation == 1);
  REQUIRE(c.allocations.size() == 2);
  CHECK_FALSE(c.allocations[0].written);  // the sweep's input
  CHECK(c.allocations[1].written);
  CHECK(c.allocations[1].bytes == 64 * 48 * 4);
  CHECK(c.total_bytes() == 2 * 64 * 48 * 4);
}

TEST_CASE("a damaged capture is refused with what is wrong, never read half") {
  SUBCASE("a truncated allocation") {
    fixture_copy f("stencil2d");
    fs::resize_file(f.dir / "alloc-1.after.bin", 100);
    CHECK(error_of(f.dir).find("holds 100 bytes") != std::string::npos);
  }
  SUBCASE("a pointer into an allocation that is not there") {
    fixture_copy f("stencil2d");
    auto j = f.json();
    j["params"][0]["pointers"][0]["allocation"] = 7;
    f.write(j);
    CHECK(error_of(f.dir).find("names an allocation that is not there") != std::string::npos);
  }
  SUBCASE("a pointer past its allocation's end") {
    fixture_copy f("stencil2d");
    auto j = f.json();
    j["params"][0]["pointers"][0]["offset"] = 1u << 20;
    f.write(j);
    CHECK(error_of(f.dir).find("outside its allocation") != std::string::npos);
  }
  SUBCASE("a file outside the folder") {
    fixture_copy f("stencil2d");
    auto j = f.json();
    j["allocations"][0]["before"] = "../../etc/passwd";
    f.write(j);
    CHECK(error_of(f.dir).find("not a file name inside the capture folder") != std::string::npos);
  }
  SUBCASE("parameter bytes that are not the parameter's size") {
    fixture_copy f("stencil2d");
    auto j = f.json();
    j["params"][2]["bytes"] = "400000";
    f.write(j);
    CHECK(error_of(f.dir).find("does not hold 'size' bytes") != std::string::npos);
  }
  SUBCASE("a number too large for any integer (found by fuzz_capture)") {
    fixture_copy f("stencil2d");
    kblaster::support::write_file_atomically(f.dir / "capture.json", "{\"format\": 1220e0933}");
    CHECK(error_of(f.dir).find("not JSON") != std::string::npos);
  }
  SUBCASE("not JSON") {
    fixture_copy f("stencil2d");
    kblaster::support::write_file_atomically(f.dir / "capture.json", "{\"format\": 1, ");
    CHECK(error_of(f.dir).find("not JSON") != std::string::npos);
  }
}

TEST_CASE("a refusal reads as one, and writing its task gives the agent's reason") {
  fixture_copy f("stencil2d");
  f.write({{"format", 1},
           {"kernel", {{"requested", "scale"}, {"name", "scale(float*, float, int)"}}},
           {"refusal", {{"reason", "managed_memory"}, {"message", "parameter 0 of scale(float*, float, int) points into managed memory"}}}});
  const auto c = read_capture(f.dir.string());
  REQUIRE(c.refusal);
  CHECK(c.refusal->reason == "managed_memory");
  CHECK_THROWS_WITH_AS(write_capture_task(c, program("managed"), "launch 0 of managed.cu"),
                       doctest::Contains("managed memory"), capture_error);
}

TEST_CASE("allocations take their dtype from the parameters that point into them") {
  const auto c = read_capture((fixtures / "histogram").string());
  const auto symbols = locate_cuda_symbols(program("histogram"));
  const auto* k = captured_kernel_symbol(symbols, c);
  REQUIRE(k);
  const auto views = allocation_views(c, *k);
  REQUIRE(views.size() == 2);
  CHECK(views[0].name == "data, parameter 0");
  CHECK(views[0].dtype == "uint8");  // compared bit-exactly
  CHECK(views[0].elements == 20000);
  CHECK(views[0].output == -1);
  CHECK(views[1].name == "bins, parameter 1");
  CHECK(views[1].dtype == "int32");
  CHECK(views[1].elements == 256);
  CHECK(views[1].output == 0);
}

TEST_CASE("the launcher replays the captured launch with the captured scalars") {
  const auto c = read_capture((fixtures / "stencil2d").string());
  const auto symbols = locate_cuda_symbols(program("stencil2d"));
  const auto* k = captured_kernel_symbol(symbols, c);
  REQUIRE(k);
  const auto text = generate_launcher(c, *k, "launch 1 of stencil2d.cu 64 48 3");
  CHECK(text.find("if (kb_n_in != 2 || kb_n_out != 1) return 1;") != std::string::npos);
  // What the launch writes starts from the program's contents, put there by the harness outside the
  // timed region: the launcher copies nothing.
  CHECK(text.find("cudaMemcpy") == std::string::npos);
  CHECK(text.find("char* kb_alloc1 = static_cast<char*>(kb_out[0].data);") != std::string::npos);
  CHECK(text.find("float const* in = reinterpret_cast<float const*>(kb_alloc0);") != std::string::npos);
  CHECK(text.find("const int nx = 64;") != std::string::npos);
  CHECK(text.find("const int ny = 48;") != std::string::npos);
  CHECK(text.find("stencil2d<<<dim3(4, 3, 1), dim3(16, 16, 1), 0, kb_stream>>>(in, out, nx, ny);") != std::string::npos);
}

TEST_CASE("a pointer inside a by-value struct is moved to the replay's memory") {
  fixture_copy f("stencil2d");
  auto j = f.json();
  // One 24-byte struct {const float* in; float* out; int nx, ny;} in place of the four parameters.
  const std::string in = j["params"][0]["bytes"], out = j["params"][1]["bytes"];
  j["params"] = nlohmann::json::array({{{"index", 0}, {"offset", 0}, {"size", 24},
                                        {"bytes", in + out + "4000000030000000"},
                                        {"pointers", {{{"at", 0}, {"allocation", 0}, {"offset", 0}},
                                                      {{"at", 8}, {"allocation", 1}, {"offset", 16}}}}}});
  j["kernel"]["name"] = "grid_step(step_args)";
  j["kernel"]["requested"] = "grid_step";
  j["hidden_pointers"] = true;
  f.write(j);
  const std::string source =
      "struct step_args { const float* in; float* out; int nx, ny; };\n"
      "__global__ void grid_step(step_args a) { a.out[0] = a.in[0] + a.nx; }\n"
      "int main() { return 0; }\n";
  const auto c = read_capture(f.dir.string());
  const auto task = write_capture_task(c, source, "launch 0 of grid.cu");
  const auto text = kblaster::support::read_file(task.kernel_path);
  CHECK(text.find("int main()") == std::string::npos);  // the program's main stays out
  CHECK(text.find("static_assert(sizeof(a) == 24") != std::string::npos);
  CHECK(text.find("char* kb_p = kb_alloc1 + 16; std::memcpy(reinterpret_cast<char*>(&a) + 8, &kb_p, sizeof kb_p);") !=
        std::string::npos);
  CHECK(task.views[0].dtype == "uint8");  // no typed pointer says what it holds
  REQUIRE(task.notes.size() == 1);
  CHECK(task.notes[0].find("struct") != std::string::npos);
}

TEST_CASE("the task of a capture loads, reads the captured memory and names its outputs") {
  fixture_copy f("row_reduce");
  const auto c = read_capture(f.dir.string());
  const auto written = write_capture_task(c, program("row_reduce"), "launch 0 of row_reduce.cu 64 300");
  const auto task = load_task(written.dir);
  CHECK(task.reference.kind == reference_kind::kernel);
  CHECK(task.seeds == 1);
  CHECK(task.stress_skip.size() == 2);
  CHECK(task.arch == "sm_90");
  REQUIRE(task.inputs.size() == 2);
  CHECK(task.inputs[0].file == (f.dir / "alloc-0.before.bin").string());
  CHECK(task.inputs[0].shape == std::vector<std::int64_t>{64 * 300});
  REQUIRE(task.outputs.size() == 1);
  CHECK(task.outputs[0].name == "out, parameter 1");
  CHECK(output_label(task, 0) == "output 0 (out, parameter 1)");
  // It starts from the program's contents of that allocation, which the harness puts there.
  CHECK(task.outputs[0].initial_from == 1);
  // Relocatable: the task names the memory relative to itself.
  const auto spec = nlohmann::json::parse(kblaster::support::read_file(fs::path(written.dir) / "task.json"));
  CHECK(spec["inputs"][0]["file"] == "../alloc-0.before.bin");
}

TEST_CASE("a raw input whose size does not match its shape is refused when the task loads") {
  fixture_copy f("row_reduce");
  const auto written = write_capture_task(read_capture(f.dir.string()), program("row_reduce"), "launch 0");
  fs::resize_file(f.dir / "alloc-0.before.bin", 1000);
  CHECK_THROWS_WITH_AS(load_task(written.dir), doctest::Contains("holds 1000 bytes"), task_error);
}

TEST_CASE("a kernel the source does not define is named in the error") {
  const auto c = read_capture((fixtures / "transpose").string());
  CHECK_THROWS_WITH_AS(write_capture_task(c, "__global__ void other(float* x) {}\n", "launch 0"),
                       doctest::Contains("defines no kernel transpose"), capture_error);
}

namespace {

// Rewrites one 4-byte float of a capture's file in place.
void set_float(const fs::path& file, std::size_t index, float value) {
  auto bytes = kblaster::support::read_file(file);
  std::memcpy(bytes.data() + 4 * index, &value, 4);
  kblaster::support::write_file_atomically(file, bytes);
}

float get_float(const fs::path& file, std::size_t index) {
  const auto bytes = kblaster::support::read_file(file);
  float v;
  std::memcpy(&v, bytes.data() + 4 * index, 4);
  return v;
}

}  // namespace

TEST_CASE("a rewrite of the kernel is carried back into the program, main and all") {
  fixture_copy f("stencil2d");
  const auto source = program("stencil2d");
  const auto task = write_capture_task(read_capture(f.dir.string()), source, "launch 1");
  const auto generated = kblaster::support::read_file(task.kernel_path);
  const auto rewritten = replaced(generated, "out[i] = 0.2f * (", "out[i] = 0.2f * __fadd_rn(0.f, ");

  const auto e = edit_program(source, generated, rewritten, "stencil2d");
  CHECK(e.edited.find("__fadd_rn(0.f, ") != std::string::npos);
  CHECK(e.edited.find("int main(int argc, char** argv)") != std::string::npos);
  CHECK(e.edited.find("kb_forward") == std::string::npos);  // the launcher stays out of the program
  CHECK(e.edited.size() == source.size() + std::string("__fadd_rn(0.f, ").size() - 1);  // "(" replaced
  CHECK_FALSE(e.launch_changed);
  CHECK(e.call_sites == std::vector<std::string>{"grid, block"});

  SUBCASE("a changed launch is reported with the program's call site") {
    const auto relaunched = replaced(rewritten, "dim3(16, 16, 1), 0, kb_stream", "dim3(32, 8, 1), 0, kb_stream");
    const auto moved = edit_program(source, generated, relaunched, "stencil2d");
    CHECK(moved.launch_changed);
    CHECK(moved.captured_launch == "dim3(4, 3, 1), dim3(16, 16, 1), 0, kb_stream");
    CHECK(moved.rewritten_launch == "dim3(4, 3, 1), dim3(32, 8, 1), 0, kb_stream");
  }
  SUBCASE("a rewrite without the launcher's marker cannot be carried back") {
    CHECK_THROWS_WITH_AS(edit_program(source, generated, rewritten.substr(0, rewritten.find(launcher_marker)), "stencil2d"),
                         doctest::Contains("dropped the line"), capture_error);
  }
  SUBCASE("a program edited since its capture is not overwritten") {
    const auto changed = replaced(source, "out[i] = in[i];", "out[i] = 0;");
    CHECK_THROWS_WITH_AS(edit_program(changed, generated, rewritten, "stencil2d"), doctest::Contains("capture it again"),
                         capture_error);
  }
}

TEST_CASE("two captures' outputs compare by dtype: floats within tolerance, integers exactly") {
  fixture_copy want("stencil2d"), got("stencil2d");
  const auto expected = read_capture(want.dir.string());
  const auto symbols = locate_cuda_symbols(program("stencil2d"));
  const auto views = allocation_views(expected, *captured_kernel_symbol(symbols, expected));
  CHECK_FALSE(compare_capture_outputs(expected, read_capture(got.dir.string()), views));

  const auto after = got.dir / "alloc-1.after.bin";
  const float v = get_float(after, 70);
  set_float(after, 70, v * (1 + 1e-6f));  // within fp32's 1e-4
  CHECK_FALSE(compare_capture_outputs(expected, read_capture(got.dir.string()), views));
  set_float(after, 70, v + 1);
  set_float(after, 90, v + 1);
  const auto m = compare_capture_outputs(expected, read_capture(got.dir.string()), views);
  REQUIRE(m);
  CHECK(m->name == "out, parameter 1");
  CHECK(m->element == 70);
  CHECK(m->count == 2);
  CHECK(describe(*m).find("first at [70]") != std::string::npos);

  SUBCASE("memory the original left alone must stay alone") {
    set_float(after, 70, v);
    set_float(after, 90, get_float(want.dir / "alloc-1.after.bin", 90));
    set_float(got.dir / "alloc-0.before.bin", 3, 42.f);
    const auto touched = compare_capture_outputs(expected, read_capture(got.dir.string()), views);
    REQUIRE(touched);
    CHECK(touched->name == "in, parameter 0");
    CHECK(touched->element == 3);
  }
}

TEST_CASE("integer outputs compare bit for bit") {
  fixture_copy want("histogram"), got("histogram");
  const auto expected = read_capture(want.dir.string());
  const auto symbols = locate_cuda_symbols(program("histogram"));
  const auto views = allocation_views(expected, *captured_kernel_symbol(symbols, expected));
  auto bins = kblaster::support::read_file(got.dir / "alloc-1.after.bin");
  bins[4 * 7] = static_cast<char>(bins[4 * 7] + 1);  // one more count in bin 7
  kblaster::support::write_file_atomically(got.dir / "alloc-1.after.bin", bins);
  const auto m = compare_capture_outputs(expected, read_capture(got.dir.string()), views);
  REQUIRE(m);
  CHECK(m->name == "bins, parameter 1");
  CHECK(m->element == 7);
  CHECK(m->count == 1);
}

TEST_CASE("a batch figure, when the agent measured one, is the time in the program; the lone launch is kept") {
  fixture_copy f("stencil2d");
  auto j = f.json();
  const double lone = j["time_ms"].get<double>();
  SUBCASE("measured") {
    j["batch_timing"] = {{"measured", true}, {"calls", 64}, {"per_call_ms", 0.0061}, {"l2_flushed", true}};
    f.write(j);
    const auto c = read_capture(f.dir.string());
    CHECK(c.time_ms == doctest::Approx(0.0061));
    CHECK(c.lone_launch_ms == doctest::Approx(lone));
    CHECK(c.batch_calls == 64);
    CHECK(c.timing_note().find("a call among 64 back to back on fresh memory") != std::string::npos);
  }
  SUBCASE("not measured: the lone launch, and the note says how it was timed") {
    j["batch_timing"] = {{"measured", false}, {"reason", "too large"}};
    j["timing"]["l2_flushed"] = true;
    f.write(j);
    const auto c = read_capture(f.dir.string());
    CHECK(c.time_ms == doctest::Approx(lone));
    CHECK(c.batch_calls == 0);
    CHECK(c.timing_note() == " (launched alone, L2 flushed first)");
  }
  SUBCASE("a batch figure without its calls is refused") {
    j["batch_timing"] = {{"measured", true}, {"per_call_ms", 0.0061}};
    f.write(j);
    CHECK(error_of(f.dir).find("'batch_timing' must have") != std::string::npos);
  }
}
