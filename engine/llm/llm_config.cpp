// Configuration layers and their precedence (see llm_config.h).
#include "engine/llm/llm_config.h"
#include "support/files.h"

#include "engine/llm/llm_types.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kblaster::engine::llm {
namespace {

using json = nlohmann::json;

// camelCase spellings the editor uses, mapped to the config file's names.
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> a{
      {"baseUrl", "base_url"}, {"keyEnv", "key_env"}, {"timeoutS", "timeout_s"},
      {"timeout", "timeout_s"}, {"maxTokens", "max_tokens"}, {"extraHeaders", "extra_headers"},
      {"maxConcurrent", "max_concurrent"}, {"maxRetries", "max_retries"},
      {"budgetTokens", "budget_tokens"}, {"budgetUsd", "budget_usd"},
      {"usdPerMtokIn", "usd_per_mtok_in"}, {"usdPerMtokOut", "usd_per_mtok_out"},
      {"backoffBaseMs", "backoff_base_ms"}, {"backoffMaxMs", "backoff_max_ms"},
      {"retryAfterMaxS", "retry_after_max_s"}};
  return a;
}

std::string canonical(const std::string& key) {
  auto it = aliases().find(key);
  return it == aliases().end() ? key : it->second;
}

[[noreturn]] void bad(const std::string& field, const std::string& where, const std::string& why) {
  throw llm_error(error_kind::config, "LLM setting '" + field + "' from the " + where + ": " + why);
}

double number(const json& v, const std::string& field, const std::string& where, double lo, double hi) {
  double d = 0;
  if (v.is_number()) d = v.get<double>();
  else if (v.is_string()) {
    try {
      std::size_t used = 0;
      d = std::stod(v.get<std::string>(), &used);
      if (used != v.get<std::string>().size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      bad(field, where, "expected a number, got '" + v.get<std::string>() + "'");
    }
  } else bad(field, where, "expected a number");
  if (!(d >= lo && d <= hi))
    bad(field, where, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return d;
}

std::string text(const json& v, const std::string& field, const std::string& where) {
  if (!v.is_string()) bad(field, where, "expected a string");
  return v.get<std::string>();
}

// Applies one layer's values onto `c`, remembering where each came from.
void apply(llm_config& c, const json& values, const std::string& where, json& seen) {
  if (!values.is_object()) bad("llm", where, "expected an object");
  for (const auto& [raw_key, v] : values.items()) {
    const std::string key = canonical(raw_key);
    if (v.is_null()) continue;
    if (key == "provider") {
      auto p = parse_provider(text(v, key, where));
      if (!p) bad(key, where, "expected 'openai' or 'anthropic', got '" + v.get<std::string>() + "'");
      c.api = *p;
    } else if (key == "base_url") {
      c.base_url = text(v, key, where);
      if (c.base_url.rfind("http://", 0) != 0 && c.base_url.rfind("https://", 0) != 0)
        bad(key, where, "must start with http:// or https://");
      while (!c.base_url.empty() && c.base_url.back() == '/') c.base_url.pop_back();
    } else if (key == "model") {
      c.model = text(v, key, where);
      if (c.model.empty()) bad(key, where, "is empty");
    } else if (key == "key_env") {
      c.key_env = text(v, key, where);
      if (c.key_env.empty()) bad(key, where, "is empty");
    } else if (key == "timeout_s") c.timeout_s = number(v, key, where, 0.001, 86400);
    else if (key == "max_tokens") c.max_tokens = static_cast<int>(number(v, key, where, 1, 1e7));
    else if (key == "temperature") c.temperature = number(v, key, where, 0, 2);
    else if (key == "max_concurrent") c.max_concurrent = static_cast<int>(number(v, key, where, 1, 1024));
    else if (key == "max_retries") c.max_retries = static_cast<int>(number(v, key, where, 0, 100));
    else if (key == "backoff_base_ms") c.backoff_base_ms = number(v, key, where, 0, 3.6e6);
    else if (key == "backoff_max_ms") c.backoff_max_ms = number(v, key, where, 0, 3.6e6);
    else if (key == "retry_after_max_s") c.retry_after_max_s = number(v, key, where, 0, 86400);
    else if (key == "budget_tokens") c.budget_tokens = static_cast<std::int64_t>(number(v, key, where, 0, 1e15));
    else if (key == "budget_usd") c.budget_usd = number(v, key, where, 0, 1e9);
    else if (key == "usd_per_mtok_in") c.usd_per_mtok_in = number(v, key, where, 0, 1e6);
    else if (key == "usd_per_mtok_out") c.usd_per_mtok_out = number(v, key, where, 0, 1e6);
    else if (key == "extra_headers") {
      if (!v.is_object()) bad(key, where, "expected an object of header names to values");
      for (const auto& [h, hv] : v.items()) c.extra_headers[h] = text(hv, key + "." + h, where);
    } else {
      bad(raw_key, where, "unknown setting");
    }
    c.origin[key] = where;
    seen[key] = true;
  }
}

}  // namespace

const char* to_string(error_kind k) noexcept {
  switch (k) {
    case error_kind::config: return "config";
    case error_kind::auth: return "auth";
    case error_kind::http: return "http";
    case error_kind::retries_exhausted: return "retries_exhausted";
    case error_kind::timeout: return "timeout";
    case error_kind::transport: return "transport";
    case error_kind::bad_response: return "bad_response";
    case error_kind::budget_exceeded: return "budget_exceeded";
    case error_kind::replay_miss: return "replay_miss";
  }
  return "unknown";
}

std::optional<provider> parse_provider(const std::string& name) {
  if (name == "openai") return provider::openai;
  if (name == "anthropic") return provider::anthropic;
  return std::nullopt;
}

const char* to_string(provider p) noexcept { return p == provider::anthropic ? "anthropic" : "openai"; }

std::string llm_config::endpoint_url() const {
  auto ends_with = [&](const std::string& s) {
    return base_url.size() >= s.size() && base_url.compare(base_url.size() - s.size(), s.size(), s) == 0;
  };
  const std::string tail = api == provider::anthropic ? "/messages" : "/chat/completions";
  if (ends_with(tail)) return base_url;       // a full endpoint URL was given
  if (ends_with("/v1")) return base_url + tail;
  return base_url + "/v1" + tail;
}

env_lookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

std::filesystem::path default_config_file() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::filesystem::path(xdg) / "kblaster" / "config.json";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home ? home : ".") / ".config" / "kblaster" / "config.json";
}

