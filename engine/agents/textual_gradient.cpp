// The textual gradient: policy evaluation, performance-gap analysis and parameter update, asked
// as one request and checked part by part.
#include "engine/agents/textual_gradient.h"
#include "support/text.h"

#include "engine/agents/kb_context.h"
#include "engine/agents/prompt_library.h"

#include <algorithm>
#include <set>

namespace kblaster::engine::agents {
namespace {

using json = nlohmann::json;

std::vector<std::int64_t> attempt_ids_of(const policy_evaluation& eval) {
  std::set<std::int64_t> ids;
  for (const auto& d : eval.departures) ids.insert(d.attempt_ids.begin(), d.attempt_ids.end());
  return {ids.begin(), ids.end()};
}

// "evaluation": the departures, each citing attempts of the table with its state and technique.
// A problem in words, or nullopt.
std::optional<std::string> read_evaluation(const json& j, const std::vector<kb::attempt>& attempts, policy_evaluation& e) {
  e.raw = j;
  if (!j.is_object() || !j.contains("summary") || !j["summary"].is_string() || !j.contains("departures") ||
      !j["departures"].is_array())
    return "\"evaluation\" needs \"summary\" (string) and \"departures\" (list).";
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
      return "each departure needs \"state\", \"technique\", \"attempt_ids\" (list of integers) and \"direction\".";
    }
    if (!directions.count(x.direction)) return "\"direction\" must be overpredicted, underpredicted or failed.";
    if (x.attempt_ids.empty()) return "each departure cites at least one attempt id.";
    for (auto id : x.attempt_ids) {
      const auto a = std::find_if(attempts.begin(), attempts.end(), [&](const kb::attempt& at) { return at.id == id; });
      if (a == attempts.end()) return "attempt " + std::to_string(id) + " is not in the table.";
      if (a->state_before != x.state || a->technique != x.technique)
        return "attempt " + std::to_string(id) + " is " + a->state_before + " / " + a->technique + ", not " + x.state + " / " +
               x.technique + ".";
    }
    e.departures.push_back(std::move(x));
  }
  return std::nullopt;
}

// "explanations": one for every departure. A problem in words, or nullopt.
std::optional<std::string> read_explanations(const json& j, const policy_evaluation& eval, std::vector<gap_explanation>& out) {
  if (!j.is_array()) return "\"explanations\" must be a list.";
  std::set<std::pair<std::string, std::string>> wanted;
  for (const auto& d : eval.departures) wanted.insert({d.state, d.technique});
  for (const auto& x : j) {
    gap_explanation g;
    try {
      g.state = x.at("state");
      g.technique = x.at("technique");
      g.cause = x.at("cause");
      g.evidence = x.value("evidence", "");
      g.suggestion = x.value("suggestion", "");
    } catch (const json::exception&) {
      return "each explanation needs \"state\", \"technique\" and \"cause\" strings.";
    }
    if (g.cause.size() < 10) return "each \"cause\" must explain, in a sentence or two.";
    wanted.erase({g.state, g.technique});
    out.push_back(std::move(g));
  }
  if (!wanted.empty())
    return "no explanation for " + wanted.begin()->first + " / " + wanted.begin()->second + "; explain every departure.";
  return std::nullopt;
}

// The three parts of one answer, each checked.
struct gradient_answer {
  policy_evaluation evaluation;
  std::vector<gap_explanation> gaps;
  json edits;
};

// Parses and checks only: nothing touches the KB until an answer passes every check.
parsed<gradient_answer> parse_gradient(const llm::chat_response& answer, const std::vector<kb::attempt>& attempts,
                                       kb::knowledge_base& kb) {
  using P = parsed<gradient_answer>;
  auto doc = extract_json_object(answer);
  if (!doc.value) return P::fail(doc.problem.kind, doc.problem.message);
  const json& j = *doc.value;
  if (!j.contains("evaluation"))
    return P::fail(problem_kind::invalid, "the object needs \"evaluation\", \"explanations\" and \"update\".");
  gradient_answer g;
  if (auto problem = read_evaluation(j["evaluation"], attempts, g.evaluation)) return P::fail(problem_kind::invalid, *problem);
  if (g.evaluation.departures.empty()) return P::ok(std::move(g));  // predictions held: nothing to explain or edit
  if (!j.contains("explanations") || !j.contains("update"))
    return P::fail(problem_kind::invalid, "with departures, the object needs \"explanations\" and \"update\" too.");
  if (auto problem = read_explanations(j["explanations"], g.evaluation, g.gaps)) return P::fail(problem_kind::invalid, *problem);
  g.edits = j["update"];
  const auto problems = check_kb_edits(g.edits, kb);
  if (problems.empty()) return P::ok(std::move(g));
  std::string all;
  for (std::size_t i = 0; i < problems.size() && i < 8; ++i) all += "\n- " + problems[i];
  return P::fail(problem_kind::invalid, "the edit operations in \"update\" were rejected, nothing was applied:" + all +
                                            "\nFix these and send the whole object again.");
}

}  // namespace

