// Refusals typed on the wire, and the daemon's own words named in the connected editor's terms:
// a refused command carries data.refusal for the client to word with its own button; its message
// stays a short, editor-neutral sentence; lens and code action titles say what to do first in
// VS Code's or Neovim's words (refusal.h, optimize_gate.h).
#include "server/features/refusal.h"
#include "server_fixture.h"

#include <doctest/doctest.h>

using namespace kblaster::testing;
using kblaster::server::client_editor;
using kblaster::server::client_editor_of;
using kblaster::server::first_step;
using kblaster::server::refusal;
using kblaster::server::refusal_kind;
using kblaster::server::untrusted_note;

namespace {

constexpr const char* kernel_text = "__global__ void scale_half(float* x, int n) {\n  int i = threadIdx.x;\n  if (i < n) x[i] *= 0.5f;\n}\n";
constexpr const char* uri = "file:///nowhere/scale_half.cu";

json initialize_as(server_fixture& s, json options, json client_info = nullptr) {
  options["kblaster"] = {{"analysis", {{"enabled", false}}}};  // nothing compiles: the titles need no analysis
  json params = {{"capabilities", {{"textDocument", {{"codeAction", {{"disabledSupport", true}}}}}}},
                 {"initializationOptions", std::move(options)}};
  if (!client_info.is_null()) params["clientInfo"] = std::move(client_info);
  s.request(0, "initialize", params);
  json r = s.reply(0);
  s.notify("initialized");
  return r;
}

json code_actions(server_fixture& s, int id) {
  s.request(id, "textDocument/codeAction", {{"textDocument", {{"uri", uri}}},
                                            {"range", {{"start", {{"line", 1}, {"character", 2}}}, {"end", {{"line", 1}, {"character", 2}}}}},
                                            {"context", {{"diagnostics", json::array()}}}});
  return s.reply(id).at("result");
}

json lens_titles(server_fixture& s, int id) {
  s.request(id, "textDocument/codeLens", {{"textDocument", {{"uri", uri}}}});
  const json lenses = s.reply(id).at("result");
  json titles = json::array();
  for (const auto& l : lenses) titles.push_back(l.at("command").at("title"));
  return titles;
}

json optimize(server_fixture& s, int id) {
  s.request(id, "workspace/executeCommand",
            {{"command", "kblaster.optimize"}, {"arguments", json::array({{{"uri", uri}, {"kernel", "scale_half"}}})}});
  return s.reply(id);
}

}  // namespace

TEST_CASE("the client names its editor in initializationOptions, else in clientInfo") {
  CHECK(client_editor_of({{"initializationOptions", {{"editor", "vscode"}}}}) == client_editor::vscode);
  CHECK(client_editor_of({{"initializationOptions", {{"editor", "neovim"}}}, {"clientInfo", {{"name", "Visual Studio Code"}}}}) ==
        client_editor::neovim);
  CHECK(client_editor_of({{"clientInfo", {{"name", "Neovim"}}}}) == client_editor::neovim);
  CHECK(client_editor_of({{"clientInfo", {{"name", "Visual Studio Code"}}}}) == client_editor::vscode);
  CHECK(client_editor_of({{"clientInfo", {{"name", "code-server"}}}}) == client_editor::vscode);
  CHECK(client_editor_of({{"clientInfo", {{"name", "Helix"}}}}) == client_editor::other);
  CHECK(client_editor_of({{"clientInfo", {{"name", 7}}}, {"initializationOptions", {{"editor", 3}}}}) == client_editor::other);
  CHECK(client_editor_of(json::array()) == client_editor::other);
}

TEST_CASE("a refusal's data is typed and its message names no editor") {
  const refusal r{refusal_kind::untrusted, "kblaster.optimize", "scale_half", uri, ""};
  CHECK(r.data() == json{{"refusal", "untrusted"}, {"command", "kblaster.optimize"}, {"kernel", "scale_half"}, {"file", uri}});
  const auto e = r.error();
  CHECK(static_cast<int>(e.code()) == -32803);
  CHECK(e.data() == r.data());
  for (const auto kind : {refusal_kind::untrusted, refusal_kind::no_task, refusal_kind::task_unreadable, refusal_kind::not_saved,
                          refusal_kind::no_gpu, refusal_kind::no_model}) {
    const refusal each{kind, "kblaster.optimize", "scale_half", uri, "the engine's words."};
    const std::string m = each.message();
    CAPTURE(m);
    CHECK(m.find("Manage Workspace Trust") == std::string::npos);
    CHECK(m.find(":Kblaster") == std::string::npos);
    CHECK(m.find("kblaster.") == std::string::npos);
    CHECK(m.find("file://") == std::string::npos);
    CHECK(m.find("..") == std::string::npos);
    CHECK(m.back() == '.');
    CHECK(each.data().at("refusal") == std::string(to_string(kind)));
  }
  CHECK(refusal{refusal_kind::no_gpu, "kblaster.optimize", "", "", "no GPU here: run elsewhere."}.message() ==
        "No GPU here: run elsewhere.");
  CHECK_FALSE(refusal{refusal_kind::no_gpu, "kblaster.optimize", "", "", ""}.data().contains("file"));
}

