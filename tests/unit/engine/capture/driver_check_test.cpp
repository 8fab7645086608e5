// A capture on a machine without the NVIDIA driver (issue 35): it stops before anything is built
// or run, saying what is missing, rather than running the program into the loader's "error while
// loading shared libraries: libcuda.so.1". Each build and run here would leave a marker file;
// none may appear. A recorded capture still replays without the driver, and the editor's capture
// on save profiles nothing and says why for every kernel.
#include "engine/capture/capture_profile.h"
#include "engine/capture/driver_check.h"
#include "engine/capture/program_capture.h"
#include "support/files.h"
#include "tests/unit/engine/capture/capture_fixture.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

const std::string no_driver = "libkblaster-test-no-such-driver.so.1";  // missing on every machine

struct workspace {
  fs::path dir = fs::temp_directory_path() / ("kblaster-driver-check-" + std::to_string(::getpid()));
  workspace() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    kblaster::support::write_file_atomically(dir / "row_reduce.cu", kblaster::test::capture_program("row_reduce"));
    // A compiler that only leaves its mark: were it run, the marker would say so.
    kblaster::support::write_file_atomically(dir / "nvcc", "#!/bin/sh\ntouch '" + (dir / "nvcc-ran").string() + "'\nexit 1\n");
    ::chmod((dir / "nvcc").c_str(), 0755);
  }
  ~workspace() { fs::remove_all(dir); }

  // How the program would be built and run: by the fake compiler (nvcc path), or by the user's
  // own build and program (own_build), each leaving a marker.
  capture_request request(bool own_build) const {
    capture_request r;
    r.source = (dir / "row_reduce.cu").string();
    r.kernel = "row_sum";
    r.run.args = {"64", "300"};
    r.cache_root = (dir / "cache").string();
    r.nvcc = (dir / "nvcc").string();
    r.agent = r.source;  // any existing file: the agent's check passes, nothing would load it
    r.timeout = std::chrono::seconds(20);
    if (own_build) {
      r.run.build = {"sh", "-c", "touch '" + (dir / "build-ran").string() + "'"};
      r.run.command = {"sh", "-c", "touch '" + (dir / "program-ran").string() + "'"};
    }
    return r;
  }
  bool anything_ran() const {
    return fs::exists(dir / "nvcc-ran") || fs::exists(dir / "build-ran") || fs::exists(dir / "program-ran");
  }
};

std::string capture_error_of(const capture_request& r) {
  try {
    capture_program(r, {}, {});
  } catch (const capture_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("without the driver a capture builds and runs nothing, and says what is missing") {
  workspace w;
  for (const bool own_build : {false, true}) {
    CAPTURE(own_build);
    auto r = w.request(own_build);
    r.driver_library = no_driver;
    const auto what = capture_error_of(r);
    MESSAGE(what);
    CHECK(what.find("no NVIDIA driver on this machine: " + no_driver + " cannot be loaded (") == 0);
    CHECK(what.find("); capture runs your program on a GPU") != std::string::npos);
    CHECK_FALSE(w.anything_ran());
  }
  // The same requests with a library every machine has standing in for the driver do build and
  // run: the markers would have appeared had the check not stopped them.
  auto r = w.request(true);
  r.driver_library = "libc.so.6";
  CHECK_THROWS_AS(capture_program(r, {}, {}), capture_error);  // the program captures nothing
  CHECK(fs::exists(w.dir / "build-ran"));
  CHECK(fs::exists(w.dir / "program-ran"));
}

TEST_CASE("on this machine's own driver library: no libcuda.so.1, no run") {
  const auto missing = missing_cuda_driver();
  if (missing.empty()) {
    MESSAGE("SKIPPED: libcuda.so.1 loads here (an NVIDIA driver is installed)");
    return;
  }
  workspace w;
  const auto what = capture_error_of(w.request(true));  // the default: libcuda.so.1
  MESSAGE(what);
  CHECK(what == missing);
  CHECK(what.find("no NVIDIA driver on this machine: libcuda.so.1 cannot be loaded (libcuda.so.1: cannot open shared object file") ==
        0);
  CHECK_FALSE(w.anything_ran());
}

TEST_CASE("a recorded capture replays without the driver") {
  workspace w;
  auto r = w.request(false);
  r.driver_library = no_driver;
  r.replay_root = (w.dir / "recordings").string();
  const auto program = kblaster::support::read_file(r.source);
  fs::create_directories(r.replay_root);
  fs::copy(kblaster::test::capture_fixtures / "row_reduce", fs::path(r.replay_root) / recording_name(r, program),
           fs::copy_options::recursive);
  CHECK(capture_blocker(r).empty());
  const auto replayed = capture_program(r, {}, {});
  CHECK(replayed.replayed);
  CHECK_FALSE(w.anything_ran());
}

TEST_CASE("the editor's capture on save profiles nothing without the driver, and says why for every kernel") {
  workspace w;
  captured_profile_options o;
  o.base = w.request(false);
  o.base.driver_library = no_driver;
  o.kernels = {"row_sum", "other_kernel"};
  o.evaluator.harness = "/nonexistent/kblaster-harness";  // an evaluator made would throw: none may be
  const auto out = profile_captured_launches(o, {});
  CHECK(out.kernels.empty());
  REQUIRE(out.not_profiled.size() == 2);
  for (const auto& [kernel, why] : out.not_profiled) {
    CAPTURE(kernel);
    CHECK(why.find("no NVIDIA driver on this machine: " + no_driver) != std::string::npos);
  }
  REQUIRE(out.warnings.size() == 1);
  MESSAGE(out.warnings.front());
  CHECK_FALSE(w.anything_ran());
}
