// The program-level Optimize: profile, plan, one turn per kernel, the end-to-end figure.
#include "engine/program/program_optimize.h"
#include "support/text.h"

#include "engine/capture/capture_task.h"
#include "engine/source/unified_diff.h"
#include "engine/state/program_profile_pipeline.h"
#include "engine/toolchain/nvcc_driver.h"
#include "support/files.h"
#include "support/sandbox.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace kblaster::engine {

namespace fs = std::filesystem;
using optimize::optimize_refusal;
using optimize::optimize_refusal_kind;

namespace {


fs::path out_dir_of(const program_optimize_request& r) {
  if (!r.out_dir.empty()) return r.out_dir;
  const fs::path file = fs::absolute(r.base.file);
  return file.parent_path() / ".kblaster" / "program-runs" / file.stem();
}

// --- step 1: the profile ---------------------------------------------------------------------

profile_outcome live_or_recorded_profile(const program_optimize_request& r) {
  if (!r.recorded_timeline.empty())
    return analyze_recorded_program(r.recorded_timeline, r.recorded_details.empty() ? std::nullopt
                                                                                   : std::optional<std::string>(r.recorded_details));
  auto options = r.profile;
  options.program_args = r.base.program.run.args;
  options.timeline = true;
  const auto& run = r.base.program.run;
  if (run.command.empty()) return profile_live(r.base.file, options);
  // A program the user's own build makes: that build, then the program it made, as it is.
  const auto ncu = find_ncu();
  if (!ncu) {
    profile_outcome none;
    none.error = "ncu (Nsight Compute) not found in PATH, $CUDA_HOME/bin or /usr/local/cuda/bin";
    return none;
  }
  auto how = r.base.program;
  how.source = r.base.file;
  if (!run.build.empty()) run_user_build(how, options.stop);
  return profile_built_program(*ncu, own_build_argv(how.run), options);
}

// A program the user's own build makes compiles the file where it is: a text under test is put
// there for the time it is needed, and the user's own text is always put back (and built again,
// so that their tree is left as they had it).
class text_in_place {
 public:
  explicit text_in_place(const capture_request& how)
      : how_(how), file_(fs::absolute(how.source)), original_(support::read_file(file_)) {}
  ~text_in_place() {
    try {
      if (support::read_file(file_) == original_) return;
      support::write_file_atomically(file_, original_);
      auto user = how_;
      user.sandboxed = false;
      if (!user.run.build.empty()) run_user_build(user, {});
    } catch (const std::exception&) {
      // Nothing better to do on the way out: the original is also in the run folder.
    }
  }
  text_in_place(const text_in_place&) = delete;
  text_in_place& operator=(const text_in_place&) = delete;
  void put(const std::string& text) { support::write_file_atomically(file_, text); }

