// Compiling candidates: nvcc for CUDA sources, the host compiler for the CPU path.
#include "engine/toolchain/task_build.h"
#include "support/files.h"
#include "support/hash.h"

#include "support/run_process.h"
#include "support/sandbox.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace kblaster::engine {
namespace fs = std::filesystem;

namespace {

std::string host_compiler() {
  if (const char* cxx = std::getenv("CXX"); cxx && *cxx) return cxx;
  return "g++";
}

}  // namespace

bool is_host_source(const std::string& path) {
  const auto ext = fs::path(path).extension().string();
  return ext == ".cpp" || ext == ".cc" || ext == ".cxx";
}

std::string dlpack_include_dir() {
  if (const char* dir = std::getenv("KBLASTER_DLPACK_INCLUDE"); dir && *dir) return dir;
  return {};
}

candidate_build build_host_candidate(const std::string& source, const std::string& cache_dir, bool use_cache,
                                     std::stop_token stop) {
  candidate_build b;
  const auto text = support::read_file_if_exists(source);
  if (!text) {
    b.log = source + ": cannot read";
    return b;
  }
  std::vector<std::string> argv{host_compiler(), "-std=c++17", "-O2", "-shared", "-fPIC", "-Wall"};
  if (const auto dl = dlpack_include_dir(); !dl.empty()) argv.push_back("-I" + dl);
  std::uint64_t h = support::fnv1a(*text);
  for (const auto& a : argv) h = support::fnv1a(a, h);
  h = support::fnv1a(source, h);
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  std::ostringstream name;
  name << std::hex << h;
  b.library = (fs::path(cache_dir) / ("host-" + name.str() + ".so")).string();
  if (use_cache && fs::exists(b.library, ec)) {
    b.ok = b.from_cache = true;
    return b;
  }
  const auto tmp = support::temporary_sibling(b.library).string();
  argv.insert(argv.end(), {"-o", tmp, source});
  // Model-written source: compiled in the sandbox, with only the cache folder writable.
  std::optional<support::sandbox_scratch> scratch;
  try {
    scratch.emplace(fs::path(cache_dir) / ".jobs", "cxx");
    argv = support::sandboxed_command(argv, {.scratch = scratch->path(),
                                             .writable = {cache_dir},
                                             .readable = support::folders_read_by_compile(argv),
                                             .environment = {},
                                             .gpu = false,
                                             .limits = {}});
  } catch (const std::exception& e) {
    b.log = std::string("cannot sandbox the compiler: ") + e.what();
    return b;
  }
  const auto r = support::run_process(argv, std::chrono::seconds(180), std::nullopt, stop);
  b.log = r.out + r.err;
  b.cancelled = r.cancelled;
  b.diagnostics = parse_nvcc_diagnostics(b.log);
  b.seconds = r.seconds;
  if (!r.ok()) {
    fs::remove(tmp, ec);
    if (r.failed_to_start) b.log = "cannot run " + argv[0] + ": " + r.err;
    if (r.timed_out) b.log += "\n(the compiler timed out)";
    return b;
  }
  fs::rename(tmp, b.library, ec);  // atomic: a concurrent build never sees half a file
  b.ok = !ec;
  if (ec) b.log += "\ncannot move the build into the cache: " + ec.message();
  return b;
}

candidate_build build_candidate(const std::string& source, const std::string& arch, nvcc_driver& nvcc,
                                bool use_cache, std::stop_token stop) {
  if (is_host_source(source)) return build_host_candidate(source, nvcc_driver::default_cache_dir(), use_cache, stop);
  nvcc_options o;
  o.arch = arch;
  o.use_cache = use_cache;
  o.sandboxed = true;
  o.stop = stop;
  if (const auto dl = dlpack_include_dir(); !dl.empty()) o.extra_flags.push_back("-I" + dl);
  // The shared CUDA runtime: the harness's own instance serves the candidate (one runtime, one
  // context), and the candidate's imports show exactly what it calls, where the static runtime
  // would add its own dlopen and dlsym for the screening to wave through. The rpath finds this
  // toolkit's runtime when the harness has not loaded one yet.
  const auto toolkit_lib = fs::path(nvcc.path()).parent_path().parent_path() / "lib64";
  o.extra_flags.insert(o.extra_flags.end(), {"-cudart", "shared", "-Xlinker", "-rpath=" + toolkit_lib.string()});
  const auto r = nvcc.compile(source, output_kind::shared_object, o);
  candidate_build b;
  b.ok = r.ok;
  b.from_cache = r.from_cache;
  b.library = r.output_path;
  b.log = r.log;
  b.diagnostics = r.diagnostics;
  b.seconds = r.seconds;
  b.cancelled = r.cancelled;
  if (r.timed_out) b.log += "\n(nvcc timed out)";
  return b;
}

}  // namespace kblaster::engine
