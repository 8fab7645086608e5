// Writing requests for a batch: OpenAI Batch input lines and Anthropic Message Batches requests,
// each under a custom_id taken from the request's content. A resumed run sends the same
// requests, so their ids match the answers already there (as cassettes match by content), and
// the same prompt asked by two trajectories goes into a batch once. Pure: values in, JSON out.
#pragma once

#include "engine/llm/llm_config.h"
#include "engine/llm/llm_types.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kblaster::engine::llm {

/// "lowering-9d5d9c176025f863": the asking role (letters, digits, '_' and '-' only, at most 40)
/// and a 64-bit hash of the request body the provider would receive (model, limits, system
/// prompt, messages). Within both providers' custom_id rules (^[A-Za-z0-9_-]{1,64}$).
std::string batch_custom_id(const llm_config& c, const chat_request& r);

/// OpenAI Batch input: one line per distinct request, {custom_id, method, url, body}.
std::vector<nlohmann::json> openai_batch_lines(const llm_config& c, const std::vector<chat_request>& requests);

/// Anthropic Message Batches create body: {requests: [{custom_id, params}]}, distinct requests.
nlohmann::json anthropic_batch_body(const llm_config& c, const std::vector<chat_request>& requests);

}  // namespace kblaster::engine::llm
