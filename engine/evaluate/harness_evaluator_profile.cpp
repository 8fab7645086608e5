// The live evaluator's profiles: Nsight Compute over a kblaster-runner that the warm harness
// starts under it (a profile request: one kb_forward call inside the NVTX push/pop range
// kb_candidate), classified like `kblaster profile`; else a static profile (ptxas + occupancy).
// A profile that cannot be taken never fails the candidate: the evaluation says why instead.
#include "engine/evaluate/harness_client.h"
#include "engine/evaluate/profile_cache.h"
#include "engine/evaluate/profile_key.h"
#include "engine/profile/ncu_runner.h"
#include "support/files.h"
#include "support/text.h"
#include "engine/evaluate/harness_evaluator.h"
#include "engine/evaluate/profile_shape.h"
#include "engine/state/profile_pipeline.h"
#include "engine/state/profile_summary.h"
#include "engine/state/state_evidence.h"
#include "engine/toolchain/task_build.h"

#include <cstdio>
#include <sstream>

namespace kblaster::engine::optimize {
namespace fs = std::filesystem;

namespace {

profile_snapshot snapshot_of(const kernel_view& v, const std::string& source) {
  profile_snapshot p;
  p.kernel = v.signature.function.empty() ? v.signature.name : v.signature.function;
  p.primary = v.signature.primary;
  p.secondary = v.signature.secondary_names();
  p.evidence = kb_evidence(v.signature);
  p.summary = summarize_for_prompt(v);
  p.view = to_json(v);
  p.source = source;
  return p;
}

}  // namespace

std::optional<profile_snapshot> snapshot_from_ncu_pages(const std::string& details_csv, const std::string& raw_csv,
                                                        const std::string& source_csv, const state_namer* matcher,
                                                        std::string& error) {
  auto out = analyze_pages(details_csv, raw_csv, source_csv, matcher);
  if (!out.error.empty() || out.kernels.empty()) {
    error = out.error.empty() ? "no kernel in it" : support::first_line(out.error);
    return std::nullopt;
  }
  // The kernel that costs most is the one worth optimizing.
  const kernel_view* best = &out.kernels.front();
  for (const auto& v : out.kernels)
    if (v.signature.sol.duration_us.value_or(0) > best->signature.sol.duration_us.value_or(0)) best = &v;
  auto snap = snapshot_of(*best, "ncu");
  if (const auto c = best->signature.sol.elapsed_cycles) snap.elapsed_cycles = static_cast<std::int64_t>(*c);
  if (out.kernels.size() > 1) snap.view["profiled_kernels"] = static_cast<int>(out.kernels.size());  // the longest is kept
  return snap;
}

ncu_options profile_ncu_options(profile_scope scope) {
  ncu_options o;
  if (scope == profile_scope::state_counters) {
    // The state alone, from its counters: no section, so no rule and no tables (ncu_runner.h).
    o.sections.clear();  // ncu_options starts with the editor's sections
    o.metrics = state_ncu_metrics();
    for (const auto& m : default_ncu_metrics()) o.metrics.push_back(m);
  } else {
    o.sections = loop_ncu_sections();  // what the loop reads: state, evidence, prompt summary
    o.metrics = default_ncu_metrics();
  }
  o.nvtx_include = "kb_candidate/";  // trailing '/': a push/pop range (without it, a start/end range)
  return o;
}

void harness_evaluator::profile(const task_entry& task, const fs::path& dir, const std::string& source_path,
                                const std::string& library, slot& s, evaluation& e, profile_scope scope,
                                profile_scope next_scope, std::stop_token stop) {
  if (device_ == "cpu") {
    e.profile_note = "no profile on the CPU path (host C++ candidates have no GPU profile)";
    return;
  }
  if (ncu_.empty()) {
    profile_static(task, source_path, e, "ncu (Nsight Compute) not found");
    return;
  }
  // The warm harness profiles: it draws the inputs with the reference it already holds and starts
  // a runner (no LibTorch) under ncu for one call in the NVTX range, inside its own sandbox, where
  // ncu writes the report into the harness's scratch folder. Only ncu, the runner and the
  // candidate start afresh; the judge, its LibTorch and its reference do not.
  const auto scratch = s.client->scratch();
  if (scratch.empty()) {
    profile_static(task, source_path, e, "the harness has no scratch folder for ncu's report");
    return;
  }
  const auto options_for = [&](profile_scope asked) {
    auto o = profile_ncu_options(asked);
    o.report_base = (scratch / ("profile-" + e.code_hash)).string();
    o.timeout = options_.profile_timeout;
    return o;
  };
  bool counters = scope == profile_scope::state_counters;
  ncu_options n = options_for(scope);
  n.stop = stop;  // ncu's report exports stop with the profile
  auto command = prepare_ncu_command(ncu_, n, {});
  // The harness starts the next profile's runner under ncu as this profile ends, while the GPU
  // serves the next candidates (harness/profile_runner.h): that profile pays only ncu's passes
  // and exit. The loop's next is a step's best, for the state's counters.
  const auto next_command = next_scope == scope ? command : prepare_ncu_command(ncu_, options_for(next_scope), {});
  const auto cache_dir = options_.profile_cache_dir.empty() ? profile_cache::default_dir() : options_.profile_cache_dir;
  const profile_cache cache(cache_dir);
  const bool cached = cache_dir != "none";
  const auto cache_key = [&](const task_spec& spec) {
    std::string asked = n.clock_control + "|" + n.nvtx_include;
    for (const auto& x : n.sections) asked += "|s:" + x;
    for (const auto& x : n.metrics) asked += "|m:" + x;
    return profile_key({source_path, &spec, e.arch, s.device_name, ncu_, asked});
  };
  // One profiled call of the candidate on `spec`'s shapes; `timed_out`: ncu ran out of time.
  auto profiled_call = [&](const task_spec& spec, bool& timed_out) {
    timed_out = false;
    const auto key = cached ? cache_key(spec) : std::string();
    // Another evaluator of this process profiling the same kernel on the same data (a save's
    // profile when Optimize starts): wait for its pages rather than run ncu beside it.
    const auto claim = cached ? profile_claims::process().claim(key, stop) : std::nullopt;
    if (cached && !claim) {
      ncu_run_result run;
      run.error = "cancelled";
      return run;
    }
    if (cached)
      if (const auto hit = cache.load(key)) {
        ncu_run_result run;
        run.ok = true;
        run.details_csv = hit->details_csv;
        run.raw_csv = hit->raw_csv;
        run.source_csv = hit->source_csv;
        run.report_path = hit->report_path;
        run.reused = true;
        return run;
      }
    nlohmann::json req{{"op", "profile"},
                       {"task", to_json(spec)},
                       {"candidate", library},
                       {"ncu", command.argv},
                       {"next_ncu", next_command.argv},
                       {"report_later", true},
                       {"deadline_ms", static_cast<double>(options_.profile_timeout.count()) * 1000}};
    if (!task.reference_library.empty()) req["reference_library"] = task.reference_library;
    double on_device = 0;
    const auto reply = ask_judge(s, req, e, stop, on_device);  // a judge that keeps failing throws: nothing is kept
    e.gpu_seconds += on_device;
    e.phases.profile += on_device;
    ncu_run_result run;
    run.profile_seconds = on_device;
    if (!reply.ok()) {
      run.error = reply.error == "cancelled" ? "cancelled" : "the harness failed while profiling: " + reply.message;
      return run;
    }
    // The judge replied once the profiled runner was gone: the GPU is free, and ncu writing its
    // report (0.2 s on an H100) is waited for without holding it.
    auto body = reply.body;
    if (body.value("report", "") == "pending") {
      const auto t0 = std::chrono::steady_clock::now();
      const auto report = s.client->request({{"op", "profile_report"}}, stop);
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      e.phases.profile_report += waited;
      run.report_seconds = waited;
      if (!report.ok()) {
        run.error = report.error == "cancelled" ? "cancelled" : "the harness failed while ncu wrote its report: " + report.message;
        return run;
      }
      body["ncu"] = report.body.value("ncu", nlohmann::json::object());
    }
    // ncu's side as run_ncu would have seen it: its exit, its output, the report it wrote.
    const auto ncu = body.value("ncu", nlohmann::json::object());
    support::process_result r;
    r.timed_out = ncu.value("timed_out", false);
    r.exit_code = ncu.value("exit_code", -1);
    r.signal = ncu.value("signal", 0);
    r.out = ncu.value("log", "");
    run.log = r.out;
    run.started_ahead = ncu.value("started_ahead", false);
    timed_out = r.timed_out;
    if (body.value("verdict", "") != "pass") {
      // ncu's own failure (no counters, a bad option) says more than the runner that never came.
      const auto why = explain_ncu_failure(r, n.timeout);
      run.error = !why.empty() ? why : "the profiled call failed: " + body.value("reason", std::string("no reason given"));
      return run;
    }
    // The report leaves the harness's scratch (gone with the harness) for the candidate's folder.
    ncu_command kept = command;
    kept.report_path = (dir / "profile.ncu-rep").string();
    std::error_code ec;
    if (fs::exists(command.report_path, ec)) {
      fs::rename(command.report_path, kept.report_path, ec);
      if (ec) {
        fs::copy_file(command.report_path, kept.report_path, fs::copy_options::overwrite_existing, ec);
        fs::remove(command.report_path, ec);
      }
    }
    const auto export_start = std::chrono::steady_clock::now();
    read_ncu_report(ncu_, kept, r, n.timeout, run);
    e.phases.profile_export += std::chrono::duration<double>(std::chrono::steady_clock::now() - export_start).count();
    if (run.ok && cached) cache.store(key, {run.details_csv, run.raw_csv, run.source_csv, run.report_path});
    return run;
  };
  // A slow task is profiled at a smaller batch (profile_shape.h). A candidate that fails there
  // (sizes written into it, a reference that will not take the shape) is profiled at its own;
  // one that ran out of time or was cancelled is not tried again.
  const auto shape = options_.profile_full_shape ? std::nullopt : reduced_profile_shape(task.spec, e.runtime_ms);
  bool timed_out = false;
  const task_spec* profiled_spec = shape ? &shape->task : &task.spec;
  auto run = profiled_call(*profiled_spec, timed_out);
  std::string shape_note = shape ? shape->note : "";
  if (shape && !run.ok && !timed_out && run.error != "cancelled") {
    shape_note = "profiled at the task's own shape: at a leading dimension of " + std::to_string(shape->batch) +
                 " the profiled call failed (" + support::first_line(run.error) + ")";
    profiled_spec = &task.spec;
    run = profiled_call(*profiled_spec, timed_out);
  }
  std::string scope_note;
  if (counters && !run.ok && !timed_out && run.error != "cancelled") {
    // An ncu that lacks one of the state's counters (another version, another GPU) refuses the
    // whole list: the sections, of which it leaves out those it lacks, still give the state.
    scope_note = "ncu's sections: the state's counters alone failed (" + support::first_line(run.error) + ")";
    counters = false;
    n = options_for(profile_scope::sections);
    command = prepare_ncu_command(ncu_, n, {});
    run = profiled_call(*profiled_spec, timed_out);
  }
  if (harness_trace_requested() && run.reused)
    std::fprintf(stderr, "[kblaster] ncu: an earlier profile of this kernel reused (%s)\n", cache_dir.c_str());
  else if (harness_trace_requested())
    std::fprintf(stderr, "[kblaster] ncu: the profiled run %.3f s%s, its report written %.3f s after, its pages read back %.3f s%s%s\n",
                 run.profile_seconds, run.started_ahead ? " (its runner started ahead)" : "", run.report_seconds,
                 run.export_seconds, shape_note.empty() ? "" : "; ", shape_note.c_str());
  if (harness_trace_requested() && !run.reused) {
    // ncu's warnings say why a profile is slow (memory backed up in system memory, a replay
    // fallback); the user who asked for the trace sees them as they came.
    std::istringstream log(run.log);
    for (std::string line; std::getline(log, line);)
      if (line.find("==WARNING==") != std::string::npos) std::fprintf(stderr, "[kblaster] ncu: %s\n", line.c_str());
  }
  if (!run.ok && run.error == "cancelled") {
    // Correct and timed, but the profile was abandoned: the whole evaluation is, so that a
    // half-profiled result is never recorded as the candidate's.
    e.verdict = "error";
    e.check = "cancelled";
    e.reason = "cancelled while ncu profiled the candidate";
    e.correct = false;
    return;
  }
  if (!run.ok) {
    profile_static(task, source_path, e, "ncu failed: " + support::first_line(run.error));
    return;
  }
  std::string error;
  auto snap = snapshot_from_ncu_pages(run.details_csv, run.raw_csv, run.source_csv, options_.matcher, error);
  if (!snap) {
    profile_static(task, source_path, e, "ncu's report could not be analysed: " + error);
    return;
  }
  snap->view["report_path"] = run.report_path;
  if (counters) {
    snap->source = "ncu_counters";
    snap->view["scope"] = "the state's counters alone (state_ncu_metrics): no ncu section or rule";
    snap->summary = "Profile: ncu's counters for the state alone (no guided analysis, no memory tables).\n" + snap->summary;
  }
  snap->report_path = run.report_path;
  if (run.started_ahead)
    snap->view["started_ahead"] = "the runner under ncu was started when the previous profile ended (ncu's start, its "
                                  "injection and the runner's CUDA context are not in this profile's seconds)";
  if (run.reused)
    snap->view["reused"] = "ncu's pages of an earlier profile of this kernel on the same task, GPU and ncu (" +
                           cache_dir.string() + "); no GPU time spent on it now";
  if (!scope_note.empty()) {
    snap->view["scope"] = scope_note;
    snap->summary = "Profile: " + scope_note + "\n" + snap->summary;
  }
  if (!shape_note.empty()) {
    snap->shape_note = shape_note;
    snap->summary = "Shape: " + shape_note + "\n" + snap->summary;
  }
  e.profile = std::move(*snap);
}

void harness_evaluator::profile_static(const task_entry& task, const std::string& source_path, evaluation& e,
                                       const std::string& why) {
  if (is_host_source(source_path)) {
    e.profile_note = why + "; host code has no static profile";
    return;
  }
  build_profile_options o;
  o.arch = task.spec.arch.empty() ? arch_ : task.spec.arch;
  const auto out = analyze_static(source_path, o, options_.matcher);
  if (!out.error.empty() || out.kernels.empty()) {
    e.profile_note = why + "; the static profile failed too: " +
                     (out.error.empty() ? std::string("no __global__ kernel found") : support::first_line(out.error));
    return;
  }
  // No durations without a run: the first kernel, and the note says how many there were.
  e.profile = snapshot_of(out.kernels.front(), "static");
  e.profile_note = why + ": static profile (ptxas + occupancy) instead" +
                   (out.kernels.size() > 1 ? ", first of " + std::to_string(out.kernels.size()) + " kernels" : "");
}

}  // namespace kblaster::engine::optimize