 private:
  capture_request how_;
  fs::path file_;
  std::string original_;
};

// --- step 3's pieces -------------------------------------------------------------------------

// The kernel's loop, on the program as the turns before left it.
optimize::optimize_request kernel_request(const program_optimize_request& r, const fs::path& current, const planned_kernel& k,
                                          int candidates, const fs::path& turn_dir) {
  auto q = r.base;
  const fs::path original = fs::absolute(r.base.file);
  q.file = current.string();
  q.buffer.reset();
  q.kernel = k.function;
  q.apply = false;
  q.out_dir = turn_dir / "run";
  // A copy in the run folder builds and runs as the original does: its folder, its headers.
  if (q.program.run.cwd.empty()) q.program.run.cwd = original.parent_path().string();
  q.program.nvcc_flags.push_back("-I" + original.parent_path().string());
  if (candidates > 0) q.loop.limits.candidates = candidates;
  return q;
}

nlohmann::json decision_json(const kernel_turn& t) {
  nlohmann::json j = {{"kernel", t.plan.function}, {"status", t.status}, {"detail", t.detail},
                      {"harness_speedup", t.harness_speedup}, {"kept", t.kept}};
  if (t.in_program_speedup) j["in_program_speedup"] = *t.in_program_speedup;
  if (t.end_to_end) {
    j["end_to_end"] = {{"original_seconds", t.end_to_end->original_seconds},
                       {"optimized_seconds", t.end_to_end->optimized_seconds}};
  }
  return j;
}

// A decision measured before (the run was stopped after it): read back, not measured again.
std::optional<kernel_turn> read_decision(const fs::path& turn_dir, const kernel_turn& planned) {
  const auto text = support::read_file_if_exists(turn_dir / "decision.json");
  if (!text) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(*text);
    if (j.at("kernel") != planned.plan.function) return std::nullopt;
    kernel_turn t = planned;
    t.status = j.at("status");
    t.detail = j.value("detail", "");
    t.harness_speedup = j.value("harness_speedup", 1.0);
    t.kept = j.at("kept");
    if (j.contains("in_program_speedup")) t.in_program_speedup = j["in_program_speedup"].get<double>();
    if (j.contains("end_to_end")) {
      end_to_end_result e;
      e.original_seconds = j["end_to_end"].at("original_seconds").get<std::vector<double>>();
      e.optimized_seconds = j["end_to_end"].at("optimized_seconds").get<std::vector<double>>();
      for (std::size_t i = 0; i < e.original_seconds.size() && i < e.optimized_seconds.size(); ++i)
        e.ratios.push_back(e.original_seconds[i] / e.optimized_seconds[i]);
      e.speedup = summarize_ratios(e.ratios);
      t.end_to_end = std::move(e);
    }
    return t;
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged decision: the turn runs again (its loop resumes)
  }
}

void finish(kernel_turn& t, std::string status, std::string detail) {
  t.status = std::move(status);
  t.detail = std::move(detail);
}

// One kernel's turn. Returns the edited program's path when the rewrite is kept.
std::optional<fs::path> run_turn(const program_optimize_request& r, const program_steps& steps, const fs::path& current,
                                 kernel_turn& turn, const optimize::service_events& events, std::stop_token stop) {
  const auto say = [&](const std::string& line) {
    if (events.say) events.say(turn.plan.function + ": " + line);
  };
  optimize::optimize_outcome loop;
  try {
    loop = steps.optimize_kernel(kernel_request(r, current, turn.plan, turn.candidates_budget, turn.out_dir), events, stop);
  } catch (const optimize_refusal& e) {
    finish(turn, "failed", e.what());
    return std::nullopt;
  }
  turn.harness_speedup = loop.result.best_speedup;
  if (loop.result.stop_reason == optimize::stop_kind::cancelled || stop.stop_requested()) {
    finish(turn, "cancelled", "stopped during its loop; the same command resumes it");
    return std::nullopt;
  }
  if (!loop.improved()) {
    finish(turn, "no faster kernel found", "no candidate beat it in the harness");
    return std::nullopt;
  }
  if (!loop.rewrite || loop.rewrite->check != rewrite_check::reproduced) {
    finish(turn, "did not reproduce in the program",
           loop.rewrite ? (loop.rewrite->mismatch.empty() ? loop.rewrite->launch_refusal : loop.rewrite->mismatch)
                        : loop.rewrite_error);
    return std::nullopt;
  }
  if (loop.captured && loop.captured->capture.time_ms > 0 && loop.rewrite->recaptured_ms > 0)
    turn.in_program_speedup = loop.captured->capture.time_ms / loop.rewrite->recaptured_ms;
  // The program with and without the rewrite, built alike and both in the sandbox: the same
  // start-up cost on each side, and the model's code never runs outside it.
  say("timing the program with and without the rewrite, end to end");
  try {
    const auto before = steps.build(current.string(), r.base.program, turn.out_dir / "before", true, stop);
    const auto after = steps.build(loop.rewrite->edited_path, r.base.program, turn.out_dir / "after", true, stop);
    turn.end_to_end = steps.measure(before, after, r.end_to_end, say, stop);
  } catch (const std::exception& e) {
    finish(turn, "failed", std::string("timing the program failed: ") + e.what());
    return std::nullopt;
  }
  if (turn.end_to_end->cancelled) {
    finish(turn, "cancelled", "stopped while timing the program; the same command measures it again");
    return std::nullopt;
  }
  if (!turn.end_to_end->faster()) {
    finish(turn, "not faster end to end",
           turn.end_to_end->ok() ? "the program's time did not drop with 95% confidence: " + turn.end_to_end->text()
                                 : turn.end_to_end->text());
    return std::nullopt;
  }
  turn.kept = true;
  finish(turn, "kept", "the program is " + turn.end_to_end->text() + " faster with it");
  const fs::path kept = turn.out_dir / fs::path(r.base.file).filename();
  support::write_file_atomically(kept, support::read_file(loop.rewrite->edited_path));
  return kept;
}

