// A new user's first hour on a machine without a GPU (issue 52): the GPU is the first thing said
// when it is what blocks Optimize, with the example this machine can replay; that example,
// replayed in one command, ends in its real result, said to be replayed; a replay that holds
// nothing of the kernel ends saying what stopped it, never a speedup; a model without its key is
// refused naming the provider, the variable and (for a Claude model) the provider it belongs to,
// once. GPU results are the H100's recordings in tests/optimize/recordings.
#include "server_fixture.h"
#include "support/files.h"
#include "tests/temp_dir.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

using namespace kblaster::testing;
namespace fs = std::filesystem;

namespace {

const fs::path source_root = KBLASTER_SOURCE_DIR;


std::string uri_of(const fs::path& p) { return "file://" + p.string(); }

void start(server_fixture& s, const json& settings) {
  s.request(0, "initialize", {{"capabilities", json::object()},
                              {"initializationOptions", {{"workspaceTrusted", true}, {"editor", "vscode"}, {"kblaster", settings}}}});
  s.reply(0);
  s.notify("initialized");
}

bool machine_has_gpu(server_fixture& s) {
  s.request(900, "kblaster/machineStatus");
  return !s.reply(900, std::chrono::seconds(60)).at("result").at("gpu").is_null();
}

// Runs `command` with a client token; returns the reply and fills `progress` with the $/progress
// values seen (edits the server asks for are accepted, as a client would).
json run(server_fixture& s, int id, const std::string& command, const json& args, std::vector<json>& progress) {
  const std::string token = "first-hour-" + std::to_string(id);
  s.request(id, "workspace/executeCommand", {{"command", command}, {"arguments", json::array({args})}, {"workDoneToken", token}});
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (std::chrono::steady_clock::now() < until) {
    auto m = s.transport().take([&](const json& j) {
      return (!j.contains("method") && j.value("id", json()) == id) || j.value("method", "") == "workspace/applyEdit" ||
             (j.value("method", "") == "$/progress" && j["params"].value("token", json()) == token);
    }, std::chrono::milliseconds(200));
    if (!m) continue;
    if (!m->contains("method")) return *m;
    if ((*m)["method"] == "$/progress") progress.push_back((*m)["params"]["value"]);
    else s.send({{"jsonrpc", "2.0"}, {"id", (*m)["id"]}, {"result", {{"applied", true}}}});
  }
  throw std::runtime_error("no reply to " + command);
}

}  // namespace

TEST_CASE("no GPU: said before the missing task, with the example this machine can replay") {
  temp_dir w("first-hour");
  server_fixture s;
  start(s, {{"analysis", {{"enabled", false}}}});
  if (machine_has_gpu(s)) {
    MESSAGE("this machine has a GPU: the no-GPU order is checked on machines without one");
    return;
  }
  const auto file = w.path / "add_one.cu";
  s.open(uri_of(file), "__global__ void add_one(float* x, int n) {\n  int i = threadIdx.x;\n  if (i < n) x[i] += 1.0f;\n}\n");
  s.request(1, "textDocument/codeLens", {{"textDocument", {{"uri", uri_of(file)}}}});
  const json lenses = s.reply(1).at("result");
  REQUIRE(lenses.size() == 2);
  CHECK(lenses[1].at("command").at("title") == "Optimize: no GPU here");
  s.request(2, "workspace/executeCommand",
            {{"command", "kblaster.optimize"}, {"arguments", json::array({{{"uri", uri_of(file)}, {"kernel", "add_one"}}})}});
  const json refused = s.reply(2);
  REQUIRE(refused.contains("error"));
  const json data = refused["error"]["data"];
  CHECK(data.at("refusal") == "no_gpu");
  CHECK(data.at("example") == "row_softmax");
  CHECK(refused["error"]["message"] == "This machine has no NVIDIA GPU (nvidia-smi found none) to measure candidates on.");
  CHECK_FALSE(s.message("$/progress", std::chrono::milliseconds(200)));
}

TEST_CASE("kblaster.replayExample: the example replayed with its recorded settings, to its real result, said so") {
  temp_dir w("first-hour");
  server_fixture s;
  // Settings a user may have that would make the replay miss: they do not apply to the example.
  start(s, {{"analysis", {{"enabled", false}}}, {"optimize", {{"outputDir", (w.path / "runs").string()}, {"breadth", 8}, {"depth", 4}}}});
  std::vector<json> progress;
  const json r = run(s, 3, "kblaster.replayExample", json::object(), progress);
  REQUIRE(r.contains("result"));
  const json& result = r["result"];
  CHECK(result.at("example") == "row_softmax");
  CHECK(result.at("stopReason") == "finished");
  CHECK_FALSE(result.contains("error"));
  CHECK(result.at("replayed") == true);
  CHECK(result.at("bestSpeedup").get<double>() > 1.5);
  CHECK(result.at("recordedOn") == "NVIDIA H100 80GB HBM3");
  const std::string message = result.at("message");
  CAPTURE(message);
  CHECK(message.rfind("[REPLAYED] optimized row_softmax: ", 0) == 0);
  CHECK(message.find("faster, replayed from a recording made on an NVIDIA H100 80GB HBM3, not measured here") != std::string::npos);
  const fs::path best = result.at("bestPath").get<std::string>(), input = result.at("inputPath").get<std::string>();
  CHECK(best.string().rfind((w.path / "runs").string(), 0) == 0);
  CHECK(kblaster::support::read_file(best) != kblaster::support::read_file(input));
  CHECK(kblaster::support::read_file(input) == kblaster::support::read_file(source_root / "examples/tasks/row_softmax/kernel.cu"));  // a copy, untouched
  REQUIRE(progress.size() >= 2);
  CHECK(progress.front().at("kind") == "begin");
  CHECK(progress.front().at("title").get<std::string>().find("REPLAYED results, recorded on an NVIDIA H100") != std::string::npos);
  CHECK(progress.back().at("kind") == "end");
  CHECK(progress.back().at("message").get<std::string>().find("x, replayed from a recording made on an NVIDIA H100") != std::string::npos);
  // An example this daemon does not have is named.
  s.request(4, "workspace/executeCommand", {{"command", "kblaster.replayExample"}, {"arguments", json::array({{{"example", "nope"}}})}});
  CHECK(error_code_of(s.reply(4)) == -32602);
}

