// JSON-RPC 2.0 message classification and construction.
#include "protocol/json_rpc.h"

namespace kblaster::protocol {
namespace {

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer(); }

bool valid_params(const json& params) {
  // JSON-RPC allows params to be omitted, a structured array, or an object.
  return params.is_null() || params.is_object() || params.is_array();
}

}  // namespace

message classify(json value) {
  if (!value.is_object()) return invalid_message{nullptr, "a message must be a JSON object"};
  const json id = value.contains("id") ? value["id"] : json();
  if (value.value("jsonrpc", json()) != "2.0")
    return invalid_message{valid_id(id) ? id : json(), "\"jsonrpc\" must be \"2.0\""};

  if (value.contains("method")) {
    const json& method = value["method"];
    if (!method.is_string())
      return invalid_message{valid_id(id) ? id : json(), "\"method\" must be a string"};
    json params = value.contains("params") ? std::move(value["params"]) : json();
    if (!valid_params(params))
      return invalid_message{valid_id(id) ? id : json(), "\"params\" must be an object or array"};
    if (!value.contains("id")) return notification{method.get<std::string>(), std::move(params)};
    if (!valid_id(id)) return invalid_message{nullptr, "\"id\" must be an integer or a string"};
    return request{id, method.get<std::string>(), std::move(params)};
  }

  if (value.contains("result") || value.contains("error")) {
    if (!id.is_null() && !valid_id(id))
      return invalid_message{nullptr, "\"id\" must be an integer or a string"};
    response r{id, std::nullopt, std::nullopt};
    if (value.contains("error")) r.error = std::move(value["error"]);
    else r.result = std::move(value["result"]);
    return r;
  }
  return invalid_message{valid_id(id) ? id : json(), "neither a request, a notification nor a response"};
}

message parse_message(std::string_view body) {
  json value = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) throw rpc_error(error_code::parse_error, "message body is not valid JSON");
  return classify(std::move(value));
}

json make_request(const request_id& id, std::string_view method, json params) {
  json m = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) m["params"] = std::move(params);
  return m;
}

json make_notification(std::string_view method, json params) {
  json m = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) m["params"] = std::move(params);
  return m;
}

json make_result(const request_id& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json make_error(const request_id& id, error_code code, std::string_view text, const json& data) {
  json error = {{"code", static_cast<int>(code)}, {"message", text}};
  if (!data.is_null()) error["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

std::string id_key(const request_id& id) { return id.dump(); }

}  // namespace kblaster::protocol
