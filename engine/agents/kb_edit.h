// KB edit operations emitted by the parameter-update agent: checked against the schema
// (prompts/kb_edit.schema.json) and against the KB (names must exist, new ones must not), then
// applied all together in one KB transaction recorded as one entry of the KB's update log.
#pragma once

#include "kb/knowledge_base.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kblaster::engine::agents {

/// The embedded schema of an edit document {rationale, operations: [...]}.
const nlohmann::json& kb_edit_schema();

/// Problems with `edits` (schema, then KB consistency, in operation order so that a state added
/// by operation 1 may be used by operation 2). Empty when it can be applied.
std::vector<std::string> check_kb_edits(const nlohmann::json& edits, kb::knowledge_base& kb);

/// What was applied.
struct kb_edit_result {
  std::int64_t update_id = 0;  ///< the update-log entry (0 when there was nothing to change)
  std::size_t operations = 0;
};

/// Checks, then applies every operation in one transaction (all or none) logged with `cause`.
/// Throws kb::kb_error(invalid_argument) listing the problems when the check fails, and
/// whatever SQLite throws; in both cases the KB is unchanged.
kb_edit_result apply_kb_edits(const nlohmann::json& edits, kb::knowledge_base& kb, const kb::update_cause& cause);

}  // namespace kblaster::engine::agents
