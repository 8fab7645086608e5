// Tests that compile with the real nvcc: diagnostics of broken sources, ptxas resources, the
// build cache, the timeout and the static profile. Skipped, with a message, where nvcc is absent.
#include "engine/toolchain/nvcc_driver.h"
#include "engine/state/profile_pipeline.h"
#include "support/run_process.h"

#include <doctest/doctest.h>

#include <stop_token>
#include <thread>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace kblaster::engine;
namespace support = kblaster::support;
namespace fs = std::filesystem;

namespace {

std::string broken(const std::string& name) { return std::string(KBLASTER_FIXTURES_DIR) + "/nvcc/" + name; }

// A fresh cache per test run, so that the first build really runs nvcc.
std::string fresh_cache() {
  const auto dir = fs::temp_directory_path() / ("kblaster-nvcc-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir.string();
}

bool have_nvcc() {
  if (find_nvcc()) return true;
  std::cout << "SKIPPED: nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): nvcc tests not run\n";
  return false;
}

}  // namespace

TEST_CASE("nvcc diagnostics of broken sources, compiled for real") {
  if (!have_nvcc()) return;
  nvcc_driver driver(*find_nvcc(), fresh_cache());
  nvcc_options o;
  o.arch = "sm_90";

  SUBCASE("undefined identifier: error with line and column") {
    const auto r = driver.compile(broken("undefined_identifier.cu"), output_kind::object, o);
    CHECK_FALSE(r.ok);
    REQUIRE_FALSE(r.diagnostics.empty());
    const auto& d = r.diagnostics[0];
    CHECK(d.severity == diagnostic_severity::error);
    CHECK(d.line == 5);
    CHECK(d.column == 12);
    CHECK(d.message.find("missing_value") != std::string::npos);
    CHECK(d.file.find("undefined_identifier.cu") != std::string::npos);
  }
  SUBCASE("syntax error") {
    const auto r = driver.compile(broken("syntax_error.cu"), output_kind::object, o);
    CHECK_FALSE(r.ok);
    REQUIRE_FALSE(r.diagnostics.empty());
    CHECK(r.diagnostics[0].line == 4);
    CHECK(r.diagnostics[0].message.find("expected a \";\"") != std::string::npos);
  }
  SUBCASE("ptxas error: too much shared memory, pointed at the kernel") {
    const auto r = driver.compile(broken("too_much_shared.cu"), output_kind::object, o);
    CHECK_FALSE(r.ok);
    bool found = false;
    for (const auto& d : r.diagnostics)
      if (d.tool == "ptxas" && d.severity == diagnostic_severity::error) {
        found = true;
        CHECK(d.message.find("too much shared data") != std::string::npos);
        CHECK(d.kernel == "_Z3bigPf");
        CHECK(d.line == 3);
      }
    CHECK(found);
  }
  SUBCASE("warning, ptxas resources and the build cache") {
    const auto r = driver.compile(broken("spills_and_warning.cu"), output_kind::object, o);
    REQUIRE(r.ok);
    CHECK_FALSE(r.from_cache);
    CHECK(fs::exists(r.output_path));
    REQUIRE_FALSE(r.diagnostics.empty());
    CHECK(r.diagnostics[0].severity == diagnostic_severity::warning);
    CHECK(r.diagnostics[0].code == "177-D");
    CHECK(r.diagnostics[0].line == 4);
    REQUIRE(r.resources.size() == 1);
    CHECK(r.resources[0].stack_frame_bytes == 1024);
    CHECK(r.resources[0].arch == "sm_90");
    const auto again = driver.compile(broken("spills_and_warning.cu"), output_kind::object, o);
    CHECK(again.ok);
    CHECK(again.from_cache);
    CHECK(again.output_path == r.output_path);
    CHECK(again.resources.size() == 1);
    CHECK(again.diagnostics.size() == r.diagnostics.size());
    nvcc_options other = o;
    other.extra_flags = {"-O2"};
    CHECK_FALSE(driver.compile(broken("spills_and_warning.cu"), output_kind::object, other).from_cache);
  }
  SUBCASE("timeout") {
    nvcc_options slow = o;
    slow.timeout = std::chrono::seconds(0);
    slow.use_cache = false;
    const auto r = driver.compile(broken("spills_and_warning.cu"), output_kind::object, slow);
    CHECK_FALSE(r.ok);
    CHECK(r.timed_out);
    CHECK(r.diagnostics.at(0).message.find("did not finish") != std::string::npos);
  }
  SUBCASE("missing file") {
    const auto r = driver.compile("/nonexistent/k.cu", output_kind::object, o);
    CHECK_FALSE(r.ok);
    CHECK(r.diagnostics.at(0).message.find("cannot read") != std::string::npos);
  }
}

TEST_CASE("threads of one process building the same source at once each get the whole output") {
  // The save's profile and Optimize build the input kernel at the same moment in one daemon. A
  // temporary name per process let the second build write into the first's file, which the
  // first then renamed away: the second appended to a fresh file and kept half an output (the
  // two evaluators at once of engine.harness_evaluator_gpu). A stand-in nvcc writes its output
  // in two parts, 0.4 s apart, so the two builds overlap every time.
  const auto dir = fs::path(fresh_cache()) / "stand-in";
  fs::create_directories(dir);
  const auto nvcc = dir / "nvcc";
  {
    std::ofstream script(nvcc);
    script << "#!/bin/sh\n"
              "case \"$1\" in --version) echo 'Cuda compilation tools, release 0.0 (stand-in)'; exit 0;; esac\n"
              "for a; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
              "printf 'first half, ' > \"$out\"; sleep 0.4; printf 'second half' >> \"$out\"\n";
  }
  fs::permissions(nvcc, fs::perms::owner_all);
  std::ofstream(dir / "k.cu") << "__global__ void k() {}\n";
  nvcc_driver driver(nvcc.string(), (dir / "cache").string());
  nvcc_options o;
  o.arch = "sm_90";
  o.use_cache = false;  // both threads run the compiler
  std::vector<compile_result> results(2);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] { results[i] = driver.compile((dir / "k.cu").string(), output_kind::object, o); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    CHECK(r.ok);
    std::ifstream in(r.output_path);
    const std::string built((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(built == "first half, second half");
  }
}

TEST_CASE("two builds of one source at once, keeping their PTX, each keep their own intermediate files") {
  // The analysis on open and a profile asked meanwhile build the same key with -keep: sharing one
  // -keep-dir, the first to finish removed it while the second still wrote there ("cc1plus: fatal
  // error: opening output file KEY.keep/row_reduce.cpp4.ii", on the GPU machine, 2026-11-29). A
  // stand-in nvcc writes into its -keep-dir in two parts 0.4 s apart; the second build starts
  // 0.2 s after the first, so the first ends between the second's two writes every time.
  const auto dir = fs::path(fresh_cache()) / "stand-in-keep";
  fs::create_directories(dir);
  const auto nvcc = dir / "nvcc";
  {
    std::ofstream script(nvcc);
    script << "#!/bin/sh\n"
              "case \"$1\" in --version) echo 'Cuda compilation tools, release 0.0 (stand-in)'; exit 0;; esac\n"
              "for a; do [ \"$prev\" = -o ] && out=$a; [ \"$prev\" = -keep-dir ] && keep=$a; prev=$a; done\n"
              "printf '.version 8.0 ' > \"$keep/k.ptx\" || exit 1; sleep 0.4\n"
              "printf '.target sm_90' >> \"$keep/k.ptx\" || exit 1\n"
              "printf 'object' > \"$out\"\n";
  }
  fs::permissions(nvcc, fs::perms::owner_all);
  std::ofstream(dir / "k.cu") << "__global__ void k() {}\n";
  nvcc_driver driver(nvcc.string(), (dir / "cache").string());
  nvcc_options o;
  o.arch = "sm_90";
  o.use_cache = false;  // both builds run the compiler
  o.keep_ptx = true;
  std::vector<compile_result> results(2);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = driver.compile((dir / "k.cu").string(), output_kind::object, o); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    INFO(r.log);
    CHECK(r.ok);
  }
  // Neither build's intermediate files are left behind.
  for (const auto& entry : fs::directory_iterator(dir / "cache"))
    CHECK(entry.path().string().find(".keep") == std::string::npos);
}

TEST_CASE("nvcc version and the default architecture") {
  if (!have_nvcc()) return;
  nvcc_driver driver(*find_nvcc(), fresh_cache());
  CHECK(driver.version().find("release") != std::string::npos);
  CHECK(driver.target_arch("sm_80") == "sm_80");
  const std::string arch = driver.target_arch("");
  CHECK(arch.rfind("sm_", 0) == 0);
}

TEST_CASE("static profile of the recorded kernels: resources and occupancy without a GPU") {
  if (!have_nvcc()) return;
  build_profile_options b;
  b.arch = "sm_90";
  const auto o = analyze_static(std::string(KBLASTER_FIXTURES_DIR) + "/ncu-h100/kernels.cu", b);
  REQUIRE(o.error.empty());
  REQUIRE(o.kernels.size() == 9);
  for (const auto& k : o.kernels) {
    CHECK(k.signature.static_only);
    CHECK(k.signature.primary == "unknown");
    CHECK_FALSE(k.signature.unknown.empty());
    if (k.signature.function == "spills") CHECK(k.signature.has("register_spills"));
    if (k.signature.function == "vadd") CHECK(k.signature.secondary.empty());
  }
  const auto bad = analyze_static(broken("syntax_error.cu"), b);
  // The first error names the file and line, so a caller can say why in one line.
  CHECK(bad.error.rfind("compilation failed: syntax_error.cu:", 0) == 0);
  CHECK_FALSE(bad.diagnostics.empty());
}

TEST_CASE("subprocess: exit codes, missing programs, timeouts") {
  CHECK(support::run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(10)).exit_code == 3);
  const auto r = support::run_process({"sh", "-c", "echo out; echo err >&2"}, std::chrono::seconds(10));
  CHECK(r.ok());
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  CHECK(support::run_process({"/nonexistent/program"}, std::chrono::seconds(10)).failed_to_start);
  const auto slow = support::run_process({"sh", "-c", "sleep 5"}, std::chrono::milliseconds(200));
  CHECK(slow.timed_out);
  CHECK(slow.seconds < 3);
  // A stop kills the child (and its group: the sleep started by sh) well before the timeout.
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request_stop();
  });
  const auto stopped = support::run_process({"sh", "-c", "sleep 30; echo done"}, std::chrono::seconds(60), std::nullopt, stop.get_token());
  CHECK(stopped.cancelled);
  CHECK_FALSE(stopped.timed_out);
  CHECK_FALSE(stopped.ok());
  CHECK(stopped.out.empty());
  CHECK(stopped.seconds < 5);
}

