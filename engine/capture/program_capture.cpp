// Building, running and capturing the user's program.
#include "engine/capture/program_capture.h"
#include "support/device_lock.h"
#include "engine/capture/driver_check.h"
#include "engine/source/program_entry.h"
#include "engine/toolchain/nvcc_driver.h"
#include "support/child_process.h"
#include "support/files.h"
#include "support/hash.h"
#include "support/run_process.h"
#include "support/sandbox.h"
#include "support/text.h"
#include "support/untrusted_text.h"

#include <filesystem>
#include <optional>

namespace kblaster::engine {

namespace fs = std::filesystem;

namespace {

std::string tail(const std::string& text, std::size_t n = 2000) {
  return text.size() <= n ? text : "…" + text.substr(text.size() - n);
}

std::string describe_end(const support::process_result& r) {
  if (r.timed_out) return "did not finish within the watchdog's time (it hangs, or needs --timeout)";
  if (r.cancelled) return "was cancelled";
  if (r.failed_to_start) return "could not be started";
  if (r.signal) return "crashed (signal " + std::to_string(r.signal) + ")";
  return "exited with status " + std::to_string(r.exit_code);
}

std::string env_or(const std::string& value, const char* name) {
  if (!value.empty()) return value;
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Replaces `to` with a copy of the capture folder `from` (its files; a capture has no subfolders
// but its task, which is written afresh).
void copy_capture(const fs::path& from, const fs::path& to) {
  fs::remove_all(to);
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from))
    if (e.is_regular_file()) fs::copy_file(e.path(), to / e.path().filename());
}

}  // namespace

std::vector<fs::path> paths_named_by(const std::vector<std::string>& args, const std::string& cwd) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& a : args) {
    if (a.empty() || a.front() == '-') continue;
    const fs::path p = fs::path(a).is_absolute() ? fs::path(a) : fs::path(cwd) / a;
    if (fs::exists(p, ec)) out.push_back(p);
  }
  return out;
}

support::process_result run_program_job(const capture_request& request, std::vector<std::string> argv, const fs::path& folder,
                                std::vector<fs::path> readable, std::chrono::milliseconds timeout, const std::string& cwd,
                                std::stop_token stop) {
  std::optional<support::sandbox_scratch> scratch;
  if (request.sandboxed) {
    try {
      scratch.emplace(folder / ".jobs", "capture");
      readable.push_back(cwd);
      argv = support::sandboxed_command(argv, {.scratch = scratch->path(),
                                               .writable = {folder},
                                               .readable = std::move(readable),
                                               .environment = {},
                                               .gpu = true,
                                               .limits = {}});
    } catch (const std::exception& e) {
      throw capture_error(std::string("cannot sandbox the rewritten program: ") + e.what());
    }
  }
  return support::run_process(argv, timeout, cwd, stop);
}

double run_user_build(const capture_request& request, std::stop_token stop) {
  const fs::path source = fs::absolute(request.source);
  const std::string cwd = request.run.cwd.empty() ? source.parent_path().string() : request.run.cwd;
  // The user's build writes its own tree. Building model-written code (a rewrite being checked,
  // `sandboxed`), it runs in the sandbox with that tree writable and nothing else: no network, no
  // secrets (an #include of a key would otherwise land in the build's output).
  std::vector<std::string> argv = request.run.build;
  std::optional<support::sandbox_scratch> scratch;
  if (request.sandboxed) {
    try {
      scratch.emplace(support::user_scratch_root() / "jobs", "build");
      // It writes its own tree and reads the program's sources beside it.
      argv = support::sandboxed_command(argv, {.scratch = scratch->path(),
                                               .writable = {cwd},
                                               .readable = {source.parent_path(), source},
                                               .environment = {},
                                               .gpu = false,
                                               .limits = {}});
    } catch (const std::exception& e) {
      throw capture_error(std::string("cannot sandbox your build of the rewritten program: ") + e.what());
    }
  }
  const auto built = support::run_process(argv, std::chrono::minutes(30), cwd, stop);
  const auto line = support::join(request.run.build, " ");
  if (built.cancelled) throw capture_error("cancelled while building with " + line);
  if (!built.ok()) throw capture_error("your build command (" + line + ") " + describe_end(built) + ":\n" + tail(built.out + built.err));
  return built.seconds;
}

bool runs_as_program(const std::string& text, const program_run& run) { return !run.command.empty() || defines_main(text); }

std::vector<std::string> own_build_argv(const program_run& run) {
  std::vector<std::string> argv = run.command;
  if (!argv.empty() && !run.cwd.empty() && fs::path(argv.front()).is_relative() && fs::path(argv.front()).has_parent_path())
    argv.front() = (fs::path(run.cwd) / argv.front()).string();
  argv.insert(argv.end(), run.args.begin(), run.args.end());
  return argv;
}

std::string capture_blocker(const capture_request& request) {
  if (!env_or(request.replay_root, "KBLASTER_CAPTURE_REPLAY").empty()) return {};
  return missing_cuda_driver(request.driver_library);
}

