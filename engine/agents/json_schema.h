// A small JSON Schema validator for the agents' outputs: the subset our schemas use (type,
// required, properties, additionalProperties, enum, const, minimum/maximum, exclusiveMinimum,
// minLength/maxLength, pattern, items, minItems/maxItems, oneOf). A oneOf whose branches each
// fix "op" with const is read as a tagged union, so errors name the branch the value meant.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kblaster::engine::agents {

/// Every violation of `schema` by `value`, each as "path: problem" (empty when valid).
std::vector<std::string> validate_json(const nlohmann::json& value, const nlohmann::json& schema,
                                       const std::string& path = "$");

}  // namespace kblaster::engine::agents
