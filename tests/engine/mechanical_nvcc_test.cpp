// Every variant the mechanical tier makes of every example kernel (examples/tasks/*/kernel.cu,
// examples/vadd/vadd.cu) compiles with the real nvcc, and so does a chain of one variant of
// each technique applied in turn. Skipped, with a message, where nvcc is absent. Prints, per
// example, which techniques applied (how many variants) and which refused (and why).
#include "engine/toolchain/nvcc_driver.h"
#include "engine/optimize/mechanical/mechanical.h"
#include "engine/toolchain/task_build.h"

#include <doctest/doctest.h>

#include <cstdlib>
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

namespace {

// Enough of CUDA for element-wise kernels to run on the host, one thread after another (they
// have no barriers: the vectorizer refuses kernels that do).
constexpr const char* host_cuda = R"(#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
struct kb_dim { unsigned x = 1, y = 1, z = 1; };
static kb_dim threadIdx, blockIdx, blockDim, gridDim;
#define __global__
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
static float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static float2 make_float2(float a, float b) { return {a, b}; }
)";

// Runs `kernel` over a grid of `blocks` x `threads` on the host.
constexpr const char* host_launch = R"(
template <typename F> void launch(unsigned blocks, unsigned threads, F f) {
  gridDim.x = blocks; blockDim.x = threads;
  for (unsigned b = 0; b < blocks; ++b) for (unsigned t = 0; t < threads; ++t) { blockIdx.x = b; threadIdx.x = t; f(); }
}
)";

}  // namespace

TEST_CASE("vectorized variants compute what the scalar kernel computes, aligned or not, for every tail") {
  // Host emulation: the variants are compiled by the host compiler with a stand-in for CUDA's
  // built-ins and run, thread after thread, against the original kernel on every length 0..41
  // and every misalignment of the pointers (0..3 floats), with one-per-thread grids and a small
  // grid-stride grid.
  const char* cxx = std::getenv("CXX") ? std::getenv("CXX") : "c++";
  const std::string kernels = R"(
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void relu_axpy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { if (x[i] > 0.f) y[i] += a * x[i] + 0.5f * i; }
}
__global__ void scale(const float* x, float* y, float a, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    y[i] = a * x[i];
}
)";
  mechanical_context context;
  const auto r = mechanical_variants(kernels, "vectorized_memory_access", context);
  REQUIRE(r.variants.size() == 2);
  const fs::path dir = fs::temp_directory_path() / "kblaster-vectorize-host";
  fs::create_directories(dir);
  std::string program = std::string(host_cuda) + host_launch + "namespace orig {\n" + kernels + "}\n";
  for (std::size_t v = 0; v < r.variants.size(); ++v)
    program += "namespace v" + std::to_string(v) + " {\n" + r.variants[v].source + "}\n";
  program += R"(
int check(const char* what, const std::vector<float>& want, const std::vector<float>& got, int n, int off) {
  for (int i = 0; i < n; ++i)
    if (std::fabs(want[off + i] - got[off + i]) > 1e-6f) {
      std::printf("%s: n=%d offset=%d element %d: %g != %g\n", what, n, off, i, want[off + i], got[off + i]);
      return 1;
    }
  for (int i = 0; i < off; ++i) if (got[i] != 7.f) { std::printf("%s: wrote before the array\n", what); return 1; }
  for (std::size_t i = off + n; i < got.size(); ++i) if (got[i] != 7.f && got[i] != want[i]) { std::printf("%s: wrote past the end\n", what); return 1; }
  return 0;
}
template <typename K> int run_all(const char* what, K variant) {
  int bad = 0;
  for (int n = 0; n < 42; ++n)
    for (int off = 0; off < 4; ++off) {
      alignas(16) static float a[64], b[64];
      for (int i = 0; i < 64; ++i) { a[i] = (i % 7) - 3.f; b[i] = i * 0.25f; }
      std::vector<float> want(64 + 8, 7.f), got(64 + 8, 7.f);
      alignas(16) static float wbuf[80], gbuf[80];
      for (int i = 0; i < 80; ++i) wbuf[i] = gbuf[i] = 7.f;
      variant(a + off, b + off, wbuf + off, gbuf + off, n);
      for (int i = 0; i < 72; ++i) { want[i] = wbuf[i]; got[i] = gbuf[i]; }
      bad += check(what, want, got, n, off);
    }
  return bad;
}
int main() {
  int bad = 0;
)";
  for (std::size_t v = 0; v < r.variants.size(); ++v) {
    const std::string ns = "v" + std::to_string(v);
    program += "  bad += run_all(\"vadd " + ns + "\", [](const float* a, const float* b, float* w, float* g, int n) {\n"
               "    launch((n + 7) / 8 + 1, 8, [&] { orig::vadd(a, b, w, n); });\n"
               "    launch((n + 7) / 8 + 1, 8, [&] { " + ns + "::vadd(a, b, g, n); }); });\n";
    program += "  bad += run_all(\"relu_axpy " + ns + "\", [](const float* a, const float* b, float* w, float* g, int n) {\n"
               "    for (int i = 0; i < n; ++i) w[i] = g[i] = b[i];\n"
               "    launch((n + 7) / 8, 8, [&] { orig::relu_axpy(a, w, 2.f, n); });\n"
               "    launch((n + 7) / 8, 8, [&] { " + ns + "::relu_axpy(a, g, 2.f, n); }); });\n";
    program += "  bad += run_all(\"scale " + ns + "\", [](const float* a, const float*, float* w, float* g, int n) {\n"
               "    launch(2, 4, [&] { orig::scale(a, w, 3.f, n); });\n"
               "    launch(2, 4, [&] { " + ns + "::scale(a, g, 3.f, n); }); });\n";
  }
  program += "  std::printf(\"%d mismatching runs\\n\", bad);\n  return bad ? 1 : 0;\n}\n";
  const fs::path src = dir / "vectorize_host.cpp", exe = dir / "vectorize_host";
  std::ofstream(src, std::ios::binary) << program;
  const std::string build = std::string(cxx) + " -std=c++17 -O1 -w -fno-strict-aliasing -o " + exe.string() + " " +
                            src.string() + " 2>&1";
  INFO(program);
  REQUIRE(std::system(build.c_str()) == 0);
  CHECK(std::system(exe.string().c_str()) == 0);
}