// --- the defaults: building for timing, measuring under the GPU's lock -------------------------

// How a built program is run for timing: as the user runs it, or, holding model-written code, in
// the sandbox, reading its folder, the files its arguments name and its build folder.
program_command timed_command(const std::vector<std::string>& argv, const capture_request& how, const std::string& cwd,
                              const fs::path& folder, bool model_written) {
  if (!model_written) return {argv, cwd, how.run.env};
  auto readable = paths_named_by(how.run.args, cwd);
  readable.push_back(cwd);
  readable.push_back(folder);
  fs::create_directories(folder / "scratch");
  return {support::sandboxed_command(argv, {.scratch = folder / "scratch",
                                            .writable = {},
                                            .readable = std::move(readable),
                                            .environment = how.run.env,
                                            .gpu = true,
                                            .limits = {}}),
          cwd,
          {}};
}

// A program the user's own build makes, with `source`'s text in its file: built by their command
// (in the sandbox when the text is model-written), and the program it made kept in `folder`.
program_command build_own_for_timing(const std::string& source, const capture_request& how, const fs::path& folder,
                                     bool model_written, std::stop_token stop) {
  fs::create_directories(folder);
  const std::string cwd = how.run.cwd.empty() ? fs::absolute(how.source).parent_path().string() : how.run.cwd;
  {
    text_in_place in_place(how);
    in_place.put(support::read_file(source));
    auto job = how;
    job.sandboxed = model_written;
    if (!how.run.build.empty()) run_user_build(job, stop);
    fs::path made = how.run.command.front();
    if (made.is_relative() && made.has_parent_path()) made = fs::path(cwd) / made;
    fs::copy_file(made, folder / "program", fs::copy_options::overwrite_existing);
  }
  std::vector<std::string> argv{(folder / "program").string()};
  argv.insert(argv.end(), how.run.command.begin() + 1, how.run.command.end());
  argv.insert(argv.end(), how.run.args.begin(), how.run.args.end());
  return timed_command(argv, how, cwd, folder, model_written);
}

program_command build_for_timing(const std::string& source, const capture_request& how, const fs::path& folder,
                                 bool model_written, std::stop_token stop) {
  if (!how.run.command.empty()) return build_own_for_timing(source, how, folder, model_written, stop);
  const std::string nvcc = how.nvcc.empty() ? find_nvcc().value_or("") : how.nvcc;
  if (nvcc.empty()) throw capture_error("nvcc was not found (set PATH or CUDA_HOME): the program cannot be built");
  fs::create_directories(folder);
  const fs::path exe = folder / "program";
  const std::string cwd = how.run.cwd.empty() ? fs::absolute(source).parent_path().string() : how.run.cwd;
  // The flags the capture builds with, without its shared runtime and line info: the program as
  // an ordinary optimized build of it runs.
  std::vector<std::string> build{nvcc};
  build.insert(build.end(), how.nvcc_flags.begin(), how.nvcc_flags.end());
  build.insert(build.end(), {"-o", exe.string(), source});
  auto job = how;
  job.sandboxed = model_written;
  const auto built = run_program_job(job, build, folder, support::folders_read_by_compile(build), std::chrono::minutes(10), cwd, stop);
  if (!built.ok()) throw capture_error(fs::path(source).filename().string() + " does not build for timing:\n" + built.err);
  std::vector<std::string> argv{exe.string()};
  argv.insert(argv.end(), how.run.args.begin(), how.run.args.end());
  return timed_command(argv, how, cwd, folder, model_written);
}

}  // namespace

program_steps default_program_steps() {
  program_steps s;
  s.profile = live_or_recorded_profile;
  s.optimize_kernel = optimize::optimize_file;
  s.build = build_for_timing;
  s.measure = measure_end_to_end;
  return s;
}

