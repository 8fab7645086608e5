// Agent 2, the planner: for a state with few or no known techniques, propose candidates, each
// with a predicted speedup and a one-line rationale. Techniques outside the catalogue must come
// with a description an engineer (or the lowering agent) can act on.
#pragma once

#include "engine/agents/agent_runner.h"
#include "kb/knowledge_base.h"

namespace kblaster::engine::agents {

/// One proposed technique.
struct planned_technique {
  std::string technique;
  double predicted_speedup = 1.0;
  std::string rationale;
  bool is_new = false;        ///< not in the KB's catalogue
  std::string category;       ///< for a new technique
  std::string description;    ///< for a new technique
};

/// What the planner reads.
struct planner_input {
  std::string state;            ///< an existing KB state
  std::string profile_summary;  ///< summarize_for_prompt of the current kernel
  std::string arch;
  int max_candidates = 4;
};

std::pair<std::string, std::string> planner_prompts(kb::knowledge_base& kb, const planner_input& in);

/// Runs the planner. Reads the KB, never writes it.
agent_result<std::vector<planned_technique>> plan_techniques(llm::llm_client& client, kb::knowledge_base& kb,
                                                             const planner_input& in, const agent_options& options = {});

}  // namespace kblaster::engine::agents