config_layer read_config_file(const std::filesystem::path& path) {
  const auto text = support::read_file_if_exists(path);
  if (!text) return {};
  json doc;
  try {
    doc = json::parse(*text);
  } catch (const json::parse_error& e) {
    throw llm_error(error_kind::config, "config file " + path.string() + " is not valid JSON: " + e.what());
  }
  if (!doc.is_object())
    throw llm_error(error_kind::config, "config file " + path.string() + " must hold a JSON object");
  if (!doc.contains("llm")) return {};
  if (!doc["llm"].is_object())
    throw llm_error(error_kind::config, "config file " + path.string() + ": 'llm' must be an object");
  return {doc["llm"]};
}

llm_config resolve_config(const config_layer& file, const config_layer& editor, const env_lookup& env,
                          const llm_flags& flags) {
  llm_config c;
  for (const char* k : {"provider", "base_url", "model", "key_env", "timeout_s", "max_tokens", "temperature"})
    c.origin[k] = "default";
  json seen = json::object();
  apply(c, file.values, "config file", seen);
  apply(c, editor.values, "editor settings", seen);
  json env_values = json::object();
  for (const auto& [var, key] : std::map<std::string, std::string>{{"KBLASTER_LLM_PROVIDER", "provider"},
                                                                    {"KBLASTER_LLM_BASE_URL", "base_url"},
                                                                    {"KBLASTER_LLM_MODEL", "model"},
                                                                    {"KBLASTER_LLM_KEY_ENV", "key_env"}})
    if (auto v = env(var); v && !v->empty()) env_values[key] = *v;
  apply(c, env_values, "environment", seen);
  json flag_values = json::object();
  if (!flags.provider.empty()) flag_values["provider"] = flags.provider;
  if (!flags.base_url.empty()) flag_values["base_url"] = flags.base_url;
  if (!flags.model.empty()) flag_values["model"] = flags.model;
  if (!flags.key_env.empty()) flag_values["key_env"] = flags.key_env;
  apply(c, flag_values, "command line", seen);
  // Choosing Anthropic without saying where it lives means Anthropic's own endpoint and key.
  if (c.api == provider::anthropic) {
    if (!seen.contains("base_url")) c.base_url = "https://api.anthropic.com";
    if (!seen.contains("key_env")) c.key_env = "ANTHROPIC_API_KEY";
    if (!seen.contains("model")) c.model = "claude-sonnet-4-5";
  }
  return c;
}

std::string read_api_key(const llm_config& c, const env_lookup& env) {
  auto v = env(c.key_env);
  if (!v || v->empty())
    throw llm_error(error_kind::config, "no API key: the environment variable " + c.key_env +
                                            " (set by " + (c.origin.count("key_env") ? c.origin.at("key_env") : "default") +
                                            ") is unset or empty");
  return *v;
}

bool is_loopback_url(const std::string& url) {
  for (const char* host : {"://127.", "://localhost", "://[::1]"})
    if (url.find(host) != std::string::npos) return true;
  return false;
}

std::string api_key_for(const llm_config& c, const env_lookup& env) {
  if (auto v = env(c.key_env); v && !v->empty()) return *v;
  if (is_loopback_url(c.base_url)) return "";
  return read_api_key(c, env);  // throws, naming the variable
}

}  // namespace kblaster::engine::llm
