// Recorded captures: a capture recorded under its name is served without building or running
// anything, by that name whatever folder and compiler the machine has; a missing recording is
// an error naming what was looked for; KBLASTER_CAPTURE_RECORD keeps every capture made.
#include "engine/capture/program_capture.h"
#include "support/files.h"
#include "tests/unit/engine/capture/capture_fixture.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

struct scratch {
  fs::path dir = fs::temp_directory_path() / ("kblaster-capture-replay-" + std::to_string(::getpid()));
  scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~scratch() { fs::remove_all(dir); }
};

capture_request request_for(const fs::path& source, const fs::path& root) {
  capture_request r;
  r.source = source.string();
  r.kernel = "row_sum";
  r.run.args = {"64", "300"};
  r.cache_root = (root / "cache").string();
  r.replay_root = (root / "recordings").string();
  r.nvcc = "/nonexistent/nvcc";  // nothing may be built
  r.agent = "/nonexistent/libkblaster-capture.so";
  return r;
}

}  // namespace

TEST_CASE("a recorded capture is replayed by its name: nothing built, nothing run") {
  scratch s;
  const auto program = kblaster::test::capture_program("row_reduce");
  kblaster::support::write_file_atomically(s.dir / "row_reduce.cu", program);
  auto request = request_for(s.dir / "row_reduce.cu", s.dir);

  SUBCASE("missing: a clear error naming the recording it looked for") {
    fs::create_directories(request.replay_root);
    try {
      capture_program(request, {}, {});
      FAIL("a capture came back without a recording");
    } catch (const capture_error& e) {
      const std::string what = e.what();
      CHECK(what.find("no recorded capture of launch 0 of row_reduce.cu 64 300 (row_sum)") != std::string::npos);
      CHECK(what.find(recording_name(request, program)) != std::string::npos);
    }
  }
  SUBCASE("present: the task is written from it, and every message says it was replayed") {
    fs::create_directories(request.replay_root);
    fs::copy(kblaster::test::capture_fixtures / "row_reduce", fs::path(request.replay_root) / recording_name(request, program),
             fs::copy_options::recursive);
    std::string heard;
    const auto r = capture_program(request, [&](const std::string& line) { heard += line + "\n"; }, {});
    CHECK(r.replayed);
    CHECK_FALSE(r.cached);
    CHECK(r.build_seconds == 0);
    CHECK(origin_note(r) == " (replayed from a recording: nothing was built or run)");
    CHECK(heard.find("replaying the recorded capture of launch 0 of row_reduce.cu 64 300") != std::string::npos);
    CHECK(fs::exists(r.task.kernel_path));
    CHECK(kblaster::support::read_file(r.task.kernel_path).find("row_sum<<<dim3(64, 1, 1), dim3(256, 1, 1), 0, kb_stream>>>") !=
          std::string::npos);
  }
}

TEST_CASE("a recording's name follows what the capture depends on, not where it was made") {
  const std::string text = "__global__ void row_sum() {}\nint main() {}\n";
  capture_request a;
  a.source = "/home/alice/src/row_reduce.cu";
  a.kernel = "row_sum";
  a.run.args = {"64", "300"};
  auto b = a;
  b.source = "/tmp/checkout/tests/row_reduce.cu";  // another folder,
  b.nvcc = "/opt/cuda/bin/nvcc";                    // another compiler,
  b.nvcc_flags = {"-O2"};                           // other flags
  b.run.cwd = "/elsewhere";
  CHECK(recording_name(a, text) == recording_name(b, text));
  CHECK(recording_name(a, text).rfind("row_reduce-row_sum-", 0) == 0);
  auto c = a;
  c.run.args = {"64", "301"};
  CHECK(recording_name(a, text) != recording_name(c, text));
  auto d = a;
  d.launch = 1;
  CHECK(recording_name(a, text) != recording_name(d, text));
  CHECK(recording_name(a, text) != recording_name(a, text + " "));
  auto e = a;
  e.run.env = {"N=1"};
  CHECK(recording_name(a, text) != recording_name(e, text));
}
