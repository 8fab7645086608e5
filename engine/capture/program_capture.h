// Capturing a kernel launch from the user's own program: build it (nvcc, with the shared CUDA
// runtime, so that the agent can see its launches), run it with libkblaster-capture.so
// preloaded under a watchdog, read the capture and write its task. Cached by the source's
// content, the kernel, the launch and how the program is run.
#pragma once

#include "engine/capture/capture_task.h"
#include "engine/capture/kernel_capture.h"
#include "support/run_process.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

/// How the user's program runs (the editor's `kblaster.run` setting, the CLI's `-- ARGS`).
struct program_run {
  std::vector<std::string> args;
  std::string cwd;               // empty: the source file's folder
  std::vector<std::string> env;  // NAME=VALUE pairs added to the environment
  // A program your own build makes (the kernel's file need not define main): `command` is run
  // instead of building the file (the program and any leading arguments; `args` follow), after
  // `build` when given (e.g. {"make", "app"}), both in `cwd`. The program must link the CUDA
  // runtime as a shared library (nvcc -cudart shared; CMake CUDA_RUNTIME_LIBRARY Shared) for
  // the agent to see its launches.
  std::vector<std::string> command;
  std::vector<std::string> build;
  // More runs of the program whose launch of the kernel a rewrite must also hold on, each with
  // its own arguments (e.g. sizes with a ragged tail): verification covers more than one shape
  // (capture_shapes.h). The first launch is captured as `args` is.
  std::vector<std::vector<std::string>> shapes;
};

/// Whether a kernel in `text` can be optimized from a run of its program: the file defines main
/// (it is built as it is), or `run` names the program the user's own build makes.
bool runs_as_program(const std::string& text, const program_run& run);

/// The argv that runs the program the user's own build makes (`run.command` set): the command,
/// a relative path in it (`./app`, `build/app`) taken from `run.cwd`, then `run.args`.
std::vector<std::string> own_build_argv(const program_run& run);

struct capture_request {
  std::string source;  // the .cu file that defines main() and the kernel
  std::string kernel;  // plain or qualified name
  long launch = 0;     // which launch of it, from 0
  program_run run;
  std::string task_name;  // the capture's task's name; empty: the kernel's (another shape's is set apart)
  std::uint64_t max_bytes = 2ull << 30;
  std::chrono::seconds timeout{120};
  std::vector<std::string> nvcc_flags{"-O3", "-arch=native"};
  // The source holds model-written code (a rewrite carried back into the program): it is
  // built and run only in the sandbox (support/sandbox.h): no network, no secrets, and nothing
  // writable but the capture's folder. The user's own program runs as the user's build would.
  bool sandboxed = false;
  std::string nvcc;        // empty: find_nvcc()
  std::string agent;       // empty: find_capture_agent()
  std::string cache_root;  // empty: default_capture_root()
  // Recorded captures, for tests and machines without a GPU (empty: $KBLASTER_CAPTURE_REPLAY,
  // $KBLASTER_CAPTURE_RECORD). With a replay folder nothing is built or run: the capture is the
  // one recorded for this program (see recording_name), or a capture_error says it is missing.
  // With a record folder every capture made is also copied there under that name.
  std::string replay_root, record_root;
  // The NVIDIA driver library checked before anything is built or run (driver_check.h); tests
  // name one this machine has to stand in for it, or one it lacks.
  std::string driver_library = "libcuda.so.1";
};

struct capture_result {
  kernel_capture capture;
  capture_task task;
  bool cached = false;
  bool replayed = false;  // from a recording (replay_root): the program was neither built nor run
  double build_seconds = 0, run_seconds = 0;
  std::string program_output;  // the program's stdout and stderr (the tail)
  std::string provenance;      // "launch 0 of stencil2d.cu 64 48"
};

/// Why no capture of `request` can be made on this machine, checked before anything is built or
/// run: the NVIDIA driver cannot be loaded (missing_cuda_driver). Empty when it can, and when the
/// request replays a recording (replay_root, $KBLASTER_CAPTURE_REPLAY), which runs nothing.
std::string capture_blocker(const capture_request& request);

/// Captures and writes the task. `progress` hears each phase ("building", "running"). Throws
/// capture_error naming what went wrong: no driver here (capture_blocker, before anything is
/// built or run), the build's log, a crash or a hang with the program's output, or the agent's
/// refusal.
capture_result capture_program(const capture_request& request, const std::function<void(const std::string&)>& progress,
                               std::stop_token stop);

/// The files a program's arguments name (its data), which it reads beside its own folder.
std::vector<std::filesystem::path> paths_named_by(const std::vector<std::string>& args, const std::string& cwd);

/// Runs `argv` as `request` says: when `request.sandboxed` (model-written code), in the sandbox,
/// writing only `folder` and reading only `readable` and `cwd` of the user's files; else as the
/// user's own program runs.
support::process_result run_program_job(const capture_request& request, std::vector<std::string> argv,
                                        const std::filesystem::path& folder, std::vector<std::filesystem::path> readable,
                                        std::chrono::milliseconds timeout, const std::string& cwd, std::stop_token stop);

/// Runs `request.run.build` (the user's own build) in the program's folder: as the user runs it,
/// or, when `request.sandboxed` (model-written code in the tree), in the sandbox with only that
/// folder writable. Returns its seconds; throws capture_error with its output when it fails.
double run_user_build(const capture_request& request, std::stop_token stop);

/// " (cached)", " (replayed from a recording: nothing was built or run)" or "": what follows
/// "captured launch 0 of ..." wherever a capture is reported.
std::string origin_note(const capture_result& result);

/// The name of a capture's recording: the program's file name, the kernel and a hash of what the
/// capture depends on wherever it is made (the source's content, the launch, the arguments and
/// the environment), not of where it ran (folder, compiler path, flags), so that a recording made
/// on the GPU machine is found again in a CI checkout.
std::string recording_name(const capture_request& request, const std::string& source_text);

/// libkblaster-capture.so: $KBLASTER_CAPTURE_AGENT, else beside kblaster (a build tree's cli/).
std::string find_capture_agent();

/// $XDG_CACHE_HOME/kblaster/captures, else ~/.cache/kblaster/captures.
std::string default_capture_root();

}  // namespace kblaster::engine
