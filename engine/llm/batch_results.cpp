// Batch results readers (batch_results.h).
#include "engine/llm/batch_results.h"

#include "engine/llm/provider_codec.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>

namespace kblaster::engine::llm {

using json = nlohmann::json;

const char* to_string(batch_outcome o) noexcept {
  switch (o) {
    case batch_outcome::succeeded: return "succeeded";
    case batch_outcome::errored: return "errored";
    case batch_outcome::expired: return "expired";
    case batch_outcome::canceled: return "canceled";
  }
  return "errored";
}

namespace {

std::string string_at(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
}

// Files an answer: only for a request that was sent; a success replaces a failure, and the
// first success stays (a model's second answer to the same prompt is not the one the run saw
// first, and a resumed run must reach the same state).
void file_answer(batch_reading& r, batch_answer a, const std::set<std::string>& sent) {
  if (!sent.count(a.custom_id)) {
    if (std::find(r.unknown_ids.begin(), r.unknown_ids.end(), a.custom_id) == r.unknown_ids.end())
      r.unknown_ids.push_back(a.custom_id);
    return;
  }
  auto [it, inserted] = r.answers.try_emplace(a.custom_id, a);
  if (inserted) return;
  ++r.duplicates;
  if (it->second.outcome != batch_outcome::succeeded && a.outcome == batch_outcome::succeeded) it->second = std::move(a);
}

// A successful body read by the provider's codec: an answer that is not the provider's shape
// is an error of that request, not of the file.
void decode_into(batch_answer& a, provider p, const json& body) {
  try {
    a.response = decode_response(p, body.dump());
    a.outcome = batch_outcome::succeeded;
  } catch (const llm_error& e) {
    a.outcome = batch_outcome::errored;
    a.error = e.what();
  }
}

// Reads every non-empty line as one JSON object with a string custom_id and hands it to `one`,
// which fills the answer or returns why the line is no answer.
batch_reading read_lines(const std::string& jsonl, const std::set<std::string>& sent,
                         const std::function<std::string(const json&, batch_answer&)>& one) {
  batch_reading r;
  std::size_t start = 0;
  for (int number = 1; start < jsonl.size(); ++number) {
    std::size_t end = jsonl.find('\n', start);
    if (end == std::string::npos) end = jsonl.size();
    const std::string_view line(jsonl.data() + start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const json doc = json::parse(line, nullptr, false);
    const auto where = "line " + std::to_string(number) + ": ";
    if (doc.is_discarded() || !doc.is_object()) {
      r.unreadable.push_back(where + "not a JSON object");
      continue;
    }
    batch_answer a;
    a.custom_id = string_at(doc, "custom_id");
    if (a.custom_id.empty()) {
      r.unreadable.push_back(where + "no custom_id");
      continue;
    }
    if (auto why = one(doc, a); !why.empty()) {
      r.unreadable.push_back(where + why);
      continue;
    }
    file_answer(r, std::move(a), sent);
  }
  return r;
}

}  // namespace

void batch_reading::merge(batch_reading other) {
  // `other` kept only answers to requests that were sent.
  for (auto& [id, a] : other.answers) file_answer(*this, std::move(a), std::set<std::string>{id});
  duplicates += other.duplicates;
  for (auto& id : other.unknown_ids)
    if (std::find(unknown_ids.begin(), unknown_ids.end(), id) == unknown_ids.end()) unknown_ids.push_back(std::move(id));
  for (auto& u : other.unreadable) unreadable.push_back(std::move(u));
}

batch_reading read_openai_batch_results(const std::string& jsonl, const std::set<std::string>& sent) {
  return read_lines(jsonl, sent, [](const json& doc, batch_answer& a) -> std::string {
    if (doc.contains("error") && doc["error"].is_object()) {
      const auto code = string_at(doc["error"], "code");
      a.outcome = code == "batch_expired" ? batch_outcome::expired
                  : code == "batch_cancelled" ? batch_outcome::canceled
                                              : batch_outcome::errored;
      a.error = string_at(doc["error"], "message");
      if (a.error.empty()) a.error = code.empty() ? std::string("an error without a message") : code;
      return {};
    }
    if (!doc.contains("response") || !doc["response"].is_object()) return "neither a response nor an error";
    const auto& response = doc["response"];
    const auto& status = response.contains("status_code") ? response["status_code"] : json();
    if (!status.is_number_integer()) return "a response without an integer status_code";
    const auto code = status.get<std::int64_t>();
    const json body = response.contains("body") ? response["body"] : json();
    if (code >= 200 && code < 300) {
      if (!body.is_object()) return "a 2xx response without a body object";
      decode_into(a, provider::openai, body);
      return {};
    }
    a.outcome = batch_outcome::errored;
    a.error = "HTTP " + std::to_string(code) + ": " + (body.is_null() ? std::string("no body") : error_message(body.dump()));
    return {};
  });
}

batch_reading read_anthropic_batch_results(const std::string& jsonl, const std::set<std::string>& sent) {
  return read_lines(jsonl, sent, [](const json& doc, batch_answer& a) -> std::string {
    if (!doc.contains("result") || !doc["result"].is_object()) return "no result object";
    const auto& result = doc["result"];
    const auto type = string_at(result, "type");
    if (type == "succeeded") {
      if (!result.contains("message") || !result["message"].is_object()) return "a success without a message";
      decode_into(a, provider::anthropic, result["message"]);
    } else if (type == "errored") {
      a.outcome = batch_outcome::errored;
      // {"type": "error", "error": {"type": "invalid_request_error", "message": ...}}
      const json error = result.contains("error") ? result["error"] : json();
      a.error = string_at(error.is_object() && error.contains("error") ? error["error"] : error, "message");
      if (a.error.empty()) a.error = "an error without a message";
    } else if (type == "expired") {
      a.outcome = batch_outcome::expired;
      a.error = "the batch expired before this request ran";
    } else if (type == "canceled") {
      a.outcome = batch_outcome::canceled;
      a.error = "the batch was cancelled before this request ran";
    } else {
      return "a result of unknown type '" + type.substr(0, 40) + "'";
    }
    return {};
  });
}

}  // namespace kblaster::engine::llm
