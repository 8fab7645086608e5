// Every variant the mechanical tier makes of every example kernel (examples/tasks/*/kernel.cu,
// examples/vadd/vadd.cu) compiles with the real nvcc, and so does a chain of one variant of
// each technique applied in turn. Skipped, with a message, where nvcc is absent. Prints, per
// example, which techniques applied (how many variants) and which refused (and why).
#include "engine/toolchain/nvcc_driver.h"
#include "engine/optimize/mechanical/mechanical.h"
#include "engine/toolchain/task_build.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace kblaster::engine;
using namespace kblaster::engine::optimize;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> example_kernels() {
  const fs::path root = fs::path(KBLASTER_SOURCE_DIR) / "examples";
  std::vector<fs::path> out;
  for (const auto& task : fs::directory_iterator(root / "tasks"))
    if (fs::exists(task.path() / "kernel.cu")) out.push_back(task.path() / "kernel.cu");
  std::sort(out.begin(), out.end());
  out.push_back(root / "vadd" / "vadd.cu");
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct job {
  std::string name;    // example/technique/label, for messages
  std::string source;
};

}  // namespace

TEST_CASE("mechanical variants of every example kernel compile with nvcc") {
  const auto nvcc_path = find_nvcc();
  if (!nvcc_path) {
    std::cout << "SKIPPED: nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): mechanical nvcc test not run\n";
    return;
  }
  // A cache of our own that persists between runs: a hit means this exact source built before.
  const fs::path dir = fs::temp_directory_path() / "kblaster-mechanical-nvcc";
  fs::create_directories(dir / "src");
  nvcc_driver driver(*nvcc_path, (dir / "cache").string(), 2);

  mechanical_context context;
  context.rtol = 1e-2;  // room for fast math, so that it is compiled too
  context.max_variants = 8;
  context.arch = "sm_90";

  std::vector<job> jobs;
  for (const fs::path& file : example_kernels()) {
    const std::string example = file.parent_path().filename().string();
    const std::string source = read(file);
    REQUIRE_FALSE(source.empty());
    std::cout << example << ":\n";
    int applied = 0;
    std::string chain = source;
    for (const std::string& technique : mechanical_techniques()) {
      const auto r = mechanical_variants(source, technique, context);
      CHECK((r.variants.empty() != r.not_applicable.empty()));
      if (r.variants.empty()) {
        std::cout << "  " << technique << ": not applicable: " << r.not_applicable << "\n";
      } else {
        ++applied;
        std::cout << "  " << technique << ": " << r.variants.size() << " variant(s):";
        for (const auto& v : r.variants) {
          std::cout << " [" << v.label << "]";
          CHECK(v.source != source);
          CHECK(v.technique == technique);
          jobs.push_back({example + "/" + technique + "/" + v.label, v.source});
        }
        std::cout << "\n";
        // Deterministic: a second call gives byte-identical sources.
        const auto again = mechanical_variants(source, technique, context);
        REQUIRE(again.variants.size() == r.variants.size());
        for (std::size_t i = 0; i < r.variants.size(); ++i) CHECK(again.variants[i].source == r.variants[i].source);
      }
      // The chain: each technique applied to the previous one's first variant.
      const auto step = mechanical_variants(chain, technique, context);
      if (!step.variants.empty()) chain = step.variants.front().source;
    }
    CHECK(applied >= 3);  // every example has at least launch bounds, unrolling or qualifiers
    if (chain != source) jobs.push_back({example + "/chain of all techniques", chain});
  }

  nvcc_options options;
  options.arch = context.arch;
  options.lineinfo = false;
  if (const auto dl = dlpack_include_dir(); !dl.empty()) options.extra_flags.push_back("-I" + dl);
  std::vector<std::future<std::pair<bool, std::string>>> builds;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const fs::path path = dir / "src" / ("variant_" + std::to_string(i) + ".cu");
    std::ofstream(path, std::ios::binary) << jobs[i].source;
    builds.push_back(std::async(std::launch::async, [&driver, &options, path] {
      const auto r = driver.compile(path.string(), output_kind::object, options);
      return std::make_pair(r.ok, r.log);
    }));
  }
  int ok = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto [built, log] = builds[i].get();
    INFO(jobs[i].name << "\n" << jobs[i].source << "\n" << log);
    CHECK(built);
    ok += built ? 1 : 0;
  }
  std::cout << ok << " of " << jobs.size() << " variants compiled with " << driver.version() << "\n";
}
