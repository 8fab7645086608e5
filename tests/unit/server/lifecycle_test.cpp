// Lifecycle and dispatch: initialize, errors by code, exactly one reply, shutdown/exit.
#include "server_fixture.h"

#include <doctest/doctest.h>

using namespace kblaster::testing;
using kblaster::server::execution;
using kblaster::server::request_context;

TEST_CASE("requests before initialize get ServerNotInitialized; notifications are dropped") {
  server_fixture s;
  s.notify("textDocument/didOpen", {{"textDocument", {{"uri", "file:///a.cu"}, {"languageId", "cuda"}, {"version", 1}, {"text", "x"}}}});
  s.request(1, "textDocument/hover", {});
  CHECK(error_code_of(s.reply(1)) == -32002);
  const json init = s.initialize();
  CHECK(init["result"]["capabilities"]["hoverProvider"] == true);
  CHECK(init["result"]["capabilities"]["textDocumentSync"]["change"] == 2);
  CHECK(init["result"]["serverInfo"]["name"] == "kblaster");
  // The didOpen before initialize was dropped, so the document is unknown.
  s.request(2, "textDocument/documentSymbol", {{"textDocument", {{"uri", "file:///a.cu"}}}});
  CHECK(error_code_of(s.reply(2)) == -32602);
}

TEST_CASE("a second initialize is refused") {
  server_fixture s;
  s.initialize();
  s.request(5, "initialize", {{"capabilities", json::object()}});
  CHECK(error_code_of(s.reply(5)) == -32600);
}

TEST_CASE("unknown methods, unknown $/ notifications, invalid params") {
  server_fixture s;
  s.initialize();
  s.request(1, "textDocument/teleport");
  CHECK(error_code_of(s.reply(1)) == -32601);
  s.notify("$/somethingNew", {{"x", 1}});
  s.request("str-id", "textDocument/hover", {{"textDocument", {{"uri", "file:///x.cu"}}}});
  const json r = s.reply("str-id");
  CHECK(error_code_of(r) == -32602);
  CHECK(r["error"]["message"].get<std::string>().find("'position.line'") != std::string::npos);
  s.request(2, "textDocument/hover", {{"textDocument", {{"uri", 42}}}, {"position", {{"line", 0}, {"character", 0}}}});
  CHECK(s.reply(2)["error"]["message"].get<std::string>().find("'textDocument.uri' must be a string") != std::string::npos);
  s.request(3, "textDocument/hover", {{"textDocument", {{"uri", "file:///x.cu"}}}, {"position", "x"}});
  CHECK(s.reply(3)["error"]["message"] == "invalid params: 'position' must be an object");
  // Nothing was sent for the $/ notification: only the replies above came.
  CHECK(s.transport().all_received().empty());
}

TEST_CASE("bodies that are not JSON get ParseError and the server reads on") {
  server_fixture s;
  s.initialize();
  s.send_raw(kblaster::protocol::frame("{not json"));
  const json parse_error = s.reply(nullptr);
  CHECK(error_code_of(parse_error) == -32700);
  s.send_raw(kblaster::protocol::frame(R"({"id":3,"method":"shutdown"})"));  // no jsonrpc member
  CHECK(error_code_of(s.reply(3)) == -32600);
  s.send_raw("Content-Length: nope\r\n\r\n{}");
  s.request(4, "shutdown", nullptr);
  CHECK(s.reply(4)["result"].is_null());
}

TEST_CASE("every request is answered exactly once, also when a handler throws") {
  server_fixture s([](kblaster::server::lsp_server& server) {
    server.features().on_request("test/throw", execution::concurrent,
                                 [](const json&, request_context&) -> json { throw std::runtime_error("boom"); });
    server.features().on_request("test/throwInt", execution::concurrent,
                                 [](const json&, request_context&) -> json { throw 42; });
  });
  s.initialize();
  for (int i = 1; i <= 50; ++i) s.request(i, i % 2 ? "test/throw" : "test/throwInt");
  for (int i = 1; i <= 50; ++i) {
    const json r = s.reply(i);
    CHECK(error_code_of(r) == -32603);
  }
  // No second reply; the failures were also logged to the client (window/logMessage).
  CHECK_FALSE(s.transport().take([](const json& j) { return !j.contains("method"); }, std::chrono::milliseconds(100)));
  CHECK(s.message("window/logMessage"));
}

TEST_CASE("a duplicate in-flight id is refused without disturbing the original") {
  server_fixture s;
  s.initialize();
  s.request(9, "workspace/executeCommand", {{"command", "kblaster.selfTest"}, {"arguments", {{{"steps", 2}, {"stepMs", 50}}}}});
  s.request(9, "workspace/executeCommand", {{"command", "kblaster.selfTest"}, {"arguments", {{{"steps", 1}, {"stepMs", 0}}}}});
  CHECK(error_code_of(s.reply(9)) == -32600);
  CHECK(s.reply(9)["result"]["completedSteps"] == 2);
}

TEST_CASE("shutdown then exit ends with 0; requests after shutdown are refused") {
  server_fixture s;
  s.initialize();
  s.request(1, "shutdown", nullptr);
  CHECK(s.reply(1)["result"].is_null());
  s.request(2, "textDocument/hover", {});
  CHECK(error_code_of(s.reply(2)) == -32600);
  s.notify("exit");
  CHECK(s.wait_exit() == 0);
}

TEST_CASE("exit without shutdown ends with 1") {
  server_fixture s;
  s.initialize();
  s.notify("exit");
  CHECK(s.wait_exit() == 1);
}

TEST_CASE("settings from initializationOptions and didChangeConfiguration are merged") {
  server_fixture s;
  s.request(0, "initialize", {{"capabilities", json::object()}, {"initializationOptions", {{"logLevel", "debug"}, {"a", 1}}}});
  s.reply(0);
  s.notify("workspace/didChangeConfiguration", {{"settings", {{"kblaster", {{"b", 2}}}}}});
  s.notify("workspace/didChangeConfiguration", {{"settings", {{"kblaster", {{"logLevel", "loud"}}}}}});
  // An unknown level is reported to the client as a warning.
  const auto warning = s.message("window/logMessage");
  REQUIRE(warning);
  CHECK((*warning)["params"]["message"].get<std::string>().find("loud") != std::string::npos);
}
