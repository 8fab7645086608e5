// nvcc invocation, caching and diagnostics.
#include "engine/toolchain/nvcc_driver.h"
#include "support/files.h"
#include "support/hash.h"
#include "support/run_process.h"
#include "support/sandbox.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

namespace fs = std::filesystem;

namespace kblaster::engine {

namespace {

const char* suffix_of(output_kind k) {
  switch (k) {
    case output_kind::object: return ".o";
    case output_kind::shared_object: return ".so";
    case output_kind::executable: return ".exe";
  }
  return ".o";
}

// ptxas names no source line: point its diagnostics at the __global__ that declares the entry.
void locate_ptxas_diagnostics(std::vector<diagnostic>& diags, const std::string& source_path, const std::string& source) {
  for (auto& d : diags) {
    if (d.tool != "ptxas" || d.line != 0 || d.kernel.empty()) continue;
    const std::string fn = function_name_of(demangle(d.kernel));
    const std::string bare = fn.substr(0, fn.find('<'));
    std::istringstream in(source);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      const auto at = line.find(bare + "(");
      if (at != std::string::npos && line.find("__global__") != std::string::npos) {
        d.file = source_path;
        d.line = n;
        d.column = static_cast<int>(at) + 1;
        break;
      }
    }
  }
}

// Moves the PTX that -keep left in `keep_dir` to `ptx_path` (one -arch gives one .ptx file).
void keep_generated_ptx(const fs::path& keep_dir, const fs::path& ptx_path) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(keep_dir, ec))
    if (entry.path().extension() == ".ptx") {
      fs::rename(entry.path(), ptx_path, ec);
      return;
    }
}

}  // namespace

std::optional<std::string> find_nvcc() {
  if (auto p = support::find_in_path("nvcc"); !p.empty()) return p;
  if (const char* home = std::getenv("CUDA_HOME"))
    if (auto p = support::find_in_path(std::string(home) + "/bin/nvcc"); !p.empty()) return p;
  if (auto p = support::find_in_path("/usr/local/cuda/bin/nvcc"); !p.empty()) return p;
  return std::nullopt;
}

std::string detect_local_arch() {
  if (support::find_in_path("nvidia-smi").empty()) return {};
  const auto r = support::run_process({"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"}, std::chrono::seconds(10));
  if (!r.ok()) return {};
  std::string cap = r.out.substr(0, r.out.find('\n'));
  std::string digits;
  for (char c : cap)
    if (c >= '0' && c <= '9') digits.push_back(c);
  return digits.size() >= 2 ? "sm_" + digits : std::string();
}

nvcc_driver::nvcc_driver(std::string nvcc_path, std::string cache_dir, int max_parallel)
    : nvcc_(std::move(nvcc_path)), cache_dir_(std::move(cache_dir)),
      slots_(std::make_unique<std::counting_semaphore<64>>(std::clamp(max_parallel, 1, 64))) {}

std::string nvcc_driver::default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kblaster/nvcc";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kblaster/nvcc";
  return (fs::temp_directory_path() / "kblaster-nvcc").string();
}

const std::string& nvcc_driver::version() {
  if (version_.empty()) {
    const auto r = support::run_process({nvcc_, "--version"}, std::chrono::seconds(30));
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line))
      if (line.find("release") != std::string::npos) version_ = line;
    if (version_.empty()) version_ = r.ok() ? r.out : "unknown";
  }
  return version_;
}

std::string nvcc_driver::target_arch(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (!local_arch_) local_arch_ = detect_local_arch();
  return local_arch_->empty() ? "sm_90" : *local_arch_;
}

