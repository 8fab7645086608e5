// Non-template parts of the agent loop.
#include "engine/agents/agent_runner.h"

namespace kblaster::engine::agents {

const char* to_string(agent_status s) noexcept {
  switch (s) {
    case agent_status::ok: return "ok";
    case agent_status::gave_up: return "gave_up";
    case agent_status::budget_exhausted: return "budget_exhausted";
    case agent_status::llm_failed: return "llm_failed";
  }
  return "unknown";
}

std::string retry_message(const answer_problem& p) {
  return "Your answer could not be used (" + std::string(to_string(p.kind)) + "): " + p.message;
}

namespace detail {

std::optional<llm::chat_response> send_once(llm::llm_client& client, agent_trace& trace, const agent_options& options) {
  llm::chat_request req;
  req.agent_role = trace.role;
  req.system = trace.system;
  req.messages = trace.messages;
  req.max_tokens = options.max_tokens;
  req.temperature = options.temperature;
  try {
    auto answer = client.complete(req);
    ++trace.calls;
    trace.prompt_tokens += answer.usage.prompt_tokens;
    trace.completion_tokens += answer.usage.completion_tokens;
    return answer;
  } catch (const llm::llm_error& e) {
    trace.status = e.kind() == llm::error_kind::budget_exceeded ? agent_status::budget_exhausted : agent_status::llm_failed;
    trace.error = e.what();
    return std::nullopt;
  }
}

void append_answer(agent_trace& trace, const std::string& text) {
  constexpr std::size_t keep = 24000;  // characters: a long bad answer is shown, not resent whole
  if (text.size() <= keep) trace.messages.push_back({"assistant", text});
  else trace.messages.push_back({"assistant", text.substr(0, keep / 2) + "\n[... " + std::to_string(text.size() - keep) +
                                                 " characters omitted ...]\n" + text.substr(text.size() - keep / 2)});
}

}  // namespace detail
}  // namespace kblaster::engine::agents
