// The orchestration of a run: baseline, K iterations of B parallel trajectories of depth T,
// the numeric KB update (attempts committed) and the textual-gradient update after each
// iteration, then the best version, its diff and the report. Everything a resumed run needs is
// in the checkpoint (run_journal), and every KB write is idempotent per attempt and per
// iteration, so a run killed at any moment and resumed ends with the same KB.
#include "engine/agents/textual_gradient.h"
#include "support/files.h"
#include "engine/optimize/loop_context.h"
#include "engine/optimize/run_report.h"
#include "engine/optimize/unified_diff.h"

#include <algorithm>
#include <exception>
#include <fstream>
#include <sstream>
#include <thread>

namespace kblaster::engine::optimize {
namespace {
using json = nlohmann::json;
namespace fs = std::filesystem;

std::string read_kernel(const fs::path& p) {
  if (auto text = support::read_file_if_exists(p)) return std::move(*text);
  throw std::invalid_argument("cannot read the kernel " + p.string());
}

void validate(const loop_options& o, const run_environment& env) {
  auto positive = [](int v, const char* name) {
    if (v < 1) throw std::invalid_argument(std::string(name) + " must be at least 1 (got " + std::to_string(v) + ")");
  };
  positive(o.breadth, "breadth");
  positive(o.depth, "depth");
  positive(o.iterations, "iterations");
  positive(o.top_k, "top-k");
  if (o.policy != "weighted" && o.policy != "thompson" && o.policy != "greedy")
    throw std::invalid_argument("policy must be weighted, thompson or greedy (got '" + o.policy + "')");
  if (!env.eval) throw std::invalid_argument("no evaluator: nothing can verify or time a candidate");
  if (env.out_dir.empty()) throw std::invalid_argument("an output directory is required for the checkpoint and report");
  if (env.kb_path.empty()) throw std::invalid_argument("a KB path is required");
}

json identity_of(const task_spec& task, const std::string& input_hash, const loop_options& o, bool model) {
  return {{"task", task.name},         {"input", input_hash},         {"breadth", o.breadth},
          {"depth", o.depth},          {"iterations", o.iterations},  {"top_k", o.top_k},
          {"policy", o.policy},        {"seed", o.seed},              {"mechanical_first", o.mechanical_first},
          {"textual_gradient", o.textual_gradient}, {"cycles_only", o.cycles_only}, {"model", model},
          {"only_technique", o.only_technique}};
}

// The key that makes committing an attempt idempotent.
std::string attempt_key(const std::string& trajectory, int step, const std::string& technique, const std::string& hash) {
  return trajectory + "#" + std::to_string(step) + "#" + technique + "#" + hash;
}

// The KB trajectory-name prefix of iteration k of a run ("run-…/i0/").
std::string iteration_prefix(const std::string& run_id, int iteration) {
  return run_id + "/i" + std::to_string(iteration) + "/";
}

// The attempts of iteration k from the checkpoint, in (trajectory, step, candidate) order, minus
// those the KB already holds (a resumed run) and duplicates (two trajectories that tried the
// same variant on the same version count once).
std::vector<kb::attempt> attempts_to_commit(loop_context& ctx, kb::knowledge_base& kb, int iteration) {
  std::set<std::string> existing;
  for (const auto& a : kb.attempts_of(ctx.task.name, iteration_prefix(ctx.run_id, iteration)))
    existing.insert(attempt_key(a.trajectory, a.step, a.technique, a.code_hash));
  std::set<std::string> seen;
  std::vector<kb::attempt> out;
  for (const auto& rec : ctx.journal.steps()) {
    if (rec.value("iteration", -1) != iteration) continue;
    const auto trajectory = trajectory_name(ctx.run_id, iteration, rec.value("trajectory", 0));
    bool first = true;
    for (const auto& c : rec["candidates"]) {
      const auto ev = evaluation_from_json(c["evaluation"]);
      const std::string technique = c.value("technique", "");
      const auto hash = c.value("hash", "");
      if (!seen.insert(rec.value("start", "") + "#" + technique + "#" + hash).second) continue;
      if (existing.count(attempt_key(trajectory, rec.value("step", 0), technique, hash))) continue;
      kb::attempt a;
      a.task = ctx.task.name;
      a.trajectory = trajectory;
      a.iteration = iteration;
      a.step = rec.value("step", 0);
      a.state_before = rec.value("state_before", "unknown");
      a.state_after = c.value("state_after", "");
      a.technique = technique;
      if (rec.contains("predicted")) a.predicted_speedup = rec["predicted"].get<double>();
      if (c.contains("measured_speedup")) a.measured_speedup = c["measured_speedup"].get<double>();
      a.compile_ok = ev.compile_ok;
      a.correct = c["evaluation"].value("correct", false);
      if (ev.profile) a.elapsed_cycles = ev.profile->elapsed_cycles;
      a.runtime_ms = ev.runtime_ms;
      if (first)
        for (const auto& [role, n] : rec["tokens"].items()) a.tokens_by_role[role] = n.get<std::int64_t>();
      first = false;
      a.gpu_name = ev.gpu_name;
      a.arch = ctx.arch;
      a.code_hash = hash;
      out.push_back(std::move(a));
    }
  }
  return out;
}

// Has a textual-gradient update citing this iteration's attempts already been applied (killed
// between the KB commit and the checkpoint's milestone)?
bool gradient_already_applied(kb::knowledge_base& kb, const std::vector<kb::attempt>& attempts) {
  std::set<std::int64_t> ids;
  for (const auto& a : attempts) ids.insert(a.id);
  for (const auto& u : kb.history(50))
    if (u.cause.kind == "textual_gradient")
      for (auto id : u.cause.attempt_ids)
        if (ids.count(id)) return true;
  return false;
}

struct step_totals {
  int candidates = 0;
  double gpu_seconds = 0;
  std::int64_t tokens = 0;
};

}  // namespace

optimize_result run_optimization(const task_spec& task, const loop_options& options, run_environment& env) {
  validate(options, env);
  const fs::path input_path = env.input.empty() ? fs::path(task.kernel) : env.input;
  if (input_path.empty()) throw std::invalid_argument("the task names no kernel to optimize");
  const std::string input_source = read_kernel(input_path);
  const auto input_hash = source_hash(task.name, input_source);
  const json identity = identity_of(task, input_hash, options, env.model != nullptr);
  const std::string run_id = "run-" + source_hash("run", identity.dump()).substr(0, 12);
  run_journal journal(env.out_dir, identity);
  loop_context ctx(task, options, env, journal, run_id);
  auto kb = kb::knowledge_base::open(env.kb_path);

  // The baseline: the input, measured once per run (kept in the checkpoint).
  ctx.emit({"baseline", 0, 0, 0, 0, 0, 0, 1, "measuring the input kernel"});
  version baseline;
  if (auto rec = journal.record("baseline")) {
    auto ev = evaluation_from_json(rec->at("evaluation"));
    ctx.remember(input_source, ev);
    baseline = version{ev.code_hash, input_source, ev};
  } else {
    try {
      baseline = ctx.evaluate(input_source);
    } catch (const evaluation_cancelled&) {
      // Stopped before the input was measured: nothing to report, nothing recorded.
      optimize_result r;
      r.run_id = run_id;
      r.input_source = input_source;
      r.best_source = input_source;
      r.stop_reason = {stop_kind::cancelled, ""};
      r.wall_seconds = ctx.wall_seconds();
      return r;
    }
    journal.set_record("baseline", {{"hash", baseline.hash}, {"evaluation", to_json(baseline.eval)}});
    ctx.account(1, baseline.eval.gpu_seconds, 0);
  }
  if (!baseline.eval.correct || !baseline.eval.runtime_ms || *baseline.eval.runtime_ms <= 0)
    throw evaluation_error("the input kernel cannot be the baseline: " +
                           (!baseline.eval.compile_ok ? "it does not compile:\n" + baseline.eval.compile_log
                                                      : baseline.eval.verdict + " (" + baseline.eval.check + "): " +
                                                            baseline.eval.reason));
  ctx.arch = !options.arch.empty() ? options.arch : baseline.eval.arch;

  // A resumed run: the checkpoint's evaluations fill the cache and count against the budgets.
  std::set<std::string> counted{baseline.hash};
  std::mutex counted_mutex;
  auto account_step = [&](const json& rec) {
    step_totals t;
    {
      std::lock_guard lock(counted_mutex);
      for (const auto& c : rec["candidates"])
        if (counted.insert(c.value("hash", "")).second) {
          ++t.candidates;
          t.gpu_seconds += c["evaluation"].value("gpu_seconds", 0.0);
        }
    }
    for (const auto& [role, n] : rec["tokens"].items()) t.tokens += n.get<std::int64_t>();
    ctx.account(t.candidates, t.gpu_seconds, t.tokens);
  };
  if (journal.resumed()) {
    ctx.account(1, baseline.eval.gpu_seconds, 0);
    for (const auto& rec : journal.steps()) {
      for (const auto& c : rec["candidates"])
        ctx.remember(journal.source(c.value("hash", "")), evaluation_from_json(c["evaluation"]));
      account_step(rec);
    }
    for (int k = 0; k < options.iterations; ++k)
      if (auto g = journal.record("gradient_" + std::to_string(k))) ctx.account(0, 0, g->value("tokens_total", 0));
  }

  version best = baseline;
  auto better = [](const version& a, const version& b) {
    return a.eval.correct && a.eval.runtime_ms && b.eval.runtime_ms && *a.eval.runtime_ms * 1.01 < *b.eval.runtime_ms;
  };
  std::string error;
  const int jobs = std::max(1, std::min(options.jobs > 0 ? options.jobs : options.breadth, options.breadth));

  for (int k = 0; k < options.iterations && !ctx.stopped(); ++k) {
    const version start = best;
    std::atomic<int> next{0};
    std::mutex error_mutex;
    auto worker = [&] {
      try {
        auto tkb = kb::knowledge_base::open(env.kb_path, kb::open_options{kb::open_options::access_mode::read_write, false});
        for (int b = next++; b < options.breadth; b = next++) {
          version cur = start;
          std::set<std::string> tried;
          for (int t = 0; t < options.depth; ++t) {
            json rec;
            if (auto memo = journal.find_step(k, b, t)) {
              rec = *memo;
            } else {
              if (ctx.stopped() || ctx.check_budgets()) return;
              rec = run_step(ctx, tkb, cur, k, b, t, tried);
              // A step cut short by a stop is not kept: resuming redoes it whole.
              if (ctx.stopped()) return;
              journal.append_step(rec);
              account_step(rec);
            }
            if (rec.contains("technique")) tried.insert(rec["technique"].get<std::string>() + "@" + rec.value("start", ""));
            if (auto v = ctx.cached(rec.value("result", ""))) cur = *v;
            ctx.set_best_speedup(*baseline.eval.runtime_ms / cur.ms());
            const bool end = rec.value("end", false);
            std::string message = "iteration " + std::to_string(k + 1) + "/" + std::to_string(options.iterations) +
                                  ", trajectory " + std::to_string(b + 1) + "/" + std::to_string(options.breadth) +
                                  ", step " + std::to_string(t + 1) + "/" + std::to_string(options.depth) + ": ";
            message += end ? rec.value("note", std::string("nothing left to try"))
                           : rec.value("technique", std::string("?")) + " in " + rec.value("state_before", "");
            ctx.step_done(k, b, t, end ? options.depth - t : 1, message);
            if (end) break;
          }
        }
      } catch (const evaluation_cancelled&) {
        // The caller's stop: the step in flight is dropped, as at any other stop.
      } catch (const std::exception& e) {
        std::lock_guard lock(error_mutex);
        if (error.empty()) error = e.what();
        ctx.stop(stop_kind::error);
      }
    };
    {
      std::vector<std::jthread> threads;
      for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);
    }

    // The numeric update: this iteration's attempts (all of them, or those finished before a
    // stop) join the replay buffer and the statistics in one transaction.
    auto batch = attempts_to_commit(ctx, kb, k);
    if (!batch.empty()) kb.record_attempts(batch);
    for (const auto& rec : journal.steps())
      if (rec.value("iteration", -1) == k)
        for (const auto& c : rec["candidates"])
          if (auto v = ctx.cached(c.value("hash", "")); v && better(*v, best)) best = *v;
    if (ctx.stopped()) break;
    journal.mark(k, "committed");

    // The textual-gradient update, once per iteration.
    if (env.model && options.textual_gradient && !journal.reached(k, "gradient")) {
      const auto mine = kb.attempts_of(task.name, iteration_prefix(run_id, k));  // oldest first
      json g{{"iteration", k}, {"attempts", mine.size()}};
      if (!mine.empty() && !gradient_already_applied(kb, mine)) {
        ctx.emit({"gradient", k, 0, 0, 0, 0, 0, 1, "learning from this iteration (updating the knowledge base)"});
        auto out = agents::run_textual_gradient(*env.model, kb, mine);
        std::int64_t tokens = 0;
        json by_role = json::object();
        for (const auto& tr : out.traces) {
          const auto n = tr.prompt_tokens + tr.completion_tokens;
          tokens += n;
          by_role[tr.role] = by_role.value(tr.role, std::int64_t{0}) + n;
        }
        g["status"] = agents::to_string(out.status);
        g["tokens"] = by_role;
        g["tokens_total"] = tokens;
        if (out.evaluation) {
          g["summary"] = out.evaluation->summary;
          g["departures"] = out.evaluation->departures.size();
        }
        if (out.gaps) g["gaps"] = out.gaps->size();
        if (out.update) g["update"] = {{"update_id", out.update->applied.update_id}, {"operations", out.update->applied.operations}};
        ctx.account(0, 0, tokens);
        if (out.status == agents::agent_status::budget_exhausted) ctx.stop(stop_kind::budget_tokens);
      } else {
        g["status"] = mine.empty() ? "skipped: no attempts" : "already applied";
      }
      journal.set_record("gradient_" + std::to_string(k), g);
      if (ctx.stopped()) break;
      journal.mark(k, "gradient");
    }
  }

