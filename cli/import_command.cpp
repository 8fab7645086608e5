// `kblaster import kernelbench PROBLEM.py --out TASK_DIR`: turn a KernelBench problem into a task
// (TorchScript module with its weights, input specs, kernel.cu stub, eager and torch.compile
// times) with the machine's PyTorch. The work is in engine/task/kernelbench_import.h. Then the
// task's reference is probed in kblaster-harness (engine/evaluate/reference_probe.h): an output
// that is constant over the declared inputs, or that ignores an input, is warned about.
#include "cli/command_registry.h"
#include "cli/interrupt_stop.h"
#include "engine/evaluate/harness_client.h"
#include "engine/evaluate/reference_probe.h"
#include "engine/task/import_cache.h"
#include "engine/task/kernelbench_import.h"
#include "support/text.h"

#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

namespace {

struct import_options {
  std::string problem;
  std::string out;
  std::string python = "python3";
  std::string device = "cpu";
  double timeout_s = 600;
  double timing_seconds = 1;
  bool no_timing = false;
  bool no_probe = false;
  std::string harness;
  std::string import_cache;  // empty: import_cache::default_root()
  bool no_import_cache = false;
};

// The imported task's reference probed in the harness, on the import's device; warnings on stderr.
// The import stands whatever the probe finds: a degenerate problem is still a problem to report.
// A stop ends the probe: the task is whole, only not probed.
void probe_imported(const import_options& opts, const kblaster::engine::task_spec& task, std::stop_token stop) {
  using namespace kblaster::engine;
  harness_options ho;
  ho.executable = opts.harness;
  ho.device = opts.device;
  ho.watchdog = std::chrono::seconds(static_cast<long long>(opts.timeout_s));
  std::cerr << "kblaster import: probing the reference for a constant output or an ignored input ...\n";
  harness_client client(ho);
  const auto probe = probe_reference(client, task, {}, stop);
  if (stop.stop_requested()) return;
  if (!probe.ran()) {
    std::cerr << "kblaster import: note: the reference was not probed for degeneracy: " << probe.error << "\n";
    return;
  }
  for (const auto& f : probe.findings()) std::cerr << "kblaster import: warning: degenerate task: " << f << "\n";
  if (probe.degenerate()) std::cout << "  " << probe.summary() << "\n";
}

std::string timing_text(const nlohmann::json& t) {
  if (t.value("status", "") != "measured") return t.value("status", "unknown") + ": " + t.value("reason", "");
  std::string s = kblaster::support::ms_text(t.value("median_ms", 0.0), 4) + " median, " +
                  kblaster::support::ms_text(t.value("mean_ms", 0.0), 4) + " mean over " + std::to_string(t.value("samples", 0)) + " calls";
  if (t.contains("compile_seconds"))
    s += " (compiled in " + kblaster::support::seconds_text(t["compile_seconds"].get<double>(), 1) + ")";
  return s;
}

int run_import(const import_options& opts) {
  using namespace kblaster::engine;
  kernelbench_import_options o;
  o.problem = opts.problem;
  o.out_dir = opts.out;
  o.python = opts.python;
  o.device = opts.device;
  o.timeout = std::chrono::seconds(static_cast<long long>(opts.timeout_s));
  o.timing_seconds = opts.no_timing ? 0 : opts.timing_seconds;
  o.cache_dir = opts.no_import_cache        ? std::filesystem::path()
                : opts.import_cache.empty() ? import_cache::default_root()
                                            : std::filesystem::path(opts.import_cache);
  kblaster::cli::interrupt_stop ctrl_c("kblaster import", "the exporter or the harness in flight is stopped");
  o.stop = ctrl_c.token();
  try {
    const auto r = import_kernelbench(o, [](const std::string& line) { std::cerr << "kblaster import: " << line << "\n"; });
    const auto& m = r.manifest;
    std::cout << "task " << r.task.name << " written to " << r.task_json << "\n"
              << "  import: " << (r.cached ? std::string("cached (the exporter did not run)")
                                           : kblaster::support::seconds_text(r.export_seconds)) << "\n"
              << "  reference: " << r.task.reference.path << " (torch.jit." << m.value("torchscript_method", "?")
              << ", PyTorch " << m.value("torch_version", "?") << ")\n"
              << "  arguments: " << r.task.inputs.size() << " input(s), then "
              << m.value("parameters", nlohmann::json::array()).size()
              << " parameter(s) and buffer(s); see kernel.cu for the order\n"
              << "  eager on " << m.value("device_name", "?") << ": " << timing_text(m.value("eager", nlohmann::json::object()))
              << "\n  torch.compile: " << timing_text(m.value("compile", nlohmann::json::object())) << "\n";
    for (const auto& in : m.at("inputs"))
      if (in.contains("note")) std::cout << "  note: " << in.value("name", "") << ": " << in["note"].get<std::string>() << "\n";
    if (!opts.no_probe) probe_imported(opts, r.task, o.stop);
    if (ctrl_c.interrupted()) {
      std::cerr << "kblaster import: interrupted: the task is imported whole, its reference not probed\n";
      return 130;
    }
    return 0;
  } catch (const import_error& e) {
    if (ctrl_c.interrupted()) {
      std::cerr << "kblaster import: interrupted: nothing was imported\n";
      return 130;
    }
    std::cerr << "kblaster import: " << e.what() << "\n";
    return 1;
  }
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto* app = root.add_subcommand("import", "Import tasks from other benchmarks");
  app->require_subcommand(1);
  auto* kb = app->add_subcommand(
      "kernelbench",
      "Turn a KernelBench problem (class Model, get_inputs(), get_init_inputs()) into a task directory:\n"
      "a TorchScript module with its weights, the inputs' spec, a kernel.cu stub, and the eager and\n"
      "torch.compile reference times, using this machine's PyTorch. Then the reference is probed in\n"
      "kblaster-harness, with a warning when its output is constant over the declared inputs or ignores one.");
  auto opts = std::make_shared<import_options>();
  kb->add_option("problem", opts->problem, "the KernelBench problem file (.py)")->required();
  kb->add_option("--out", opts->out, "the task directory to write")->required();
  kb->add_option("--python", opts->python, "Python interpreter with PyTorch (default: python3 in PATH)");
  kb->add_option("--device", opts->device, "export and time on cpu or cuda (default cpu)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  kb->add_option("--timeout", opts->timeout_s, "seconds the exporter may take (default 600)")->check(CLI::Range(1.0, 86400.0));
  kb->add_option("--timing-seconds", opts->timing_seconds, "time spent timing each of eager and torch.compile (default 1)")
      ->check(CLI::Range(0.01, 600.0));
  kb->add_flag("--no-timing", opts->no_timing, "export only; do not time the reference");
  kb->add_flag("--no-probe", opts->no_probe,
               "do not probe the reference in kblaster-harness for a constant output or an ignored input");
  auto* cache = kb->add_option("--import-cache", opts->import_cache,
                               "where imports are kept for reuse, keyed by the problem's bytes, PyTorch, the device "
                               "and the exporter (default $KBLASTER_IMPORT_CACHE, else $XDG_CACHE_HOME/kblaster/imports)");
  kb->add_flag("--no-import-cache", opts->no_import_cache, "run the exporter even when the cache holds this import")
      ->excludes(cache);
  kb->add_option("--harness", opts->harness,
                 "the kblaster-harness executable (default: beside kblaster, $KBLASTER_HARNESS, PATH)");
  return kblaster::cli::command{app, [opts] { return run_import(*opts); }};
});

}  // namespace
