// The evaluate use case: the source and device, the builds, the harness's verdict, the probe.
#include "engine/evaluate/evaluate_service.h"

#include <filesystem>
#include <memory>

namespace kblaster::engine {

namespace fs = std::filesystem;

namespace {

void report_progress(const evaluate_events& events, const std::string& line) {
  if (events.progress) events.progress(line);
}

// Which source, and so which path: a host source runs on the CPU, a .cu on the GPU.
void choose_source_and_device(const evaluate_request& request, evaluate_outcome& out) {
  out.candidate = request.candidate;
  out.device = request.device;
  if (out.candidate.empty()) {
    const bool gpu_here = !detect_local_arch().empty();
    const bool use_gpu = out.device == "cuda" || (out.device == "auto" && gpu_here && !out.task.kernel.empty());
    out.candidate = use_gpu ? out.task.kernel : out.task.cpu_kernel;
    if (out.candidate.empty())
      throw evaluate_refusal(evaluate_refusal_kind::bad_input,
                             std::string("the task names no ") + (use_gpu ? "'kernel'" : "'cpu_kernel' (no GPU here)") +
                                 "; give --candidate FILE");
  }
  if (!fs::exists(out.candidate))
    throw evaluate_refusal(evaluate_refusal_kind::bad_input, out.candidate + ": no such file");
  if (out.device == "auto") out.device = is_host_source(out.candidate) ? "cpu" : "cuda";
  if (is_host_source(out.candidate) != (out.device == "cpu"))
    throw evaluate_refusal(evaluate_refusal_kind::bad_input,
                           out.candidate + " cannot run on device " + out.device +
                               " (host sources .cpp run on the CPU, .cu on the GPU)");
}

// Builds the candidate and a kernel reference: host sources with the host compiler, .cu with an
// nvcc found the first time one is needed (a CPU-only machine may have none).
class source_builder {
 public:
  source_builder(const task_spec& task, const evaluate_events& events, std::stop_token stop)
      : task_(task), events_(events), stop_(std::move(stop)) {}

  candidate_build operator()(const std::string& source) {
    report_progress(events_, "compiling " + fs::path(source).filename().string() + " ...");
    if (is_host_source(source)) return build_host_candidate(source, nvcc_driver::default_cache_dir(), true, stop_);
    if (!nvcc_) {
      const auto path = find_nvcc();
      if (!path) return {false, false, "", "nvcc not found (install CUDA, or give a .cpp host-code candidate)", {}, 0};
      nvcc_ = std::make_unique<nvcc_driver>(*path, nvcc_driver::default_cache_dir());
    }
    return build_candidate(source, task_.arch, *nvcc_, true, stop_);
  }

 private:
  const task_spec& task_;
  const evaluate_events& events_;
  std::stop_token stop_;
  std::unique_ptr<nvcc_driver> nvcc_;
};

// The reference's library when the reference is a kernel; empty for a PyTorch reference.
// Throws evaluate_refusal when it does not build (nullopt: the stop came first).
std::optional<std::string> reference_library_of(const evaluate_outcome& out, source_builder& build) {
  if (out.task.reference.kind != reference_kind::kernel) return std::string();
  const auto source = out.device == "cpu" ? out.task.reference.cpu_path : out.task.reference.path;
  const auto ref = source.empty() ? candidate_build{} : build(source);
  if (ref.cancelled) return std::nullopt;
  if (!ref.ok)
    throw evaluate_refusal(evaluate_refusal_kind::reference_build,
                           std::string("the reference kernel does not build") +
                               (source.empty() ? " (no cpu_kernel given)" : "") + "\n" + ref.log);
  return ref.library;
}

nlohmann::json harness_request_of(const evaluate_request& request, const evaluate_outcome& out,
                                  const std::string& reference_library) {
  nlohmann::json req{{"op", request.verify_only ? "verify" : "evaluate"},
                     {"task", to_json(out.task)},
                     {"candidate", out.build.library},
                     {"timing", {{"max_seconds", request.max_seconds}}}};
  if (!reference_library.empty()) req["reference_library"] = reference_library;
  return req;
}

}  // namespace

evaluate_outcome evaluate_candidate(const evaluate_request& request, const evaluate_events& events, std::stop_token stop) {
  evaluate_outcome out;
  try {
    out.task = load_task(request.task);
  } catch (const task_error& e) {
    throw evaluate_refusal(evaluate_refusal_kind::bad_input, e.what());
  }
  choose_source_and_device(request, out);

  source_builder build(out.task, events, stop);
  out.build = build(out.candidate);
  if (out.build.cancelled) {
    out.cancelled = true;
    return out;
  }
  if (!out.build.ok) {
    out.result = {{"verdict", "fail"}, {"check", "compile"}, {"reason", out.build.log}};
    return out;
  }
  const auto reference_library = reference_library_of(out, build);
  if (!reference_library) {
    out.cancelled = true;
    return out;
  }

  harness_options ho;
  ho.executable = request.harness;
  ho.device = out.device;
  ho.watchdog = request.watchdog;
  harness_client client(ho);
  report_progress(events, std::string(request.verify_only ? "verifying" : "verifying and timing") + " on " + out.device +
                              " (" + std::to_string(out.task.seeds) + " seeds) ...");
  const auto reply = client.request(harness_request_of(request, out, *reference_library), stop);
  if (stop.stop_requested()) {
    out.cancelled = true;
    return out;
  }
  out.result = reply.to_json();
  out.result.erase("id");
  if (request.probe && reply.error != "start_failed") {
    // After the verdict: the reference is loaded by then, and the probe costs a few of its calls.
    report_progress(events, "probing the reference for a constant output or an ignored input ...");
    out.probe = probe_reference(client, out.task, *reference_library, stop);
    out.cancelled = stop.stop_requested();
  }
  return out;
}

nlohmann::json to_json(const evaluate_outcome& o) {
  nlohmann::json j{{"task", o.task.name},
                   {"candidate", o.candidate},
                   {"device", o.device},
                   {"build", {{"ok", o.build.ok}, {"seconds", o.build.seconds}, {"from_cache", o.build.from_cache}}},
                   {"result", o.result}};
  if (o.probe) j["reference_probe"] = to_json(*o.probe);
  return j;
}

}  // namespace kblaster::engine
