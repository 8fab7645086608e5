// `kblaster eval TASK [--candidate FILE]`: compile a candidate, verify it against the task's
// reference on several seeds under every guard, time it and the reference the same way, and
// print the verdict with its figures (or JSON with --json). Progress goes to stderr, and so does a
// warning when the task is degenerate (its reference probed by the harness: reference_probe.h).
#include "cli/command_registry.h"
#include "engine/evaluate/harness_client.h"
#include "engine/evaluate/reference_probe.h"
#include "engine/task/task.h"
#include "engine/toolchain/task_build.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

namespace {

struct eval_options {
  std::string task;
  std::string candidate;
  bool json = false;
  bool verify_only = false;
  bool no_probe = false;
  std::string device = "auto";
  std::string harness;
  double watchdog_s = 10;
  double max_seconds = 2;
};

// One status line on stderr, rewritten in place on a terminal.
void progress(const std::string& text) {
  static const bool tty = ::isatty(STDERR_FILENO);
  if (tty) std::cerr << "\r\033[K" << "kblaster eval: " << text << std::flush;
  else std::cerr << "kblaster eval: " << text << "\n";
}

void progress_done() {
  if (::isatty(STDERR_FILENO)) std::cerr << "\r\033[K" << std::flush;
}

std::string ms(double v) {
  std::ostringstream s;
  if (v >= 1) s << std::fixed << std::setprecision(3) << v << " ms";
  else s << std::fixed << std::setprecision(2) << v * 1000 << " us";
  return s.str();
}

void print_human(const nlohmann::json& r) {
  const std::string verdict = r.value("verdict", "error");
  std::cout << "verdict: " << verdict;
  if (r.contains("check")) std::cout << " (" << r["check"].get<std::string>() << ")";
  std::cout << "\n";
  if (r.contains("reason")) std::cout << "  " << r["reason"].get<std::string>() << "\n";
  if (r.contains("seeds")) {
    for (const auto& s : r["seeds"]) {
      std::cout << "  seed " << s.value("seed", 0) << ": " << (s.value("ok", false) ? "ok" : "FAILED");
      if (s.contains("outputs"))
        for (const auto& o : s["outputs"])
          std::cout << "  max abs err " << o.value("max_abs_error", 0.0) << ", max rel err " << o.value("max_rel_error", 0.0)
                    << ", rel L2 " << o.value("relative_l2_error", 0.0);
      std::cout << "\n";
    }
  }
  if (r.contains("timing")) {
    const auto& t = r["timing"];
    for (const std::string side : {"candidate", "reference"}) {
      if (!t.contains(side)) continue;  // a candidate stopped clearly slower leaves the reference untimed
      const auto& s = t[side];
      // A captured program's reference is its own kernel, timed exactly as the candidate is.
      const std::string label = side == "reference" && t.value("reference_kind", "") == "kernel" ? "original" : side;
      std::cout << "  " << std::setw(9) << std::left << label << std::right << " median " << ms(s.value("median_ms", 0.0))
                << "  IQR " << ms(s.value("iqr_ms", 0.0)) << "  " << s.value("samples", 0) << " samples, RSD "
                << std::setprecision(2) << 100 * s.value("rsd", 0.0) << " %"
                << (s.value("converged", false) ? "" : " (cap reached)") << (s.value("throttled", false) ? " THROTTLED" : "");
      if (t.value("calls_per_sample", 1) > 1) std::cout << "  (per call; " << t.value("calls_per_sample", 1) << " calls a sample)";
      std::cout << "\n";
    }
    std::cout << "  speedup  " << std::fixed << std::setprecision(3) << t.value("speedup", 0.0) << "x  ("
              << t.value("method", "") << ")\n";
    if (t["candidate"].contains("note")) std::cout << "  note: " << t["candidate"]["note"].get<std::string>() << "\n";
  }
  if (r.contains("stderr")) std::cout << "  harness stderr:\n" << r["stderr"].get<std::string>() << "\n";
}

int run_eval(const eval_options& opts) {
  using namespace kblaster::engine;
  task_spec task;
  try {
    task = load_task(opts.task);
  } catch (const task_error& e) {
    std::cerr << "kblaster eval: " << e.what() << "\n";
    return 2;
  }
  // Which source, and so which path: a host source runs on the CPU, a .cu on the GPU.
  std::string source = opts.candidate;
  std::string device = opts.device;
  const bool gpu_here = !detect_local_arch().empty();
  if (source.empty()) {
    const bool use_gpu = device == "cuda" || (device == "auto" && gpu_here && !task.kernel.empty());
    source = use_gpu ? task.kernel : task.cpu_kernel;
    if (source.empty()) {
      std::cerr << "kblaster eval: the task names no " << (use_gpu ? "'kernel'" : "'cpu_kernel' (no GPU here)")
                << "; give --candidate FILE\n";
      return 2;
    }
  }
  if (!std::filesystem::exists(source)) {
    std::cerr << "kblaster eval: " << source << ": no such file\n";
    return 2;
  }
  if (device == "auto") device = is_host_source(source) ? "cpu" : "cuda";
  if (is_host_source(source) != (device == "cpu")) {
    std::cerr << "kblaster eval: " << source << " cannot run on device " << device
              << " (host sources .cpp run on the CPU, .cu on the GPU)\n";
    return 2;
  }

  std::unique_ptr<nvcc_driver> nvcc;
  auto build = [&](const std::string& src) -> candidate_build {
    progress("compiling " + std::filesystem::path(src).filename().string() + " ...");
    if (is_host_source(src)) return build_host_candidate(src, nvcc_driver::default_cache_dir());
    if (!nvcc) {
      const auto path = find_nvcc();
      if (!path) return {false, false, "", "nvcc not found (install CUDA, or give a .cpp host-code candidate)", {}, 0};
      nvcc = std::make_unique<nvcc_driver>(*path, nvcc_driver::default_cache_dir());
    }
    return build_candidate(src, task.arch, *nvcc);
  };
  const auto cand = build(source);
  nlohmann::json out{{"task", task.name}, {"candidate", source}, {"device", device},
                     {"build", {{"ok", cand.ok}, {"seconds", cand.seconds}, {"from_cache", cand.from_cache}}}};
  if (!cand.ok) {
    progress_done();
    out["result"] = {{"verdict", "fail"}, {"check", "compile"}, {"reason", cand.log}};
    if (opts.json) std::cout << out.dump(2) << "\n";
    else std::cout << "verdict: fail (compile)\n" << cand.log << "\n";
    return 1;
  }
  std::string ref_library;
  if (task.reference.kind == reference_kind::kernel) {
    const auto ref_src = device == "cpu" ? task.reference.cpu_path : task.reference.path;
    const auto ref = ref_src.empty() ? candidate_build{} : build(ref_src);
    if (!ref.ok) {
      progress_done();
      std::cerr << "kblaster eval: the reference kernel does not build" << (ref_src.empty() ? " (no cpu_kernel given)" : "")
                << "\n" << ref.log << "\n";
      return 1;
    }
    ref_library = ref.library;
  }

  harness_options ho;
  ho.executable = opts.harness;
  ho.device = device;
  ho.watchdog = std::chrono::milliseconds(static_cast<long long>(opts.watchdog_s * 1000));
  harness_client client(ho);
  progress(std::string(opts.verify_only ? "verifying" : "verifying and timing") + " on " + device + " (" +
           std::to_string(task.seeds) + " seeds) ...");
  nlohmann::json req{{"op", opts.verify_only ? "verify" : "evaluate"},
                     {"task", to_json(task)},
                     {"candidate", cand.library},
                     {"timing", {{"max_seconds", opts.max_seconds}}}};
  if (!ref_library.empty()) req["reference_library"] = ref_library;
  const auto reply = client.request(req);
  out["result"] = reply.to_json();
  out["result"].erase("id");
  if (!opts.no_probe && reply.error != "start_failed") {
    // After the verdict: the reference is loaded by then, and the probe costs a few of its calls.
    progress("probing the reference for a constant output or an ignored input ...");
    const auto probe = probe_reference(client, task, ref_library);
    out["reference_probe"] = to_json(probe);
    progress_done();
    if (!probe.ran())
      std::cerr << "kblaster eval: note: the reference was not probed for degeneracy: " << probe.error << "\n";
    for (const auto& f : probe.findings()) std::cerr << "kblaster eval: warning: degenerate task: " << f << "\n";
  }
  progress_done();
  if (opts.json) std::cout << out.dump(2) << "\n";
  else {
    std::cout << task.name << ": " << source << " on " << device << "\n";
    print_human(out["result"]);
  }
  return out["result"].value("verdict", "") == "pass" ? 0 : 1;
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto* app = root.add_subcommand(
      "eval",
      "Compile a candidate, verify it against the task's reference (several seeds, every guard), time both,\n"
      "and print the verdict. TASK is a directory with task.json, a .json, or a .cu with a kblaster-task comment.");
  auto opts = std::make_shared<eval_options>();
  app->add_option("task", opts->task, "the task")->required();
  app->add_option("--candidate", opts->candidate, "the kernel to judge (.cu: GPU; .cpp host code: CPU); default: the task's");
  app->add_flag("--json", opts->json, "print the harness's reply as JSON");
  app->add_flag("--verify-only", opts->verify_only, "check correctness only, do not time");
  app->add_flag("--no-probe", opts->no_probe,
                "do not probe the reference for a constant output or an ignored input (a degenerate task)");
  app->add_option("--device", opts->device, "cpu, cuda or auto (default: cuda for .cu, cpu for host sources)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app->add_option("--harness", opts->harness, "the kblaster-harness executable (default: beside kblaster, $KBLASTER_HARNESS, PATH)");
  app->add_option("--watchdog", opts->watchdog_s, "seconds a candidate may run before the harness is killed")
      ->check(CLI::Range(0.1, 3600.0));
  app->add_option("--max-seconds", opts->max_seconds, "timing cap per side in seconds")->check(CLI::Range(0.01, 600.0));
  return kblaster::cli::command{app, [opts] { return run_eval(*opts); }};
});

}  // namespace
