// A loopback HTTP server (Boost.Beast) that speaks the OpenAI-compatible chat-completions API
// (and Anthropic's messages API) from a cassette, so that tests and offline demos run the real
// HTTP path. It can also inject failures: a status with or without Retry-After, slow answers.
#pragma once

#include "engine/llm/cassette.h"

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kblaster::engine::llm {

/// A reply to serve instead of the next cassette answer.
struct injected_fault {
  int status = 500;
  std::string retry_after;  ///< Retry-After header value; empty: none
  int delay_ms = 0;         ///< wait this long before answering (a slow or hung endpoint)
  std::string body = R"({"error":{"message":"injected failure","type":"server_error"}})";
};

/// One request as the server received it.
struct received_request {
  std::string path;
  std::map<std::string, std::string> headers;  ///< lower-case names
  std::string body;
};

/// Listens on 127.0.0.1 (an ephemeral port) from construction until destruction. Each connection
/// is served on its own thread, so concurrent clients are really concurrent. Thread-safe.
class loopback_server {
 public:
  explicit loopback_server(std::vector<cassette_entry> answers, replay_mode mode = replay_mode::in_order);
  ~loopback_server();
  loopback_server(const loopback_server&) = delete;
  loopback_server& operator=(const loopback_server&) = delete;

  unsigned short port() const noexcept { return port_; }
  /// "http://127.0.0.1:PORT/v1", ready for llm_config::base_url.
  std::string base_url() const;

  /// Queues a fault, served (first in, first out) before the next cassette answer.
  void inject(const injected_fault& f);
  /// Delays every cassette answer by `ms` (faults keep their own delay).
  void set_answer_delay_ms(int ms) noexcept { answer_delay_ms_ = ms; }

  std::vector<received_request> requests() const;
  /// Most requests that were being handled at the same moment.
  int peak_concurrent() const noexcept { return peak_.load(); }
  std::size_t answers_left() const { return player_.remaining(); }

 private:
  struct impl;
  void accept_loop();
  void serve(std::shared_ptr<void> socket);

  std::unique_ptr<impl> impl_;
  cassette_player player_;
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> answer_delay_ms_{0};
  std::atomic<int> in_flight_{0}, peak_{0};
  mutable std::mutex mutex_;
  std::deque<injected_fault> faults_;
  std::vector<received_request> requests_;
  std::vector<std::thread> workers_;
  std::thread acceptor_thread_;
};

}  // namespace kblaster::engine::llm
