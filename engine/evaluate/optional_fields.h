// Optional values in the engine's JSON records (evaluations, profile snapshots, the loop's step
// records): an absent optional is left out of the JSON, not written as null, and a missing or
// null field reads back as absent.
#pragma once

#include <nlohmann/json.hpp>

#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kblaster::engine::optimize {

template <typename T>
void put_optional(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

/// An integer field read as T: a JSON integer within T's range, else std::invalid_argument
/// naming the key. (nlohmann converts 4e55 to int by a cast, which is undefined behaviour.)
template <typename T>
T integer_field(const nlohmann::json& v, const char* key) {
  static_assert(std::is_integral_v<T>);
  auto bad = [&] { return std::invalid_argument(std::string("'") + key + "' must be an integer that fits, not " + v.dump().substr(0, 40)); };
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) throw bad();
    return static_cast<T>(v.get<std::uint64_t>());
  }
  if (!v.is_number_integer()) throw bad();
  const auto n = v.get<std::int64_t>();
  if (n < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
      (n > 0 && static_cast<std::uint64_t>(n) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
    throw bad();
  return static_cast<T>(n);
}

/// integer_field, or `fallback` when the key is absent or null.
template <typename T>
T integer_or(const nlohmann::json& j, const char* key, T fallback) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return fallback;
  return integer_field<T>(j[key], key);
}

template <typename T>
std::optional<T> get_optional(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return integer_field<T>(j[key], key);
  else return j[key].template get<T>();
}

}  // namespace kblaster::engine::optimize
