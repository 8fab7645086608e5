// Agents 5-7, the textual gradient of MAIC-RL: policy evaluation (where measured results
// departed from predictions, from the replay buffer), performance-gap analysis (why), and the
// parameter update (KB edit operations, validated against a schema and applied in one KB
// transaction logged in the KB's update log).
#pragma once

#include "engine/agents/agent_runner.h"
#include "engine/agents/kb_edit.h"
#include "kb/knowledge_base.h"

namespace kblaster::engine::agents {

/// A group of attempts whose outcome departed from the KB's prediction.
struct departure {
  std::string state, technique;
  std::vector<std::int64_t> attempt_ids;
  std::string direction;  ///< overpredicted | underpredicted | failed
  std::string note;
};

/// Agent 5's output.
struct policy_evaluation {
  std::string summary;
  std::vector<departure> departures;
  nlohmann::json raw;
};

/// Agent 6's explanation of one departure.
struct gap_explanation {
  std::string state, technique, cause, evidence, suggestion;
};

/// Agent 7's output once applied.
struct parameter_update {
  nlohmann::json edits;
  kb_edit_result applied;
};

std::pair<std::string, std::string> evaluation_prompts(const std::vector<kb::attempt>& attempts);
std::pair<std::string, std::string> gap_prompts(kb::knowledge_base& kb, const policy_evaluation& eval,
                                                const std::vector<kb::attempt>& attempts);
std::pair<std::string, std::string> update_prompts(kb::knowledge_base& kb, const policy_evaluation& eval,
                                                   const std::vector<gap_explanation>& gaps);

/// Agent 5. Reads only `attempts` (an iteration's slice of the replay buffer).
agent_result<policy_evaluation> evaluate_policy(llm::llm_client& client, const std::vector<kb::attempt>& attempts,
                                                const agent_options& options = {});

/// Agent 6. Reads the evaluation and the KB entries it names.
agent_result<std::vector<gap_explanation>> analyse_gaps(llm::llm_client& client, kb::knowledge_base& kb,
                                                        const policy_evaluation& eval,
                                                        const std::vector<kb::attempt>& attempts,
                                                        const agent_options& options = {});

/// Agent 7. Asks for KB edits, validates them against the schema and the KB (retrying with the
/// problems stated), then applies them in one transaction logged as a textual_gradient update
/// citing the attempts. When it gives up, the KB is untouched.
agent_result<parameter_update> update_parameters(llm::llm_client& client, kb::knowledge_base& kb,
                                                 const policy_evaluation& eval,
                                                 const std::vector<gap_explanation>& gaps,
                                                 const agent_options& options = {});

/// The three in a row, as the loop runs them after an iteration; stops at the first that fails.
struct gradient_outcome {
  std::optional<policy_evaluation> evaluation;
  std::optional<std::vector<gap_explanation>> gaps;
  std::optional<parameter_update> update;
  std::vector<agent_trace> traces;
  agent_status status = agent_status::ok;
};
gradient_outcome run_textual_gradient(llm::llm_client& client, kb::knowledge_base& kb,
                                      const std::vector<kb::attempt>& attempts, const agent_options& options = {});

}  // namespace kblaster::engine::agents
