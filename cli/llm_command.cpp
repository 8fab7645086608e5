// `kblaster llm`: check that the configured model endpoint answers (`llm check`), and serve a
// recorded cassette on loopback as an OpenAI-compatible endpoint (`llm serve-cassette`), for
// offline demos and reproducing a recorded run.
#include "cli/command_registry.h"
#include "engine/llm/llm_client.h"
#include "engine/llm/loopback_server.h"
#include "support/stop_wait.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

namespace {

using namespace kblaster::engine::llm;
using json = nlohmann::json;

struct llm_options {
  llm_flags flags;
  std::string config_file;
  double timeout_s = 0;
  bool json_out = false;
  std::string cassette;
  bool by_fingerprint = false;
};

llm_config configure(const llm_options& o) {
  const auto file = read_config_file(o.config_file.empty() ? default_config_file() : std::filesystem::path(o.config_file));
  llm_config c = resolve_config(file, {}, process_environment(), o.flags);
  if (o.timeout_s > 0) {
    c.timeout_s = o.timeout_s;
    c.origin["timeout_s"] = "command line";
  }
  // A check is one short request: do not sit through a long back-off.
  c.max_retries = std::min(c.max_retries, 1);
  c.backoff_base_ms = std::min(c.backoff_base_ms, 500.0);
  return c;
}

int run_check(const llm_options& o) {
  json report;
  try {
    const llm_config c = configure(o);
    report = {{"provider", to_string(c.api)}, {"endpoint", c.endpoint_url()}, {"model", c.model},
              {"key_env", c.key_env}, {"origin", c.origin}};
    auto client = make_http_client(c, process_environment(),
                                   [&](const std::string& line) { if (!o.json_out) std::cerr << "kblaster llm: " << line << "\n"; });
    chat_request r;
    r.agent_role = "check";
    r.system = "You are a health check. Follow the instruction exactly.";
    r.messages = {{"user", "Reply with the single word OK."}};
    r.max_tokens = 16;
    r.temperature = 0;
    const auto answer = client->complete(r);
    report["ok"] = true;
    report["answer"] = answer.text.substr(0, 200);
    report["answered_by"] = answer.model;
    report["latency_ms"] = static_cast<long long>(answer.latency_ms);
    report["tokens"] = {{"prompt", answer.usage.prompt_tokens}, {"completion", answer.usage.completion_tokens}};
    if (o.json_out) std::cout << report.dump(2) << "\n";
    else
      std::cout << "ok: " << to_string(c.api) << " endpoint " << c.endpoint_url() << " answered in "
                << static_cast<long long>(answer.latency_ms) << " ms\n  model: " << c.model
                << (answer.model.empty() || answer.model == c.model ? "" : " (served by " + answer.model + ")")
                << "\n  key from: $" << c.key_env << "\n  answer: " << answer.text.substr(0, 80) << "\n";
    return 0;
  } catch (const llm_error& e) {
    report["ok"] = false;
    report["error"] = {{"kind", to_string(e.kind())}, {"message", e.what()}};
    if (o.json_out) std::cout << report.dump(2) << "\n";
    else {
      std::cerr << "kblaster llm check: " << to_string(e.kind()) << ": " << e.what() << "\n";
      if (report.contains("endpoint"))
        std::cerr << "  (provider " << report["provider"].get<std::string>() << ", endpoint "
                  << report["endpoint"].get<std::string>() << ", model " << report["model"].get<std::string>()
                  << ", key from $" << report["key_env"].get<std::string>() << ")\n";
    }
    return 1;
  }
}

std::atomic<bool> stop_serving{false};

int run_serve(const llm_options& o) {
  try {
    loopback_server server(read_cassette(o.cassette), o.by_fingerprint ? replay_mode::by_fingerprint : replay_mode::in_order);
    std::cout << server.base_url() << std::endl;
    std::cerr << "kblaster llm: serving " << server.answers_left() << " recorded answers from " << o.cassette
              << " on " << server.base_url() << " (Ctrl-C stops)\n";
    std::signal(SIGINT, [](int) { stop_serving = true; });
    std::signal(SIGTERM, [](int) { stop_serving = true; });
    // A signal handler sets only a flag, and the server counts its answers: both looked at every 100 ms.
    kblaster::support::wait_until([&server] { return stop_serving || server.answers_left() == 0; }, {}, std::chrono::milliseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the last answer go out
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "kblaster llm serve-cassette: " << e.what() << "\n";
    return 1;
  }
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto* app = root.add_subcommand("llm", "Model endpoint: check the configuration, serve recorded answers");
  auto o = std::make_shared<llm_options>();
  app->require_subcommand(1);
  auto* check = app->add_subcommand("check", "Send one short request to the configured endpoint; exit 0 only if it answered");
  check->add_option("--llm-provider", o->flags.provider, "openai (OpenAI-compatible) or anthropic");
  check->add_option("--llm-base-url", o->flags.base_url, "e.g. http://localhost:11434/v1 (Ollama), https://api.openai.com/v1");
  check->add_option("--llm-model", o->flags.model, "Model name");
  check->add_option("--llm-key-env", o->flags.key_env, "Name of the environment variable holding the API key");
  check->add_option("--config", o->config_file, "Config file (default $XDG_CONFIG_HOME/kblaster/config.json)");
  check->add_option("--timeout", o->timeout_s, "Seconds to wait for the answer");
  check->add_flag("--json", o->json_out, "Machine-readable output");
  auto* serve = app->add_subcommand("serve-cassette", "Serve a cassette on 127.0.0.1 as an OpenAI-compatible endpoint; prints its base URL");
  serve->add_option("cassette", o->cassette, "Cassette file (JSON lines)")->required()->check(CLI::ExistingFile);
  serve->add_flag("--by-fingerprint", o->by_fingerprint, "Match requests by fingerprint instead of in order");
  return kblaster::cli::command{app, [=] {
    if (check->parsed()) return run_check(*o);
    if (serve->parsed()) return run_serve(*o);
    return 2;
  }};
});

}  // namespace
