// Agent 3, the lowering agent: writes the complete new kernel source for a chosen technique,
// with the same entry point, then repairs it from compile errors and verification failures.
#pragma once

#include "engine/agents/agent_runner.h"
#include "kb/knowledge_base.h"

#include <functional>
#include <optional>

namespace kblaster::engine::agents {

/// What the lowering agent reads: only the relevant KB entries, never the whole KB.
struct lowering_input {
  std::string source;          ///< the current kernel source, complete
  std::string entry_point;     ///< e.g. kb_forward or the kernel's name: must survive
  std::string state;           ///< KB state of the current version
  kb::optimization technique;  ///< the chosen technique, with its note and statistics
  std::string profile_summary;
  std::string task_brief;       ///< what it must compute and on which shapes (optimize/task_brief.h); may be empty
  std::string arch;
};

std::pair<std::string, std::string> lowering_prompts(kb::knowledge_base& kb, const lowering_input& in);

/// One candidate: the source, or nothing when every try was unusable.
agent_result<std::string> lower_kernel(llm::llm_client& client, kb::knowledge_base& kb, const lowering_input& in,
                                       const agent_options& options = {});

/// Checks a candidate (compile, verify): nullopt when it passed, else the failure in words
/// (compiler diagnostics, mismatch figures) to feed back to the model.
using candidate_check = std::function<std::optional<std::string>(const std::string& source)>;

/// The lowering result after the repair loop.
struct lowering_outcome {
  std::optional<std::string> source;  ///< the last candidate that passed the check
  std::vector<std::string> failures;  ///< check failures, in order
  int repairs = 0;                    ///< repair rounds used
  agent_trace trace;                  ///< the whole conversation
};

/// Lowers, checks, and feeds failures back up to `max_repairs` times (in one conversation).
lowering_outcome lower_with_repair(llm::llm_client& client, kb::knowledge_base& kb, const lowering_input& in,
                                   const candidate_check& check, int max_repairs = 3,
                                   const agent_options& options = {});

}  // namespace kblaster::engine::agents
