// One step of a trajectory: from the current version's state, choose a technique with the KB's
// policy, apply it (the mechanical tier's variants, or the lowering agent with its repair loop),
// evaluate every candidate, and return the step's record for the checkpoint and the KB.
#include "engine/agents/lowering_agent.h"
#include "engine/agents/soft_verifier.h"
#include "engine/llm/deferred_backend.h"
#include "engine/optimize/loop_context.h"
#include "engine/optimize/task_brief.h"
#include "engine/optimize/mechanical/mechanical.h"
#include "support/untrusted_text.h"

#include <algorithm>

namespace kblaster::engine::optimize {
namespace {

kb::selection_request selection_for(const loop_context& ctx, const std::string& state, std::size_t k,
                                    std::uint64_t seed, const std::optional<kb::kernel_evidence>& evidence) {
  kb::selection_request r;
  r.state = state;
  r.evidence = evidence;  // techniques whose preconditions the version does not meet are not offered
  r.arch = ctx.arch;
  r.k = k;
  r.seed = seed;
  r.policy = kb::parse_policy(ctx.options.policy).value_or(kb::selection_policy::weighted);
  if (ctx.options.policy == "greedy") {  // the ablation: always the top prediction
    r.temperature = 0;
    r.explore_probability = 0;
  }
  return r;
}

// The techniques to try, best first. With a model: the KB's choice among all the state's
// techniques. Without: the same policy over the mechanical techniques only, those the state does
// not list joining with a neutral prior so that the tier still has something to try.
std::vector<kb::choice> choose_techniques(loop_context& ctx, kb::knowledge_base& kb, const std::string& state,
                                          const std::optional<kb::kernel_evidence>& evidence, std::uint64_t seed) {
  if (!ctx.options.only_technique.empty()) {
    // "Apply this technique": the user chose; the KB only supplies what it knows about it.
    kb::choice c;
    c.opt.technique = ctx.options.only_technique;
    c.reason = "requested";
    if (state != "unknown")
      for (auto& o : kb.optimizations(state, ctx.arch))
        if (o.technique == c.opt.technique) c.opt = o;
    if (auto t = kb.find_technique(c.opt.technique); t && c.opt.description.empty()) {
      c.opt.category = t->category;
      c.opt.description = t->description;
    }
    return {c};
  }
  const bool known = state != "unknown" && kb.find_state(state).has_value();
  if (ctx.env.model) {
    if (!known) return {};
    return kb.select(
        selection_for(ctx, state, static_cast<std::size_t>(std::max(ctx.options.top_k, 1)), seed, evidence));
  }
  std::vector<kb::candidate> cands;
  if (known)
    for (auto& c : kb.candidates(state, ctx.arch))
      if (is_mechanical(c.opt.technique)) cands.push_back(std::move(c));
  for (const auto& name : mechanical_techniques()) {
    if (std::any_of(cands.begin(), cands.end(), [&](const kb::candidate& c) { return c.opt.technique == name; }))
      continue;
    kb::optimization o;
    o.technique = name;
    o.prior_speedup = 1.05;
    o.predicted_speedup = 1.05;
    if (auto t = kb.find_technique(name)) {
      o.category = t->category;
      o.description = t->description;
    }
    cands.push_back(kb::candidate{o});
  }
  auto request = selection_for(ctx, state, cands.size(), seed, evidence);
  return kb::choose(std::move(cands), request);
}

candidate_record record_of(const version& v, const std::string& technique, const std::string& label,
                           const nlohmann::json& parameters, const version& start, const state_of_version& after) {
  // Only a profiled candidate has a state: the step's new best, when a step starts from it (with_state_recorded).
  candidate_record c{technique, label, v.hash, parameters, v.eval, v.eval.correct && v.eval.profile ? after.name : "",
                     std::nullopt, std::nullopt};
  if (v.eval.correct && v.eval.runtime_ms && start.eval.runtime_ms && *v.eval.runtime_ms > 0)
    c.measured_speedup = *start.eval.runtime_ms / *v.eval.runtime_ms;
  return c;
}

bool improves(const version& candidate, const version& current) {
  return candidate.eval.correct && candidate.eval.runtime_ms && current.eval.runtime_ms &&
         *candidate.eval.runtime_ms * min_gain < *current.eval.runtime_ms;
}

void add_tokens(step_record& rec, const agents::agent_trace& trace) {
  rec.add_tokens(trace.role, trace.prompt_tokens + trace.completion_tokens);
}

// Whether `var` is the variant whose parameters won before, in this state on this architecture
// (the KB's search credit).
bool is_remembered_winner(const mechanical_variant& var, const kb::optimization& o) {
  const auto& winner = o.statistics.credit.best_parameters;
  return winner.is_object() && var.parameters == winner;
}

// The remembered winner is tried first: a warm run starts where the last one ended.
void remembered_winner_first(mechanical_result& v, const kb::optimization& o) {
  const auto it = std::find_if(v.variants.begin(), v.variants.end(),
                               [&](const auto& var) { return is_remembered_winner(var, o); });
  if (it != v.variants.end()) std::rotate(v.variants.begin(), it, it + 1);
}

// The first choice not yet tried on this very version; a mechanical one must also apply (its
// variants come back in `variants`). Null when nothing is left to try.
const kb::choice* pick_choice(const loop_context& ctx, const std::vector<kb::choice>& choices, const version& start,
                              const std::set<std::string>& tried, mechanical_result& variants) {
  mechanical_context mctx;
  mctx.atol = ctx.task.atol;
  mctx.rtol = ctx.task.rtol;
  mctx.arch = ctx.arch;
  mctx.max_variants = ctx.env.model ? 2 : 4;
  for (const auto& c : choices) {
    if (tried.count(c.opt.technique + "@" + start.hash)) continue;
    if (is_mechanical(c.opt.technique) && (ctx.options.mechanical_first || !ctx.env.model)) {
      auto v = mechanical_variants(start.source, c.opt.technique, mctx);
      remembered_winner_first(v, c.opt);
      if (!v.variants.empty()) {
        variants = std::move(v);
        return &c;
      }
      if (!ctx.env.model) continue;  // the tier cannot apply it; the model could
    }
    return &c;
  }
  return nullptr;
}

// The step's new best, profiled for the state it reached (ncu's state counters alone): the
// trajectory's next step chooses by it, and the KB learns the transition to it, the last step's
// too, so that the sequences that pay are learnt (issue 49). Only it is profiled (the other
// candidates' verdicts and times are all the loop reads of them), and its record in the step
// gets the profile, the state it reached and the profile's seconds.
version with_state_recorded(loop_context& ctx, kb::knowledge_base& kb, const version& best, const version& start,
                            step_record& rec) {
  if (!best.eval.profile && best.ms() > 0) ctx.step_profiling(rec.iteration, rec.trajectory, rec.step, start.ms() / best.ms());
  // The state's counters alone: the next step reads the state, not ncu's tables (ncu_runner.h).
  auto profiled = ctx.with_state(best, profile_scope::state_counters);
  for (auto& c : rec.candidates)
    if (c.hash == profiled.hash) {
      const auto parameters = c.parameters;
      const auto verifier = c.soft_verifier;
      c = record_of(profiled, c.technique, c.label, parameters, start, state_of(kb, profiled.eval, ctx.arch));
      c.soft_verifier = verifier;
    }
  return profiled;
}

// The mechanical tier: every variant evaluated; the best that improves on `start` is returned.
version run_mechanical(loop_context& ctx, kb::knowledge_base& kb, const version& start, const mechanical_result& variants,
                       const kb::optimization& chosen, step_record& rec) {
  rec.tier = step_tier::mechanical;
  // The remembered winner goes first (remembered_winner_first); when it pays again, the step
  // keeps it and the other variants, which the KB already knows to have lost, are not tried.
  const bool first_is_winner = !variants.variants.empty() && is_remembered_winner(variants.variants.front(), chosen);
  // The CPU builds every variant while the GPU verifies them one after the other.
  std::vector<std::string> sources;
  for (const auto& var : variants.variants) sources.push_back(var.source);
  ctx.prepare(sources);
  version best = start;
  for (const auto& var : variants.variants) {
    if (ctx.stopped()) break;
    const auto v = ctx.evaluate(var.source, start.eval.runtime_ms);
    rec.candidates.push_back(
        record_of(v, var.technique, var.label, var.parameters, start, state_of(kb, v.eval, ctx.arch)));
    if (improves(v, best)) best = v;
    if (first_is_winner && best.hash == v.hash) break;
  }
  if (best.hash != start.hash) best = with_state_recorded(ctx, kb, best, start, rec);
  return best;
}

// The soft verifier reads a candidate that would become the new version, beside the task's
// input: a second opinion on shortcuts the harness cannot see. A rejection marks it incorrect.
// A deferred model that has not answered yet leaves the verdict pending (rec.verdict_pending):
// the trajectory goes on as if it passed, and the step is redone once the answer is there.
void soft_verify_candidate(loop_context& ctx, const std::string& technique, version& v, candidate_record& cand,
                           step_record& rec) {
  agents::verifier_input vin{ctx.journal.source(ctx.journal.record("baseline")->at("hash").get<std::string>()), v.source,
                             "kb_forward", technique};
  agents::agent_result<agents::verifier_verdict> verdict;
  try {
    verdict = agents::soft_verify(*ctx.env.model, vin);
  } catch (const llm::answer_pending&) {
    rec.verdict_pending = true;
    return;
  }
  add_tokens(rec, verdict.trace);
  if (!verdict.value) return;
  cand.soft_verifier = soft_verdict{verdict.value->pass, verdict.value->summary};
  if (verdict.value->pass) return;
  v.eval.correct = false;
  cand.eval.correct = false;
  cand.eval.check = "soft_verifier";
  cand.eval.reason = verdict.value->summary;
  cand.state_after.clear();
  cand.measured_speedup.reset();
}

// The model tier: the lowering agent writes the kernel and repairs it on the harness's
// verdicts; the last candidate it produced is kept, if it improves on `start` once verified.
version run_model(loop_context& ctx, kb::knowledge_base& kb, const version& start, const kb::choice& chosen,
                  const state_of_version& before, step_record& rec) {
  rec.tier = step_tier::llm;
  agents::lowering_input in;
  in.source = start.source;
  in.entry_point = "kb_forward";
  in.state = before.name;
  in.technique = chosen.opt;
  in.profile_summary = prompt_summary(start.eval, ctx.options.cycles_only);
  in.task_brief = task_brief(ctx.task, start.source);
  in.arch = ctx.arch;
  std::optional<version> last;
  auto check = [&](const std::string& source) -> std::optional<std::string> {
    last = ctx.evaluate(source, start.eval.runtime_ms);
    if (last->eval.correct) return std::nullopt;
    // The compiler's log quotes the candidate (an #error, a line of a file it included): marked.
    if (!last->eval.compile_ok)
      return "The candidate does not compile: " + support::candidate_text(last->eval.compile_log, "compiler log", 6000);
    return "The candidate failed verification (" + last->eval.check + "): " + last->eval.reason;
  };
  auto outcome = agents::lower_with_repair(*ctx.env.model, kb, in, check, ctx.options.max_repairs);
  add_tokens(rec, outcome.trace);
  rec.repairs = outcome.repairs;
  rec.failures = outcome.failures;
  rec.agent_status = agents::to_string(outcome.trace.status);
  if (outcome.trace.status == agents::agent_status::budget_exhausted) ctx.stop(stop_kind::budget_tokens);
  if (outcome.trace.status == agents::agent_status::llm_failed) rec.note = "the model failed: " + outcome.trace.error;
  if (!last) {
    rec.note = "the lowering agent gave no usable kernel";
    return start;
  }
  auto v = *last;
  auto cand = record_of(v, chosen.opt.technique, "llm", nlohmann::json::object(), start, state_of(kb, v.eval, ctx.arch));
  if (improves(v, start)) soft_verify_candidate(ctx, chosen.opt.technique, v, cand, rec);
  rec.candidates.push_back(std::move(cand));
  if (!improves(v, start)) return start;
  return with_state_recorded(ctx, kb, v, start, rec);
}

}  // namespace

step_record run_step(loop_context& ctx, kb::knowledge_base& kb, const version& start, int iteration, int trajectory,
                     int step, const std::set<std::string>& tried) {
  const auto before = state_of(kb, start.eval, ctx.arch);
  step_record rec;
  rec.iteration = iteration;
  rec.trajectory = trajectory;
  rec.step = step;
  rec.start = start.hash;
  rec.start_ms = start.eval.runtime_ms.value_or(0);
  rec.state_before = before.name;
  rec.state_score = before.score;
  rec.result = start.hash;
  auto choices =
      choose_techniques(ctx, kb, before.name, evidence_of(start.eval), step_seed(ctx.options.seed, iteration, trajectory, step));
  // The ucb ranking is the same for every trajectory: from the iteration's shared start,
  // trajectory b begins with its b-th choice, so that B trajectories try B techniques (whatever
  // order their threads or a deferred model's rounds run them in).
  if (ctx.options.policy == "ucb" && start.hash == ctx.iteration_start_hash && !choices.empty())
    std::rotate(choices.begin(), choices.begin() + static_cast<std::ptrdiff_t>(trajectory % choices.size()),
                choices.end());
  mechanical_result variants;
  const kb::choice* chosen = pick_choice(ctx, choices, start, tried, variants);
  if (!chosen) {
    rec.end = true;
    rec.note = ctx.env.model ? "the KB has no technique left to try in state " + before.name
                             : "no mechanical transformation applies any more";
    return rec;
  }
  rec.technique = chosen->opt.technique;
  rec.reason = chosen->reason;
  rec.predicted = chosen->opt.predicted_speedup;
  rec.confidence = chosen->opt.confidence;
  ctx.step_started(iteration, trajectory, step,
                   "trying " + *rec.technique + " in " + before.name +
                       (variants.variants.empty() ? " (the model writes it)"
                                                  : " (" + std::to_string(variants.variants.size()) + " variants)"));
  const version best = !variants.variants.empty() ? run_mechanical(ctx, kb, start, variants, chosen->opt, rec)
                                                  : run_model(ctx, kb, start, *chosen, before, rec);
  rec.result = best.hash;
  rec.gpu_seconds = rec.candidates_gpu_seconds();
  return rec;
}

}  // namespace kblaster::engine::optimize
