// The model client the agents call: a backend (HTTP to a real endpoint, or a cassette replay)
// behind a bound on concurrent calls, a usage ledger with budgets, and optional recording.
#pragma once

#include "engine/llm/cassette.h"
#include "engine/llm/llm_config.h"
#include "engine/llm/llm_types.h"
#include "engine/llm/redact.h"
#include "engine/llm/usage_ledger.h"

#include <atomic>
#include <functional>
#include <memory>
#include <semaphore>

namespace kblaster::engine::llm {

/// Where diagnostics go (already redacted when they arrive).
using log_sink = std::function<void(const std::string&)>;

/// Sends one request somewhere and returns the answer. Implementations are thread-safe.
class chat_backend {
 public:
  virtual ~chat_backend() = default;
  virtual chat_response send(const chat_request& r) = 0;
  /// "openai https://host/v1/chat/completions model gpt-4o" or "replay FILE".
  virtual std::string describe() const = 0;
};

/// HTTP to the configured endpoint, with retries: 429, 5xx, timeouts and dropped connections
/// are retried with full-jitter exponential back-off (a uniform wait below base * 2^try,
/// capped), or after the server's Retry-After (plus up to 10 % jitter) when it sends one.
class http_backend final : public chat_backend {
 public:
  /// `key` may be empty for endpoints that need none (a local server).
  http_backend(llm_config config, std::string key, std::shared_ptr<redactor> redact, log_sink log = {});
  chat_response send(const chat_request& r) override;
  std::string describe() const override;

 private:
  llm_config config_;
  std::string key_;
  std::shared_ptr<redactor> redact_;
  log_sink log_;
};

/// Answers from a cassette, without a network.
class replay_backend final : public chat_backend {
 public:
  replay_backend(std::vector<cassette_entry> entries, replay_mode mode, std::string name = "cassette");
  chat_response send(const chat_request& r) override;
  std::string describe() const override { return "replay " + name_; }
  std::size_t remaining() const { return player_.remaining(); }

 private:
  cassette_player player_;
  std::string name_;
};

/// What the client does around the backend.
struct client_options {
  int max_concurrent = 4;
  std::int64_t budget_tokens = 0;
  double budget_usd = 0;
  double usd_per_mtok_in = 0, usd_per_mtok_out = 0;
};

/// The agents' entry point. Thread-safe: calls may come from several threads; at most
/// max_concurrent are in the backend at once, the rest wait.
class llm_client {
 public:
  llm_client(std::unique_ptr<chat_backend> backend, const client_options& options,
             std::shared_ptr<redactor> redact = std::make_shared<redactor>());

  /// One exchange. Throws llm_error(budget_exceeded) before sending when the job's budget is
  /// spent, and whatever the backend throws. Usage is recorded for the request's agent role.
  chat_response complete(const chat_request& r);

  /// Records every later exchange to `path` (JSON lines, redacted).
  void record_to(const std::filesystem::path& path, const std::string& source_note);

  const usage_ledger& usage() const noexcept { return ledger_; }
  const chat_backend& backend() const noexcept { return *backend_; }
  /// Largest number of calls that were in the backend at the same time.
  int peak_in_flight() const noexcept { return peak_.load(); }

 private:
  std::unique_ptr<chat_backend> backend_;
  std::shared_ptr<redactor> redact_;
  usage_ledger ledger_;
  std::counting_semaphore<1024> slots_;
  std::atomic<int> in_flight_{0}, peak_{0};
  std::mutex recorder_mutex_;
  std::shared_ptr<cassette_writer> recorder_;
};

/// Options of the client as configured (budgets and concurrency from the config).
client_options options_from(const llm_config& c);

/// A client answering from the cassette (or answer book) at `path`, in the mode its entries call
/// for (replay_mode_for). Throws llm_error(config) naming the file and line on bad content.
std::unique_ptr<llm_client> make_replay_client(const std::filesystem::path& path, const client_options& options);

/// An HTTP client for `c`, its key read from the environment now (config error when the
/// variable is unset, except for a loopback endpoint, which gets no key).
std::unique_ptr<llm_client> make_http_client(const llm_config& c, const env_lookup& env, log_sink log = {});

}  // namespace kblaster::engine::llm
