// The conversation loop every agent shares: send the prompt, parse the answer strictly, and on
// a problem send it back stated plainly ("your answer could not be used: ...") until the answer
// is usable or the tries are spent. Never throws: a failure is a recorded outcome, and a spent
// budget ends the loop at once so the job can stop cleanly.
#pragma once

#include "engine/agents/answer_parser.h"
#include "engine/llm/llm_client.h"

#include <functional>
#include <string>
#include <vector>

namespace kblaster::engine::agents {

/// How an agent run ended.
enum class agent_status {
  ok,                ///< a usable answer
  gave_up,           ///< every try was unusable; nothing was applied
  budget_exhausted,  ///< the job's token or cost budget is spent: stop the job
  llm_failed,        ///< the endpoint failed (auth, retries exhausted, replay miss, ...)
};
const char* to_string(agent_status s) noexcept;

/// What an agent run produced beside its value: for reports, cassettes and tests.
struct agent_trace {
  std::string role;
  agent_status status = agent_status::ok;
  std::string system;
  std::vector<llm::chat_message> messages;  ///< the whole exchange, answers included
  std::vector<answer_problem> problems;     ///< one per unusable answer, in order
  std::string error;                        ///< the LLM error, when status is budget/llm
  int calls = 0;
  std::int64_t prompt_tokens = 0, completion_tokens = 0;
};

/// One agent's value and trace.
template <typename T>
struct agent_result {
  std::optional<T> value;
  agent_trace trace;
  bool ok() const noexcept { return value.has_value(); }
};

/// Settings shared by the agents.
struct agent_options {
  int max_tries = 3;      ///< answers requested per run, the first included
  int max_tokens = 0;     ///< completion cap (0: the client's default)
  double temperature = -1;
};

/// Runs the loop for `role`. `parse` turns an answer into a value or a problem.
template <typename T>
agent_result<T> run_agent(llm::llm_client& client, const std::string& role, const std::string& system,
                          const std::string& user, const std::function<parsed<T>(const llm::chat_response&)>& parse,
                          const agent_options& options);

/// Continues a conversation (the lowering agent's repair loop): appends `user` to the trace's
/// messages and runs the loop from there.
template <typename T>
agent_result<T> continue_agent(llm::llm_client& client, agent_trace trace, const std::string& user,
                               const std::function<parsed<T>(const llm::chat_response&)>& parse,
                               const agent_options& options);

/// The text sent back after an unusable answer.
std::string retry_message(const answer_problem& p);

}  // namespace kblaster::engine::agents

#include "engine/agents/agent_runner_impl.h"
