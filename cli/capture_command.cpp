// `kblaster capture FILE.cu --kernel NAME [--launch N] [--run PROGRAM [--build CMD]] [-- ARGS]`: build
// the user's program (or let its own build do it), run it with the capture agent, and write the captured launch as a task (kblaster eval and
// kblaster optimize take the folder it prints). Ctrl-C stops the build or the run.
#include "cli/command_registry.h"
#include "cli/interrupt_stop.h"
#include "cli/command_words.h"
#include "engine/capture/program_capture.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <string>

namespace {

struct capture_options {
  kblaster::engine::capture_request request;
  int timeout_s = 120;
  bool json = false;
  std::string run_line, build_line;  // --run, --build
};

void print_human(const kblaster::engine::capture_result& r) {
  const auto& c = r.capture;
  std::cout << "Captured " << r.provenance << kblaster::engine::origin_note(r) << "\n"
            << "  kernel " << c.name << " on " << c.device_name << " (sm " << c.compute_capability << ", " << c.sm_count
            << " SMs)\n"
            << "  grid " << kblaster::engine::dims_text(c.grid) << ", block " << kblaster::engine::dims_text(c.block) << ", " << c.shared_bytes
            << " B dynamic shared memory; " << c.time_ms << " ms in the program" << c.timing_note() << "\n";
  for (std::size_t a = 0; a < r.task.views.size(); ++a) {
    const auto& v = r.task.views[a];
    std::cout << "  allocation " << a << ": " << v.name << ", " << v.dtype << "[" << v.elements << "], "
              << (v.output >= 0 ? "written" : "read only") << "\n";
  }
  for (const auto& n : r.task.notes) std::cout << "  note: " << n << "\n";
  if (!r.cached && !r.replayed) std::cout << "  built in " << r.build_seconds << " s, ran in " << r.run_seconds << " s\n";
  std::cout << "Task: " << r.task.dir << "\n";
}

void print_json(const kblaster::engine::capture_result& r) {
  const auto& c = r.capture;
  nlohmann::json allocations = nlohmann::json::array();
  for (std::size_t a = 0; a < r.task.views.size(); ++a) {
    const auto& v = r.task.views[a];
    allocations.push_back({{"name", v.name}, {"dtype", v.dtype}, {"elements", v.elements}, {"bytes", c.allocations[a].bytes},
                           {"written", v.output >= 0}});
  }
  nlohmann::json j{{"kernel", c.name},        {"launch", c.launch},       {"grid", c.grid},
                   {"block", c.block},        {"shared_bytes", c.shared_bytes}, {"time_ms", c.time_ms}, {"lone_launch_ms", c.lone_launch_ms}, {"batch_calls", c.batch_calls},
                   {"device", c.device_name}, {"allocations", allocations},   {"task", r.task.dir},
                   {"capture", c.dir},        {"cached", r.cached},       {"replayed", r.replayed}, {"notes", r.task.notes},
                   {"build_seconds", r.build_seconds}, {"run_seconds", r.run_seconds},
                   {"program_output", r.program_output}};
  std::cout << j.dump(2) << "\n";
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto opts = std::make_shared<capture_options>();
  auto* app = root.add_subcommand("capture", "Capture one launch of a kernel from your own CUDA program, as a task");
  app->add_option("file", opts->request.source, "the .cu file that defines the kernel (and main(), unless --run is given)")->required();
  app->add_option("args", opts->request.run.args, "the program's arguments (after --)");
  app->add_option("--kernel", opts->request.kernel, "the kernel to capture (plain or qualified name)")->required();
  app->add_option("--launch", opts->request.launch, "which of its launches, counting from 0 (default 0)")->check(CLI::NonNegativeNumber);
  app->add_option("--cwd", opts->request.run.cwd, "the program's working folder (default: the file's folder)");
  app->add_option("--run", opts->run_line,
                  "your program, built by your own build, to run instead of building FILE (then FILE need not define main; "
                  "it must link the CUDA runtime shared: nvcc -cudart shared)");
  app->add_option("--build", opts->build_line, "with --run: the command that builds it, run first in --cwd (e.g. \"make app\")");
  app->add_option("--env", opts->request.run.env, "NAME=VALUE added to the program's environment (repeatable)");
  app->add_option("--timeout", opts->timeout_s, "seconds before the program is stopped (default 120)")->check(CLI::PositiveNumber);
  app->add_option("--max-capture-bytes", opts->request.max_bytes, "refuse a launch whose memory exceeds this (default 2 GiB)");
  app->add_option("--cache", opts->request.cache_root, "where captures are kept (default $XDG_CACHE_HOME/kblaster/captures)");
  app->add_flag("--sandboxed", opts->request.sandboxed,
                "build and run the program in the sandbox (no network, no secrets, only the capture folder writable), "
                "as kblaster does for a rewrite carried back into it");
  app->add_flag("--json", opts->json, "print JSON");
  return kblaster::cli::command{app, [opts] {
    opts->request.timeout = std::chrono::seconds(opts->timeout_s);
    opts->request.run.command = kblaster::cli::command_words(opts->run_line);
    opts->request.run.build = kblaster::cli::command_words(opts->build_line);
    if (!opts->request.run.build.empty() && opts->request.run.command.empty()) {
      std::cerr << "kblaster capture: --build needs --run (the program it builds)\n";
      return 2;
    }
    kblaster::cli::interrupt_stop interrupt("kblaster capture");
    try {
      const auto r = kblaster::engine::capture_program(
          opts->request, [](const std::string& line) { std::cerr << "kblaster capture: " << line << "\n"; }, interrupt.token());
      if (opts->json) print_json(r);
      else print_human(r);
      return 0;
    } catch (const kblaster::engine::capture_error& e) {
      std::cerr << "kblaster capture: " << e.what() << "\n";
      return 1;
    }
  }};
});

}  // namespace
