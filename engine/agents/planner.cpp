// The planner agent.
#include "engine/agents/planner.h"
#include "support/text.h"

#include "engine/agents/kb_context.h"
#include "engine/agents/prompt_library.h"

#include <regex>
#include <set>

namespace kblaster::engine::agents {
namespace {

using json = nlohmann::json;

parsed<std::vector<planned_technique>> parse_plan(const llm::chat_response& answer, kb::knowledge_base& kb,
                                                  int max_candidates) {
  using P = parsed<std::vector<planned_technique>>;
  auto doc = extract_json_object(answer);
  if (!doc.value) return P::fail(doc.problem.kind, doc.problem.message);
  const json& j = *doc.value;
  if (!j.contains("candidates") || !j["candidates"].is_array() || j["candidates"].empty())
    return P::fail(problem_kind::invalid, "the object needs a non-empty \"candidates\" list.");
  if (static_cast<int>(j["candidates"].size()) > max_candidates)
    return P::fail(problem_kind::invalid, "propose at most " + std::to_string(max_candidates) + " candidates.");
  std::vector<planned_technique> out;
  std::set<std::string> seen;
  static const std::regex name("[a-z][a-z0-9_]{2,63}");
  for (const auto& c : j["candidates"]) {
    planned_technique p;
    if (!c.is_object() || !c.contains("technique") || !c["technique"].is_string() ||
        !c.contains("predicted_speedup") || !c["predicted_speedup"].is_number() || !c.contains("rationale") ||
        !c["rationale"].is_string())
      return P::fail(problem_kind::invalid, "each candidate needs \"technique\" (string), \"predicted_speedup\" "
                                            "(number) and \"rationale\" (string).");
    p.technique = c["technique"];
    p.predicted_speedup = c["predicted_speedup"];
    p.rationale = c["rationale"];
    if (!std::regex_match(p.technique, name))
      return P::fail(problem_kind::invalid, "technique names are snake_case: '" + p.technique + "' is not.");
    if (!seen.insert(p.technique).second)
      return P::fail(problem_kind::invalid, "'" + p.technique + "' is proposed twice.");
    if (!(p.predicted_speedup >= 1.0 && p.predicted_speedup <= 20))
      return P::fail(problem_kind::invalid, "predicted_speedup of '" + p.technique + "' must be between 1.0 and 20 "
                                            "(a speedup over the current version).");
    if (p.rationale.empty() || p.rationale.size() > 240 || p.rationale.find('\n') != std::string::npos)
      return P::fail(problem_kind::invalid, "each rationale is one line of at most 240 characters.");
    if (!kb.find_technique(p.technique)) {
      p.is_new = true;
      p.category = c.value("category", "");
      p.description = c.value("description", "");
      if (p.description.size() < 40 || p.category.empty())
        return P::fail(problem_kind::invalid, "'" + p.technique + "' is not in the catalogue, so it needs a "
                                              "\"category\" and a \"description\" of what to change in the code.");
    }
    out.push_back(std::move(p));
  }
  return P::ok(std::move(out));
}

}  // namespace

std::pair<std::string, std::string> planner_prompts(kb::knowledge_base& kb, const planner_input& in) {
  const auto st = kb.find_state(in.state);
  if (!st) throw kb::kb_error(kb::error_kind::not_found, "no state named '" + in.state + "' in the KB");
  const std::map<std::string, std::string> vars{
      {"state", render_state(*st)},
      {"arch", in.arch.empty() ? "unknown" : in.arch},
      {"known", render_optimizations(kb.optimizations(in.state, in.arch), 8)},
      {"catalogue", render_catalogue(kb.techniques())},
      {"lessons", render_lessons(kb, in.state, "", 5)},
      {"profile_summary", in.profile_summary},
      {"max_candidates", std::to_string(in.max_candidates)}};
  return {render(prompt_text("planner.system.txt"), vars), render(prompt_text("planner.user.txt"), vars)};
}

agent_result<std::vector<planned_technique>> plan_techniques(llm::llm_client& client, kb::knowledge_base& kb,
                                                             const planner_input& in, const agent_options& options) {
  const auto [system, user] = planner_prompts(kb, in);
  return run_agent<std::vector<planned_technique>>(
      client, "planner", system, user,
      [&](const llm::chat_response& a) { return parse_plan(a, kb, in.max_candidates); }, options);
}

}  // namespace kblaster::engine::agents
