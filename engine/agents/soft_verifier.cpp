// The soft verifier agent.
#include "engine/agents/soft_verifier.h"

#include "engine/agents/prompt_library.h"

#include <set>

namespace kblaster::engine::agents {
namespace {

parsed<verifier_verdict> parse_verdict(const llm::chat_response& answer) {
  using P = parsed<verifier_verdict>;
  auto doc = extract_json_object(answer);
  if (!doc.value) return P::fail(doc.problem.kind, doc.problem.message);
  const auto& j = *doc.value;
  static const std::set<std::string> kinds{"removed_functionality", "forbidden_shortcut", "changed_semantics",
                                           "precision_change"};
  verifier_verdict v;
  if (!j.contains("verdict") || !j["verdict"].is_string() ||
      (j["verdict"] != "pass" && j["verdict"] != "fail"))
    return P::fail(problem_kind::invalid, "\"verdict\" must be \"pass\" or \"fail\".");
  v.pass = j["verdict"] == "pass";
  v.summary = j.value("summary", "");
  if (j.contains("issues")) {
    if (!j["issues"].is_array()) return P::fail(problem_kind::invalid, "\"issues\" must be a list.");
    for (const auto& i : j["issues"]) {
      if (!i.is_object() || !i.contains("kind") || !i["kind"].is_string() || !kinds.count(i["kind"].get<std::string>()) ||
          !i.contains("detail") || !i["detail"].is_string())
        return P::fail(problem_kind::invalid, "each issue needs \"kind\" (removed_functionality, forbidden_shortcut, "
                                              "changed_semantics or precision_change) and \"detail\".");
      v.issues.push_back({i["kind"], i["detail"]});
    }
  }
  if (!v.pass && v.issues.empty())
    return P::fail(problem_kind::invalid, "a \"fail\" verdict must list at least one issue.");
  for (const auto& i : v.issues)
    if (v.pass && (i.kind == "removed_functionality" || i.kind == "forbidden_shortcut"))
      return P::fail(problem_kind::invalid, "the verdict is \"pass\" but lists a " + i.kind +
                                                " issue; such an issue means \"fail\".");
  return P::ok(std::move(v));
}

}  // namespace

std::pair<std::string, std::string> verifier_prompts(const verifier_input& in) {
  const std::map<std::string, std::string> vars{{"entry_point", in.entry_point},
                                                {"technique", in.technique},
                                                {"reference", in.reference_source},
                                                {"candidate", in.candidate_source}};
  return {render(prompt_text("soft_verifier.system.txt"), vars), render(prompt_text("soft_verifier.user.txt"), vars)};
}

agent_result<verifier_verdict> soft_verify(llm::llm_client& client, const verifier_input& in,
                                           const agent_options& options) {
  const auto [system, user] = verifier_prompts(in);
  return run_agent<verifier_verdict>(client, "soft_verifier", system, user, parse_verdict, options);
}

}  // namespace kblaster::engine::agents
