// Agent 1, the state extractor: given the deterministic signature, the profile summary and the
// nearby KB states, confirm the KB state, refine it to another existing state, or describe a
// newly discovered one.
#pragma once

#include "engine/agents/agent_runner.h"
#include "engine/state/profile_summary.h"
#include "kb/knowledge_base.h"

namespace kblaster::engine::agents {

/// The extractor's decision.
struct state_verdict {
  std::string decision;  ///< confirm | refine | new
  std::string state;     ///< an existing state (confirm, refine) or the new state's name
  std::string primary_bottleneck;
  std::vector<std::string> secondary;
  nlohmann::json criteria = nlohmann::json::array();
  std::string description;
  std::string rationale;

  /// The verdict as a KB state (origin "discovered"), for a new state.
  kb::state to_kb_state() const;
};

/// What the extractor reads.
struct state_extractor_input {
  kernel_view view;         ///< signature and the deterministic KB match (view.state.state)
  std::string arch;         ///< e.g. sm_90; empty when unknown
};

/// The system and user prompts (exposed for the prompt-size report).
std::pair<std::string, std::string> state_extractor_prompts(kb::knowledge_base& kb, const state_extractor_input& in);

/// Runs the extractor. Reads the KB, never writes it.
agent_result<state_verdict> extract_state(llm::llm_client& client, kb::knowledge_base& kb,
                                          const state_extractor_input& in, const agent_options& options = {});

}  // namespace kblaster::engine::agents
