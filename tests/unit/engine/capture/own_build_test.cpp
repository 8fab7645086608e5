// A program built by the user's own build (run.command, run.build): the kernel's file needs no
// main, the build runs first and its failure is shown, the program named is what runs, and the
// check of a rewrite in the program puts the user's file back (and builds it again) whatever
// happens. No GPU here: libc stands in for the driver library the capture checks for first, the
// program runs without the agent's driver, so the captures themselves fail, which is what lets
// the put-back be seen.
#include "engine/capture/program_capture.h"
#include "engine/capture/program_rewrite.h"
#include "support/device_lock.h"
#include "support/files.h"
#include "support/sandbox.h"
#include "tests/unit/engine/capture/capture_fixture.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

struct project {
  fs::path dir = fs::temp_directory_path() / ("kblaster-own-build-" + std::to_string(::getpid()));
  fs::path kernels = dir / "saxpy_kernels.cu";
  project() {
    fs::remove_all(dir);
    fs::copy(kblaster::test::capture_programs / "split", dir, fs::copy_options::recursive);
  }
  ~project() { fs::remove_all(dir); }
  capture_request request(std::vector<std::string> build, std::vector<std::string> command) const {
    capture_request r;
    r.source = kernels.string();
    r.kernel = "saxpy";
    r.run.args = {"1000"};
    r.run.build = std::move(build);
    r.run.command = std::move(command);
    r.cache_root = (dir / "cache").string();
    r.agent = (dir / "main.cu").string();  // any existing file: the check for the agent passes, nothing loads it
    r.driver_library = "libc.so.6";  // stands in for the driver this machine lacks, so that the build and program run
    r.timeout = std::chrono::seconds(20);
    return r;
  }
  int builds() const { return static_cast<int>(kblaster::support::read_file_if_exists(dir / "builds").value_or("").size()); }
};

}  // namespace

TEST_CASE("a kernel's file without main runs as a program only when the program is named") {
  const std::string text = "__global__ void saxpy(float a, const float* x, float* y, int n) {}\n";
  CHECK_FALSE(runs_as_program(text, {}));
  program_run named;
  named.command = {"./split_app"};
  CHECK(runs_as_program(text, named));
  CHECK(runs_as_program(text + "int main() { return 0; }\n", {}));

  project p;
  try {
    capture_program(p.request({}, {}), {}, {});
    FAIL("a file without main was captured");
  } catch (const capture_error& e) {
    CHECK(std::string(e.what()).find("does not define main(): name the program your own build makes (--run PROGRAM") !=
          std::string::npos);
  }
}

TEST_CASE("the user's build runs first, and its failure is the error, with its output") {
  project p;
  try {
    capture_program(p.request({"sh", "-c", "echo 'saxpy_kernels.cu(3): error: expected a ;'; exit 2"}, {"./split_app"}), {}, {});
    FAIL("a failed build went unnoticed");
  } catch (const capture_error& e) {
    const std::string what = e.what();
    CHECK(what.find("your build command (sh -c") != std::string::npos);
    CHECK(what.find("exited with status 2") != std::string::npos);
    CHECK(what.find("expected a ;") != std::string::npos);
  }
  // A build that works, then the program named runs (here it cannot launch anything: no GPU).
  std::string heard;
  CHECK_THROWS_AS(capture_program(p.request({"sh", "-c", "printf x >> builds"}, {"sh", "-c", "echo ran > ran"}),
                                  [&](const std::string& line) { heard += line + "\n"; }, {}),
                  capture_error);
  CHECK(p.builds() == 1);
  CHECK(fs::exists(p.dir / "ran"));
  CHECK(heard.find("building with your command: sh -c printf x >> builds") != std::string::npos);
  CHECK(heard.find("running launch 0 of sh -c echo ran > ran 1000 and capturing saxpy") != std::string::npos);
}

