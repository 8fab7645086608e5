// OpenAI and Anthropic request/response shapes.
#include "engine/llm/provider_codec.h"

#include <cstdint>
#include <limits>

namespace kblaster::engine::llm {
namespace {

using json = nlohmann::json;

std::string normalise_finish(const std::string& reason) {
  if (reason == "max_tokens" || reason == "length") return "length";
  if (reason == "end_turn" || reason == "stop" || reason == "stop_sequence") return "stop";
  if (reason == "content_filter" || reason == "refusal") return "refusal";
  return reason;
}

// A token count from a usage object: a non-negative integer, else 0. Any other JSON number (a
// float, a count beyond int64) would be undefined behaviour to convert, and no count at all.
std::int64_t reported_tokens(const json& usage, const char* key) {
  if (!usage.is_object() || !usage.contains(key)) return 0;
  const auto& v = usage[key];
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ? 0 : v.get<std::int64_t>();
  return v.is_number_integer() && v.get<std::int64_t>() >= 0 ? v.get<std::int64_t>() : 0;
}

}  // namespace

json encode_request(const llm_config& c, const chat_request& r) {
  json body;
  body["model"] = c.model;
  body["max_tokens"] = r.max_tokens > 0 ? r.max_tokens : c.max_tokens;
  body["temperature"] = r.temperature >= 0 ? r.temperature : c.temperature;
  json messages = json::array();
  if (c.api == provider::openai && !r.system.empty())
    messages.push_back({{"role", "system"}, {"content", r.system}});
  for (const auto& m : r.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  body["messages"] = std::move(messages);
  if (c.api == provider::anthropic && !r.system.empty()) body["system"] = r.system;
  return body;
}

std::map<std::string, std::string> request_headers(const llm_config& c, const std::string& key) {
  std::map<std::string, std::string> h{{"Content-Type", "application/json"}};
  if (c.api == provider::anthropic) {
    h["anthropic-version"] = "2023-06-01";
    if (!key.empty()) h["x-api-key"] = key;
  } else if (!key.empty()) {
    h["Authorization"] = "Bearer " + key;
  }
  for (const auto& [k, v] : c.extra_headers) h[k] = v;
  return h;
}

chat_response decode_response(provider p, const std::string& body) {
  const json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    throw llm_error(error_kind::bad_response, "the endpoint answered with something that is not JSON: " +
                                                  body.substr(0, 200));
  chat_response out;
  try {
    out.model = doc.value("model", "");
    if (p == provider::anthropic) {
      for (const auto& block : doc.at("content"))
        if (block.value("type", "") == "text") out.text += block.value("text", "");
      out.finish_reason = normalise_finish(doc.value("stop_reason", ""));
      if (doc.contains("usage")) {
        out.usage.prompt_tokens = reported_tokens(doc["usage"], "input_tokens");
        out.usage.completion_tokens = reported_tokens(doc["usage"], "output_tokens");
      }
    } else {
      const auto& choice = doc.at("choices").at(0);
      const auto& msg = choice.at("message");
      if (msg.contains("content") && msg["content"].is_string()) out.text = msg["content"].get<std::string>();
      if (msg.contains("refusal") && msg["refusal"].is_string() && out.text.empty()) {
        out.text = msg["refusal"].get<std::string>();
        out.finish_reason = "refusal";
      }
      if (out.finish_reason.empty() && choice.contains("finish_reason") && choice["finish_reason"].is_string())
        out.finish_reason = normalise_finish(choice["finish_reason"].get<std::string>());
      if (doc.contains("usage") && doc["usage"].is_object()) {
        out.usage.prompt_tokens = reported_tokens(doc["usage"], "prompt_tokens");
        out.usage.completion_tokens = reported_tokens(doc["usage"], "completion_tokens");
      }
    }
  } catch (const json::exception& e) {
    throw llm_error(error_kind::bad_response,
                    std::string("the endpoint's answer lacks the expected fields (") + e.what() + ")");
  }
  return out;
}

std::string error_message(const std::string& body) {
  const json doc = json::parse(body, nullptr, false);
  if (!doc.is_discarded() && doc.is_object() && doc.contains("error")) {
    const auto& e = doc["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
    if (e.is_string()) return e.get<std::string>();
  }
  return body.substr(0, 300);
}

}  // namespace kblaster::engine::llm
