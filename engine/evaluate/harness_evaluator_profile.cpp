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

/// A profile that ended in neither pages nor an error worth a static profile instead.
bool stopped_short(const ncu_run_result& run, bool timed_out) { return timed_out || run.error == "cancelled"; }

/// ncu's side of a profile reply as run_ncu would have seen it: its exit and its output.
support::process_result ncu_process_of(const nlohmann::json& ncu) {
  support::process_result r;
  r.timed_out = ncu.value("timed_out", false);
  r.exit_code = ncu.value("exit_code", -1);
  r.signal = ncu.value("signal", 0);
  r.out = ncu.value("log", "");
  return r;
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

/// One candidate's ncu profile through the warm harness: the commands it runs ncu with, the pages
/// kept from an earlier profile, the profiled calls and their fallbacks, and what the snapshot
/// says of them. The warm harness profiles: it draws the inputs with the reference it already
/// holds and starts a runner (no LibTorch) under ncu for one call in the NVTX range, inside its
/// own sandbox, where ncu writes the report into the harness's scratch folder. Only ncu, the
/// runner and the candidate start afresh; the judge, its LibTorch and its reference do not.
class harness_evaluator::ncu_profile {
 public:
  ncu_profile(harness_evaluator& ev, const task_entry& task, const fs::path& dir, const std::string& source_path,
              const std::string& library, slot& s, evaluation& e, profile_scope scope, profile_scope next_scope,
              std::stop_token stop, fs::path scratch)
      : ev_(ev), task_(task), dir_(dir), source_path_(source_path), library_(library), s_(s), e_(e),
        stop_(std::move(stop)), scratch_(std::move(scratch)), counters_(scope == profile_scope::state_counters),
        n_(options_for(scope)), command_(prepare_ncu_command(ev_.ncu_, n_, {})),
        // The harness starts the next profile's runner under ncu as this profile ends, while the
        // GPU serves the next candidates (harness/profile_runner.h): that profile pays only ncu's
        // passes and exit. The loop's next is a step's best, for the state's counters.
        next_command_(next_scope == scope ? command_ : prepare_ncu_command(ev_.ncu_, options_for(next_scope), {})),
        cache_dir_(ev_.options_.profile_cache_dir.empty() ? profile_cache::default_dir() : ev_.options_.profile_cache_dir),
        cache_(cache_dir_), cached_(cache_dir_ != "none") {}

  /// The profile with its fallbacks. A slow task is profiled at a smaller batch (profile_shape.h);
  /// a candidate that fails there (sizes written into it, a reference that will not take the
  /// shape) is profiled at its own. An ncu that lacks one of the state's counters (another
  /// version, another GPU) refuses the whole list: the sections, of which it leaves out those it
  /// lacks, still give the state. One that ran out of time or was cancelled is not tried again.
  ncu_run_result run() {
    const auto shape = ev_.options_.profile_full_shape ? std::nullopt : reduced_profile_shape(task_.spec, e_.runtime_ms);
    bool timed_out = false;
    const task_spec* spec = shape ? &shape->task : &task_.spec;
    auto run = call(*spec, timed_out);
    if (shape) shape_note_ = shape->note;
    if (shape && !run.ok && !stopped_short(run, timed_out)) {
      shape_note_ = "profiled at the task's own shape: at a leading dimension of " + std::to_string(shape->batch) +
                    " the profiled call failed (" + support::first_line(run.error) + ")";
      spec = &task_.spec;
      run = call(*spec, timed_out);
    }
    if (counters_ && !run.ok && !stopped_short(run, timed_out)) {
      scope_note_ = "ncu's sections: the state's counters alone failed (" + support::first_line(run.error) + ")";
      counters_ = false;
      n_ = options_for(profile_scope::sections);
      command_ = prepare_ncu_command(ev_.ncu_, n_, {});
      run = call(*spec, timed_out);
    }
    return run;
  }

  /// With KBLASTER_HARNESS_TRACE: where the profile's seconds went, and ncu's warnings.
  void trace(const ncu_run_result& run) const {
    if (!harness_trace_requested()) return;
    if (run.reused) {
      std::fprintf(stderr, "[kblaster] ncu: an earlier profile of this kernel reused (%s)\n", cache_dir_.c_str());
      return;
    }
    std::fprintf(stderr, "[kblaster] ncu: the profiled run %.3f s%s, its report written %.3f s after, its pages read back %.3f s%s%s\n",
                 run.profile_seconds, run.started_ahead ? " (its runner started ahead)" : "", run.report_seconds,
                 run.export_seconds, shape_note_.empty() ? "" : "; ", shape_note_.c_str());
    // ncu's warnings say why a profile is slow (memory backed up in system memory, a replay
    // fallback); the user who asked for the trace sees them as they came.
    std::istringstream log(run.log);
    for (std::string line; std::getline(log, line);)
      if (line.find("==WARNING==") != std::string::npos) std::fprintf(stderr, "[kblaster] ncu: %s\n", line.c_str());
  }

  /// What the snapshot of `run`'s pages says of how they were taken.
  void describe(profile_snapshot& snap, const ncu_run_result& run) const {
    snap.view["report_path"] = run.report_path;
    if (counters_) {
      snap.source = "ncu_counters";
      snap.view["scope"] = "the state's counters alone (state_ncu_metrics): no ncu section or rule";
      snap.summary = "Profile: ncu's counters for the state alone (no guided analysis, no memory tables).\n" + snap.summary;
    }
    snap.report_path = run.report_path;
    if (run.started_ahead)
      snap.view["started_ahead"] = "the runner under ncu was started when the previous profile ended (ncu's start, its "
                                   "injection and the runner's CUDA context are not in this profile's seconds)";
    if (run.reused)
      snap.view["reused"] = "ncu's pages of an earlier profile of this kernel on the same task, GPU and ncu (" +
                            cache_dir_.string() + "); no GPU time spent on it now";
    if (!scope_note_.empty()) {
      snap.view["scope"] = scope_note_;
      snap.summary = "Profile: " + scope_note_ + "\n" + snap.summary;
    }
    if (!shape_note_.empty()) {
      snap.shape_note = shape_note_;
      snap.summary = "Shape: " + shape_note_ + "\n" + snap.summary;
    }
  }

 private:
  harness_evaluator& ev_;
  const task_entry& task_;
  const fs::path& dir_;
  const std::string& source_path_;
  const std::string& library_;
  slot& s_;
  evaluation& e_;
  std::stop_token stop_;
  fs::path scratch_;
  bool counters_;  // the state's counters alone (no section)
  ncu_options n_;
  ncu_command command_, next_command_;
  fs::path cache_dir_;
  profile_cache cache_;
  bool cached_;
  std::string shape_note_, scope_note_;

  ncu_options options_for(profile_scope asked) const {
    auto o = profile_ncu_options(asked);
    o.report_base = (scratch_ / ("profile-" + e_.code_hash)).string();
    o.timeout = ev_.options_.profile_timeout;
    o.stop = stop_;  // ncu's report exports stop with the profile
    return o;
  }

  std::string cache_key(const task_spec& spec) const {
    std::string asked = n_.clock_control + "|" + n_.nvtx_include;
    for (const auto& x : n_.sections) asked += "|s:" + x;
    for (const auto& x : n_.metrics) asked += "|m:" + x;
    return profile_key({source_path_, &spec, e_.arch, s_.device_name, ev_.ncu_, asked});
  }

  /// One profiled call of the candidate on `spec`'s shapes, or the pages of an earlier one;
  /// `timed_out`: ncu ran out of time.
  ncu_run_result call(const task_spec& spec, bool& timed_out) {
    timed_out = false;
    const auto key = cached_ ? cache_key(spec) : std::string();
    // Another evaluator of this process profiling the same kernel on the same data (a save's
    // profile when Optimize starts): wait for its pages rather than run ncu beside it.
    const auto claim = cached_ ? profile_claims::process().claim(key, stop_) : std::nullopt;
    ncu_run_result run;
    if (cached_ && !claim) {
      run.error = "cancelled";
      return run;
    }
    if (cached_)
      if (const auto hit = cache_.load(key)) {
        run.ok = true;
        run.details_csv = hit->details_csv;
        run.raw_csv = hit->raw_csv;
        run.source_csv = hit->source_csv;
        run.report_path = hit->report_path;
        run.reused = true;
        return run;
      }
    run = profile_in_harness(spec, timed_out);
    if (run.ok && cached_) cache_.store(key, {run.details_csv, run.raw_csv, run.source_csv, run.report_path});
    return run;
  }

  nlohmann::json profile_request(const task_spec& spec) const {
    nlohmann::json req{{"op", "profile"},
                       {"task", to_json(spec)},
                       {"candidate", library_},
                       {"ncu", command_.argv},
                       {"next_ncu", next_command_.argv},
                       {"report_later", true},
                       {"deadline_ms", static_cast<double>(ev_.options_.profile_timeout.count()) * 1000}};
    if (!task_.reference_library.empty()) req["reference_library"] = task_.reference_library;
    return req;
  }

  /// The profile request to the harness, its report awaited and read back.
  ncu_run_result profile_in_harness(const task_spec& spec, bool& timed_out) {
    double on_device = 0;
    const auto reply = ev_.ask_judge(s_, profile_request(spec), e_, stop_, on_device);  // a judge that keeps failing throws: nothing is kept
    e_.gpu_seconds += on_device;
    e_.phases.profile += on_device;
    ncu_run_result run;
    run.profile_seconds = on_device;
    if (!reply.ok()) {
      run.error = reply.error == "cancelled" ? "cancelled" : "the harness failed while profiling: " + reply.message;
      return run;
    }
    auto body = reply.body;
    if (body.value("report", "") == "pending" && !await_report(body, run)) return run;
    const auto ncu = body.value("ncu", nlohmann::json::object());
    const auto r = ncu_process_of(ncu);
    run.log = r.out;
    run.started_ahead = ncu.value("started_ahead", false);
    timed_out = r.timed_out;
    if (body.value("verdict", "") != "pass") {
      // ncu's own failure (no counters, a bad option) says more than the runner that never came.
      const auto why = explain_ncu_failure(r, n_.timeout);
      run.error = !why.empty() ? why : "the profiled call failed: " + body.value("reason", std::string("no reason given"));
      return run;
    }
    read_report(r, run);
    return run;
  }

  /// The judge replied once the profiled runner was gone: the GPU is free, and ncu writing its
  /// report (0.2 s on an H100) is waited for without holding it. False (run.error set) when the
  /// report did not come.
  bool await_report(nlohmann::json& body, ncu_run_result& run) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto report = s_.client->request({{"op", "profile_report"}}, stop_);
    const double waited = seconds_since(t0);
    e_.phases.profile_report += waited;
    run.report_seconds = waited;
    if (!report.ok()) {
      run.error = report.error == "cancelled" ? "cancelled" : "the harness failed while ncu wrote its report: " + report.message;
      return false;
    }
    body["ncu"] = report.body.value("ncu", nlohmann::json::object());
    return true;
  }

  /// The report leaves the harness's scratch (gone with the harness) for the candidate's folder,
  /// and its pages are read back.
  void read_report(const support::process_result& r, ncu_run_result& run) {
    ncu_command kept = command_;
    kept.report_path = (dir_ / "profile.ncu-rep").string();
    std::error_code ec;
    if (fs::exists(command_.report_path, ec)) {
      fs::rename(command_.report_path, kept.report_path, ec);
      if (ec) {
        fs::copy_file(command_.report_path, kept.report_path, fs::copy_options::overwrite_existing, ec);
        fs::remove(command_.report_path, ec);
      }
    }
    const auto export_start = std::chrono::steady_clock::now();
    read_ncu_report(ev_.ncu_, kept, r, n_.timeout, run);
    e_.phases.profile_export += seconds_since(export_start);
    // Exports cut short by the stop are no failure of ncu's: the profile was abandoned.
    if (!run.ok && stop_.stop_requested()) run.error = "cancelled";
  }
};

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
  auto scratch = s.client->scratch();
  if (scratch.empty()) {
    profile_static(task, source_path, e, "the harness has no scratch folder for ncu's report");
    return;
  }
  ncu_profile job(*this, task, dir, source_path, library, s, e, scope, next_scope, std::move(stop), std::move(scratch));
  const auto run = job.run();
  job.trace(run);
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
  job.describe(*snap, run);
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
