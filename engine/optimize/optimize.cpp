// The orchestration of a run: baseline, K iterations of B parallel trajectories of depth T,
// the numeric KB update (attempts committed) and the textual-gradient update after each
// iteration, then the best version, its diff and the report. Everything a resumed run needs is
// in the checkpoint (run_journal), and every KB write is idempotent per attempt and per
// iteration, so a run killed at any moment and resumed ends with the same KB.
#include "engine/agents/textual_gradient.h"
#include "support/files.h"
#include "engine/llm/deferred_backend.h"
#include "engine/optimize/loop_context.h"
#include "engine/optimize/run_report.h"
#include "engine/source/unified_diff.h"

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
  if (o.policy != "greedy" && !kb::parse_policy(o.policy))
    throw std::invalid_argument("policy must be ucb, weighted, mean, thompson or greedy (got '" + o.policy + "')");
  if (!env.eval) throw std::invalid_argument("no evaluator: nothing can verify or time a candidate");
  if (env.out_dir.empty()) throw std::invalid_argument("an output directory is required for the checkpoint and report");
  if (env.kb_path.empty()) throw std::invalid_argument("a KB path is required");
}

json identity_of(const task_spec& task, const std::string& input_hash, const loop_options& o, bool model) {
  json j{{"task", task.name},         {"input", input_hash},         {"breadth", o.breadth},
         {"depth", o.depth},          {"iterations", o.iterations},  {"top_k", o.top_k},
         {"policy", o.policy},        {"seed", o.seed},              {"mechanical_first", o.mechanical_first},
         {"textual_gradient", o.textual_gradient}, {"cycles_only", o.cycles_only}, {"model", model},
         {"only_technique", o.only_technique}};
  if (o.profile_all) j["profile_all"] = true;  // absent when false: the runs made before it keep their identity
  return j;
}

// The key that makes committing an attempt idempotent.
std::string attempt_key(const std::string& trajectory, int step, const std::string& technique, const std::string& hash) {
  return trajectory + "#" + std::to_string(step) + "#" + technique + "#" + hash;
}

// The KB trajectory-name prefix of iteration k of a run ("run-…/i0/").
std::string iteration_prefix(const std::string& run_id, int iteration) {
  return run_id + "/i" + std::to_string(iteration) + "/";
}

// The candidate that stands for a step in its technique's search credit: the fastest correct
// one, else the first (a step that kept nothing still counts, as no gain).
const candidate_record* credited_candidate(const step_record& rec) {
  const candidate_record* best = nullptr;
  for (const auto& c : rec.candidates)
    if (c.eval.correct && c.measured_speedup && (!best || *c.measured_speedup > *best->measured_speedup)) best = &c;
  if (best) return best;
  return rec.candidates.empty() ? nullptr : &rec.candidates.front();
}

// The steps whose result became their run's best so far, in the order they were taken: what the
// search credit calls a new best (OpenTuner's credit).
std::set<const step_record*> new_best_steps(const std::vector<step_record>& steps, double baseline_ms) {
  std::set<const step_record*> out;
  double best_ms = baseline_ms;
  for (const auto& rec : steps) {
    const auto* c = credited_candidate(rec);
    if (!c || !c->eval.correct || !c->eval.runtime_ms || rec.result == rec.start) continue;
    if (*c->eval.runtime_ms * min_gain < best_ms) {
      best_ms = *c->eval.runtime_ms;
      out.insert(&rec);
    }
  }
  return out;
}

