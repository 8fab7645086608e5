// KernelBench import: turns a KernelBench problem file (class Model, get_inputs(),
// get_init_inputs()) into a KernelBlaster task directory by running tools/kernelbench_export.py
// with the machine's PyTorch, then writing task.json and a kernel.cu stub from its manifest.
#pragma once

#include "engine/task/task.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <stop_token>
#include <string>

namespace kblaster::engine {

/// An import that could not be done; the message says why and what to do.
class import_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What to import and with which Python.
struct kernelbench_import_options {
  std::string problem;             // PROBLEM.py
  std::string out_dir;             // the task directory to write
  std::string python = "python3";  // interpreter with PyTorch (looked up in PATH)
  std::string device = "cpu";      // where the module is exported and timed: cpu or cuda
  std::string exporter;            // kernelbench_export.py; empty: find_kernelbench_exporter()
  std::chrono::seconds timeout{600};
  double timing_seconds = 1;       // per timed side (eager, torch.compile); 0: no timing
  /// The import cache's folder (import_cache.h): an import of the same problem bytes with the same
  /// PyTorch, device and exporter is served from it without running the exporter. Empty: no cache.
  std::filesystem::path cache_dir;
  std::stop_token stop;            // kills the exporter, or ends a wait for another process's import of the same problem
};

/// The written task and what the exporter measured.
struct kernelbench_import_result {
  task_spec task;            // the task as load_task reads it back
  nlohmann::json manifest;   // the exporter's manifest (inputs, parameters, outputs, timings)
  std::string task_json;     // path of task.json
  bool cached = false;       // served from the import cache: the exporter did not run
  double export_seconds = 0; // the exporter's wall time, when it ran
};

/// Runs the exporter, or takes what it wrote from the cache, and writes OUT_DIR/{task.json, model.pt,
/// kernel.cu}. `progress` gets one line per step. Throws import_error (python or torch missing, the
/// problem raising, no Model, timeout, a stop); a stopped import leaves no task folder it made.
kernelbench_import_result import_kernelbench(const kernelbench_import_options& opts,
                                             const std::function<void(const std::string&)>& progress = {});

/// kernelbench_export.py: $KBLASTER_KERNELBENCH_EXPORTER, else found from the running binary (the
/// source tree of its build tree, via CMakeCache.txt, or PREFIX/share/kblaster/), or empty.
std::string find_kernelbench_exporter();

/// The kernel.cu stub documenting kb_forward's arguments for an exporter manifest.
std::string kernelbench_stub(const nlohmann::json& manifest, const std::string& problem_name);

}  // namespace kblaster::engine