program_optimize_outcome optimize_program(const program_optimize_request& given, const optimize::service_events& events,
                                          std::stop_token stop, const program_steps& steps) {
  const auto say = [&](const std::string& line) {
    if (events.say) events.say(line);
  };
  const fs::path file = fs::absolute(given.base.file);
  auto request = given;
  request.base.program.source = file.string();  // what a build of the user's own puts a text into
  program_optimize_outcome out;
  const auto original = support::read_file_if_exists(file);
  if (!original) throw optimize_refusal(optimize_refusal_kind::not_optimizable, "cannot read " + file.string());
  if (!runs_as_program(*original, request.base.program.run))
    throw optimize_refusal(optimize_refusal_kind::not_optimizable,
                           file.filename().string() + " is not a program: a .cu with main(), or the file of a program your "
                           "own build makes (--run PROGRAM, --build COMMAND)");
  const bool own_build = !request.base.program.run.command.empty();
  out.original_text = out.final_text = *original;
  out.out_dir = out_dir_of(request);
  fs::create_directories(out.out_dir);

  // 1-2: the profile and the plan, shown before anything else runs.
  say("profiling the program (its timeline, then ncu on the kernels worth it)");
  const auto profiled = steps.profile(request);
  if (!profiled.program)
    throw optimize_refusal(optimize_refusal_kind::capture_failed,
                           "no timeline of the program: " +
                               (profiled.program_unavailable.empty() ? profiled.error : profiled.program_unavailable));
  out.profile = *profiled.program;
  out.plan = plan_program(out.profile, request.plan);
  say(plan_text(out.plan));
  const auto budgets = split_budget(request.base.loop.limits.candidates, out.plan);

  // 3: the turns, each on the program as the kept rewrites before it left it.
  fs::path current = file;
  for (std::size_t i = 0; i < out.plan.kernels.size(); ++i) {
    kernel_turn turn;
    turn.plan = out.plan.kernels[i];
    turn.candidates_budget = budgets[i];
    turn.out_dir = out.out_dir / ("turn-" + std::to_string(i + 1) + "-" + turn.plan.function);
    fs::create_directories(turn.out_dir);
    const fs::path kept_path = turn.out_dir / file.filename();
    if (auto decided = read_decision(turn.out_dir, turn)) {
      say(turn.plan.function + ": " + decided->status + " (measured before)");
      turn = std::move(*decided);
      if (turn.kept) current = kept_path;
    } else {
      say("optimizing " + turn.plan.function + " (" + std::to_string(i + 1) + " of " + std::to_string(out.plan.kernels.size()) + ")");
      // The user's own build compiles the file where it is: the program as the turns before left
      // it is put there for this turn's loop, and the user's text put back after it.
      std::optional<text_in_place> held;
      if (own_build) {
        held.emplace(request.base.program);
        held->put(support::read_file(current));
      }
      if (const auto kept = run_turn(request, steps, own_build ? file : current, turn, events, stop)) current = *kept;
      held.reset();
      if (turn.status != "cancelled") support::write_file_atomically(turn.out_dir / "decision.json", decision_json(turn).dump(2));
    }
    say(turn.plan.function + ": " + turn.status + (turn.detail.empty() ? "" : ": " + turn.detail));
    out.turns.push_back(std::move(turn));
    if (out.turns.back().status == "cancelled" || stop.stop_requested()) {
      out.cancelled = true;
      return out;
    }
  }

  // 4: the original against the final program, measured once more: the figure reported.
  out.final_text = support::read_file(current);
  out.final_path = out.out_dir / file.filename();
  support::write_file_atomically(out.final_path, out.final_text);
  out.diff = unified_diff(out.original_text, out.final_text, "a/" + file.filename().string(), "b/" + file.filename().string());
  support::write_file_atomically(out.out_dir / "program.diff", out.diff);
  if (out.improved()) {
    say("timing the original against the optimized program, end to end");
    try {
      const auto before = steps.build(file.string(), request.base.program, out.out_dir / "original", true, stop);
      const auto after = steps.build(out.final_path.string(), request.base.program, out.out_dir / "final", true, stop);
      out.total = steps.measure(before, after, request.end_to_end, say, stop);
      out.cancelled = out.total->cancelled;
    } catch (const std::exception& e) {
      end_to_end_result failed;
      failed.error = std::string("timing the program failed: ") + e.what();
      out.total = std::move(failed);
    }
    if (request.apply && out.total && out.total->faster()) {
      out.applied_backup = out.out_dir / (file.filename().string() + ".orig");
      support::write_file_atomically(out.applied_backup, out.original_text);
      support::write_file_atomically(file, out.final_text);
      out.applied_to = file;
    }
  }
  support::write_file_atomically(out.out_dir / "program-report.json", to_json(out).dump(2));
  return out;
}