TEST_CASE("checking a rewrite in a program built by its own build puts the file back, and builds it again") {
  project p;
  const auto original = kblaster::support::read_file(p.kernels);
  // The capture the run started from: the fixture of another program stands in (only its task's
  // files are read before the check runs).
  kblaster::test::fixture_copy f("row_reduce");
  capture_result captured;
  captured.capture = read_capture(f.dir.string());
  captured.task = write_capture_task(captured.capture, kblaster::test::capture_program("row_reduce"), "launch 0");
  const auto generated = kblaster::support::read_file(captured.task.kernel_path);
  const auto program = kblaster::test::capture_program("row_reduce");
  kblaster::support::write_file_atomically(p.kernels, program);
  const std::string statement = "partial[threadIdx.x] = acc;";
  REQUIRE(generated.find(statement) != std::string::npos);
  auto rewritten = generated;
  rewritten.replace(rewritten.find(statement), statement.size(), "partial[threadIdx.x] = acc * 1.0f;");
  // The build of the rewrite tries to write outside the project: in the sandbox it cannot.
  const fs::path outside = fs::temp_directory_path() / ("kblaster-own-build-escape-" + std::to_string(::getpid()));
  fs::remove(outside);
  const auto request = p.request({"sh", "-c", "printf x >> builds; echo escaped >> " + outside.string() + "; true"}, {"./split_app"});
  {
    // Without the driver: refused before the user's file is edited or their build runs.
    auto no_driver = request;
    no_driver.driver_library = "libkblaster-test-no-such-driver.so.1";
    CHECK_THROWS_WITH_AS(rewrite_program(no_driver, captured, {}, program, rewritten, (p.dir / "out").string(), {}, {}),
                         doctest::Contains("no NVIDIA driver on this machine"), capture_error);
    CHECK(kblaster::support::read_file(p.kernels) == program);
    CHECK(p.builds() == 0);
  }
  std::string heard;
  CHECK_THROWS_AS(rewrite_program(request, captured, {}, program, rewritten, (p.dir / "out").string(),
                                  [&](const std::string& line) { heard += line + "\n"; }, {}),
                  capture_error);  // the edited program cannot be captured here (no GPU)
  CHECK(kblaster::support::read_file(p.kernels) == program);  // put back
  CHECK(p.builds() == 2);                                      // built with the edit, then again without it
  // The first build (the rewrite's) ran sandboxed; the second (the user's own file put back) as
  // the user's build, so the file exists after it either way: what matters is that the
  // sandboxed one could not write it, seen by the line being appended once, not twice.
  if (kblaster::support::sandbox_support().active())
    CHECK(kblaster::support::read_file_if_exists(outside).value_or("") == "escaped\n");
  fs::remove(outside);
  CHECK(heard.find("putting saxpy_kernels.cu back and building it again with your command") != std::string::npos);
  CHECK(kblaster::support::read_file(p.dir / "out" / "saxpy_kernels.cu").find("acc * 1.0f") != std::string::npos);
  CHECK(original.find("saxpy") != std::string::npos);  // the project's own file was replaced for this test
}

TEST_CASE("a capture waits for the GPU another kblaster measurement holds, says who holds it, and may be stopped meanwhile") {
  project p;
  // A GPU of this test's own (CUDA_VISIBLE_DEVICES names it), so no other test's capture meets it.
  const std::string visible = "kblaster-test-" + std::to_string(::getpid());
  auto held = kblaster::support::device_lock::acquire(kblaster::support::device_lock::gpu(visible), "profiling transpose", {});
  REQUIRE(held);
  fs::create_directories(p.dir / "bin");
  const auto marker = p.dir / "ran";
  std::ofstream(p.dir / "bin" / "app") << "#!/bin/sh\ntouch '" << marker.string() << "'\n";
  fs::permissions(p.dir / "bin" / "app", fs::perms::owner_all);
  auto request = p.request({}, {(p.dir / "bin" / "app").string()});
  request.run.env = {"CUDA_VISIBLE_DEVICES=" + visible};
  std::stop_source stop;
  std::vector<std::string> heard;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  try {
    capture_program(request, [&](const std::string& m) { heard.push_back(m); }, stop.get_token());
    FAIL("captured while the GPU was held");
  } catch (const capture_error& e) {
    CHECK(std::string(e.what()) == "cancelled while waiting for the GPU");
  }
  stopper.join();
  CHECK_FALSE(fs::exists(marker));  // the program never ran
  bool told = false;
  for (const auto& m : heard) told = told || m == "waiting for the GPU, held by pid " + std::to_string(::getpid()) + ": profiling transpose";
  CHECK(told);
  // Once the GPU is free the same capture runs the program at once.
  held.reset();
  try {
    capture_program(request, {}, {});
  } catch (const capture_error&) {
    // No driver here: the agent captures nothing; what matters is that the program ran.
  }
  CHECK(fs::exists(marker));
}