// The attempts of iteration k from the checkpoint, in (trajectory, step, candidate) order, minus
// those the KB already holds (a resumed run) and duplicates (two trajectories that tried the
// same variant on the same version count once).
//
// A run stopped by a budget committed the steps it had finished, and a duplicate among them went
// in under whichever trajectory had finished it (trajectories run in parallel): those variants
// count as seen before any other step is looked at, or resuming with a larger budget would
// record them a second time under the trajectory that finished later.
std::vector<kb::attempt> attempts_to_commit(loop_context& ctx, kb::knowledge_base& kb, int iteration) {
  std::set<std::string> existing;
  for (const auto& a : kb.attempts_of(ctx.task.name, iteration_prefix(ctx.run_id, iteration)))
    existing.insert(attempt_key(a.trajectory, a.step, a.technique, a.code_hash));
  const auto steps = ctx.journal.steps();
  const auto variant = [](const step_record& rec, const candidate_record& c) {
    return rec.start + "#" + c.technique + "#" + c.hash;
  };
  std::set<std::string> seen;
  for (const auto& rec : steps)
    if (rec.iteration == iteration)
      for (const auto& c : rec.candidates)
        if (existing.count(attempt_key(trajectory_name(ctx.run_id, iteration, rec.trajectory), rec.step, c.technique, c.hash)))
          seen.insert(variant(rec, c));
  const double baseline_ms = evaluation_from_json(ctx.journal.record("baseline")->at("evaluation")).runtime_ms.value_or(0);
  const auto new_bests = new_best_steps(steps, baseline_ms);
  std::vector<kb::attempt> out;
  for (const auto& rec : steps) {
    if (rec.iteration != iteration) continue;
    const auto trajectory = trajectory_name(ctx.run_id, iteration, rec.trajectory);
    const candidate_record* credited = credited_candidate(rec);
    bool first = true;
    for (const auto& c : rec.candidates) {
      const auto& ev = c.eval;
      if (!seen.insert(variant(rec, c)).second) continue;
      kb::attempt a;
      a.task = ctx.task.name;
      a.trajectory = trajectory;
      a.iteration = iteration;
      a.step = rec.step;
      a.state_before = rec.state_before;
      a.state_after = c.state_after;
      a.technique = c.technique;
      a.predicted_speedup = rec.predicted;
      a.measured_speedup = c.measured_speedup;
      a.compile_ok = ev.compile_ok;
      a.correct = ev.correct;
      if (ev.profile) a.elapsed_cycles = ev.profile->elapsed_cycles;
      a.runtime_ms = ev.runtime_ms;
      if (first)
        for (const auto& [role, n] : rec.tokens) a.tokens_by_role[role] = n;
      first = false;
      a.gpu_name = ev.gpu_name;
      a.arch = ctx.arch;
      a.code_hash = c.hash;
      if (c.parameters.is_object()) a.parameters = c.parameters;
      // A step another trajectory already took (its variants seen above) is credited there.
      a.credits_step = &c == credited;
      a.new_best = a.credits_step && new_bests.count(&rec) > 0;
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

// Counts each candidate once against the budgets, whether it was measured in this process or
// read back from the checkpoint, and whichever trajectory met it first. Its device seconds are
// the most that any record of it or the cache holds: a profile taken after the step that met it
// (as another step's best, or an iteration's start) counts once, in whichever order the
// trajectories' threads or a deferred model's rounds come. Thread-safe.
class step_accounting {
 public:
  step_accounting(loop_context& ctx, const version& baseline)
      : ctx_(ctx), counted_{{baseline.hash, baseline.eval.gpu_seconds}} {}

  void account(const step_record& rec) {
    int candidates = 0;
    double gpu_seconds = 0;
    std::int64_t tokens = 0;
    for (const auto& c : rec.candidates) gpu_seconds += see(c.hash, c.eval.gpu_seconds, candidates);
    for (const auto& [role, n] : rec.tokens) tokens += n;
    ctx_.account(candidates, gpu_seconds, tokens);
  }
  /// A version counted before and measured again since (profiled).
  void account(const version& v) {
    int candidates = 0;
    ctx_.account(0, see(v.hash, v.eval.gpu_seconds, candidates), 0);
  }

 private:
  // The seconds `hash` adds now that it is seen with `seconds` (a new candidate counted in `candidates`).
  double see(const std::string& hash, double seconds, int& candidates) {
    if (auto v = ctx_.cached(hash)) seconds = std::max(seconds, v->eval.gpu_seconds);
    std::lock_guard lock(mutex_);
    auto [it, added] = counted_.emplace(hash, 0.0);
    if (added) ++candidates;
    const double more = std::max(0.0, seconds - it->second);
    it->second += more;
    return more;
  }

  loop_context& ctx_;
  std::mutex mutex_;
  std::map<std::string, double> counted_;  // hash -> device seconds counted
};

// The input, measured once per run and kept in the checkpoint; nullopt when the caller stopped
// the run before it was measured. Throws evaluation_error when the input cannot be a baseline.
std::optional<version> measure_baseline(loop_context& ctx, run_journal& journal, const std::string& input_source) {
  ctx.emit({"baseline", 0, 0, 0, 0, 0, 0, 1, "measuring the input kernel"});
  version baseline;
  if (auto rec = journal.record("baseline")) {
    auto ev = evaluation_from_json(rec->at("evaluation"));
    ctx.remember(input_source, ev);
    baseline = version{ev.code_hash, input_source, ev};
  } else {
    try {
      baseline = ctx.with_state(ctx.evaluate(input_source));
    } catch (const evaluation_cancelled&) {
      return std::nullopt;
    }
    journal.set_record("baseline", {{"hash", baseline.hash}, {"evaluation", to_json(baseline.eval)}});
    ctx.account(1, baseline.eval.gpu_seconds, 0);
  }
  const auto& e = baseline.eval;
  if (!e.correct || !e.runtime_ms || *e.runtime_ms <= 0)
    throw evaluation_error("the input kernel cannot be the baseline: " +
                           (!e.compile_ok ? "it does not compile:\n" + e.compile_log
                                          : e.verdict + " (" + e.check + "): " + e.reason));
  return baseline;
}

// The checkpoint's record of iteration k's start, profiled there (iteration_start).
std::string start_record(int k) { return "start_" + std::to_string(k); }

// A resumed run: the checkpoint's evaluations fill the cache and count against the budgets. The
// cache takes each candidate's measurement (the journal's evaluation of it), not the step's record
// of it, which holds that step's soft verdict: another step meeting the candidate asks its own.
void replay_checkpoint(loop_context& ctx, run_journal& journal, const version& baseline, step_accounting& accounting) {
  if (!journal.resumed()) return;
  ctx.account(1, baseline.eval.gpu_seconds, 0);
  for (const auto& rec : journal.steps()) {
    for (const auto& c : rec.candidates) ctx.remember(journal.source(c.hash), journal.evaluation_of(c.hash).value_or(c.eval));
    accounting.account(rec);
  }
  for (int k = 0; k < ctx.options.iterations; ++k) {
    if (auto g = journal.record("gradient_" + std::to_string(k))) ctx.account(0, 0, g->value("tokens_total", 0));
    if (auto s = journal.record(start_record(k))) {
      const auto e = evaluation_from_json(s->at("evaluation"));
      ctx.remember(journal.source(e.code_hash), e);
      accounting.account(version{e.code_hash, "", e});
    }
  }
}

// The version iteration k starts from, with the state its first steps choose by: the best of the
// iterations before, profiled now when no step needed its state before (a trajectory's last step
// leaves its best unprofiled). Kept in the checkpoint; its profile's seconds count once.
version iteration_start(loop_context& ctx, step_accounting& accounting, const version& best, int k) {
  if (best.eval.profile || !best.eval.correct) return best;
  if (auto v = ctx.cached(best.hash); v && v->eval.profile) return *v;
  const auto profiled = ctx.with_state(best, profile_scope::state_counters);
  ctx.journal.set_record(start_record(k), {{"evaluation", to_json(profiled.eval)}});
  accounting.account(profiled);
  return profiled;
}

std::string step_message(const loop_options& o, int k, int b, int t, const step_record& rec) {
  return step_position(o, k, b, t) + ": " + (rec.end ? rec.note.value_or("nothing left to try")
                           : rec.technique.value_or("?") + " in " + rec.state_before);
}

// One trajectory of iteration k from `start`: its steps, each taken from the checkpoint when
// it is there, else run and appended to it. Returns early at a stop or a budget.
void run_trajectory(loop_context& ctx, kb::knowledge_base& tkb, step_accounting& accounting, const version& baseline,
                    const version& start, int k, int b) {
  auto& journal = ctx.journal;
  const auto& options = ctx.options;
  version cur = start;
  std::set<std::string> tried;
  // A step whose soft verdict waits for a deferred model, and every step after it, assume that
  // the verdict passes: they are not kept (resuming redoes them, their answered questions
  // answered by content and their measured candidates taken from the journal), but the next
  // step's question is asked in the same round as the verdict instead of the round after. A
  // rejection costs that one question; the steps are then redone from the version before.
  bool assuming = false;
  for (int t = 0; t < options.depth; ++t) {
    step_record rec;
    std::optional<step_record> memo;
    if (!assuming) memo = journal.find_step(k, b, t);  // an assumed step's successors are never kept
    if (memo) {
      rec = *memo;
    } else {
      if (ctx.stopped() || ctx.check_budgets()) return;
      try {
        rec = run_step(ctx, tkb, cur, k, b, t, tried);
      } catch (const llm::answer_pending&) {
        // A deferred model has not answered yet: this trajectory waits; the others go on
        // until they wait too. The step is not kept: resuming redoes it.
        ctx.note_waiting();
        return;
      }
      // A step cut short by a stop is not kept: resuming redoes it whole.
      if (ctx.stopped()) return;
      assuming = assuming || rec.verdict_pending;
      if (!assuming) {
        journal.append_step(rec);
        accounting.account(rec);
      }
    }
    if (rec.technique) tried.insert(*rec.technique + "@" + rec.start);
    if (auto v = ctx.cached(rec.result)) cur = *v;
    const bool end = rec.end;
    if (!assuming) {
      ctx.set_best_speedup(*baseline.eval.runtime_ms / cur.ms());
      ctx.step_done(k, b, t, end ? options.depth - t : 1, step_message(options, k, b, t, rec));
    }
    if (end) break;
  }
  if (assuming) ctx.note_waiting();
}

// The B trajectories of iteration k on `jobs` threads, each with its own KB connection. Returns
// the first error (which also stops the run), or empty.
std::string run_iteration(loop_context& ctx, step_accounting& accounting, const version& baseline, const version& start,
                          int k, int jobs) {
  std::atomic<int> next{0};
  std::mutex error_mutex;
  std::string error;
  auto worker = [&] {
    try {
      auto tkb = kb::knowledge_base::open(ctx.env.kb_path, kb::open_options{kb::open_options::access_mode::read_write, false});
      for (int b = next++; b < ctx.options.breadth; b = next++) run_trajectory(ctx, tkb, accounting, baseline, start, k, b);
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
  return error;
}

// `best` takes the fastest correct version iteration k found (all of it, or what finished
// before a stop). Correct as its step recorded it: the soft verifier's rejection is in the
// record, not in the evaluation the cache keeps.
void take_best_of_iteration(loop_context& ctx, int k, version& best) {
  auto better = [](const version& a, const version& b) {
    return a.eval.correct && a.eval.runtime_ms && b.eval.runtime_ms && *a.eval.runtime_ms * 1.01 < *b.eval.runtime_ms;
  };
  for (const auto& rec : ctx.journal.steps())
    if (rec.iteration == k)
      for (const auto& c : rec.candidates)
        if (auto v = ctx.cached(c.hash); v && c.eval.correct && better(*v, best)) best = *v;
}

// The numeric update: iteration k's attempts join the replay buffer and the statistics in one
// transaction.
void commit_iteration(loop_context& ctx, kb::knowledge_base& kb, int k) {
  auto batch = attempts_to_commit(ctx, kb, k);
  if (!batch.empty()) kb.record_attempts(batch);
}

// Does a stop leave iteration k to the run that resumes it? A cancel does: the steps it finished
// stay in the checkpoint and go into the KB when the iteration is whole. Committing them now would
// change the statistics the rest of the iteration chooses by, and the resumed run would then try
// other techniques than an uninterrupted one. A budget ends the run for good (the same command
// stops at once again), and an error may well come back (a bench stores the problem as done):
// what they measured is committed.
bool iteration_left_to_resume(const loop_context& ctx) {
  return ctx.stopped() && ctx.stop_reason() == stop_kind::cancelled;
}

// The textual-gradient update of iteration k, once (its record in the checkpoint says how it
// went; an update already in the KB's log is not applied twice).
void textual_gradient_update(loop_context& ctx, kb::knowledge_base& kb, int k) {
  const auto mine = kb.attempts_of(ctx.task.name, iteration_prefix(ctx.run_id, k));  // oldest first
  json g{{"iteration", k}, {"attempts", mine.size()}};
  if (!mine.empty() && !gradient_already_applied(kb, mine)) {
    ctx.emit({"gradient", k, 0, 0, 0, 0, 0, 1, "learning from this iteration (updating the knowledge base)"});
    auto out = agents::run_textual_gradient(*ctx.env.model, kb, mine);
    const auto tokens = out.trace.prompt_tokens + out.trace.completion_tokens;
    g["status"] = agents::to_string(out.trace.status);
    g["tokens"] = {{out.trace.role, tokens}};
    g["tokens_total"] = tokens;
    if (out.evaluation) {
      g["summary"] = out.evaluation->summary;
      g["departures"] = out.evaluation->departures.size();
    }
    if (out.gaps) g["gaps"] = out.gaps->size();
    if (out.update) g["update"] = {{"update_id", out.update->applied.update_id}, {"operations", out.update->applied.operations}};
    ctx.account(0, 0, tokens);
    if (out.trace.status == agents::agent_status::budget_exhausted) ctx.stop(stop_kind::budget_tokens);
  } else {
    g["status"] = mine.empty() ? "skipped: no attempts" : "already applied";
  }
  ctx.journal.set_record("gradient_" + std::to_string(k), g);
}

// The run's wall time over every process that worked on it: a run resumed after a Ctrl-C or in a
// deferred model's rounds adds this process's time to what the checkpoint says the earlier ones
// took, and keeps the sum there for the next one. Read at the start, written at the end.
class wall_time_ledger {
 public:
  explicit wall_time_ledger(run_journal& journal)
      : journal_(journal), earlier_(journal.record("elapsed").value_or(json::object()).value("wall_seconds", 0.0)) {}
  double total(const loop_context& ctx) const { return earlier_ + ctx.wall_seconds(); }
  double close(const loop_context& ctx) {
    const double t = total(ctx);
    journal_.set_record("elapsed", {{"wall_seconds", t}});
    return t;
  }

 private:
  run_journal& journal_;
  double earlier_;
};

// The first step (in iteration, trajectory, step order) whose candidate is `best`.
std::optional<best_step> best_step_in(const run_journal& journal, const version& baseline, const version& best) {
  if (best.hash == baseline.hash) return std::nullopt;
  for (const auto& rec : journal.steps())
    for (const auto& c : rec.candidates)
      if (c.hash == best.hash) return best_step{rec.state_before, c.technique, rec.predicted, c.measured_speedup};
  return std::nullopt;
}

// The result: figures, the KB attempts of this run, the diff and the report, written beside
// the checkpoint.
optimize_result finish_run(loop_context& ctx, kb::knowledge_base& kb, const fs::path& input_path,
                           const std::string& input_source, const version& baseline, const version& best,
                           const std::string& error, wall_time_ledger& wall) {
  optimize_result r;
  r.run_id = ctx.run_id;
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
  r.wall_seconds = wall.close(ctx);
  std::set<std::string> seen{baseline.hash};
  r.input_phases = baseline.eval.phases;
  // Each candidate's latest evaluation: a profile taken after its step (an iteration's start) included.
  for (const auto& rec : ctx.journal.steps())
    for (const auto& c : rec.candidates)
      if (seen.insert(c.hash).second) r.candidate_phases.push_back(ctx.cached(c.hash).value_or(version{c.hash, "", c.eval}).eval.phases);
  for (const auto& a : kb.attempts_of(ctx.task.name, ctx.run_id + "/")) {
    r.attempt_ids.push_back(a.id);
    if (a.correct) ++r.correct_candidates;
  }
  const std::string name = input_path.filename().string();
  r.diff = unified_diff(input_source, best.source, "a/" + name, "b/" + name);
  r.best_step = best_step_in(ctx.journal, baseline, best);
  r.report = build_run_report(ctx, r, baseline, best);
  r.report_markdown = render_run_report(r.report);
  const auto& out = ctx.env.out_dir;
  support::write_file_atomically(out / ("best" + input_path.extension().string()), best.source);
  support::write_file_atomically(out / "best.diff", r.diff);
  support::write_file_atomically(out / "report.json", r.report.dump(2) + "\n");
  support::write_file_atomically(out / "report.md", r.report_markdown);
  ctx.emit({"done", 0, 0, 0, 0, 0, 0, r.best_speedup, "done: " + r.stop_reason.to_string()});
  return r;
}

}  // namespace

optimize_result run_optimization(const task_spec& task, const loop_options& options, run_environment& env) {
  validate(options, env);
  const fs::path input_path = env.input.empty() ? fs::path(task.kernel) : env.input;
  if (input_path.empty()) throw std::invalid_argument("the task names no kernel to optimize");
  const std::string input_source = read_kernel(input_path);
  const json identity = identity_of(task, source_hash(task.name, input_source), options, env.model != nullptr);
  const std::string run_id = "run-" + source_hash("run", identity.dump()).substr(0, 12);
  run_journal journal(env.out_dir, identity);
  loop_context ctx(task, options, env, journal, run_id);
  wall_time_ledger wall(journal);
  auto kb = kb::knowledge_base::open(env.kb_path);

  const auto measured = measure_baseline(ctx, journal, input_source);
  if (!measured) {
    // Stopped before the input was measured: nothing to report, nothing recorded.
    optimize_result r;
    r.run_id = run_id;
    r.input_source = r.best_source = input_source;
    r.stop_reason = {stop_kind::cancelled, ""};
    r.wall_seconds = wall.close(ctx);
    return r;
  }
  const version baseline = *measured;
  ctx.arch = !options.arch.empty() ? options.arch : baseline.eval.arch;
  ctx.reference_ms = baseline.eval.reference_ms;
  step_accounting accounting(ctx, baseline);
  replay_checkpoint(ctx, journal, baseline, accounting);

  version best = baseline;
  std::string error;
  const int jobs = std::max(1, std::min(options.jobs > 0 ? options.jobs : options.breadth, options.breadth));
  for (int k = 0; k < options.iterations && !ctx.stopped(); ++k) {
    try {
      best = iteration_start(ctx, accounting, best, k);
    } catch (const evaluation_cancelled&) {
      break;
    }
    ctx.iteration_start_hash = best.hash;
    error = run_iteration(ctx, accounting, baseline, best, k, jobs);
    // Trajectories wait for a deferred model: the iteration is committed only once whole, as
    // a synchronous run commits it, so that a resumed run reaches the same KB.
    if (ctx.waiting() > 0 && error.empty()) {
      ctx.stop(stop_kind::waiting);
      break;
    }
    take_best_of_iteration(ctx, k, best);
    if (iteration_left_to_resume(ctx)) break;
    commit_iteration(ctx, kb, k);
    if (ctx.stopped()) break;
    journal.mark(k, "committed");
    if (env.model && options.textual_gradient && !journal.reached(k, "gradient")) {
      try {
        textual_gradient_update(ctx, kb, k);
      } catch (const llm::answer_pending&) {
        ctx.note_waiting();  // redone on resume; an update already applied is not applied twice
        ctx.stop(stop_kind::waiting);
        break;
      }
      if (ctx.stopped()) break;
      journal.mark(k, "gradient");
    }
  }
  return finish_run(ctx, kb, input_path, input_source, baseline, best, error, wall);
}

}  // namespace kblaster::engine::optimize