compile_result nvcc_driver::compile(const std::string& source_path, output_kind kind, const nvcc_options& options) {
  compile_result r;
  r.arch = target_arch(options.arch);
  std::string source;
  try {
    source = support::read_file(source_path);
  } catch (const std::exception& e) {
    r.diagnostics.push_back({source_path, 0, 0, diagnostic_severity::error, "", e.what(), "nvcc", ""});
    return r;
  }
  std::vector<std::string> flags = {"-arch=" + r.arch, "-Xptxas", "-v"};
  if (options.lineinfo) flags.push_back("-lineinfo");
  if (kind == output_kind::object) flags.push_back("-c");
  if (kind == output_kind::shared_object) { flags.push_back("-shared"); flags.push_back("-Xcompiler"); flags.push_back("-fPIC"); }
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  if (options.keep_ptx) flags.push_back("-keep");  // the folder is added below: it is not part of the key

  // The key covers what changes the output: source text and path (diagnostics name it),
  // flags and the compiler. Included headers are not hashed.
  std::uint64_t h = support::fnv1a(source);
  h = support::fnv1a(fs::absolute(source_path).string(), h);
  for (const auto& f : flags) h = support::fnv1a(f + '\x1f', h);
  h = support::fnv1a(version(), h);
  const std::string key = support::hex64(h);
  std::error_code ec;
  fs::create_directories(cache_dir_, ec);
  if (ec) {
    r.diagnostics.push_back({"", 0, 0, diagnostic_severity::error, "", "cannot create build cache " + cache_dir_ + ": " + ec.message(), "nvcc", ""});
    return r;
  }
  r.output_path = (fs::path(cache_dir_) / (key + suffix_of(kind))).string();
  const std::string log_path = (fs::path(cache_dir_) / (key + ".log")).string();
  const fs::path ptx_path = fs::path(cache_dir_) / (key + ".ptx");
  // Its own per build: two builds of one key at once (the analysis on open and a profile asked
  // meanwhile) would otherwise share it, and the first to finish removes it under the other.
  const fs::path keep_dir = support::temporary_sibling(fs::path(cache_dir_) / (key + ".keep"));
  r.command = {nvcc_};
  r.command.insert(r.command.end(), flags.begin(), flags.end());
  if (options.keep_ptx) r.command.insert(r.command.end(), {"-keep-dir", keep_dir.string()});
  r.command.insert(r.command.end(), {"-o", r.output_path, source_path});

  if (options.use_cache && fs::exists(r.output_path) && fs::exists(log_path)) {
    r.ok = true;
    r.from_cache = true;
    r.log = support::read_file(log_path);
  } else {
    slots_->acquire();
    struct release_slot { std::counting_semaphore<64>& s; ~release_slot() { s.release(); } } guard{*slots_};
    // Build into a temporary name so that a concurrent reader never sees half a file.
    std::vector<std::string> cmd = r.command;
    if (options.keep_ptx) fs::create_directories(keep_dir, ec);
    const std::string tmp = support::temporary_sibling(r.output_path).string();
    cmd[cmd.size() - 2] = tmp;
    std::optional<support::sandbox_scratch> scratch;
    if (options.sandboxed) {
      try {
        scratch.emplace(fs::path(cache_dir_) / ".jobs", "nvcc");
        // It reads the compiler, the source and its headers; it writes only the cache.
        cmd = support::sandboxed_command(cmd, {.scratch = scratch->path(),
                                               .writable = {cache_dir_},
                                               .readable = support::folders_read_by_compile(cmd),
                                               .environment = {},
                                               .gpu = false,
                                               .limits = {}});
      } catch (const std::exception& e) {
        r.diagnostics.push_back({"", 0, 0, diagnostic_severity::error, "", std::string("cannot sandbox nvcc: ") + e.what(), "nvcc", ""});
        return r;
      }
    }
    const auto p = support::run_process(cmd, options.timeout, std::nullopt, options.stop);
    r.seconds = p.seconds;
    r.log = p.out + p.err;
    r.timed_out = p.timed_out;
    r.cancelled = p.cancelled;
    if (p.cancelled) {
      r.diagnostics.push_back({source_path, 0, 0, diagnostic_severity::error, "", "nvcc was stopped", "nvcc", ""});
      fs::remove(tmp, ec);
    } else if (p.timed_out) {
      r.diagnostics.push_back({source_path, 0, 0, diagnostic_severity::error, "",
                               "nvcc did not finish within " + std::to_string(options.timeout.count()) + " s", "nvcc", ""});
      fs::remove(tmp, ec);
    } else if (p.failed_to_start) {
      r.diagnostics.push_back({"", 0, 0, diagnostic_severity::error, "", p.err, "nvcc", ""});
    } else if (p.ok() && fs::exists(tmp)) {
      if (options.keep_ptx) keep_generated_ptx(keep_dir, ptx_path);
      fs::rename(tmp, r.output_path, ec);
      std::ofstream(log_path, std::ios::binary) << r.log;
      r.ok = !ec;
    } else {
      fs::remove(tmp, ec);
    }
  }
  if (options.keep_ptx) fs::remove_all(keep_dir, ec);  // the intermediate files: megabytes each build
  auto parsed = parse_nvcc_diagnostics(r.log);
  locate_ptxas_diagnostics(parsed, source_path, source);
  r.diagnostics.insert(r.diagnostics.end(), parsed.begin(), parsed.end());
  r.resources = parse_ptxas_output(r.log);
  if (options.keep_ptx && r.ok && fs::exists(ptx_path)) {
    r.ptx_path = ptx_path.string();
    add_ptx_launch_bounds(r.resources, support::read_file(r.ptx_path));
  }
  if (!r.ok && !r.timed_out && r.diagnostics.empty())
    r.diagnostics.push_back({source_path, 0, 0, diagnostic_severity::error, "", "nvcc failed: " + r.log, "nvcc", ""});
  return r;
}

}  // namespace kblaster::engine
