// server_options::single_thread (what fuzz_lsp drives): a whole session on the caller's thread,
// the server's requests answered while they are written, and no wait for a message that
// cannot arrive.
#include "protocol/framing.h"
#include "protocol/json_rpc.h"
#include "server/lsp_server.h"

#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using kblaster::protocol::json;
namespace server = kblaster::server;

namespace {

/// Hands over the client's messages one at a time, running the server's work after each, and
/// answers the server's requests at once, as fuzz_lsp's transport does.
class one_thread_transport final : public server::transport {
 public:
  one_thread_transport(std::vector<json> messages, boost::asio::io_context& work)
      : messages_(std::move(messages)), work_(work) {}

  void run(const std::function<void(std::string_view)>& on_bytes) override {
    on_bytes_ = &on_bytes;
    for (const auto& m : messages_) {
      if (closed_) break;
      on_bytes(kblaster::protocol::frame(m.dump()));
      work_.restart();
      work_.run();
    }
  }
  void write(std::string bytes) override {
    reader_.feed(bytes);
    while (auto e = reader_.next()) {
      json m = json::parse(e->text);
      seen_on_.push_back(std::this_thread::get_id());
      if (m.contains("method") && m.contains("id"))
        (*on_bytes_)(kblaster::protocol::frame(kblaster::protocol::make_result(m["id"], nullptr).dump()));
      received.push_back(std::move(m));
    }
  }
  void close() override { closed_ = true; }

  std::vector<json> received;
  std::vector<std::thread::id> seen_on_;

 private:
  std::vector<json> messages_;
  boost::asio::io_context& work_;
  const std::function<void(std::string_view)>* on_bytes_ = nullptr;
  kblaster::protocol::frame_reader reader_;
  bool closed_ = false;
};

}  // namespace

TEST_CASE("single thread: a session runs on the caller's thread, the server's requests answered as they are written") {
  boost::asio::io_context work;
  const json self_test = {{"command", "kblaster.selfTest"}, {"arguments", {{{"steps", 3}, {"stepMs", 60000}}}}};
  one_thread_transport io(
      {
          {{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
           {"params", {{"capabilities", {{"window", {{"workDoneProgress", true}}}}}}}},
          {{"jsonrpc", "2.0"}, {"method", "initialized"}, {"params", json::object()}},
          {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "workspace/executeCommand"}, {"params", self_test}},
          {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "shutdown"}},
          {{"jsonrpc", "2.0"}, {"method", "exit"}},
      },
      work);
  server::logger log(server::log_level::error, {}, false);
  server::server_options options;
  options.single_thread = &work;
  const auto started = std::chrono::steady_clock::now();
  int code = -1;
  {
    server::lsp_server s(io, log, options);
    code = s.run();
  }
  // Three steps of a minute each: skipped, since no cancel could be read meanwhile.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
  CHECK(code == 0);
  for (const auto& id : io.seen_on_) CHECK(id == std::this_thread::get_id());
  // The progress token was created (answered while written), so progress was reported.
  int progress = 0;
  json self_test_reply;
  for (const auto& m : io.received) {
    if (m.value("method", "") == "$/progress") ++progress;
    if (m.value("id", json()) == 1) self_test_reply = m;
  }
  CHECK(progress == 5);  // begin, 3 reports, end
  CHECK(self_test_reply["result"]["completedSteps"] == 3);
}