TEST_CASE("what to do first, and the note on trust, are in the editor's own words") {
  CHECK(first_step(refusal_kind::untrusted, client_editor::vscode) == "trust this folder first");
  CHECK(first_step(refusal_kind::untrusted, client_editor::neovim) == "trust this project first");
  CHECK(first_step(refusal_kind::untrusted, client_editor::other) == "trust this workspace first");
  const auto vscode = untrusted_note("Profiling is off", client_editor::vscode);
  CHECK(vscode.find("Manage Workspace Trust") != std::string::npos);
  CHECK(vscode.find(":KblasterTrust") == std::string::npos);
  const auto neovim = untrusted_note("Profiling is off", client_editor::neovim);
  CHECK(neovim.find(":KblasterTrust") != std::string::npos);
  CHECK(neovim.find("Manage Workspace Trust") == std::string::npos);
}

TEST_CASE("VS Code: Optimize is always in the code actions, never disabled, its title saying what to do first") {
  server_fixture s;
  initialize_as(s, {{"editor", "vscode"}, {"workspaceTrusted", false}});
  s.open(uri, kernel_text);
  json actions = code_actions(s, 1);
  REQUIRE(actions.size() == 2);
  CHECK(actions[0].at("title") == "Optimize scale_half: trust this folder first");
  CHECK(actions[0].at("command").at("command") == "kblaster.optimize");
  CHECK_FALSE(actions[0].contains("disabled"));  // VS Code would leave it out of Ctrl+.
  CHECK(actions[1].at("title") == "Create a task for scale_half");
  CHECK(lens_titles(s, 2).at(1) == "Optimize: trust this folder first");
  // Picking it: refused at once, typed; no progress begins (the client's token sees nothing).
  const json refused = optimize(s, 3);
  CHECK(error_code_of(refused) == -32803);
  CHECK(refused.at("error").at("data").at("refusal") == "untrusted");
  CHECK_FALSE(s.message("$/progress", std::chrono::milliseconds(200)));

  s.notify("kblaster/setTrust", {{"trusted", true}});
  // Recorded results stand in for a GPU (without them, a machine without one hears that first:
  // first_hour_test.cpp): what blocks now is the missing task.
  s.notify("workspace/didChangeConfiguration",
           {{"settings", {{"kblaster", {{"analysis", {{"enabled", false}}}, {"optimize", {{"replayHarness", "/nowhere/loop.jsonl"}}}}}}}});
  actions = code_actions(s, 4);
  CHECK(actions.at(0).at("title") == "Optimize scale_half: create a task or set the program first");
  CHECK(lens_titles(s, 5).at(1) == "Optimize: create a task or set the program first");
  const json no_task = optimize(s, 6);
  CHECK(error_code_of(no_task) == -32803);
  CHECK(no_task.at("error").at("data") ==
        json{{"refusal", "no_task"}, {"command", "kblaster.optimize"}, {"kernel", "scale_half"}, {"file", uri}});
}

TEST_CASE("Neovim (named by clientInfo): the same titles in its words") {
  server_fixture s;
  initialize_as(s, {{"workspaceTrusted", false}}, {{"name", "Neovim"}, {"version", "0.12.0"}});
  s.open(uri, kernel_text);
  CHECK(code_actions(s, 1).at(0).at("title") == "Optimize scale_half: trust this project first");
  s.request(2, "textDocument/hover", {{"textDocument", {{"uri", uri}}}, {"position", {{"line", 0}, {"character", 17}}}});
  const std::string hover = s.reply(2).at("result").at("contents").at("value");
  CHECK(hover.find(":KblasterTrust") != std::string::npos);
  CHECK(hover.find("Manage Workspace Trust") == std::string::npos);
}

TEST_CASE("kblaster/machineStatus says what the machine offers") {
  server_fixture s;
  initialize_as(s, {{"workspaceTrusted", true}});
  s.request(1, "kblaster/machineStatus");
  const json r = s.reply(1, std::chrono::seconds(60)).at("result");
  for (const char* key : {"nvcc", "gpu", "ncu"}) CHECK((r.at(key).is_null() || r.at(key).is_string()));
  CHECK(r.at("trusted") == true);
  CHECK(r.at("replayedGpu") == false);
  CHECK(r.at("missing").is_string());
}
