// Agents 5-7, the textual gradient of MAIC-RL: policy evaluation (where measured results
// departed from predictions, from the replay buffer), performance-gap analysis (why), and the
// parameter update (KB edit operations, validated against a schema and applied in one KB
// transaction logged in the KB's update log), asked of the model as one request.
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

/// The one request of the textual gradient: the iteration's attempts, and what the KB says of
/// every state and technique they tried.
std::pair<std::string, std::string> gradient_prompts(kb::knowledge_base& kb, const std::vector<kb::attempt>& attempts);

/// What the textual gradient produced. Agents 5-7 answer in one request (through a batch
/// interface every request is a round that may take hours): the evaluation, its explanations and
/// the KB edits, each checked (the evaluation against the attempts, the explanations against the
/// departures, the edits against the schema and the KB) and the answer asked again with every
/// problem stated until it is usable or the tries are spent. The edits are applied in one
/// transaction logged as a textual_gradient update citing the attempts; nothing is applied when
/// the agent gives up or the predictions held.
struct gradient_outcome {
  std::optional<policy_evaluation> evaluation;
  std::optional<std::vector<gap_explanation>> gaps;
  std::optional<parameter_update> update;
  agent_trace trace;  ///< the exchange (its status: how the update went)
};
/// Reads only `attempts` (an iteration's slice of the replay buffer) and the KB entries they name.
gradient_outcome run_textual_gradient(llm::llm_client& client, kb::knowledge_base& kb,
                                      const std::vector<kb::attempt>& attempts, const agent_options& options = {});

}  // namespace kblaster::engine::agents
