// The state extractor agent.
#include "engine/agents/state_extractor.h"
#include "support/text.h"

#include "engine/agents/kb_context.h"
#include "engine/agents/prompt_library.h"
#include "engine/state/state_evidence.h"
#include "kb/state_match.h"

#include <algorithm>
#include <regex>

namespace kblaster::engine::agents {
namespace {

using json = nlohmann::json;

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

bool known(const std::vector<std::string>& names, const std::string& x) {
  return std::find(names.begin(), names.end(), x) != names.end();
}

parsed<state_verdict> parse_verdict(const llm::chat_response& answer, kb::knowledge_base& kb, const std::string& matched) {
  using P = parsed<state_verdict>;
  auto doc = extract_json_object(answer);
  if (!doc.value) return P::fail(doc.problem.kind, doc.problem.message);
  const json& j = *doc.value;
  state_verdict v;
  try {
    v.decision = j.at("decision").get<std::string>();
    v.state = j.at("state").get<std::string>();
    v.rationale = j.value("rationale", "");
    v.description = j.value("description", "");
    v.primary_bottleneck = j.value("primary_bottleneck", "");
    v.secondary = j.value("secondary", std::vector<std::string>{});
    v.criteria = j.value("criteria", json::array());
  } catch (const json::exception&) {
    return P::fail(problem_kind::invalid, "the object needs string fields \"decision\" and \"state\", and "
                                          "\"secondary\" must be a list of strings.");
  }
  if (v.rationale.empty()) return P::fail(problem_kind::invalid, "give a one-sentence \"rationale\" citing metrics.");
  if (v.decision == "confirm") {
    if (v.state != matched)
      return P::fail(problem_kind::invalid, "\"confirm\" must name the matched state '" + matched +
                                                "'; to choose another existing state use \"refine\".");
  } else if (v.decision == "refine") {
    if (!kb.find_state(v.state))
      return P::fail(problem_kind::invalid, "\"refine\" must name an existing KB state; '" + v.state +
                                                "' does not exist. To describe a new state use \"new\".");
  } else if (v.decision == "new") {
    if (!std::regex_match(v.state, std::regex("[a-z][a-z0-9_]{2,63}")))
      return P::fail(problem_kind::invalid, "a new state's name must be snake_case (a-z, 0-9, _), 3-64 characters.");
    if (kb.find_state(v.state))
      return P::fail(problem_kind::invalid, "state '" + v.state + "' already exists; use \"refine\" to choose it.");
    if (!known(kb::primary_bottlenecks(), v.primary_bottleneck))
      return P::fail(problem_kind::invalid, "primary_bottleneck must be one of: " + join(kb::primary_bottlenecks()));
    for (const auto& s : v.secondary)
      if (!known(kb::secondary_characteristics(), s))
        return P::fail(problem_kind::invalid, "secondary characteristic '" + s + "' is unknown; use only: " +
                                                  join(kb::secondary_characteristics()));
    if (v.description.size() < 20 || !v.criteria.is_array() || v.criteria.empty())
      return P::fail(problem_kind::invalid, "a new state needs a \"description\" and at least one entry in "
                                            "\"criteria\" ({metric, op, value}).");
  } else {
    return P::fail(problem_kind::invalid, "\"decision\" must be \"confirm\", \"refine\" or \"new\".");
  }
  if (v.decision != "new") {
    const auto st = kb.find_state(v.state);
    v.primary_bottleneck = st->primary_bottleneck;
    v.secondary = st->secondary;
    v.criteria = st->criteria;
    v.description = st->description;
  }
  return P::ok(std::move(v));
}

// The deterministic KB match for the signature (the KB's own matcher).
std::pair<std::string, double> kb_match(kb::knowledge_base& kb, const state_extractor_input& in) {
  const auto& sig = in.view.signature;
  auto m = kb.match_state(kb_evidence(sig), in.arch);
  if (!m) return {"", 0.0};
  return {m->state, m->score};
}

}  // namespace

kb::state state_verdict::to_kb_state() const {
  kb::state s;
  s.name = state;
  s.primary_bottleneck = primary_bottleneck;
  s.secondary = secondary;
  s.criteria = criteria;
  s.origin = "discovered";
  s.description = description;
  s.notes = rationale;
  return s;
}

std::pair<std::string, std::string> state_extractor_prompts(kb::knowledge_base& kb, const state_extractor_input& in) {
  const auto& sig = in.view.signature;
  const auto [matched, score] = kb_match(kb, in);
  std::string states;
  for (const auto& s : nearby_states(kb, matched, sig.primary, sig.secondary_names()))
    states += "- " + render_state(s) + "\n";
  if (states.empty()) states = "(the KB has no state in this family)\n";
  const std::map<std::string, std::string> vars{
      {"kernel", sig.function.empty() ? sig.name : sig.function},
      {"arch", in.arch.empty() ? "unknown" : in.arch},
      {"profile_summary", summarize_for_prompt(in.view, 5000)},
      {"matched_state", matched.empty() ? "(none)" : matched},
      {"match_score", support::fixed_text(score, 2)},
      {"nearby_states", states},
      {"primary_names", join(kb::primary_bottlenecks())},
      {"secondary_names", join(kb::secondary_characteristics())}};
  return {render(prompt_text("state_extractor.system.txt"), vars), render(prompt_text("state_extractor.user.txt"), vars)};
}

agent_result<state_verdict> extract_state(llm::llm_client& client, kb::knowledge_base& kb,
                                          const state_extractor_input& in, const agent_options& options) {
  const auto [system, user] = state_extractor_prompts(kb, in);
  const std::string matched = kb_match(kb, in).first;
  return run_agent<state_verdict>(
      client, "state_extractor", system, user,
      [&](const llm::chat_response& a) { return parse_verdict(a, kb, matched); }, options);
}

}  // namespace kblaster::engine::agents
