// Building and rendering the run report.
#include "engine/optimize/run_report.h"
#include "support/text.h"

#include "engine/llm/llm_client.h"
#include "engine/optimize/candidate_cost.h"

#include <sstream>

namespace kblaster::engine::optimize {
namespace {
using json = nlohmann::json;

// A table cell: the runtime in ms, or "-" where none was measured.
std::string ms_cell(const json& v) { return v.is_number() ? support::ms_text(v.get<double>(), 4) : "-"; }

json candidate_summary(const candidate_record& c) {
  const auto& e = c.eval;
  json out{{"label", c.label},     {"technique", c.technique}, {"hash", c.hash},
           {"compile_ok", e.compile_ok}, {"correct", e.correct}, {"check", e.check},
           {"state_after", c.state_after}};
  if (e.runtime_ms) out["runtime_ms"] = *e.runtime_ms;
  if (e.timed_until_slower) out["timed_until_slower"] = true;
  if (e.compile_ok && !e.correct && !e.reason.empty()) out["reason"] = e.reason;  // which output, which element, which shape
  if (c.measured_speedup) out["measured_speedup"] = *c.measured_speedup;
  if (!c.parameters.empty()) out["parameters"] = c.parameters;
  if (c.soft_verifier) out["soft_verifier"] = {{"pass", c.soft_verifier->pass}, {"summary", c.soft_verifier->summary}};
  out["gpu_seconds"] = e.gpu_seconds;
  return out;
}

}  // namespace

json build_run_report(loop_context& ctx, const optimize_result& r, const version& baseline, const version& best) {
  const auto& o = ctx.options;
  json rep{{"$format", "kblaster-run-report/1"},
           {"run_id", r.run_id},
           {"task", ctx.task.name},
           {"evaluator", ctx.env.eval->describe()},
           {"model", ctx.env.model ? json(ctx.env.model->backend().describe()) : json(nullptr)},
           {"tier", ctx.env.model ? "model + mechanical" : "mechanical only"},
           {"replayed", baseline.eval.replayed},
           {"options",
            {{"breadth", o.breadth}, {"depth", o.depth}, {"iterations", o.iterations}, {"top_k", o.top_k},
             {"policy", o.policy}, {"seed", o.seed}, {"mechanical_first", o.mechanical_first},
             {"textual_gradient", o.textual_gradient}, {"cycles_only", o.cycles_only}}},
           {"arch", ctx.arch},
           {"gpu", baseline.eval.gpu_name},
           {"stop_reason", r.stop_reason.to_string()}};
  rep["input"] = {{"hash", baseline.hash}, {"runtime_ms", r.input_ms ? json(*r.input_ms) : json(nullptr)},
                  {"reference_ms", r.reference_ms ? json(*r.reference_ms) : json(nullptr)},
                  {"reference", reference_label(ctx.task)}};
  if (baseline.eval.profile) {
    rep["input"]["profile"] = {{"primary", baseline.eval.profile->primary}, {"secondary", baseline.eval.profile->secondary}};
    if (!baseline.eval.profile->shape_note.empty()) rep["input"]["profile"]["shape"] = baseline.eval.profile->shape_note;
  }
  rep["best"] = {{"hash", best.hash}, {"runtime_ms", r.best_ms ? json(*r.best_ms) : json(nullptr)},
                 {"speedup_over_input", r.best_speedup}};
  if (r.reference_ms && r.best_ms && *r.best_ms > 0) rep["best"]["speedup_over_reference"] = *r.reference_ms / *r.best_ms;
  rep["totals"] = {{"candidates", r.candidates}, {"attempts", r.attempt_ids.size()},
                   {"correct_attempts", r.correct_candidates}, {"tokens", r.tokens},
                   {"gpu_seconds", r.gpu_seconds}, {"wall_seconds", r.wall_seconds}};
  // Per candidate: the loop's candidates. The input's measurement is the run's, once, and is
  // stated apart; the median with it counted is kept beside (the figure before it was apart).
  const auto cost = summarize_costs(r.candidate_phases);
  rep["cost_per_candidate"] = to_json(cost);
  rep["cost_per_candidate"]["text"] = describe_costs(cost);
  if (r.input_phases) {
    auto with_input = r.candidate_phases;
    with_input.insert(with_input.begin(), *r.input_phases);
    rep["cost_per_candidate"]["median_device_seconds_with_input"] = summarize_costs(with_input).median_device;
    const bool reused = baseline.eval.profile && baseline.eval.profile->view.contains("reused");
    rep["input_cost"] = {{"device_seconds", r.input_phases->device()},
                         {"phase_seconds", to_json(*r.input_phases)},
                         {"profile_reused", reused},
                         {"text", describe_input_cost(*r.input_phases, reused)}};
  }
  json iterations = json::array();
  for (int k = 0; k < o.iterations; ++k) {
    json it{{"iteration", k}, {"trajectories", json::array()}};
    for (int b = 0; b < o.breadth; ++b) {
      json tr{{"trajectory", b}, {"steps", json::array()}};
      for (int t = 0; t < o.depth; ++t) {
        const auto rec = ctx.journal.find_step(k, b, t);
        if (!rec) continue;
        json s{{"step", t},
               {"start", rec->start},
               {"state_before", rec->state_before},
               {"technique", rec->technique.value_or("")},
               {"tier", to_string(rec->tier)},
               {"reason", rec->reason},
               {"result", rec->result},
               {"tokens", rec->tokens},
               {"candidates", json::array()}};
        if (rec->predicted) s["predicted_speedup"] = *rec->predicted;
        if (rec->note) s["note"] = *rec->note;
        if (rec->repairs) s["repairs"] = *rec->repairs;
        for (const auto& c : rec->candidates) s["candidates"].push_back(candidate_summary(c));
        tr["steps"].push_back(s);
      }
      if (!tr["steps"].empty()) it["trajectories"].push_back(tr);
    }
    if (auto g = ctx.journal.record("gradient_" + std::to_string(k))) it["gradient"] = *g;
    if (!it["trajectories"].empty() || it.contains("gradient")) iterations.push_back(it);
  }
  rep["iterations"] = iterations;
  return rep;
}

std::string stop_reason::to_string() const {
  switch (kind) {
    case stop_kind::finished: return "finished";
    case stop_kind::cancelled: return "cancelled";
    case stop_kind::budget_tokens: return "budget_tokens";
    case stop_kind::budget_gpu_seconds: return "budget_gpu_seconds";
    case stop_kind::budget_wall_seconds: return "budget_wall_seconds";
    case stop_kind::budget_candidates: return "budget_candidates";
    case stop_kind::error: return "error: " + error;
    case stop_kind::recorded: return "recorded";
    case stop_kind::waiting: return "waiting";
  }
  return "finished";
}

std::string describe_stop(const stop_reason& reason) {
  switch (reason.kind) {
    case stop_kind::finished: return "";
    case stop_kind::cancelled: return "cancelled";
    case stop_kind::budget_tokens: return "the token budget was spent";
    case stop_kind::budget_gpu_seconds: return "the GPU-time budget was spent";
    case stop_kind::budget_wall_seconds: return "the wall-time budget was spent";
    case stop_kind::budget_candidates: return "the candidate budget was spent";
    case stop_kind::error: return "an error stopped it: " + reason.error;
    case stop_kind::recorded: return "";
    case stop_kind::waiting: return "waiting for the model's answers";
  }
  return "";
}

std::string render_run_report(const json& rep) {
  std::ostringstream md;
  md << "# KernelBlaster run " << rep.value("run_id", "") << ": " << rep.value("task", "") << "\n\n";
  if (rep.value("replayed", false))
    md << "> **Replay.** GPU results were served from a recording, not measured now: " << rep.value("evaluator", "")
       << "\n\n";
  const auto& in = rep["input"];
  const auto& best = rep["best"];
  const auto& tot = rep["totals"];
  md << "| | |\n| --- | --- |\n";
  md << "| evaluator | " << rep.value("evaluator", "") << " |\n";
  md << "| model | " << (rep["model"].is_string() ? rep["model"].get<std::string>() : "none (mechanical tier only)") << " |\n";
  md << "| GPU / arch | " << rep.value("gpu", "") << " / " << rep.value("arch", "") << " |\n";
  md << "| input | " << ms_cell(in["runtime_ms"]) << " |\n";
  md << "| reference (" << in.value("reference", "PyTorch") << ") | " << ms_cell(in["reference_ms"]) << " |\n";
  md << "| best | " << ms_cell(best["runtime_ms"]) << ", **" << support::times_text(best.value("speedup_over_input", 1.0), 2)
     << "** over the input";
  if (best.contains("speedup_over_reference"))
    md << ", " << support::times_text(best["speedup_over_reference"].get<double>(), 2) << " over " << in.value("reference", "the reference");
  md << " |\n";
  md << "| candidates / attempts / correct | " << tot.value("candidates", 0) << " / " << tot.value("attempts", 0) << " / "
     << tot.value("correct_attempts", 0) << " |\n";
  md << "| tokens | " << tot.value("tokens", 0) << " |\n";
  md << "| GPU time | " << support::seconds_text(tot.value("gpu_seconds", 0.0), 1) << " |\n";
  if (rep.contains("cost_per_candidate")) md << "| per candidate after the input | " << rep["cost_per_candidate"].value("text", "") << " |\n";
  if (rep.contains("input_cost")) md << "| the input kernel | " << rep["input_cost"].value("text", "") << " |\n";
  md << "| stopped because | " << rep.value("stop_reason", "") << " |\n\n";
  const auto& o = rep["options"];
  md << "Breadth " << o.value("breadth", 0) << ", depth " << o.value("depth", 0) << ", iterations " << o.value("iterations", 0)
     << ", top-k " << o.value("top_k", 0) << ", policy " << o.value("policy", "") << ", seed " << o.value("seed", 0) << ".\n";
  for (const auto& it : rep["iterations"]) {
    md << "\n## Iteration " << it.value("iteration", 0) << "\n";
    for (const auto& tr : it["trajectories"]) {
      md << "\n### Trajectory " << tr.value("trajectory", 0) << "\n\n";
      for (const auto& s : tr["steps"]) {
        md << "- step " << s.value("step", 0) << ", state `" << s.value("state_before", "") << "`: ";
        if (s.value("technique", "").empty()) {
          md << s.value("note", "nothing to try") << "\n";
          continue;
        }
        md << "**" << s.value("technique", "") << "** (" << s.value("tier", "") << ", " << s.value("reason", "");
        if (s.contains("predicted_speedup")) md << ", predicted " << support::times_text(s["predicted_speedup"].get<double>(), 2);
        md << ")";
        if (s.contains("note")) md << " - " << s["note"].get<std::string>();
        md << "\n";
        for (const auto& c : s["candidates"]) {
          md << "  - " << c.value("label", "") << " `" << c.value("hash", "").substr(0, 8) << "`: ";
          if (!c.value("compile_ok", false)) md << "does not compile";
          else if (!c.value("correct", false)) {
            md << "incorrect (" << c.value("check", "") << ")";
            if (c.contains("reason")) md << ": " << support::first_line(c["reason"].get<std::string>());
          }
          else {
            md << ms_cell(c["runtime_ms"]);
            if (c.value("timed_until_slower", false)) md << " (timed until clearly slower)";
            if (c.contains("measured_speedup")) md << ", measured " << support::times_text(c["measured_speedup"].get<double>(), 2);
            if (!c.value("state_after", "").empty()) md << " -> `" << c.value("state_after", "") << "`";
          }
          md << "\n";
        }
      }
    }
    if (it.contains("gradient")) {
      const auto& g = it["gradient"];
      md << "\nTextual gradient: " << g.value("status", "");
      if (g.contains("departures")) md << ", " << g["departures"].get<int>() << " departures";
      if (g.contains("update")) md << ", KB update #" << g["update"].value("update_id", 0) << " (" << g["update"].value("operations", 0) << " operations)";
      md << ".\n";
      if (g.contains("summary")) md << "\n> " << g["summary"].get<std::string>() << "\n";
    }
  }
  return md.str();
}

}  // namespace kblaster::engine::optimize
