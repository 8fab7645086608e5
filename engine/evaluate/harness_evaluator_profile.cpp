// The live evaluator's profiles: Nsight Compute over kblaster-harness in one-shot mode (a
// profile_run request from a file, one kb_forward call inside the NVTX push/pop range
// kb_candidate), classified like `kblaster profile`; else a static profile (ptxas + occupancy).
// A profile that cannot be taken never fails the candidate: the evaluation says why instead.
#include "engine/evaluate/harness_client.h"
#include "engine/profile/ncu_csv_parser.h"
#include "engine/profile/ncu_runner.h"
#include "support/files.h"
#include "support/text.h"
#include "engine/evaluate/harness_evaluator.h"
#include "engine/profile/profile_pipeline.h"
#include "engine/profile/profile_summary.h"
#include "engine/state/state_evidence.h"
#include "engine/toolchain/task_build.h"

#include <cstdio>
#include <fstream>

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
  try {
    const auto report = parse_ncu_details(details_csv);
    for (const auto& k : report.kernels)
      if (k.id == best->signature.id)
        if (const auto c = k.value("Elapsed Cycles")) snap.elapsed_cycles = static_cast<std::int64_t>(*c);
  } catch (const std::exception&) {
    // analyze_pages parsed the same page; cycles are a nicety.
  }
  if (out.kernels.size() > 1) snap.view["profiled_kernels"] = static_cast<int>(out.kernels.size());  // the longest is kept
  return snap;
}

void harness_evaluator::profile(const task_entry& task, const fs::path& dir, const std::string& source_path,
                                const std::string& library, slot& s, evaluation& e, std::stop_token stop) {
  if (device_ == "cpu") {
    e.profile_note = "no profile on the CPU path (host C++ candidates have no GPU profile)";
    return;
  }
  if (ncu_.empty()) {
    profile_static(task, source_path, e, "ncu (Nsight Compute) not found");
    return;
  }
  nlohmann::json req{{"id", 1}, {"op", "profile_run"}, {"task", to_json(task.spec)}, {"candidate", library}};
  if (!task.reference_library.empty()) req["reference_library"] = task.reference_library;
  const auto request_file = dir / "profile_request.json";
  {
    std::ofstream out(request_file, std::ios::binary);
    out << req.dump(2) << "\n";
    if (!out) {
      profile_static(task, source_path, e, "cannot write " + request_file.string());
      return;
    }
  }
  ncu_options n;
  n.nvtx_include = "kb_candidate/";  // trailing '/': a push/pop range (without it, a start/end range)
  n.report_base = (dir / "profile").string();
  n.timeout = options_.profile_timeout;
  n.stop = stop;
  // The candidate runs again here, under ncu: sandboxed like the harness, writing only the
  // report beside its request.
  std::optional<support::sandbox_scratch> scratch;
  try {
    scratch.emplace(support::user_scratch_root() / "jobs", "ncu");
    n.sandbox = support::sandbox_policy{scratch->path(), {dir}, {}, true, {}};
  } catch (const std::exception& x) {
    profile_static(task, source_path, e, std::string("cannot sandbox ncu: ") + x.what());
    return;
  }
  // ncu profiles a program, not this process's harness: a second harness on the same GPU, run
  // while this GPU's lease is held so nothing else runs there. env sets the GPU and execs in
  // place, so ncu's injection follows.
  std::vector<std::string> program;
  if (!s.visible.empty()) program = {"/usr/bin/env", "CUDA_VISIBLE_DEVICES=" + s.visible};
  program.insert(program.end(), {harness_, "--device", "cuda", "--request", request_file.string()});
  const auto t0 = std::chrono::steady_clock::now();
  const auto run = run_ncu(ncu_, n, program);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The device is held while ncu profiles; reading the report's pages back is CPU work.
  const double on_device = run.profile_seconds > 0 ? run.profile_seconds : took;
  e.gpu_seconds += on_device;
  e.phases.profile += on_device;
  e.phases.profile_export += std::max(0.0, took - on_device);
  if (harness_trace_requested()) {
    // The one-shot harness's phase lines went into ncu's log; with them, where the seconds went.
    std::string lines;
    for (std::size_t at = 0; (at = run.log.find("[kblaster-harness", at)) != std::string::npos;) {
      const auto end = run.log.find('\n', at);
      lines += run.log.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
      if (end == std::string::npos) break;
      at = end + 1;
    }
    std::fprintf(stderr, "%s[kblaster] ncu: the profiled run %.3f s, its pages read back %.3f s\n", lines.c_str(),
                 on_device, std::max(0.0, took - on_device));
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
  snap->report_path = run.report_path;
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
