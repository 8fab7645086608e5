// Plain types of the model interface: a chat request as the agents write it, the answer with its
// token usage, and the one exception type that crosses the LLM boundary.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kblaster::engine::llm {

/// One turn of a conversation; role is "user" or "assistant" (the system prompt is separate).
struct chat_message {
  std::string role;
  std::string content;
};

/// What an agent asks for. Provider-neutral: the codec turns it into OpenAI or Anthropic JSON.
struct chat_request {
  std::string agent_role;  ///< which agent asks (state_extractor, planner, ...): usage is kept per role
  std::string system;
  std::vector<chat_message> messages;
  int max_tokens = 0;        ///< 0: the configured default
  double temperature = -1;   ///< negative: the configured default
};

/// Tokens one call consumed, as the endpoint reported them (estimated when it did not).
struct token_usage {
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  bool estimated = false;
  std::int64_t total() const noexcept { return prompt_tokens + completion_tokens; }
};

/// The model's answer.
struct chat_response {
  std::string text;
  std::string finish_reason;  ///< normalised: "stop", "length", "refusal", or the provider's word
  std::string model;
  token_usage usage;
  double latency_ms = 0;
  int attempts = 1;           ///< HTTP tries it took (retries included)
};

/// Why a call failed; callers branch on this, users read the message (never holding a key).
enum class error_kind {
  config,           ///< bad or missing configuration (no key in the named variable, bad URL)
  auth,             ///< 401/403: the key was refused
  http,             ///< another non-retryable HTTP status (400, 404, ...)
  retries_exhausted,///< 429/5xx/timeouts persisted through every retry
  timeout,          ///< the last try timed out
  transport,        ///< connection refused, DNS, TLS
  bad_response,     ///< the body was not the provider's JSON shape
  budget_exceeded,  ///< the job's token or cost budget is spent: stop the job
  replay_miss,      ///< replay had no recorded answer for this request
};

/// The one exception type thrown by the LLM layer. Messages are redacted before construction.
class llm_error : public std::runtime_error {
 public:
  llm_error(error_kind kind, const std::string& message, int http_status = 0)
      : std::runtime_error(message), kind_(kind), http_status_(http_status) {}
  error_kind kind() const noexcept { return kind_; }
  int http_status() const noexcept { return http_status_; }

 private:
  error_kind kind_;
  int http_status_;
};

/// "config", "auth", ... for messages and JSON.
const char* to_string(error_kind k) noexcept;

}  // namespace kblaster::engine::llm
