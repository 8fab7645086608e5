// Keeps API keys out of everything the LLM layer writes: logs, error messages, cassettes.
#pragma once

#include <mutex>
#include <string>
#include <vector>

namespace kblaster::engine::llm {

/// Replaces every known secret in a text with "[redacted]". Thread-safe.
class redactor {
 public:
  /// Adds a secret to hide (ignored when shorter than 4 characters, which would redact noise).
  void add_secret(const std::string& secret);
  /// `text` with every secret replaced, plus anything shaped like an Authorization or x-api-key
  /// header value or a "sk-..." key, so that a key the client never saw is hidden too.
  std::string operator()(std::string text) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> secrets_;
};

}  // namespace kblaster::engine::llm