std::string program_outcome_text(const program_optimize_outcome& o) {
  std::ostringstream s;
  s << "kernel                  share  harness  in program  end to end                          result\n";
  for (const auto& t : o.turns) {
    char line[256];
    std::snprintf(line, sizeof line, "%-22s %5.1f%%  %6.2fx  %10s  %-34s  %s\n", t.plan.function.c_str(), t.plan.share_pct,
                  t.harness_speedup, t.in_program_speedup ? (support::fixed_text(*t.in_program_speedup, 2) + "x").c_str() : "-",
                  t.end_to_end && t.end_to_end->ok() ? t.end_to_end->text().c_str() : "-", t.status.c_str());
    s << line;
  }
  const std::string bound = std::isfinite(o.plan.amdahl_bound) ? support::fixed_text(o.plan.amdahl_bound, 2) + "x" : "unbounded";
  if (o.total && o.total->ok())
    s << "program: " << o.total->text() << " end to end (original against optimized, whole runs); Amdahl bound on its GPU span "
      << bound << "\n";
  else if (o.total)
    s << "program: not measured end to end: " << o.total->text() << "\n";
  else
    s << "program: unchanged (no rewrite made it faster end to end); Amdahl bound on its GPU span " << bound << "\n";
  if (!o.applied_to.empty()) s << "applied to " << o.applied_to.string() << " (the original is in " << o.applied_backup.string() << ")\n";
  else if (o.improved()) s << "the optimized program: " << o.final_path.string() << " (diff: " << (o.out_dir / "program.diff").string() << ")\n";
  return s.str();
}

nlohmann::json to_json(const program_optimize_outcome& o) {
  nlohmann::json turns = nlohmann::json::array();
  for (const auto& t : o.turns) {
    auto j = decision_json(t);
    j["share_pct"] = t.plan.share_pct;
    j["bound_saving_us"] = t.plan.bound_saving_us;
    if (t.plan.headroom) j["headroom"] = *t.plan.headroom;
    if (t.end_to_end && t.end_to_end->ok())
      j["end_to_end_speedup"] = {{"median", t.end_to_end->speedup.median}, {"low", t.end_to_end->speedup.low},
                                 {"high", t.end_to_end->speedup.high}, {"pairs", t.end_to_end->speedup.pairs}};
    turns.push_back(std::move(j));
  }
  nlohmann::json j = {{"profile", to_json(o.profile)},
                      {"amdahl_bound", std::isfinite(o.plan.amdahl_bound) ? nlohmann::json(o.plan.amdahl_bound) : nlohmann::json()},
                      {"turns", turns},
                      {"improved", o.improved()},
                      {"cancelled", o.cancelled},
                      {"diff", o.diff}};
  if (o.total) {
    j["end_to_end"] = {{"ok", o.total->ok()}, {"text", o.total->text()}, {"original_seconds", o.total->original_seconds},
                       {"optimized_seconds", o.total->optimized_seconds}};
    if (o.total->ok())
      j["end_to_end"]["speedup"] = {{"median", o.total->speedup.median}, {"low", o.total->speedup.low},
                                    {"high", o.total->speedup.high}, {"pairs", o.total->speedup.pairs},
                                    {"coverage", o.total->speedup.coverage}};
  }
  if (!o.applied_to.empty()) j["applied_to"] = o.applied_to.string();
  return j;
}

}  // namespace kblaster::engine
