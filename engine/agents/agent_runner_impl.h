// Template bodies of agent_runner.h.
#pragma once

namespace kblaster::engine::agents {

namespace detail {
/// Sends the trace's conversation once; fills the trace on an LLM error. nullopt on error.
std::optional<llm::chat_response> send_once(llm::llm_client& client, agent_trace& trace, const agent_options& options);
/// Appends an answer to the conversation, shortened when it is long (a retry need not resend it).
void append_answer(agent_trace& trace, const std::string& text);
}  // namespace detail

template <typename T>
agent_result<T> continue_agent(llm::llm_client& client, agent_trace trace, const std::string& user,
                               const std::function<parsed<T>(const llm::chat_response&)>& parse,
                               const agent_options& options) {
  agent_result<T> result;
  trace.messages.push_back({"user", user});
  for (int attempt = 0; attempt < std::max(1, options.max_tries); ++attempt) {
    auto answer = detail::send_once(client, trace, options);
    if (!answer) {
      result.trace = std::move(trace);
      return result;
    }
    detail::append_answer(trace, answer->text);
    parsed<T> p = parse(*answer);
    if (p.value) {
      trace.status = agent_status::ok;
      result.value = std::move(p.value);
      result.trace = std::move(trace);
      return result;
    }
    trace.problems.push_back(p.problem);
    if (attempt + 1 < options.max_tries) trace.messages.push_back({"user", retry_message(p.problem)});
  }
  trace.status = agent_status::gave_up;
  result.trace = std::move(trace);
  return result;
}

template <typename T>
agent_result<T> run_agent(llm::llm_client& client, const std::string& role, const std::string& system,
                          const std::string& user, const std::function<parsed<T>(const llm::chat_response&)>& parse,
                          const agent_options& options) {
  agent_trace trace;
  trace.role = role;
  trace.system = system;
  return continue_agent<T>(client, std::move(trace), user, parse, options);
}

}  // namespace kblaster::engine::agents
