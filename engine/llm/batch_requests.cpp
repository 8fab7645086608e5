// Batch request writers (batch_requests.h).
#include "engine/llm/batch_requests.h"

#include "engine/llm/provider_codec.h"
#include "support/hash.h"

#include <set>

namespace kblaster::engine::llm {

std::string batch_custom_id(const llm_config& c, const chat_request& r) {
  std::string role;
  for (const char ch : r.agent_role)
    if (role.size() < 40 && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                             ch == '_' || ch == '-'))
      role += ch;
  if (role.empty()) role = "request";
  return role + "-" + support::hex64(support::fnv1a(encode_request(c, r).dump()));
}

namespace {

// Each distinct request once, in the order first asked, with its id.
template <typename Line>
void for_each_distinct(const llm_config& c, const std::vector<chat_request>& requests, Line line) {
  std::set<std::string> seen;
  for (const auto& r : requests)
    if (auto id = batch_custom_id(c, r); seen.insert(id).second) line(id, r);
}

}  // namespace

std::vector<nlohmann::json> openai_batch_lines(const llm_config& c, const std::vector<chat_request>& requests) {
  std::vector<nlohmann::json> out;
  for_each_distinct(c, requests, [&](const std::string& id, const chat_request& r) {
    out.push_back({{"custom_id", id}, {"method", "POST"}, {"url", "/v1/chat/completions"}, {"body", encode_request(c, r)}});
  });
  return out;
}

nlohmann::json anthropic_batch_body(const llm_config& c, const std::vector<chat_request>& requests) {
  auto list = nlohmann::json::array();
  for_each_distinct(c, requests, [&](const std::string& id, const chat_request& r) {
    list.push_back({{"custom_id", id}, {"params", encode_request(c, r)}});
  });
  return {{"requests", std::move(list)}};
}

}  // namespace kblaster::engine::llm