std::string origin_note(const capture_result& result) {
  if (result.replayed) return " (replayed from a recording: nothing was built or run)";
  return result.cached ? " (cached)" : "";
}

std::string recording_name(const capture_request& request, const std::string& source_text) {
  std::string key = source_text + '\0' + request.kernel + '\0' + std::to_string(request.launch) + '\0';
  for (const auto& v : {request.run.args, request.run.env, request.run.command, request.run.build})
    for (const auto& s : v) key += s + '\0';
  return fs::path(request.source).stem().string() + "-" + request.kernel + "-" + support::fnv1a_hex(key);
}

std::string find_capture_agent() {
  return support::find_companion("KBLASTER_CAPTURE_AGENT", {"cli/libkblaster-capture.so", "libkblaster-capture.so", "lib/libkblaster-capture.so"},
                                 "libkblaster-capture.so");
}

std::string default_capture_root() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kblaster/captures";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kblaster/captures";
  return (support::user_scratch_root() / "captures").string();
}

capture_result capture_program(const capture_request& request, const std::function<void(const std::string&)>& progress,
                               std::stop_token stop) {
  const fs::path source = fs::absolute(request.source);
  const auto text = support::read_file_if_exists(source);
  if (!text) throw capture_error("cannot read " + source.string());
  capture_result result;
  result.provenance = "launch " + std::to_string(request.launch) + " of " +
                      (request.run.command.empty() ? source.filename().string() : support::join(request.run.command, " "));
  for (const auto& a : request.run.args) result.provenance += " " + a;

  const std::string root = request.cache_root.empty() ? default_capture_root() : request.cache_root;
  if (const auto replay = env_or(request.replay_root, "KBLASTER_CAPTURE_REPLAY"); !replay.empty()) {
    const auto name = recording_name(request, *text);
    const fs::path recorded = fs::path(replay) / name;
    if (!fs::exists(recorded / "capture.json"))
      throw capture_error("no recorded capture of " + result.provenance + " (" + request.kernel + ") in " + replay + ": expected " +
                          name + "/ (recordings are made on a GPU machine with KBLASTER_CAPTURE_RECORD)");
    if (progress) progress("replaying the recorded capture of " + result.provenance);
    const fs::path folder = fs::path(root) / ("replay-" + name);
    support::private_directory(folder);
    copy_capture(recorded, folder / "capture");
    result.capture = read_capture((folder / "capture").string());
    if (result.capture.refusal) throw capture_error(result.capture.refusal->message);
    result.replayed = true;
    result.task = write_capture_task(result.capture, *text, result.provenance, request.task_name);
    return result;
  }

  const bool own_build = !request.run.command.empty();  // the user's command builds and runs it
  if (!runs_as_program(*text, request.run))
    throw capture_error(source.filename().string() + " does not define main(): name the program your own build makes "
                        "(--run PROGRAM, and --build COMMAND to build it; in the editor kblaster.run.command and .build)");
  // Without the driver the program would fail at its start with the loader's error: say what is
  // missing instead, having built and run nothing (not the user's build either).
  if (const auto blocked = capture_blocker(request); !blocked.empty()) throw capture_error(blocked);
  const std::string nvcc = own_build ? "" : request.nvcc.empty() ? find_nvcc().value_or("") : request.nvcc;
  if (!own_build && nvcc.empty()) throw capture_error("nvcc was not found (set PATH or CUDA_HOME): the program cannot be built");
  const std::string agent = request.agent.empty() ? find_capture_agent() : request.agent;
  if (agent.empty() || !fs::exists(agent))
    throw capture_error("libkblaster-capture.so was not found beside kblaster (or set KBLASTER_CAPTURE_AGENT)");

  // Everything that changes what the capture holds is in the key, the agent's revision included
  // (2: it runs the launch twice and records what varies; a capture from before says nothing).
  std::string key = std::string("agent 2") + '\0' + *text + '\0' + (request.sandboxed ? "sandboxed" : "") + '\0' + request.kernel + '\0' + std::to_string(request.launch) + '\0' + request.run.cwd + '\0' +
                    std::to_string(request.max_bytes) + '\0' + nvcc + '\0';
  for (const auto& v : {request.run.args, request.run.env, request.nvcc_flags, request.run.command, request.run.build})
    for (const auto& s : v) key += s + '\0';
  const std::string cwd = request.run.cwd.empty() ? source.parent_path().string() : request.run.cwd;
  // Built by the user's command, the program is more than this file: the build runs first, and
  // the program it leaves (its content) is part of what the capture depends on.
  if (own_build && !request.run.build.empty()) {
    if (progress) progress("building with your command: " + support::join(request.run.build, " "));
    result.build_seconds = run_user_build(request, stop);
  }
  if (own_build) {
    fs::path program = request.run.command.front();
    if (program.is_relative() && program.has_parent_path()) program = fs::path(cwd) / program;
    if (const auto binary = support::read_file_if_exists(program)) key += support::fnv1a_hex(*binary);
  }
  const fs::path folder = fs::path(root) / (source.stem().string() + "-" + request.kernel + "-" + support::fnv1a_hex(key));
  const fs::path capture_dir = folder / "capture";
  support::private_directory(folder);
  const auto record = [&] {
    if (const auto dir = env_or(request.record_root, "KBLASTER_CAPTURE_RECORD"); !dir.empty())
      copy_capture(capture_dir, fs::path(dir) / recording_name(request, *text));
  };

  if (fs::exists(capture_dir / "capture.json")) {
    try {
      auto cached = read_capture(capture_dir.string());
      if (!cached.refusal) {
        result.capture = std::move(cached);
        result.cached = true;
        result.task = write_capture_task(result.capture, *text, result.provenance, request.task_name);
        record();
        return result;
      }
    } catch (const capture_error&) {
      // A damaged cache entry: capture again.
    }
  }
  fs::remove_all(capture_dir);

  const auto program = folder / "program";
  if (!own_build) {
    if (progress) progress("building " + source.filename().string() + " with the shared CUDA runtime");
    std::vector<std::string> build{nvcc, "-cudart", "shared", "-lineinfo"};
    build.insert(build.end(), request.nvcc_flags.begin(), request.nvcc_flags.end());
    build.insert(build.end(), {"-o", program.string(), source.string()});
    const auto built = run_program_job(request, build, folder, support::folders_read_by_compile(build), std::chrono::minutes(10),
                               source.parent_path().string(), stop);
    result.build_seconds = built.seconds;
    if (built.cancelled) throw capture_error("cancelled while building " + source.filename().string());
    if (!built.ok()) throw capture_error(source.filename().string() + " does not build:\n" + tail(built.out + built.err));
  }

  // The program times the launch where it runs (the figure the hover shows as "in the program"):
  // no other kblaster measurement may share the GPU meanwhile (support/device_lock.h).
  std::optional<support::device_lock> device;
  try {
    std::string visible = env_or("", "CUDA_VISIBLE_DEVICES");
    for (const auto& e : request.run.env)
      if (e.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) visible = e.substr(e.find('=') + 1);
    device = support::device_lock::acquire(support::device_lock::gpu(visible), "kblaster capturing " + request.kernel + " in " + result.provenance,
                                           stop, [&](const std::string& holder) {
                                             if (progress) progress("waiting for the GPU, held by " + holder);
                                           });
  } catch (const support::file_error&) {
    // No runtime folder for the lock: capture unguarded rather than not at all.
  }
  if (!device && stop.stop_requested()) throw capture_error("cancelled while waiting for the GPU");
  if (progress) progress("running " + result.provenance + " and capturing " + request.kernel);
  std::vector<std::string> argv{"env", "KBLASTER_CAPTURE_DIR=" + capture_dir.string(), "KBLASTER_CAPTURE_KERNEL=" + request.kernel,
                                "KBLASTER_CAPTURE_LAUNCH=" + std::to_string(request.launch),
                                "KBLASTER_CAPTURE_MAX_BYTES=" + std::to_string(request.max_bytes), "LD_PRELOAD=" + agent};
  argv.insert(argv.end(), request.run.env.begin(), request.run.env.end());
  if (own_build)
    argv.insert(argv.end(), request.run.command.begin(), request.run.command.end());
  else
    argv.push_back(program.string());
  argv.insert(argv.end(), request.run.args.begin(), request.run.args.end());
  // It reads the capture agent, the program (built here or by the user's build, in its tree)
  // and the files its arguments name.
  auto readable = paths_named_by(request.run.args, cwd);
  readable.push_back(fs::path(agent).parent_path());
  if (own_build) readable.push_back(fs::absolute(fs::path(cwd) / request.run.command.front()).parent_path());
  const auto ran = run_program_job(request, argv, folder, std::move(readable), request.timeout, cwd, stop);
  result.run_seconds = ran.seconds;
  // A rewrite's program is the model's code: what it prints is its own, bounded and marked.
  result.program_output = request.sandboxed ? support::candidate_text(ran.out + ran.err, "program's output", 2000, support::keep_end::tail)
                                            : tail(ran.out + ran.err);
  if (ran.cancelled) throw capture_error("cancelled while running " + result.provenance);

  if (!fs::exists(capture_dir / "capture.json")) {
    // The agent writes capture.json at the launch or at the program's end: neither happened.
    throw capture_error("the program " + describe_end(ran) + " before launch " + std::to_string(request.launch) + " of " +
                        request.kernel + " was captured; its output:\n" + result.program_output);
  }
  result.capture = read_capture(capture_dir.string());
  if (result.capture.refusal) {
    std::string message = result.capture.refusal->message;
    if (!ran.ok()) message += " (the program " + describe_end(ran) + ")";
    if (own_build && message.find("launched no kernel") != std::string::npos)
      message += "; a program that links the CUDA runtime statically (nvcc's default) hides its launches from the agent: "
                 "build it with -cudart shared (CMake: CUDA_RUNTIME_LIBRARY Shared)";
    throw capture_error(message);
  }
  result.task = write_capture_task(result.capture, *text, result.provenance, request.task_name);
  record();
  return result;
}

}  // namespace kblaster::engine