  optimize_result r;
  r.run_id = run_id;
  r.input_source = input_source;
  r.best_source = best.source;
  r.input_ms = baseline.eval.runtime_ms;
  r.best_ms = best.eval.runtime_ms;
  r.reference_ms = baseline.eval.reference_ms;
  r.best_speedup = *baseline.eval.runtime_ms / best.ms();
  r.stop_reason = {ctx.stop_reason(), ""};
  if (!error.empty()) r.stop_reason = {stop_kind::error, error};
  r.candidates = ctx.candidates();
  r.tokens = ctx.tokens();
  r.gpu_seconds = ctx.gpu_seconds();
  r.wall_seconds = ctx.wall_seconds();
  for (const auto& a : kb.attempts_of(task.name, run_id + "/")) {
    r.attempt_ids.push_back(a.id);
    if (a.correct) ++r.correct_candidates;
  }
  const std::string name = input_path.filename().string();
  r.diff = unified_diff(input_source, best.source, "a/" + name, "b/" + name);
  r.report = build_run_report(ctx, r, baseline, best);
  r.report_markdown = render_run_report(r.report);
  write_file_atomically(env.out_dir / ("best" + input_path.extension().string()), best.source);
  write_file_atomically(env.out_dir / "best.diff", r.diff);
  write_file_atomically(env.out_dir / "report.json", r.report.dump(2) + "\n");
  write_file_atomically(env.out_dir / "report.md", r.report_markdown);
  ctx.emit({"done", 0, 0, 0, 0, 0, 0, r.best_speedup, "done: " + r.stop_reason.to_string()});
  return r;
}

}  // namespace kblaster::engine::optimize
