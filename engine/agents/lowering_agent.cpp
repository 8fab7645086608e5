// The lowering agent and its repair loop.
#include "engine/agents/lowering_agent.h"
#include "support/text.h"

#include "engine/agents/kb_context.h"
#include "engine/agents/prompt_library.h"
#include "engine/source/kernel_operations.h"
#include "kb/note_needs.h"

#include <cmath>

namespace kblaster::engine::agents {
namespace {

// The technique as the model is shown it: its note only where it speaks of what this kernel
// does (a softmax's "max and sum across the lanes" is no hint for a transpose).
std::string technique_block(const kb::optimization& o, const std::string& source) {
  std::string out = o.technique + " (" + o.category + "): " + o.description + "\n";
  const auto operations = source.empty() ? std::nullopt : std::optional(kernel_operations(source));
  if (const auto note = kb::shown_note(o, operations); !note.empty()) out += "For this state: " + note + "\n";
  out += "KB prediction: " + support::fixed_text(o.predicted_speedup, 2) + "x (confidence " + support::fixed_text(o.confidence, 2) + ", " +
         std::to_string(o.statistics.attempts) + " attempts, " + std::to_string(o.statistics.compile_failures) +
         " compile failures, " + std::to_string(o.statistics.incorrect) + " incorrect)\n";
  // What searches kept of it here, and the parameters of the variant that won: a model told
  // "block 128 won on sm_90" starts where the last search ended.
  if (const auto& k = o.statistics.credit; k.steps > 0) {
    out += "Earlier searches in this state: " + std::to_string(k.gains) + " of " + std::to_string(k.steps) +
           " steps gained, the best " + support::fixed_text(std::exp(k.best_log_gain), 2) + "x";
    if (k.best_parameters.is_object()) out += " with " + k.best_parameters.dump();
    out += "\n";
  }
  return out;
}

}  // namespace

std::pair<std::string, std::string> lowering_prompts(kb::knowledge_base& kb, const lowering_input& in) {
  const std::map<std::string, std::string> vars{
      {"entry_point", in.entry_point},
      {"arch", in.arch.empty() ? "unknown" : in.arch},
      {"state", in.state},
      {"technique", technique_block(in.technique, in.source)},
      {"lessons", render_lessons(kb, in.state, in.technique.technique, 5)},
      {"profile_summary", in.profile_summary},
      {"task", in.task_brief.empty() ? "" : in.task_brief + "\n"},
      {"source", in.source}};
  return {render(prompt_text("lowering.system.txt"), vars), render(prompt_text("lowering.user.txt"), vars)};
}

agent_result<std::string> lower_kernel(llm::llm_client& client, kb::knowledge_base& kb, const lowering_input& in,
                                       const agent_options& options) {
  const auto [system, user] = lowering_prompts(kb, in);
  const std::string entry = in.entry_point;
  return run_agent<std::string>(
      client, "lowering", system, user,
      [entry](const llm::chat_response& a) { return extract_cuda_source(a, entry); }, options);
}

lowering_outcome lower_with_repair(llm::llm_client& client, kb::knowledge_base& kb, const lowering_input& in,
                                   const candidate_check& check, int max_repairs, const agent_options& options) {
  lowering_outcome out;
  auto result = lower_kernel(client, kb, in, options);
  const std::string entry = in.entry_point;
  while (true) {
    out.trace = result.trace;
    if (!result.value) return out;
    auto failure = check(*result.value);
    if (!failure) {
      out.source = std::move(result.value);
      return out;
    }
    out.failures.push_back(*failure);
    if (out.repairs >= max_repairs) return out;
    ++out.repairs;
    const std::string feedback = render(prompt_text("lowering.repair.txt"),
                                        {{"failure", failure->substr(0, 6000)}, {"entry_point", entry}});
    result = continue_agent<std::string>(
        client, std::move(result.trace), feedback,
        [entry](const llm::chat_response& a) { return extract_cuda_source(a, entry); }, options);
  }
}

}  // namespace kblaster::engine::agents