std::pair<std::string, std::string> gradient_prompts(kb::knowledge_base& kb, const std::vector<kb::attempt>& attempts) {
  // The states tried, each with the techniques tried in it, in the table's order.
  std::vector<std::pair<std::string, std::vector<std::string>>> tried;
  for (const auto& a : attempts) {
    auto st = std::find_if(tried.begin(), tried.end(), [&](const auto& s) { return s.first == a.state_before; });
    if (st == tried.end()) st = tried.insert(tried.end(), {a.state_before, {}});
    if (std::find(st->second.begin(), st->second.end(), a.technique) == st->second.end()) st->second.push_back(a.technique);
  }
  std::string context, entries;
  for (const auto& [state, techniques] : tried) {
    if (auto st = kb.find_state(state)) context += "State " + render_state(*st) + "\n";
    for (const auto& technique : techniques) {
      if (auto t = kb.find_technique(technique)) context += "Technique " + t->name + ": " + t->description + "\n";
      context += "Lessons (" + state + " / " + technique + "):\n" + render_lessons(kb, state, technique, 3);
    }
    entries += "State " + state + ":\n";
    try {
      entries += render_optimizations(kb.optimizations(state), 10);
    } catch (const kb::kb_error&) {
      entries += "(not in the KB)\n";
    }
  }
  std::string primaries, secondaries;
  for (const auto& p : kb::primary_bottlenecks()) primaries += (primaries.empty() ? "" : ", ") + p;
  for (const auto& p : kb::secondary_characteristics()) secondaries += (secondaries.empty() ? "" : ", ") + p;
  json schema = kb_edit_schema();
  schema.erase("$comment");
  const std::map<std::string, std::string> vars{{"attempts", render_attempts(attempts)},
                                                {"context", context},
                                                {"entries", entries},
                                                {"schema", schema.dump()},
                                                {"primary_names", primaries},
                                                {"secondary_names", secondaries}};
  return {render(prompt_text("textual_gradient.system.txt"), vars), render(prompt_text("textual_gradient.user.txt"), vars)};
}

gradient_outcome run_textual_gradient(llm::llm_client& client, kb::knowledge_base& kb,
                                      const std::vector<kb::attempt>& attempts, const agent_options& options) {
  gradient_outcome g;
  const auto [system, user] = gradient_prompts(kb, attempts);
  auto result = run_agent<gradient_answer>(
      client, "textual_gradient", system, user,
      [&](const llm::chat_response& a) { return parse_gradient(a, attempts, kb); }, options);
  g.trace = std::move(result.trace);
  if (!result.value) return g;
  g.evaluation = std::move(result.value->evaluation);
  if (g.evaluation->departures.empty()) return g;  // predictions held: nothing to learn
  g.gaps = std::move(result.value->gaps);
  kb::update_cause cause;
  cause.kind = "textual_gradient";
  cause.detail = result.value->edits.value("rationale", "") + "\n" + g.evaluation->summary;
  cause.attempt_ids = attempt_ids_of(*g.evaluation);
  try {
    parameter_update u;
    u.edits = std::move(result.value->edits);
    u.applied = apply_kb_edits(u.edits, kb, cause);
    g.update = std::move(u);
  } catch (const kb::kb_error& e) {
    // The transaction rolled back: the KB is as it was.
    g.trace.status = agent_status::gave_up;
    g.trace.error = e.what();
  }
  return g;
}

}  // namespace kblaster::engine::agents
