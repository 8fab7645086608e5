// The launcher generated from each recorded capture (tests/fixtures/captures/), and one for a
// struct that holds device pointers, compiles with the real nvcc, together with the part of the
// program it keeps. Skipped, with a message, where nvcc is absent.
#include "engine/capture/capture_task.h"
#include "engine/capture/launch_carry.h"
#include "engine/capture/program_edit.h"
#include "engine/toolchain/nvcc_driver.h"
#include "engine/toolchain/task_build.h"
#include "support/files.h"
#include "support/run_process.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>

using namespace kblaster::engine;
namespace fs = std::filesystem;

TEST_CASE("the launcher of every recorded capture compiles with the program's kernel") {
  const auto nvcc_path = find_nvcc();
  if (!nvcc_path) {
    std::cout << "SKIPPED: nvcc not found: capture launcher nvcc test not run\n";
    return;
  }
  const fs::path work = fs::temp_directory_path() / ("kblaster-capture-nvcc-" + std::to_string(::getpid()));
  fs::create_directories(work);
  nvcc_driver driver(*nvcc_path, (work / "cache").string(), 2);
  const fs::path fixtures = fs::path(KBLASTER_FIXTURES_DIR) / "captures";
  const fs::path programs = fs::path(KBLASTER_SOURCE_DIR) / "tests" / "capture" / "programs";
  for (const char* name : {"stencil2d", "histogram", "row_reduce", "transpose", "bin_sum"}) {
    CAPTURE(name);
    fs::copy(fixtures / name, work / name, fs::copy_options::recursive);
    const auto capture = read_capture((work / name).string());
    const auto task = write_capture_task(capture, kblaster::support::read_file(programs / (std::string(name) + ".cu")),
                                         std::string("launch of ") + name);
    const auto built = build_candidate(task.kernel_path, "sm_90", driver, false, {});
    INFO(built.log);
    CHECK(built.ok);
    std::cout << name << ": the launcher builds (" << built.seconds << " s)\n";
  }

  // A by-value struct holding device pointers: rebuilt from its bytes, its pointers moved.
  fs::copy(fixtures / "stencil2d", work / "grid_step", fs::copy_options::recursive);
  auto j = nlohmann::json::parse(kblaster::support::read_file(work / "grid_step" / "capture.json"));
  const std::string in = j["params"][0]["bytes"], out = j["params"][1]["bytes"];
  j["params"] = nlohmann::json::array({{{"index", 0}, {"offset", 0}, {"size", 24}, {"bytes", in + out + "4000000030000000"},
                                        {"pointers", {{{"at", 0}, {"allocation", 0}, {"offset", 0}},
                                                      {{"at", 8}, {"allocation", 1}, {"offset", 16}}}}}});
  j["kernel"]["name"] = "grid_step(step_args)";
  j["kernel"]["requested"] = "grid_step";
  kblaster::support::write_file_atomically(work / "grid_step" / "capture.json", j.dump());
  const auto task = write_capture_task(read_capture((work / "grid_step").string()),
                                       "struct step_args { const float* in; float* out; int nx, ny; };\n"
                                       "__global__ void grid_step(step_args a) { a.out[0] = a.in[0] + a.nx; }\n",
                                       "launch 0 of grid.cu");
  const auto built = build_candidate(task.kernel_path, "sm_90", driver, false, {});
  INFO(built.log);
  CHECK(built.ok);
  fs::remove_all(work);
}

TEST_CASE("a rewrite that changes the grid is carried to the program's call site, and the program builds") {
  const auto nvcc_path = find_nvcc();
  if (!nvcc_path) {
    std::cout << "SKIPPED: nvcc not found: launch carry nvcc test not run\n";
    return;
  }
  const fs::path work = fs::temp_directory_path() / ("kblaster-launch-carry-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const fs::path root(KBLASTER_SOURCE_DIR);
  fs::copy(root / "tests" / "fixtures" / "captures" / "row_reduce", work / "row_reduce", fs::copy_options::recursive);
  const auto program = kblaster::support::read_file(root / "tests" / "capture" / "programs" / "row_reduce.cu");
  const auto task = write_capture_task(read_capture((work / "row_reduce").string()), program, "launch 0 of row_reduce.cu 64 300");
  const auto generated = kblaster::support::read_file(task.kernel_path);
  // The answer book's warp-per-row kernel (the program's code above its launcher) over the
  // launcher generated here, with the answer's grid: one warp per row, 8 rows per block.
  const auto answer = kblaster::support::read_file(root / "tests" / "optimize" / "answers" / "row_reduce.cu");
  const auto head = answer.substr(0, answer.find(launcher_marker));
  auto launcher = generated.substr(generated.find(launcher_marker));
  const std::string old_launch = "row_sum<<<dim3(64, 1, 1), dim3(256, 1, 1), 0, kb_stream>>>";
  REQUIRE(launcher.find(old_launch) != std::string::npos);
  launcher.replace(launcher.find(old_launch), old_launch.size(), "row_sum<<<dim3((rows + 7) / 8, 1, 1), dim3(256, 1, 1), 0, kb_stream>>>");
  const auto e = edit_program(program, generated, head + launcher, "row_sum");
  REQUIRE(e.launch_changed);
  std::vector<std::string> names{"x", "out", "rows", "cols"};
  const auto c = carry_launch(e.edited, e.rewritten_end, "row_sum", names, e.captured_launch, e.rewritten_launch);
  INFO(c.refusal);
  REQUIRE(c.refusal.empty());
  CHECK(c.sites == 1);
  CHECK(c.edited.find("row_sum<<<dim3(((rows) + 7) / 8, 1, 1), 256>>>(x, out, rows, cols);") != std::string::npos);
  CHECK(c.edited.find("int main(") != std::string::npos);
  CHECK(c.edited.find("kb_forward") == std::string::npos);
  kblaster::support::write_file_atomically(work / "edited.cu", c.edited);
  const auto built = kblaster::support::run_process({*nvcc_path, "-arch=sm_90", "-O3", "-o", (work / "edited").string(),
                                                     (work / "edited.cu").string()},
                                                    std::chrono::seconds(300));
  const std::string log = built.out + built.err;
  INFO(log);
  CHECK(built.ok());
  fs::remove_all(work);
}
