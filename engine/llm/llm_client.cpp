// The client: concurrency bound, budgets, usage, recording; the HTTP backend with retries.
#include "engine/llm/llm_client.h"

#include "engine/llm/http_transport.h"
#include "engine/llm/provider_codec.h"
#include "engine/llm/token_estimate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

namespace kblaster::engine::llm {
namespace {

// Full jitter (a uniform wait below the exponential ceiling), so that clients rejected together
// do not come back together.
double backoff_ms(const llm_config& c, int attempt) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const double ceiling = std::min(c.backoff_max_ms, c.backoff_base_ms * std::pow(2.0, attempt));
  return std::uniform_real_distribution<double>(0.0, std::max(ceiling, 0.0))(rng);
}

double jitter_up_to(double ms) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, std::max(ms, 0.0))(rng);
}

}  // namespace

http_backend::http_backend(llm_config config, std::string key, std::shared_ptr<redactor> redact, log_sink log)
    : config_(std::move(config)), key_(std::move(key)), redact_(std::move(redact)), log_(std::move(log)) {
  if (!redact_) redact_ = std::make_shared<redactor>();
  redact_->add_secret(key_);
}

std::string http_backend::describe() const {
  return (*redact_)(std::string(to_string(config_.api)) + " " + config_.endpoint_url() + " model " + config_.model);
}

chat_response http_backend::send(const chat_request& r) {
  const std::string url = config_.endpoint_url();
  const std::string body = encode_request(config_, r).dump();
  auto headers = request_headers(config_, key_);
  // Lets a proxy (and the loopback server's fingerprint replay) see which agent asks.
  if (!r.agent_role.empty()) headers["X-KBlaster-Agent-Role"] = r.agent_role;
  const auto start = std::chrono::steady_clock::now();
  std::string last_problem;
  bool last_timed_out = false;
  for (int attempt = 0;; ++attempt) {
    const http_result h = http_post(url, headers, body, config_.timeout_s);
    if (h.status >= 200 && h.status < 300) {
      chat_response out = decode_response(config_.api, h.body);
      out.latency_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      out.attempts = attempt + 1;
      return out;
    }
    const std::string what = h.status == 0 ? (h.timed_out ? "timed out after " + std::to_string(config_.timeout_s) + " s"
                                                          : "no answer (" + h.transport_error + ")")
                                           : "HTTP " + std::to_string(h.status) + ": " + error_message(h.body);
    last_problem = (*redact_)(what);
    last_timed_out = h.timed_out;
    if (h.status == 401 || h.status == 403)
      throw llm_error(error_kind::auth, (*redact_)("the endpoint " + url + " refused the key from " + config_.key_env +
                                                   ": " + what), h.status);
    const bool retryable = h.status == 0 || h.status == 408 || h.status == 429 || h.status >= 500;
    if (!retryable)
      throw llm_error(error_kind::http, (*redact_)("the endpoint " + url + " answered " + what), h.status);
    if (attempt >= config_.max_retries) {
      const auto kind = last_timed_out ? error_kind::timeout
                        : h.status == 0 && attempt == 0 ? error_kind::transport
                                                        : error_kind::retries_exhausted;
      throw llm_error(kind, (*redact_)("gave up on " + url + " after " + std::to_string(attempt + 1) +
                                       " tries; last: " + last_problem), h.status);
    }
    double wait_ms = backoff_ms(config_, attempt);
    const double retry_after = parse_retry_after(h.retry_after);
    if (retry_after >= 0) {
      if (retry_after > config_.retry_after_max_s)
        throw llm_error(error_kind::retries_exhausted,
                        (*redact_)("the endpoint " + url + " asked to retry after " + h.retry_after +
                                   " s, longer than the " + std::to_string(config_.retry_after_max_s) +
                                   " s this job waits; last: " + last_problem), h.status);
      wait_ms = retry_after * 1000 + jitter_up_to(retry_after * 100);
    }
    if (log_)
      log_((*redact_)("LLM " + r.agent_role + ": " + last_problem + "; retry " + std::to_string(attempt + 1) +
                      " of " + std::to_string(config_.max_retries) + " in " +
                      std::to_string(static_cast<long long>(wait_ms)) + " ms"));
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(wait_ms));
  }
}

replay_backend::replay_backend(std::vector<cassette_entry> entries, replay_mode mode, std::string name)
    : player_(std::move(entries), mode), name_(std::move(name)) {}

chat_response replay_backend::send(const chat_request& r) { return player_.next(r).response; }

llm_client::llm_client(std::unique_ptr<chat_backend> backend, const client_options& options,
                       std::shared_ptr<redactor> redact)
    : backend_(std::move(backend)), redact_(std::move(redact)),
      ledger_(options.budget_tokens, options.budget_usd, options.usd_per_mtok_in, options.usd_per_mtok_out),
      slots_(std::clamp(options.max_concurrent, 1, 1024)) {}

chat_response llm_client::complete(const chat_request& r) {
  ledger_.check_budget();
  slots_.acquire();
  struct release {
    llm_client& c;
    ~release() {
      c.in_flight_.fetch_sub(1);
      c.slots_.release();
    }
  } guard{*this};
  const int now = in_flight_.fetch_add(1) + 1;
  for (int peak = peak_.load(); now > peak && !peak_.compare_exchange_weak(peak, now);) {
  }
  // Checked again inside the slot: calls that waited may find the budget spent meanwhile.
  ledger_.check_budget();
  chat_response out = backend_->send(r);
  if (out.usage.total() == 0) {
    // The endpoint reported nothing (some local servers): estimate, and say so.
    std::int64_t prompt = estimate_tokens(r.system);
    for (const auto& m : r.messages) prompt += estimate_tokens(m.content) + 4;
    out.usage = {prompt, estimate_tokens(out.text), true};
  }
  ledger_.add(r.agent_role, out.model, out.usage, out.latency_ms, out.attempts);
  std::shared_ptr<cassette_writer> rec;
  {
    std::lock_guard lock(recorder_mutex_);
    rec = recorder_;
  }
  if (rec)
    rec->append({fingerprint(r), r.agent_role, request_json(r), out, {}, false});
  return out;
}

void llm_client::record_to(const std::filesystem::path& path, const std::string& source_note) {
  auto writer = std::make_shared<cassette_writer>(path, redact_, source_note);
  std::lock_guard lock(recorder_mutex_);
  recorder_ = std::move(writer);
}

client_options options_from(const llm_config& c) {
  return {c.max_concurrent, c.budget_tokens, c.budget_usd, c.usd_per_mtok_in, c.usd_per_mtok_out};
}

std::unique_ptr<llm_client> make_http_client(const llm_config& c, const env_lookup& env, log_sink log) {
  const auto key = api_key_for(c, env);
  auto redact = std::make_shared<redactor>();
  redact->add_secret(key);
  return std::make_unique<llm_client>(std::make_unique<http_backend>(c, key, redact, std::move(log)),
                                      options_from(c), redact);
}

std::unique_ptr<llm_client> make_replay_client(const std::filesystem::path& path, const client_options& options) {
  auto entries = read_cassette(path);
  const auto mode = replay_mode_for(entries);
  return std::make_unique<llm_client>(std::make_unique<replay_backend>(std::move(entries), mode, path.string()), options);
}

}  // namespace kblaster::engine::llm
