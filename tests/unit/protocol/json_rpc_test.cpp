// JSON-RPC 2.0 classification.
#include "protocol/json_rpc.h"

#include <doctest/doctest.h>

using namespace kblaster::protocol;

TEST_CASE("requests, notifications and responses are told apart") {
  CHECK(std::holds_alternative<request>(parse_message(R"({"jsonrpc":"2.0","id":1,"method":"m"})")));
  CHECK(std::holds_alternative<request>(parse_message(R"({"jsonrpc":"2.0","id":"a","method":"m","params":[]})")));
  CHECK(std::holds_alternative<notification>(parse_message(R"({"jsonrpc":"2.0","method":"m","params":{}})")));
  CHECK(std::holds_alternative<response>(parse_message(R"({"jsonrpc":"2.0","id":1,"result":null})")));
  CHECK(std::holds_alternative<response>(parse_message(R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}})")));
}

TEST_CASE("text that is not JSON is a ParseError") {
  for (const char* bad : {"", "{", "nul", "{\"a\":}", "\xff\xfe"}) {
    CAPTURE(bad);
    try {
      parse_message(bad);
      FAIL("no exception");
    } catch (const rpc_error& e) {
      CHECK(e.code() == error_code::parse_error);
    }
  }
}

TEST_CASE("JSON that is not JSON-RPC is an invalid message that keeps a usable id") {
  auto m = parse_message(R"({"id":7,"method":"m"})");  // no "jsonrpc"
  REQUIRE(std::holds_alternative<invalid_message>(m));
  CHECK(std::get<invalid_message>(m).id == 7);
  CHECK(std::holds_alternative<invalid_message>(parse_message("[1,2]")));
  CHECK(std::holds_alternative<invalid_message>(parse_message(R"({"jsonrpc":"2.0","id":1,"method":3})")));
  CHECK(std::holds_alternative<invalid_message>(parse_message(R"({"jsonrpc":"2.0","id":1,"method":"m","params":5})")));
  auto bad_id = parse_message(R"({"jsonrpc":"2.0","id":{"x":1},"method":"m"})");
  REQUIRE(std::holds_alternative<invalid_message>(bad_id));
  CHECK(std::get<invalid_message>(bad_id).id.is_null());
  CHECK(std::holds_alternative<invalid_message>(parse_message(R"({"jsonrpc":"2.0","id":1.5,"method":"m"})")));
}

TEST_CASE("errors carry the LSP codes") {
  const json e = make_error(3, error_code::request_cancelled, "cancelled");
  CHECK(e["error"]["code"] == -32800);
  CHECK(e["id"] == 3);
  CHECK(static_cast<int>(error_code::content_modified) == -32801);
  CHECK(static_cast<int>(error_code::server_not_initialized) == -32002);
}

TEST_CASE("ids of different types are different keys") { CHECK(id_key(json(1)) != id_key(json("1"))); }
