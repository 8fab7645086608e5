// Workspace trust in the daemon itself: commands that run code are refused until the client
// says the user trusts the workspace, through initializationOptions or kblaster/setTrust,
// never through a setting (which the workspace itself could write).
#include "server_fixture.h"

#include <doctest/doctest.h>

using namespace kblaster::testing;

namespace {

json initialize_with(server_fixture& s, json options) {
  s.request(0, "initialize", {{"capabilities", json::object()}, {"initializationOptions", std::move(options)}});
  json r = s.reply(0);
  s.notify("initialized");
  return r;
}

json run_command(server_fixture& s, int id, const std::string& command) {
  s.request(id, "workspace/executeCommand",
            {{"command", command}, {"arguments", json::array({{{"uri", "file:///nowhere/k.cu"}, {"kernel", "k"}}})}});
  return s.reply(id);
}

std::string message_of(const json& reply) { return reply.at("error").at("message").get<std::string>(); }

// Refused as untrusted: RequestFailed, typed (data.refusal) for the client to word with its own
// button, and a plain message that names no editor (refusal_test.cpp has the words).
bool refused_for_trust(const json& reply) {
  return reply.contains("error") && error_code_of(reply) == -32803 && message_of(reply).find("not trusted") != std::string::npos &&
         reply["error"].value("data", json::object()).value("refusal", "") == "untrusted";
}

}  // namespace

TEST_CASE("a client that says nothing about trust gets no profile and no optimize") {
  server_fixture s;
  s.initialize();
  CHECK(refused_for_trust(run_command(s, 1, "kblaster.profile")));
  CHECK(refused_for_trust(run_command(s, 2, "kblaster.optimize")));
  CHECK(refused_for_trust(run_command(s, 3, "kblaster.applyTechnique")) == false);  // needs a technique: named first
  s.request(4, "workspace/executeCommand",
            {{"command", "kblaster.applyTechnique"},
             {"arguments", json::array({{{"uri", "file:///nowhere/k.cu"}, {"kernel", "k"}, {"technique", "t"}}})}});
  CHECK(refused_for_trust(s.reply(4)));
  CHECK(message_of(run_command(s, 5, "kblaster.optimize")).rfind("Optimize is off: ", 0) == 0);
}

TEST_CASE("initializationOptions.workspaceTrusted lets the commands through") {
  server_fixture s;
  initialize_with(s, {{"workspaceTrusted", true}, {"kblaster", {{"logLevel", "info"}}}});
  // Past the gate: the next check is the document's, which is not open.
  const json r = run_command(s, 1, "kblaster.profile");
  CHECK(error_code_of(r) == -32602);
  CHECK(message_of(r).find("is not open") != std::string::npos);
  CHECK(error_code_of(run_command(s, 2, "kblaster.optimize")) == -32602);
}

TEST_CASE("trust is not a setting: neither initializationOptions' settings nor didChangeConfiguration grant it") {
  server_fixture s;
  initialize_with(s, {{"kblaster", {{"workspaceTrusted", true}}}});
  CHECK(refused_for_trust(run_command(s, 1, "kblaster.optimize")));
  s.notify("workspace/didChangeConfiguration", {{"settings", {{"kblaster", {{"workspaceTrusted", true}}}}}});
  s.notify("workspace/didChangeConfiguration", {{"settings", {{"workspaceTrusted", true}}}});
  CHECK(refused_for_trust(run_command(s, 2, "kblaster.optimize")));
}

TEST_CASE("kblaster/setTrust grants trust later, and can withdraw it") {
  server_fixture s;
  initialize_with(s, {{"workspaceTrusted", false}});
  CHECK(refused_for_trust(run_command(s, 1, "kblaster.optimize")));
  s.notify("kblaster/setTrust", {{"trusted", true}});
  CHECK(error_code_of(run_command(s, 2, "kblaster.optimize")) == -32602);
  s.notify("kblaster/setTrust", {{"trusted", false}});
  CHECK(refused_for_trust(run_command(s, 3, "kblaster.optimize")));
}

TEST_CASE("a workspaceTrusted that is not a boolean is named and counts as untrusted") {
  server_fixture s;
  initialize_with(s, {{"workspaceTrusted", "yes"}});
  const auto warning = s.message("window/logMessage");
  REQUIRE(warning);
  CHECK((*warning)["params"]["message"].get<std::string>().find("initializationOptions.workspaceTrusted must be true or false") !=
        std::string::npos);
  CHECK(refused_for_trust(run_command(s, 1, "kblaster.optimize")));
  // A bad setTrust changes nothing.
  s.notify("kblaster/setTrust", {{"trusted", "yes"}});
  CHECK(refused_for_trust(run_command(s, 2, "kblaster.optimize")));
}

TEST_CASE("createTask proposes an edit and runs nothing: it is not gated") {
  server_fixture s;
  s.initialize();
  const json r = run_command(s, 1, "kblaster.createTask");
  CHECK(error_code_of(r) != -32803);
}
