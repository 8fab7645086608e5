// JSON-RPC 2.0 messages and the LSP 3.17 error codes.
//
// Pure data and parsing: no I/O, no threads. A message is classified once here so that the
// server can route it without looking at raw JSON again.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

namespace kblaster::protocol {

using json = nlohmann::json;

/// JSON-RPC 2.0 and LSP 3.17 error codes.
enum class error_code : int {
  parse_error = -32700,
  invalid_request = -32600,
  method_not_found = -32601,
  invalid_params = -32602,
  internal_error = -32603,
  server_not_initialized = -32002,
  unknown_error_code = -32001,
  request_failed = -32803,
  server_cancelled = -32802,
  content_modified = -32801,
  request_cancelled = -32800,
};

/// The one exception type that crosses into the dispatcher; it becomes an error response.
class rpc_error : public std::runtime_error {
 public:
  rpc_error(error_code code, const std::string& message, json data = nullptr)
      : std::runtime_error(message), code_(code), data_(std::move(data)) {}
  error_code code() const noexcept { return code_; }
  const json& data() const noexcept { return data_; }

 private:
  error_code code_;
  json data_;
};

/// A request id: a number or a string, kept as JSON so that it is echoed back unchanged.
using request_id = json;

struct request {
  request_id id;
  std::string method;
  json params;  // null when absent
};

struct notification {
  std::string method;
  json params;
};

struct response {
  request_id id;  // null when the peer could not tell which request failed
  std::optional<json> result;
  std::optional<json> error;  // {code, message, data?}
};

/// Something that claims to be JSON-RPC but is not: answered with InvalidRequest.
struct invalid_message {
  request_id id;  // echoed when the broken message had a usable id, else null
  std::string reason;
};

using message = std::variant<request, notification, response, invalid_message>;

/// Classifies a parsed JSON value, moving its params, result or error into the message (a
/// document's whole text travels in didOpen's params). Never throws.
message classify(json value);

/// Parses and classifies a message body. Throws rpc_error(parse_error) for text that is not JSON.
message parse_message(std::string_view body);

json make_request(const request_id& id, std::string_view method, json params);
json make_notification(std::string_view method, json params);
json make_result(const request_id& id, json result);
json make_error(const request_id& id, error_code code, std::string_view text,
                const json& data = nullptr);

/// Stable text form of an id, usable as a map key ("1" and "\"1\"" stay distinct).
std::string id_key(const request_id& id);

}  // namespace kblaster::protocol
