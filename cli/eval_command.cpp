// `kblaster eval TASK [--candidate FILE]`: compile a candidate, verify it against the task's
// reference on several seeds under every guard, time it and the reference the same way, and
// print the verdict with its figures (or JSON with --json). Progress goes to stderr, and so does a
// warning when the task is degenerate (its reference probed by the harness: reference_probe.h).
// The work is engine/evaluate/evaluate_service's; Ctrl-C stops the compiler or harness in flight.
#include "cli/command_registry.h"
#include "support/text.h"
#include "cli/interrupt_stop.h"
#include "engine/evaluate/evaluate_service.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

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

// A harness time: milliseconds from one, else microseconds.
std::string ms(double v) { return v >= 1 ? kblaster::support::ms_text(v, 3) : kblaster::support::us_text(v * 1000, 2); }

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
                << kblaster::support::significant_text(100 * s.value("rsd", 0.0), 2) << " %"
                << (s.value("converged", false) ? "" : " (cap reached)") << (s.value("throttled", false) ? " THROTTLED" : "");
      if (t.value("calls_per_sample", 1) > 1) std::cout << "  (per call; " << t.value("calls_per_sample", 1) << " calls a sample)";
      std::cout << "\n";
    }
    std::cout << "  speedup  " << kblaster::support::times_text(t.value("speedup", 0.0), 3) << "  ("
              << t.value("method", "") << ")\n";
    if (t["candidate"].contains("note")) std::cout << "  note: " << t["candidate"]["note"].get<std::string>() << "\n";
  }
  if (r.contains("stderr")) std::cout << "  harness stderr:\n" << r["stderr"].get<std::string>() << "\n";
}

kblaster::engine::evaluate_request request_of(const eval_options& opts) {
  kblaster::engine::evaluate_request r;
  r.task = opts.task;
  r.candidate = opts.candidate;
  r.device = opts.device;
  r.verify_only = opts.verify_only;
  r.probe = !opts.no_probe;
  r.harness = opts.harness;
  r.watchdog = std::chrono::milliseconds(static_cast<long long>(opts.watchdog_s * 1000));
  r.max_seconds = opts.max_seconds;
  return r;
}

void print_probe(const kblaster::engine::reference_probe& probe) {
  if (!probe.ran()) std::cerr << "kblaster eval: note: the reference was not probed for degeneracy: " << probe.error << "\n";
  for (const auto& f : probe.findings()) std::cerr << "kblaster eval: warning: degenerate task: " << f << "\n";
}

int run_eval(const eval_options& opts) {
  using namespace kblaster::engine;
  kblaster::cli::interrupt_stop ctrl_c("kblaster eval", "the compiler or the harness in flight is stopped; no verdict is given");
  evaluate_outcome out;
  try {
    out = evaluate_candidate(request_of(opts), {.progress = progress}, ctrl_c.token());
  } catch (const evaluate_refusal& e) {
    progress_done();
    std::cerr << "kblaster eval: " << e.what() << "\n";
    return e.kind() == evaluate_refusal_kind::bad_input ? 2 : 1;
  }
  progress_done();
  if (out.cancelled) {
    std::cerr << "kblaster eval: interrupted: no verdict\n";
    return 130;
  }
  if (!out.build.ok) {
    if (opts.json) std::cout << to_json(out).dump(2) << "\n";
    else std::cout << "verdict: fail (compile)\n" << out.build.log << "\n";
    return 1;
  }
  if (out.probe) print_probe(*out.probe);
  if (opts.json) std::cout << to_json(out).dump(2) << "\n";
  else {
    std::cout << out.task.name << ": " << out.candidate << " on " << out.device << "\n";
    print_human(out.result);
  }
  return out.verdict() == "pass" ? 0 : 1;
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
