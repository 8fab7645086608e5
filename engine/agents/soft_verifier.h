// Agent 4, the soft verifier: reads the candidate beside the reference for removed functionality
// and forbidden shortcuts (hard-coded outputs, skipped work, caching results across calls,
// weakened precision, timing tricks). A second opinion beside the harness, never a replacement.
#pragma once

#include "engine/agents/agent_runner.h"

namespace kblaster::engine::agents {

/// One issue the verifier found.
struct verifier_issue {
  std::string kind;    ///< removed_functionality | forbidden_shortcut | changed_semantics | precision_change
  std::string detail;
};

/// The verifier's verdict.
struct verifier_verdict {
  bool pass = false;
  std::vector<verifier_issue> issues;
  std::string summary;
};

/// What the verifier reads.
struct verifier_input {
  std::string reference_source;
  std::string candidate_source;
  std::string entry_point;
  std::string technique;
};

std::pair<std::string, std::string> verifier_prompts(const verifier_input& in);

agent_result<verifier_verdict> soft_verify(llm::llm_client& client, const verifier_input& in,
                                           const agent_options& options = {});

}  // namespace kblaster::engine::agents
