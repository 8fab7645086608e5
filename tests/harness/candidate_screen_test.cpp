// The static screening on real builds: every example kernel and every legitimate candidate
// (tiled GEMM, shuffle reductions, softmax, layer norm), built as the engine builds candidates
// (nvcc with the shared CUDA runtime, or the host compiler), passes; every screen_* adversarial
// candidate is refused with the rule its file names. Needs nvcc for the .cu half (CI has it).
#include "engine/toolchain/task_build.h"
#include "harness/candidate_screen.h"
#include "support/files.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <string>

namespace {
namespace fs = std::filesystem;
using namespace kblaster;

const fs::path root = KBLASTER_SOURCE_DIR;

std::string tag(const fs::path& file, const std::string& key) {
  const std::regex re("// " + key + ": *([A-Za-z0-9_]+)");
  std::smatch m;
  const auto text = support::read_file(file);
  return std::regex_search(text, m, re) ? m[1].str() : "";
}

fs::path cache() {
  const auto dir = fs::temp_directory_path() / "kblaster-screen-test";
  fs::create_directories(dir);
  return dir;
}

engine::candidate_build build(const fs::path& source) {
  if (engine::is_host_source(source.string())) return engine::build_host_candidate(source.string(), cache().string(), true, {});
  static const auto nvcc_path = engine::find_nvcc();
  static engine::nvcc_driver nvcc(nvcc_path.value_or("nvcc"), cache().string());
  return engine::build_candidate(source.string(), "sm_90", nvcc, true, {});
}

std::optional<harness::screening_refusal> screen(const fs::path& source) {
  const auto b = build(source);
  REQUIRE_MESSAGE(b.ok, source.string() << " does not build: " << b.log.substr(0, 400));
  return harness::screen_candidate(harness::read_elf_imports(b.library));
}

}  // namespace

TEST_CASE("screening: every example kernel, CUDA and host, passes") {
  for (const auto& e : fs::directory_iterator(root / "examples/tasks"))
    for (const char* name : {"kernel.cu", "kernel_cpu.cpp"}) {
      const auto source = e.path() / name;
      if (!fs::exists(source)) continue;
      if (source.extension() == ".cu" && !engine::find_nvcc()) continue;
      const auto refusal = screen(source);
      CHECK_MESSAGE(!refusal, source.string() << ": " << (refusal ? refusal->reason : ""));
    }
}

TEST_CASE("screening: each screen_* candidate is refused by its rule, naming the import") {
  int seen = 0;
  for (const auto& e : fs::directory_iterator(root / "tests/harness/adversarial")) {
    const auto source = e.path();
    if (source.filename().string().rfind("screen_", 0) != 0) continue;
    if (source.extension() == ".cu" && !engine::find_nvcc()) continue;
    ++seen;
    const auto refusal = screen(source);
    REQUIRE_MESSAGE(refusal, source.string() << " was let through");
    CHECK(refusal->rule == tag(source, "kblaster-rule"));
    CHECK(refusal->reason.find(refusal->symbol) != std::string::npos);
  }
  CHECK(seen >= 6);
}

TEST_CASE("screening: the layout rules on synthetic facts") {
  harness::elf_imports i;
  i.undefined = {"cudaMalloc", "_Znwm", "__cxa_atexit", "expf", "memcpy", "printf"};
  i.symbols = {"_ZL24__sti____cudaRegisterAllv"};
  i.init_array_entries = 2;  // frame_dummy + the fat binary's registration
  i.fini_array_entries = 1;
  CHECK_FALSE(harness::screen_candidate(i));
  i.init_array_entries = 3;
  CHECK(harness::screen_candidate(i)->rule == "constructors");
  i.init_array_entries = 2;
  i.writable_executable = true;
  CHECK(harness::screen_candidate(i)->rule == "writable_executable");
  i.writable_executable = false;
  i.undefined.push_back("clock_gettime");
  CHECK(harness::screen_candidate(i)->rule == "import_not_allowed");
  i.undefined.back() = "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE";
  CHECK(harness::screen_candidate(i)->rule == "threads");
}

TEST_CASE("screening: the other adversarial and isolation candidates reach the checks they test") {
  // Refused earlier by the library check, or exercising a dynamic check with screening off.
  for (const char* dir : {"tests/harness/adversarial", "tests/harness/isolation"})
    for (const auto& e : fs::directory_iterator(root / dir)) {
      const auto source = e.path();
      const auto ext = source.extension().string();
      if ((ext != ".cu" && ext != ".cpp") || source.filename().string().rfind("screen_", 0) == 0) continue;
      if (ext == ".cu" && !engine::find_nvcc()) continue;
      if (tag(source, "kblaster-expect") == "forbidden_library" || tag(source, "kblaster-screening") == "off") continue;
      const auto refusal = screen(source);
      CHECK_MESSAGE(!refusal, source.string() << ": " << (refusal ? refusal->reason : ""));
    }
}
