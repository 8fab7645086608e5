// The two wire formats: OpenAI-compatible chat completions and Anthropic messages. Pure
// functions from a chat_request to JSON and headers, and from a response body to a chat_response.
#pragma once

#include "engine/llm/llm_config.h"
#include "engine/llm/llm_types.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace kblaster::engine::llm {

/// The request body for the configured provider (defaults filled from `c`).
nlohmann::json encode_request(const llm_config& c, const chat_request& r);

/// Headers: content type, the provider's auth header (only when `key` is non-empty), extras.
std::map<std::string, std::string> request_headers(const llm_config& c, const std::string& key);

/// Parses a 2xx body. Throws llm_error(bad_response) when it is not the provider's shape.
chat_response decode_response(provider p, const std::string& body);

/// The provider's error message from an error body ("error.message"), or the body's start.
std::string error_message(const std::string& body);

}  // namespace kblaster::engine::llm
