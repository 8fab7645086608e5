// One HTTP request (POST, GET, a multipart upload) through libcurl, with a whole-request timeout. No retries here (llm_client adds
// them) and no logging (the caller redacts what it reports).
#pragma once

#include <map>
#include <string>

namespace kblaster::engine::llm {

/// What came back, or why nothing did.
struct http_result {
  int status = 0;              ///< 0 when no response arrived
  std::string body;
  std::string retry_after;     ///< the Retry-After header's raw value, if any
  bool timed_out = false;
  std::string transport_error; ///< curl's message when no response arrived
  double elapsed_ms = 0;
};

/// POSTs `body` (JSON) to `url`. Thread-safe: each call uses its own curl handle.
http_result http_post(const std::string& url, const std::map<std::string, std::string>& headers,
                      const std::string& body, double timeout_s);

/// GETs `url` (a batch's status, a results file).
http_result http_get(const std::string& url, const std::map<std::string, std::string>& headers, double timeout_s);

/// POSTs a multipart form: `fields` as text parts and `content` as the file part `file_field`
/// named `file_name` (OpenAI's file upload).
http_result http_post_file(const std::string& url, const std::map<std::string, std::string>& headers,
                           const std::map<std::string, std::string>& fields, const std::string& file_field,
                           const std::string& file_name, const std::string& content, double timeout_s);

/// Seconds to wait from a Retry-After value (delta-seconds or an HTTP-date); negative when absent
/// or unreadable.
double parse_retry_after(const std::string& value);

}  // namespace kblaster::engine::llm
