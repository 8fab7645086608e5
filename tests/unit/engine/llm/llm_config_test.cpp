// LLM configuration: precedence (flags > environment > editor > config file > defaults),
// provider defaults, and errors that name the setting and never a key.
#include "engine/llm/llm_config.h"
#include "engine/llm/llm_types.h"
#include "tests/unit/engine/llm/llm_test_support.h"

#include <doctest/doctest.h>

#include <map>

using namespace kblaster::engine::llm;

namespace {
env_lookup fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}
}  // namespace

TEST_CASE("llm config: defaults are OpenAI-compatible with the key in OPENAI_API_KEY") {
  const auto c = resolve_config({}, {}, fake_env({}), {});
  CHECK(c.api == provider::openai);
  CHECK(c.key_env == "OPENAI_API_KEY");
  CHECK(c.endpoint_url() == "https://api.openai.com/v1/chat/completions");
  CHECK(c.origin.at("model") == "default");
}

TEST_CASE("llm config: flags over environment over editor over config file") {
  config_layer file{{{"model", "file-model"}, {"base_url", "http://file:1/v1"}, {"key_env", "FILE_KEY"}, {"timeout_s", 9}}};
  config_layer editor{{{"model", "editor-model"}, {"baseUrl", "http://editor:2/v1"}}};
  auto env = fake_env({{"KBLASTER_LLM_MODEL", "env-model"}});
  llm_flags flags;
  SUBCASE("all layers") {
    flags.model = "flag-model";
    const auto c = resolve_config(file, editor, env, flags);
    CHECK(c.model == "flag-model");
    CHECK(c.origin.at("model") == "command line");
    CHECK(c.base_url == "http://editor:2/v1");
    CHECK(c.origin.at("base_url") == "editor settings");
    CHECK(c.key_env == "FILE_KEY");
    CHECK(c.timeout_s == 9);
  }
  SUBCASE("environment beats editor and file") {
    const auto c = resolve_config(file, editor, env, flags);
    CHECK(c.model == "env-model");
    CHECK(c.origin.at("model") == "environment");
  }
  SUBCASE("file alone") {
    const auto c = resolve_config(file, {}, fake_env({}), {});
    CHECK(c.model == "file-model");
    CHECK(c.endpoint_url() == "http://file:1/v1/chat/completions");
  }
}

TEST_CASE("llm config: choosing anthropic brings its endpoint, key variable and messages path") {
  const auto c = resolve_config({}, {}, fake_env({{"KBLASTER_LLM_PROVIDER", "anthropic"}}), {});
  CHECK(c.api == provider::anthropic);
  CHECK(c.key_env == "ANTHROPIC_API_KEY");
  CHECK(c.endpoint_url() == "https://api.anthropic.com/v1/messages");
  llm_flags f;
  f.provider = "anthropic";
  f.key_env = "MY_KEY";
  f.base_url = "http://127.0.0.1:9/v1/";
  const auto d = resolve_config({}, {}, fake_env({}), f);
  CHECK(d.key_env == "MY_KEY");
  CHECK(d.endpoint_url() == "http://127.0.0.1:9/v1/messages");
}

TEST_CASE("llm config: bad values are named with where they came from") {
  auto expect = [](const config_layer& file, const llm_flags& flags, const std::string& part) {
    try {
      resolve_config(file, {}, [](const std::string&) { return std::optional<std::string>{}; }, flags);
      FAIL("accepted");
    } catch (const llm_error& e) {
      CHECK(e.kind() == error_kind::config);
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  llm_flags p;
  p.provider = "gemini";
  expect({}, p, "'provider' from the command line");
  expect({{{"timeout_s", -3}}}, {}, "'timeout_s' from the config file");
  expect({{{"temperature", "hot"}}}, {}, "expected a number");
  expect({{{"base_url", "ftp://x"}}}, {}, "http://");
  expect({{{"modle", "x"}}}, {}, "'modle' from the config file: unknown setting");
}

TEST_CASE("llm config: a malformed config file is an error naming the file; an absent one is empty") {
  llm_test::temp_dir dir;
  CHECK(read_config_file(dir / "absent.json").values.empty());
  {
    std::ofstream(dir / "bad.json") << "{\"llm\": {\"model\": ";
  }
  CHECK_THROWS_WITH_AS(read_config_file(dir / "bad.json"), doctest::Contains("bad.json is not valid JSON"), llm_error);
  {
    std::ofstream(dir / "ok.json") << R"({"llm": {"provider": "anthropic", "maxTokens": 2048}})";
  }
  const auto c = resolve_config(read_config_file(dir / "ok.json"), {}, fake_env({}), {});
  CHECK(c.max_tokens == 2048);
  CHECK(c.api == provider::anthropic);
}

TEST_CASE("llm config: a missing key names the variable, never a value") {
  llm_config c;
  c.key_env = "KBLASTER_NO_SUCH_KEY";
  CHECK_THROWS_WITH_AS(read_api_key(c, fake_env({})), doctest::Contains("KBLASTER_NO_SUCH_KEY"), llm_error);
  CHECK(read_api_key(c, fake_env({{"KBLASTER_NO_SUCH_KEY", "abc123"}})) == "abc123");
  // No key is needed for a local server.
  c.base_url = "http://127.0.0.1:1/v1";
  CHECK_NOTHROW(make_http_client(c, fake_env({})));
  c.base_url = "https://api.example.com/v1";
  CHECK_THROWS_AS(make_http_client(c, fake_env({})), llm_error);
}