TEST_CASE("static occupancy: the block from __launch_bounds__ as compiled, else a constant launch in the file, else assumed") {
  if (!have_nvcc()) return;
  build_profile_options b;
  b.arch = "sm_90";
  b.assumed_block_size = 256;
  const auto o = analyze_static(std::string(KBLASTER_FIXTURES_DIR) + "/occupancy/block_sources.cu", b);
  REQUIRE(o.error.empty());
  const auto evidence = [&](const std::string& function) {
    for (const auto& k : o.kernels)
      if (k.signature.function == function)
        for (const auto& e : k.signature.primary_evidence)
          if (e.starts_with("occupancy computed")) return e;
    return std::string("(no kernel ") + function + ")";
  };
  // A macro in __launch_bounds__ is expanded by the compiler: the PTX says .maxntid 128.
  CHECK(evidence("ops::bounded_by_macro") ==
        "occupancy computed for a block of 128 threads, from its __launch_bounds__ (the compiled PTX's .maxntid 128)");
  CHECK(evidence("bounded_by_template<64>") ==
        "occupancy computed for a block of 64 threads, from its __launch_bounds__ (the compiled PTX's .maxntid 64)");
  CHECK(evidence("launched_literal") ==
        "occupancy computed for a block of 256 threads, from the launch `<<<(n + 255) / 256, 256>>>` in the file");
  CHECK(evidence("launched_constexpr") ==
        "occupancy computed for a block of 512 threads, from the launch `<<<(n + threads_per_block - 1) / "
        "threads_per_block, threads_per_block>>>` in the file");
  CHECK(evidence("launched_dim3") ==
        "occupancy computed for a block of 256 threads, from the launch `<<<dim3(w / TILE, w / TILE), tile>>>` in the file");
  CHECK(evidence("launched_at_runtime") ==
        "occupancy computed for an assumed block of 256 threads (no __launch_bounds__, and no launch in the file with a "
        "constant block)");
  // The occupancy follows the block: 512 threads of a small kernel fill 2048 threads per SM
  // with 4 blocks; the bounded-by-macro kernel's 128 threads with 16.
  for (const auto& k : o.kernels)
    if (k.signature.function == "ops::bounded_by_macro") CHECK(k.signature.sol.theoretical_occupancy_pct);
}
