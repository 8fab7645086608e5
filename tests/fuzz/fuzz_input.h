// Small helpers the libFuzzer targets share: the input as text, and as JSON when it is JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kblaster::fuzz {

/// The fuzzer's bytes as text (readers of untrusted input take text, not bytes).
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// The input parsed as JSON, or nothing: readers downstream of a JSON parse get JSON values, and
/// inputs that do not parse are left to the JSON library's own fuzzing.
inline std::optional<nlohmann::json> as_json(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace kblaster::fuzz
