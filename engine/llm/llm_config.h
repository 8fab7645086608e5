// LLM endpoint configuration and its precedence: command-line flags over the environment
// (KBLASTER_LLM_*) over the editor's settings over the config file over the defaults
// (OpenAI-compatible, key in OPENAI_API_KEY). The key itself is never stored here: only the
// name of the environment variable that holds it.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace kblaster::engine::llm {

/// Which wire format the endpoint speaks.
enum class provider { openai, anthropic };

/// "openai" or "anthropic"; nullopt for anything else.
std::optional<provider> parse_provider(const std::string& name);
const char* to_string(provider p) noexcept;

/// Everything needed to reach a model. Plain values; copy freely.
struct llm_config {
  provider api = provider::openai;
  std::string base_url = "https://api.openai.com/v1";
  std::string model = "gpt-4o";
  std::string key_env = "OPENAI_API_KEY";  ///< name of the variable holding the key
  double timeout_s = 120;                  ///< whole request, per try
  int max_tokens = 8192;                   ///< default completion cap
  double temperature = 0.2;
  std::map<std::string, std::string> extra_headers;  ///< e.g. OpenRouter's HTTP-Referer
  int max_concurrent = 4;                  ///< calls in flight at once, per client
  int max_retries = 4;                     ///< tries after the first on 429, 5xx, timeouts
  double backoff_base_ms = 1000;           ///< first back-off ceiling (full jitter below it)
  double backoff_max_ms = 30000;           ///< back-off ceiling
  double retry_after_max_s = 120;          ///< a longer Retry-After fails the call instead of waiting
  // Budgets of one job (0: none) and the prices that turn tokens into money.
  std::int64_t budget_tokens = 0;
  double budget_usd = 0;
  double usd_per_mtok_in = 0;
  double usd_per_mtok_out = 0;
  /// Where each field's value came from ("default", "config file", "editor", "environment",
  /// "command line"), for `kblaster llm check` and error messages.
  std::map<std::string, std::string> origin;

  /// The full URL the provider's endpoint is at (base_url plus /chat/completions or /messages).
  std::string endpoint_url() const;
};

/// One layer of settings, each optional. Field names follow the config file (snake_case); the
/// editor's camelCase spellings (baseUrl, keyEnv, maxTokens, ...) are accepted too.
struct config_layer {
  nlohmann::json values = nlohmann::json::object();
};

/// The command line's four flags (empty: not given).
struct llm_flags {
  std::string provider, base_url, model, key_env;
};

/// Reads the process environment; replaced in tests.
using env_lookup = std::function<std::optional<std::string>(const std::string&)>;
env_lookup process_environment();

/// The default config file: $XDG_CONFIG_HOME/kblaster/config.json (~/.config/...).
std::filesystem::path default_config_file();

/// Reads the "llm" object of a config file; an absent file is an empty layer, a malformed one
/// throws llm_error(config) naming the file and the problem.
config_layer read_config_file(const std::filesystem::path& path);

/// Applies the layers in precedence order. Throws llm_error(config) for a bad value (unknown
/// provider, negative timeout, ...), naming the field and where it came from.
llm_config resolve_config(const config_layer& file, const config_layer& editor, const env_lookup& env,
                          const llm_flags& flags);

/// The key from the named environment variable; throws llm_error(config) naming the variable
/// (never a value) when it is unset or empty.
std::string read_api_key(const llm_config& c, const env_lookup& env);

/// True for a URL on this machine (127.x, localhost, [::1]): a local server needs no key.
bool is_loopback_url(const std::string& url);

/// The key to send to `c`'s endpoint: the named variable's value; empty for a loopback endpoint
/// when the variable is unset; else read_api_key's error.
std::string api_key_for(const llm_config& c, const env_lookup& env);

}  // namespace kblaster::engine::llm
