// Policy evaluation, performance-gap analysis and parameter update.
#include "engine/agents/textual_gradient.h"

#include "engine/agents/kb_context.h"
#include "engine/agents/prompt_library.h"

#include <set>

namespace kblaster::engine::agents {
namespace {

using json = nlohmann::json;

std::set<std::pair<std::string, std::string>> pairs_of(const policy_evaluation& eval) {
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& d : eval.departures) out.insert({d.state, d.technique});
  return out;
}

std::vector<std::int64_t> attempt_ids_of(const policy_evaluation& eval) {
  std::set<std::int64_t> ids;
  for (const auto& d : eval.departures) ids.insert(d.attempt_ids.begin(), d.attempt_ids.end());
  return {ids.begin(), ids.end()};
}

std::string render_departures(const policy_evaluation& eval) {
  std::string out = eval.summary + "\n";
  for (const auto& d : eval.departures) {
    std::string ids;
    for (auto id : d.attempt_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    out += "- " + d.state + " / " + d.technique + " [" + d.direction + "] attempts " + ids + ": " + d.note + "\n";
  }
  return out;
}

parsed<policy_evaluation> parse_evaluation(const llm::chat_response& answer, const std::vector<kb::attempt>& attempts) {
  using P = parsed<policy_evaluation>;
  auto doc = extract_json_object(answer);
  if (!doc.value) return P::fail(doc.problem.kind, doc.problem.message);
  const json& j = *doc.value;
  policy_evaluation e;
  e.raw = j;
  if (!j.contains("summary") || !j["summary"].is_string() || !j.contains("departures") || !j["departures"].is_array())
    return P::fail(problem_kind::invalid, "the object needs \"summary\" (string) and \"departures\" (list).");
  e.summary = j["summary"];
  static const std::set<std::string> directions{"overpredicted", "underpredicted", "failed"};
  for (const auto& d : j["departures"]) {
    departure x;
    try {
      x.state = d.at("state");
      x.technique = d.at("technique");
      x.attempt_ids = d.at("attempt_ids").get<std::vector<std::int64_t>>();
      x.direction = d.at("direction");
      x.note = d.value("note", "");
    } catch (const json::exception&) {
      return P::fail(problem_kind::invalid, "each departure needs \"state\", \"technique\", \"attempt_ids\" (list of "
                                            "integers) and \"direction\".");
    }
    if (!directions.count(x.direction))
      return P::fail(problem_kind::invalid, "\"direction\" must be overpredicted, underpredicted or failed.");
    if (x.attempt_ids.empty()) return P::fail(problem_kind::invalid, "each departure cites at least one attempt id.");
    for (auto id : x.attempt_ids) {
      const kb::attempt* a = nullptr;
      for (const auto& at : attempts)
        if (at.id == id) a = &at;
      if (!a) return P::fail(problem_kind::invalid, "attempt " + std::to_string(id) + " is not in the table.");
      if (a->state_before != x.state || a->technique != x.technique)
        return P::fail(problem_kind::invalid, "attempt " + std::to_string(id) + " is " + a->state_before + " / " +
                                                  a->technique + ", not " + x.state + " / " + x.technique + ".");
    }
    e.departures.push_back(std::move(x));
  }
  return P::ok(std::move(e));
}

parsed<std::vector<gap_explanation>> parse_gaps(const llm::chat_response& answer, const policy_evaluation& eval) {
  using P = parsed<std::vector<gap_explanation>>;
  auto doc = extract_json_object(answer);
  if (!doc.value) return P::fail(doc.problem.kind, doc.problem.message);
  const json& j = *doc.value;
  if (!j.contains("explanations") || !j["explanations"].is_array())
    return P::fail(problem_kind::invalid, "the object needs an \"explanations\" list.");
  std::vector<gap_explanation> out;
  auto wanted = pairs_of(eval);
  for (const auto& x : j["explanations"]) {
    gap_explanation g;
    try {
      g.state = x.at("state");
      g.technique = x.at("technique");
      g.cause = x.at("cause");
      g.evidence = x.value("evidence", "");
      g.suggestion = x.value("suggestion", "");
    } catch (const json::exception&) {
      return P::fail(problem_kind::invalid, "each explanation needs \"state\", \"technique\" and \"cause\" strings.");
    }
    if (g.cause.size() < 10) return P::fail(problem_kind::invalid, "each \"cause\" must explain, in a sentence or two.");
    wanted.erase({g.state, g.technique});
    out.push_back(std::move(g));
  }
  if (!wanted.empty())
    return P::fail(problem_kind::invalid, "no explanation for " + wanted.begin()->first + " / " +
                                              wanted.begin()->second + "; explain every departure.");
  return P::ok(std::move(out));
}

}  // namespace

std::pair<std::string, std::string> evaluation_prompts(const std::vector<kb::attempt>& attempts) {
  const std::map<std::string, std::string> vars{{"attempts", render_attempts(attempts)}};
  return {render(prompt_text("policy_evaluation.system.txt"), vars),
          render(prompt_text("policy_evaluation.user.txt"), vars)};
}

std::pair<std::string, std::string> gap_prompts(kb::knowledge_base& kb, const policy_evaluation& eval,
                                                const std::vector<kb::attempt>& attempts) {
  std::string context;
  for (const auto& [state, technique] : pairs_of(eval)) {
    if (auto st = kb.find_state(state)) context += "State " + render_state(*st) + "\n";
    if (auto t = kb.find_technique(technique)) context += "Technique " + t->name + ": " + t->description + "\n";
    context += "Lessons:\n" + render_lessons(kb, state, technique, 3);
  }
  std::vector<kb::attempt> cited;
  const auto ids = attempt_ids_of(eval);
  for (const auto& a : attempts)
    if (std::find(ids.begin(), ids.end(), a.id) != ids.end()) cited.push_back(a);
  const std::map<std::string, std::string> vars{
      {"evaluation", render_departures(eval)}, {"context", context}, {"attempts", render_attempts(cited)}};
  return {render(prompt_text("gap_analysis.system.txt"), vars), render(prompt_text("gap_analysis.user.txt"), vars)};
}

std::pair<std::string, std::string> update_prompts(kb::knowledge_base& kb, const policy_evaluation& eval,
                                                   const std::vector<gap_explanation>& gaps) {
  std::string entries;
  std::set<std::string> states;
  for (const auto& d : eval.departures) states.insert(d.state);
  for (const auto& s : states) {
    entries += "State " + s + ":\n";
    try {
      entries += render_optimizations(kb.optimizations(s), 10);
    } catch (const kb::kb_error&) {
      entries += "(not in the KB)\n";
    }
  }
  std::string analysis;
  for (const auto& g : gaps)
    analysis += "- " + g.state + " / " + g.technique + ": " + g.cause + " Evidence: " + g.evidence +
                " Suggestion: " + g.suggestion + "\n";
  std::string primaries, secondaries;
  for (const auto& p : kb::primary_bottlenecks()) primaries += (primaries.empty() ? "" : ", ") + p;
  for (const auto& p : kb::secondary_characteristics()) secondaries += (secondaries.empty() ? "" : ", ") + p;
  json schema = kb_edit_schema();
  schema.erase("$comment");
  const std::map<std::string, std::string> vars{{"evaluation", render_departures(eval)},
                                                {"analysis", analysis},
                                                {"entries", entries},
                                                {"schema", schema.dump()},
                                                {"primary_names", primaries},
                                                {"secondary_names", secondaries}};
  return {render(prompt_text("parameter_update.system.txt"), vars),
          render(prompt_text("parameter_update.user.txt"), vars)};
}

agent_result<policy_evaluation> evaluate_policy(llm::llm_client& client, const std::vector<kb::attempt>& attempts,
                                                const agent_options& options) {
  const auto [system, user] = evaluation_prompts(attempts);
  return run_agent<policy_evaluation>(
      client, "policy_evaluation", system, user,
      [&](const llm::chat_response& a) { return parse_evaluation(a, attempts); }, options);
}

agent_result<std::vector<gap_explanation>> analyse_gaps(llm::llm_client& client, kb::knowledge_base& kb,
                                                        const policy_evaluation& eval,
                                                        const std::vector<kb::attempt>& attempts,
                                                        const agent_options& options) {
  const auto [system, user] = gap_prompts(kb, eval, attempts);
  return run_agent<std::vector<gap_explanation>>(
      client, "gap_analysis", system, user, [&](const llm::chat_response& a) { return parse_gaps(a, eval); }, options);
}

agent_result<parameter_update> update_parameters(llm::llm_client& client, kb::knowledge_base& kb,
                                                 const policy_evaluation& eval,
                                                 const std::vector<gap_explanation>& gaps,
                                                 const agent_options& options) {
  const auto [system, user] = update_prompts(kb, eval, gaps);
  // Parse and check only: nothing touches the KB until an answer passes every check.
  auto result = run_agent<json>(
      client, "parameter_update", system, user,
      [&](const llm::chat_response& a) -> parsed<json> {
        auto doc = extract_json_object(a);
        if (!doc.value) return doc;
        const auto problems = check_kb_edits(*doc.value, kb);
        if (problems.empty()) return doc;
        std::string all;
        for (std::size_t i = 0; i < problems.size() && i < 8; ++i) all += "\n- " + problems[i];
        return parsed<json>::fail(problem_kind::invalid, "the edit operations were rejected, nothing was applied:" +
                                                             all + "\nFix these and send the whole object again.");
      },
      options);
  agent_result<parameter_update> out;
  out.trace = std::move(result.trace);
  if (!result.value) return out;
  kb::update_cause cause;
  cause.kind = "textual_gradient";
  cause.detail = result.value->value("rationale", "") + "\n" + eval.summary;
  cause.attempt_ids = attempt_ids_of(eval);
  try {
    parameter_update u;
    u.edits = *result.value;
    u.applied = apply_kb_edits(u.edits, kb, cause);
    out.value = std::move(u);
  } catch (const kb::kb_error& e) {
    // The transaction rolled back: the KB is as it was.
    out.trace.status = agent_status::gave_up;
    out.trace.error = e.what();
  }
  return out;
}

gradient_outcome run_textual_gradient(llm::llm_client& client, kb::knowledge_base& kb,
                                      const std::vector<kb::attempt>& attempts, const agent_options& options) {
  gradient_outcome g;
  auto eval = evaluate_policy(client, attempts, options);
  g.traces.push_back(eval.trace);
  g.status = eval.trace.status;
  if (!eval.value) return g;
  g.evaluation = eval.value;
  if (eval.value->departures.empty()) return g;  // predictions held: nothing to learn
  auto gaps = analyse_gaps(client, kb, *eval.value, attempts, options);
  g.traces.push_back(gaps.trace);
  g.status = gaps.trace.status;
  if (!gaps.value) return g;
  g.gaps = gaps.value;
  auto update = update_parameters(client, kb, *eval.value, *gaps.value, options);
  g.traces.push_back(update.trace);
  g.status = update.trace.status;
  g.update = update.value;
  return g;
}

}  // namespace kblaster::engine::agents
