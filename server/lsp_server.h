// The LSP server: reads framed JSON-RPC from a transport, routes each message, and owns the
// lifecycle, the open documents, configuration, cancellation and client calls.
//
// Threads: the I/O thread (the caller of run()) only reads, frames, parses, registers request
// ids and handles $/cancelRequest and client responses. Everything else runs on a worker pool:
// notifications and ordered requests on one strand (so edits apply in order and lifecycle
// changes are seen in order), other requests concurrently. Writes are serialized by the
// transport. With server_options::single_thread there is no pool: the transport runs the work
// on the I/O thread between the chunks it hands over (the fuzzer drives sessions this way).
#pragma once

#include "protocol/framing.h"
#include "protocol/lsp_types.h"
#include "server/client_process_watch.h"
#include "server/document_store.h"
#include "server/feature_registry.h"
#include "server/logger.h"
#include "server/transport.h"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace kblaster::server {

struct server_options {
  std::size_t worker_threads = 4;
  std::size_t max_message_bytes = protocol::frame_reader::default_max_body;
  /// Exit when the client's process ends: this pid (`--clientProcessId`), else initialize's
  /// `processId` when `watch_client_process` is set. Off in tests that run sessions in-process.
  std::optional<pid_t> client_process_id;
  bool watch_client_process = false;
  /// Called once the message loop has ended, before the workers are waited for: `kblaster
  /// serve` stops every child process there, so that exit waits on no nvcc, ncu or harness.
  std::function<void()> on_exit;
  /// One thread for everything: no pool is started; the work is posted to this io_context,
  /// which the transport runs until it is empty after each chunk it hands to the server, and
  /// must answer the server's requests to the client while it is still writing them. Waits
  /// that exist to let a later message arrive (the analysis's debounce, the self-test's steps)
  /// are skipped, since none can arrive during them. For the fuzzer (tests/fuzz/fuzz_lsp.cpp):
  /// a session in-process, deterministic, with no thread per input.
  boost::asio::io_context* single_thread = nullptr;
};

class lsp_server {
 public:
  lsp_server(transport& io, logger& log, server_options options = {});
  ~lsp_server();
  lsp_server(const lsp_server&) = delete;
  lsp_server& operator=(const lsp_server&) = delete;

  /// Serves until `exit` or end of stream; returns the process exit code (0 only after shutdown).
  int run();

  // --- for features -----------------------------------------------------------------------
  /// The handler table; features fill it in the constructor (tests may add their own).
  feature_registry& features() { return features_; }
  document_store& documents() { return documents_; }
  logger& log() { return log_; }
  const protocol::lsp::client_capabilities& client() const { return client_; }

  /// Runs `work` on the worker pool, for background work such as indexing a changed document.
  void run_in_background(std::function<void()> work);

  /// Sends a notification to the client.
  void notify(std::string_view method, protocol::json params);
  /// Sends a request to the client and waits for its answer up to `timeout`; nullopt on error,
  /// timeout or shutdown. Blocks the calling worker, never the I/O thread.
  std::optional<protocol::json> call_client(std::string_view method, protocol::json params,
                                            std::chrono::milliseconds timeout);

  /// Lifecycle, driven by features/lifecycle.cpp on the strand.
  void mark_initialized(const protocol::json& initialize_params);
  void mark_shutdown() { shutdown_ = true; }
  void request_exit();
  bool shutdown_requested() const { return shutdown_; }
  bool initialized() const { return initialized_; }
  /// server_options::single_thread was given: nothing can arrive while a handler waits.
  bool single_threaded() const { return options_.single_thread != nullptr; }

  /// Settings from initializationOptions and workspace/didChangeConfiguration, merged.
  protocol::json settings() const;
  void merge_settings(const protocol::json& patch);

  /// Progress tokens that window/workDoneProgress/cancel may name.
  void register_progress(const protocol::json& token, cancel_token cancel);
  void unregister_progress(const protocol::json& token);
  void cancel_progress(const protocol::json& token);

 private:
  void on_bytes(std::string_view bytes);
  void on_body(const std::string& body);
  void on_request(protocol::request request);
  void on_notification(protocol::notification note);
  void on_response(const protocol::response& response);

  void dispatch_request(protocol::request request, const cancel_token& token);
  void run_request(const protocol::request& request, const cancel_token& token, const request_handler& handler);
  void reply(const protocol::request_id& id, const protocol::json& message);
  void send(const protocol::json& message);

  transport& io_;
  logger& log_;
  server_options options_;
  protocol::frame_reader reader_;
  feature_registry features_;
  document_store documents_;
  protocol::lsp::client_capabilities client_;

  std::optional<boost::asio::thread_pool> pool_;  // none with options_.single_thread
  boost::asio::any_io_executor executor_;          // the pool's, or the single thread's
  boost::asio::strand<boost::asio::any_io_executor> strand_;

  std::atomic<bool> initialized_{false};
  std::atomic<bool> shutdown_{false};
  std::atomic<bool> exiting_{false};

  std::mutex in_flight_mutex_;
  std::unordered_map<std::string, cancel_token> in_flight_;  // id_key -> token

  std::mutex calls_mutex_;
  std::uint64_t next_call_ = 1;
  std::unordered_map<std::string, std::promise<std::optional<protocol::json>>> calls_;

  mutable std::mutex settings_mutex_;
  protocol::json settings_ = protocol::json::object();

  std::mutex progress_mutex_;
  std::unordered_map<std::string, cancel_token> progress_;

  void watch_client(pid_t pid);
  std::mutex watch_mutex_;
  std::optional<client_process_watch> client_watch_;  // last: its thread calls request_exit()
};

}  // namespace kblaster::server