TEST_CASE("a replay with no recording of the kernel ends saying what stopped it, not \"done\" with a speedup") {
  temp_dir w("first-hour");
  fs::copy(source_root / "examples/tasks/row_softmax", w.path / "row_softmax", fs::copy_options::recursive);
  const auto kernel = w.path / "row_softmax" / "kernel.cu";
  server_fixture s;
  start(s, {{"analysis", {{"enabled", false}}},
            {"knowledgeBase", (w.path / "kb.sqlite").string()},
            {"optimize", {{"replayHarness", (source_root / "tests/optimize/recordings/loop-row_softmax.jsonl").string()},
                          {"outputDir", (w.path / "runs").string()}}}});
  // The recorded kernel, with the user's own settings (breadth 8, no model: the mechanical tier):
  // the input replays, the candidates were never recorded.
  s.open(uri_of(kernel), kblaster::support::read_file(kernel));
  std::vector<json> progress;
  const json r = run(s, 5, "kblaster.optimize", {{"uri", uri_of(kernel)}, {"kernel", "row_softmax"}}, progress);
  CAPTURE(r.dump());
  REQUIRE(r.contains("result"));
  const json& result = r["result"];
  CHECK(result.at("stopReason").get<std::string>().rfind("error: replay: no recording of task 'row_softmax'", 0) == 0);
  CHECK(result.at("error").get<std::string>().rfind("replay: no recording of task 'row_softmax'", 0) == 0);
  const std::string message = result.at("message");
  CAPTURE(message);
  CHECK(message.rfind("[REPLAYED] optimizing row_softmax stopped before any result: replay: no recording", 0) == 0);
  CHECK(message.find("1.00x") == std::string::npos);
  CHECK(message.find("no faster version") == std::string::npos);
  REQUIRE_FALSE(progress.empty());
  const std::string end = progress.back().value("message", "");
  CAPTURE(end);
  CHECK(progress.back().at("kind") == "end");
  CHECK(end.rfind("stopped: replay: no recording", 0) == 0);
  CHECK(end.find("measured") == std::string::npos);
}

TEST_CASE("a model without its key: the provider, the variable, where it must be set, and the provider a Claude model needs") {
  temp_dir w("first-hour");
  // Nothing of this machine's own configuration: no key, no config file.
  ::unsetenv("OPENAI_API_KEY");
  ::unsetenv("KBLASTER_LLM_PROVIDER");
  ::unsetenv("KBLASTER_LLM_KEY_ENV");
  ::unsetenv("KBLASTER_LLM_MODEL");
  ::setenv("XDG_CONFIG_HOME", (w.path / "config").c_str(), 1);
  fs::copy(source_root / "examples/tasks/vector_add", w.path / "vector_add", fs::copy_options::recursive);
  const auto kernel = w.path / "vector_add" / "kernel.cu";
  server_fixture s;
  start(s, {{"analysis", {{"enabled", false}}},
            {"knowledgeBase", (w.path / "kb.sqlite").string()},
            {"optimize", {{"replayHarness", (source_root / "tests/optimize/recordings/loop-vector_add.jsonl").string()},
                          {"outputDir", (w.path / "runs").string()}}},
            {"llm", {{"model", "claude-sonnet-4-5"}}}});
  s.open(uri_of(kernel), kblaster::support::read_file(kernel));
  s.request(6, "workspace/executeCommand",
            {{"command", "kblaster.optimize"}, {"arguments", json::array({{{"uri", uri_of(kernel)}, {"kernel", "vector_add"}}})}});
  const json refused = s.reply(6, std::chrono::seconds(120));
  REQUIRE(refused.contains("error"));
  CHECK(error_code_of(refused) == -32803);
  const json data = refused["error"]["data"];
  CHECK(data == json{{"refusal", "no_model"}, {"command", "kblaster.optimize"}, {"kernel", "vector_add"}, {"file", uri_of(kernel)},
                     {"detail", "no API key: the environment variable OPENAI_API_KEY (set by default) is unset or empty"},
                     {"model", "claude-sonnet-4-5"}, {"provider", "openai"}, {"providerFrom", "default"},
                     {"keyEnv", "OPENAI_API_KEY"}, {"keyEnvFrom", "default"}, {"reason", "no_key"},
                     {"suggestedProvider", "anthropic"}, {"suggestedKeyEnv", "ANTHROPIC_API_KEY"}});
  const std::string message = refused["error"]["message"];
  CAPTURE(message);
  CHECK(message ==
        "The model claude-sonnet-4-5 cannot be used: its API key is read from the environment variable OPENAI_API_KEY "
        "(llm.provider openai, the default), which is unset or empty in the environment of the process that runs the KernelBlaster "
        "daemon. claude-sonnet-4-5 looks like an Anthropic model: set llm.provider to anthropic (its key: ANTHROPIC_API_KEY).");
  CHECK(message.find("cannot be used", message.find("cannot be used") + 1) == std::string::npos);
}
