// Runs the real lsp_server on a thread over an in-memory transport, with a small client API.
#pragma once

#include "protocol/framing.h"
#include "protocol/json_rpc.h"
#include "server/lsp_server.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace kblaster::testing {

using protocol::json;

/// The server's side reads what the test sends; what the server writes is parsed back into JSON.
class memory_transport final : public server::transport {
 public:
  void run(const std::function<void(std::string_view)>& on_bytes) override {
    for (;;) {
      std::string chunk;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return closed_ || !inbound_.empty(); });
        if (inbound_.empty()) return;
        chunk = std::move(inbound_.front());
        inbound_.pop_front();
      }
      on_bytes(chunk);
    }
  }
  void write(std::string bytes) override {
    std::lock_guard lock(mutex_);
    reader_.feed(bytes);
    while (auto e = reader_.next()) outbound_.push_back(json::parse(e->text));
    ready_.notify_all();
  }
  void close() override {
    std::lock_guard lock(mutex_);
    closed_ = true;
    ready_.notify_all();
  }

  void send_bytes(std::string bytes) {
    std::lock_guard lock(mutex_);
    inbound_.push_back(std::move(bytes));
    ready_.notify_all();
  }
  /// Waits for the first server message matching `pred` and removes it from the queue.
  std::optional<json> take(const std::function<bool(const json&)>& pred, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    std::optional<json> found;
    ready_.wait_for(lock, timeout, [&] {
      for (auto it = outbound_.begin(); it != outbound_.end(); ++it)
        if (pred(*it)) {
          found = std::move(*it);
          outbound_.erase(it);
          return true;
        }
      return false;
    });
    return found;
  }
  std::vector<json> all_received() {
    std::lock_guard lock(mutex_);
    return {outbound_.begin(), outbound_.end()};
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> inbound_;
  std::deque<json> outbound_;
  protocol::frame_reader reader_;
  bool closed_ = false;
};

/// A started server and a client that speaks to it.
class server_fixture {
 public:
  explicit server_fixture(std::function<void(server::lsp_server&)> setup = nullptr)
      : log_(server::log_level::error, {}, /*to_stderr=*/false), server_(io_, log_) {
    if (setup) setup(server_);
    thread_ = std::thread([this] { exit_code_ = server_.run(); });
  }
  ~server_fixture() {
    io_.close();
    if (thread_.joinable()) thread_.join();
  }

  void send(const json& message) { io_.send_bytes(protocol::frame(message.dump())); }
  void send_raw(std::string bytes) { io_.send_bytes(std::move(bytes)); }
  json request(const json& id, const std::string& method, json params = json::object()) {
    send(protocol::make_request(id, method, std::move(params)));
    return id;
  }
  void notify(const std::string& method, json params = json::object()) {
    send(protocol::make_notification(method, std::move(params)));
  }
  /// The reply to request `id` (fails the test after 10 s).
  json reply(const json& id, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto m = io_.take([&](const json& j) { return !j.contains("method") && j.value("id", json()) == id; }, timeout);
    if (!m) throw std::runtime_error("no reply to " + id.dump());
    return *m;
  }
  std::optional<json> message(const std::string& method, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return io_.take([&](const json& j) { return j.value("method", "") == method; }, timeout);
  }
  json initialize(json capabilities = json::object()) {
    request(0, "initialize", {{"processId", nullptr}, {"rootUri", nullptr}, {"capabilities", std::move(capabilities)}});
    json r = reply(0);
    notify("initialized");
    return r;
  }
  void open(const std::string& uri, const std::string& text) {
    notify("textDocument/didOpen",
           {{"textDocument", {{"uri", uri}, {"languageId", "cuda"}, {"version", 1}, {"text", text}}}});
  }
  /// Waits for the server thread to end and returns the exit code.
  int wait_exit() {
    thread_.join();
    return exit_code_;
  }
  memory_transport& transport() { return io_; }

 private:
  server::logger log_;
  memory_transport io_;
  server::lsp_server server_;
  std::thread thread_;
  int exit_code_ = -1;
};

inline int error_code_of(const json& reply) { return reply.at("error").at("code").get<int>(); }

}  // namespace kblaster::testing
