// The loopback server: synchronous Beast, one thread per connection (tests open few).
#include "engine/llm/loopback_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

namespace kblaster::engine::llm {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using json = nlohmann::json;

std::string openai_body(const chat_response& r) {
  const std::string finish = r.finish_reason.empty() ? "stop" : r.finish_reason;
  return json{{"id", "chatcmpl-loopback"},
              {"object", "chat.completion"},
              {"model", r.model.empty() ? "loopback" : r.model},
              {"choices", json::array({{{"index", 0},
                                        {"message", {{"role", "assistant"}, {"content", r.text}}},
                                        {"finish_reason", finish == "refusal" ? "stop" : finish}}})},
              {"usage", {{"prompt_tokens", r.usage.prompt_tokens},
                         {"completion_tokens", r.usage.completion_tokens},
                         {"total_tokens", r.usage.total()}}}}
      .dump();
}

std::string anthropic_body(const chat_response& r) {
  const std::string finish = r.finish_reason == "length" ? "max_tokens" : "end_turn";
  return json{{"id", "msg_loopback"},
              {"type", "message"},
              {"role", "assistant"},
              {"model", r.model.empty() ? "loopback" : r.model},
              {"content", json::array({{{"type", "text"}, {"text", r.text}}})},
              {"stop_reason", finish},
              {"usage", {{"input_tokens", r.usage.prompt_tokens}, {"output_tokens", r.usage.completion_tokens}}}}
      .dump();
}

// The request as a chat_request, so the player can check its role or fingerprint.
chat_request to_chat_request(const std::string& body, const std::string& role) {
  chat_request r;
  r.agent_role = role;
  const json doc = json::parse(body, nullptr, false);
  if (!doc.is_object()) return r;
  if (doc.contains("system") && doc["system"].is_string()) r.system = doc["system"].get<std::string>();
  if (doc.contains("messages") && doc["messages"].is_array())
    for (const auto& m : doc["messages"]) {
      if (!m.is_object()) continue;
      const std::string role_name = m.value("role", "");
      const std::string content = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
      if (role_name == "system") r.system = content;
      else r.messages.push_back({role_name, content});
    }
  return r;
}

}  // namespace

struct loopback_server::impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::vector<std::shared_ptr<tcp::socket>> sockets;
};

loopback_server::loopback_server(std::vector<cassette_entry> answers, replay_mode mode)
    : impl_(std::make_unique<impl>()), player_(std::move(answers), mode) {
  tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
  impl_->acceptor.bind(ep);
  impl_->acceptor.listen();
  port_ = impl_->acceptor.local_endpoint().port();
  acceptor_thread_ = std::thread([this] { accept_loop(); });
}

loopback_server::~loopback_server() {
  stopping_ = true;
  // Wake the blocking accept with a connection of our own, then close every client socket so
  // that workers blocked in a read return.
  try {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
  } catch (const std::exception&) {
  }
  if (acceptor_thread_.joinable()) acceptor_thread_.join();
  {
    std::lock_guard lock(mutex_);
    for (auto& s : impl_->sockets) {
      beast::error_code ec;
      s->shutdown(tcp::socket::shutdown_both, ec);
    }
  }
  for (auto& t : workers_)
    if (t.joinable()) t.join();
}

std::string loopback_server::base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

void loopback_server::inject(const injected_fault& f) {
  std::lock_guard lock(mutex_);
  faults_.push_back(f);
}

std::vector<received_request> loopback_server::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void loopback_server::accept_loop() {
  while (!stopping_) {
    auto socket = std::make_shared<tcp::socket>(impl_->io);
    beast::error_code ec;
    impl_->acceptor.accept(*socket, ec);
    if (ec || stopping_) break;
    std::lock_guard lock(mutex_);
    impl_->sockets.push_back(socket);
    workers_.emplace_back([this, socket] { serve(socket); });
  }
}

void loopback_server::serve(std::shared_ptr<void> handle) {
  auto socket = std::static_pointer_cast<tcp::socket>(handle);
  beast::flat_buffer buffer;
  while (!stopping_) {
    http::request<http::string_body> req;
    beast::error_code ec;
    http::read(*socket, buffer, req, ec);
    if (ec) return;
    const int now = in_flight_.fetch_add(1) + 1;
    for (int peak = peak_.load(); now > peak && !peak_.compare_exchange_weak(peak, now);) {
    }
    received_request got;
    got.path = std::string(req.target());
    for (const auto& field : req) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      got.headers[name] = std::string(field.value());
    }
    got.body = req.body();
    std::optional<injected_fault> fault;
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(got);
      if (!faults_.empty()) {
        fault = faults_.front();
        faults_.pop_front();
      }
    }
    http::response<http::string_body> res;
    res.version(req.version());
    res.keep_alive(req.keep_alive());
    res.set(http::field::content_type, "application/json");
    int delay = answer_delay_ms_.load();
    const bool anthropic = got.path.find("/messages") != std::string::npos;
    if (fault) {
      delay = fault->delay_ms;
      res.result(static_cast<unsigned>(fault->status));
      if (!fault->retry_after.empty()) res.set(http::field::retry_after, fault->retry_after);
      res.body() = fault->body;
    } else if (req.method() != http::verb::post ||
               (got.path.find("/chat/completions") == std::string::npos && !anthropic)) {
      res.result(http::status::not_found);
      res.body() = json{{"error", {{"message", "the loopback server serves POST /v1/chat/completions and /v1/messages"}}}}.dump();
    } else {
      const auto role_it = got.headers.find("x-kblaster-agent-role");
      const chat_request asked = to_chat_request(got.body, role_it == got.headers.end() ? "" : role_it->second);
      try {
        const cassette_entry e = player_.next(asked);
        res.result(http::status::ok);
        res.body() = anthropic ? anthropic_body(e.response) : openai_body(e.response);
      } catch (const std::exception& ex) {
        res.result(http::status::not_found);
        res.body() = json{{"error", {{"message", ex.what()}, {"type", "replay_miss"}}}}.dump();
      }
    }
    if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    res.prepare_payload();
    // Counted as handled before the write: the client's call is still in flight until the
    // answer arrives, so the server's peak can never exceed the client's bound by a race.
    in_flight_.fetch_sub(1);
    http::write(*socket, res, ec);
    if (ec || !req.keep_alive()) {
      socket->shutdown(tcp::socket::shutdown_both, ec);
      return;
    }
  }
}

}  // namespace kblaster::engine::llm
