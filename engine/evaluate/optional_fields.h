// Optional values in the engine's JSON records (evaluations, profile snapshots, the loop's step
// records): an absent optional is left out of the JSON, not written as null, and a missing or
// null field reads back as absent.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>

namespace kblaster::engine::optimize {

template <typename T>
void put_optional(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <typename T>
std::optional<T> get_optional(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].template get<T>();
}

}  // namespace kblaster::engine::optimize
