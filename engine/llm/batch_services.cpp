// OpenAI Batch and Anthropic Message Batches over HTTP.
#include "engine/llm/batch_services.h"
#include "engine/llm/batch_requests.h"
#include "engine/llm/http_transport.h"
#include "engine/llm/provider_codec.h"

namespace kblaster::engine::llm {

namespace {

using json = nlohmann::json;

// The JSON body of a 2xx answer; llm_error naming `what` otherwise.
json answer_of(const http_result& h, const std::string& what) {
  if (h.status == 0)
    throw llm_error(h.timed_out ? error_kind::timeout : error_kind::transport, what + ": " + h.transport_error);
  if (h.status < 200 || h.status >= 300)
    throw llm_error(h.status == 401 || h.status == 403 ? error_kind::auth : error_kind::http,
                    what + ": HTTP " + std::to_string(h.status) + ": " + error_message(h.body), h.status);
  auto j = json::parse(h.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw llm_error(error_kind::bad_response, what + ": the answer is not a JSON object");
  return j;
}

std::string text_of(const http_result& h, const std::string& what) {
  if (h.status < 200 || h.status >= 300) (void)answer_of(h, what);  // throws with the reason
  return h.body;
}

std::string batch_string_field(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::vector<std::string> ids_of(const llm_config& c, const std::vector<chat_request>& requests) {
  std::vector<std::string> ids;
  for (const auto& r : requests) ids.push_back(batch_custom_id(c, r));
  return ids;
}

class openai_batches final : public batch_service {
 public:
  openai_batches(llm_config c, std::string key) : c_(std::move(c)), key_(std::move(key)) {}
  std::string describe() const override { return "OpenAI Batch at " + c_.base_url; }
  std::string results_suffix() const override { return ".results.jsonl"; }

  json submit(const std::vector<chat_request>& requests) override {
    std::string jsonl;
    for (const auto& line : openai_batch_lines(c_, requests)) jsonl += line.dump() + "\n";
    auto auth = headers();
    auth.erase("Content-Type");  // the multipart form sets its own
    const auto file = answer_of(http_post_file(c_.base_url + "/files", auth, {{"purpose", "batch"}}, "file", "requests.jsonl", jsonl,
                                               c_.timeout_s),
                                "uploading the batch input");
    const auto input = batch_string_field(file, "id");
    if (input.empty()) throw llm_error(error_kind::bad_response, "uploading the batch input: no file id in the answer");
    const json create{{"input_file_id", input}, {"endpoint", "/v1/chat/completions"}, {"completion_window", "24h"}};
    const auto batch = answer_of(http_post(c_.base_url + "/batches", headers(), create.dump(), c_.timeout_s), "creating the batch");
    const auto id = batch_string_field(batch, "id");
    if (id.empty()) throw llm_error(error_kind::bad_response, "creating the batch: no batch id in the answer");
    return {{"provider", "openai"}, {"id", id}, {"input_file_id", input}, {"status", batch_string_field(batch, "status")},
            {"custom_ids", ids_of(c_, requests)}};
  }

  std::optional<std::string> collect(json& record) override {
    const auto id = record.value("id", "");
    const auto batch = answer_of(http_get(c_.base_url + "/batches/" + id, headers(), c_.timeout_s), "looking at batch " + id);
    const auto status = batch_string_field(batch, "status");
    record["status"] = status;
    if (status != "completed" && status != "failed" && status != "expired" && status != "cancelled") return std::nullopt;
    std::string text;
    for (const char* file : {"output_file_id", "error_file_id"}) {
      const auto fid = batch_string_field(batch, file);
      if (fid.empty()) continue;
      text += text_of(http_get(c_.base_url + "/files/" + fid + "/content", headers(), c_.timeout_s), "downloading " + fid);
      if (!text.empty() && text.back() != '\n') text += '\n';
    }
    return text;
  }

  void cancel(json& record) override {
    const auto id = record.value("id", "");
    const auto batch =
        answer_of(http_post(c_.base_url + "/batches/" + id + "/cancel", headers(), "{}", c_.timeout_s), "cancelling batch " + id);
    record["status"] = batch_string_field(batch, "status");
  }

 private:
  std::map<std::string, std::string> headers() const { return request_headers(c_, key_); }
  llm_config c_;
  std::string key_;
};

class anthropic_batches final : public batch_service {
 public:
  anthropic_batches(llm_config c, std::string key) : c_(std::move(c)), key_(std::move(key)) {}
  std::string describe() const override { return "Anthropic Message Batches at " + c_.base_url; }
  std::string results_suffix() const override { return ".results.anthropic.jsonl"; }

  json submit(const std::vector<chat_request>& requests) override {
    const auto batch = answer_of(http_post(c_.base_url + "/messages/batches", headers(), anthropic_batch_body(c_, requests).dump(),
                                           c_.timeout_s),
                                 "creating the message batch");
    const auto id = batch_string_field(batch, "id");
    if (id.empty()) throw llm_error(error_kind::bad_response, "creating the message batch: no batch id in the answer");
    return {{"provider", "anthropic"}, {"id", id}, {"status", batch_string_field(batch, "processing_status")},
            {"custom_ids", ids_of(c_, requests)}};
  }

  std::optional<std::string> collect(json& record) override {
    const auto id = record.value("id", "");
    const auto batch =
        answer_of(http_get(c_.base_url + "/messages/batches/" + id, headers(), c_.timeout_s), "looking at message batch " + id);
    record["status"] = batch_string_field(batch, "processing_status");
    if (record["status"] != "ended") return std::nullopt;
    const auto url = batch_string_field(batch, "results_url");
    if (url.empty()) throw llm_error(error_kind::bad_response, "message batch " + id + " ended without a results_url");
    return text_of(http_get(url, headers(), c_.timeout_s), "downloading the results of " + id);
  }

  void cancel(json& record) override {
    const auto id = record.value("id", "");
    const auto batch = answer_of(http_post(c_.base_url + "/messages/batches/" + id + "/cancel", headers(), "{}", c_.timeout_s),
                                 "cancelling message batch " + id);
    record["status"] = batch_string_field(batch, "processing_status");
  }

 private:
  std::map<std::string, std::string> headers() const { return request_headers(c_, key_); }
  llm_config c_;
  std::string key_;
};

}  // namespace

std::unique_ptr<batch_service> make_batch_service(const llm_config& c, std::string key) {
  if (c.api == provider::anthropic) return std::make_unique<anthropic_batches>(c, std::move(key));
  return std::make_unique<openai_batches>(c, std::move(key));
}

}  // namespace kblaster::engine::llm
