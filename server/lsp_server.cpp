// Routing, lifecycle checks, cancellation and the one place where failures become replies.
#include "server/lsp_server.h"

#include "server/features/features.h"

#include <boost/asio/post.hpp>

namespace kblaster::server {

using protocol::error_code;
using protocol::json;

namespace {

std::string describe(const json& id) { return id.is_null() ? "null" : id.dump(); }

}  // namespace

request_context::request_context(lsp_server& server, protocol::request_id id, cancel_token token,
                                 protocol::json work_done_token)
    : server_(server), id_(std::move(id)), token_(std::move(token)), work_done_token_(std::move(work_done_token)) {}

request_context::~request_context() {
  for (const auto& uri : watched_) server_.documents().unwatch(uri, token_);
}

document_ptr request_context::watch_document(const std::string& uri) {
  document_ptr doc = server_.documents().watch(uri, token_);
  watched_.push_back(uri);
  return doc;
}

lsp_server::lsp_server(transport& io, logger& log, server_options options)
    : io_(io), log_(log), options_(options), reader_(options.max_message_bytes),
      executor_(options.single_thread
                    ? options.single_thread->get_executor()
                    : boost::asio::any_io_executor(pool_.emplace(std::max<std::size_t>(2, options.worker_threads)).get_executor())),
      strand_(boost::asio::make_strand(executor_)) {
  register_all_features(features_, *this);
}

lsp_server::~lsp_server() {
  log_.set_client_sink(nullptr);
  if (pool_) pool_->join();
}

int lsp_server::run() {
  log_.set_client_sink([this](log_level level, const std::string& text) {
    if (exiting_) return;
    const auto type = level == log_level::error ? protocol::lsp::message_type::error : protocol::lsp::message_type::warning;
    notify("window/logMessage", {{"type", static_cast<int>(type)}, {"message", text}});
  });
  if (options_.client_process_id) watch_client(*options_.client_process_id);
  io_.run([this](std::string_view bytes) { on_bytes(bytes); });
  exiting_ = true;
  log_.set_client_sink(nullptr);
  {
    std::lock_guard lock(watch_mutex_);
    client_watch_.reset();
  }
  if (options_.on_exit) options_.on_exit();

  // Stop what is still running: nobody is left to read its answer.
  {
    std::lock_guard lock(in_flight_mutex_);
    for (auto& [id, token] : in_flight_) token->cancel(error_code::request_cancelled);
  }
  {
    std::lock_guard lock(calls_mutex_);
    for (auto& [id, promise] : calls_) promise.set_value(std::nullopt);
    calls_.clear();
  }
  // On a single thread the transport has run every task it handed over.
  if (pool_) pool_->join();
  const int code = shutdown_ ? 0 : 1;
  log_.info(std::string("exiting with code ") + std::to_string(code));
  return code;
}

// --- I/O thread ---------------------------------------------------------------------------

void lsp_server::on_bytes(std::string_view bytes) {
  reader_.feed(bytes);
  while (auto event = reader_.next()) {
    if (event->what == protocol::frame_event::kind::header_error) {
      log_.warn("dropped a malformed message header: " + event->text);
      continue;
    }
    on_body(event->text);
  }
}

void lsp_server::on_body(const std::string& body) {
  protocol::message message;
  try {
    message = protocol::parse_message(body);
  } catch (const protocol::rpc_error& e) {
    send(protocol::make_error(nullptr, e.code(), e.what()));
    return;
  }
  if (auto* r = std::get_if<protocol::request>(&message)) return on_request(std::move(*r));
  if (auto* n = std::get_if<protocol::notification>(&message)) return on_notification(std::move(*n));
  if (auto* r = std::get_if<protocol::response>(&message)) return on_response(*r);
  const auto& invalid = std::get<protocol::invalid_message>(message);
  send(protocol::make_error(invalid.id, error_code::invalid_request, invalid.reason));
}

void lsp_server::on_request(protocol::request request) {
  auto token = std::make_shared<cancel_state>();
  {
    std::lock_guard lock(in_flight_mutex_);
    if (!in_flight_.emplace(protocol::id_key(request.id), token).second) {
      // Answering would make the original's reply ambiguous; refuse the newcomer only.
      send(protocol::make_error(request.id, error_code::invalid_request,
                                "request id " + describe(request.id) + " is already in use"));
      return;
    }
  }
  boost::asio::post(strand_, [this, request = std::move(request), token]() mutable {
    dispatch_request(std::move(request), token);
  });
}

void lsp_server::on_notification(protocol::notification note) {
  if (note.method == "$/cancelRequest") {
    // Handled here, not queued behind other work, so that cancelling is immediate.
    const json* id = note.params.is_object() && note.params.contains("id") ? &note.params["id"] : nullptr;
    if (!id) return;
    std::lock_guard lock(in_flight_mutex_);
    if (const auto it = in_flight_.find(protocol::id_key(*id)); it != in_flight_.end())
      it->second->cancel(error_code::request_cancelled);
    return;  // late or unknown ids are harmless
  }
  boost::asio::post(strand_, [this, note = std::move(note)] {
    if (note.method != "exit") {
      if (!initialized_ || shutdown_) {
        log_.debug("ignored notification " + note.method + (shutdown_ ? " after shutdown" : " before initialize"));
        return;
      }
    }
    const notification_handler* handler = features_.find_notification(note.method);
    if (!handler) {
      if (note.method.rfind("$/", 0) != 0) log_.debug("ignored unknown notification " + note.method);
      return;
    }
    try {
      (*handler)(note.params);
    } catch (const std::exception& e) {
      log_.warn(note.method + ": " + e.what());
    }
  });
}

void lsp_server::on_response(const protocol::response& response) {
  std::lock_guard lock(calls_mutex_);
  const auto it = calls_.find(protocol::id_key(response.id));
  if (it == calls_.end()) {
    log_.debug("response to unknown request " + describe(response.id));
    return;
  }
  it->second.set_value(response.error ? std::nullopt : response.result);
  calls_.erase(it);
}

// --- workers ------------------------------------------------------------------------------

void lsp_server::dispatch_request(protocol::request request, const cancel_token& token) {
  if (!initialized_ && request.method != "initialize") {
    reply(request.id, protocol::make_error(request.id, error_code::server_not_initialized,
                                           "the server is not initialized: send initialize first"));
    return;
  }
  if (shutdown_) {
    reply(request.id, protocol::make_error(request.id, error_code::invalid_request,
                                           "the server is shutting down: only exit is accepted"));
    return;
  }
  const auto* entry = features_.find_request(request.method);
  if (!entry) {
    reply(request.id, protocol::make_error(request.id, error_code::method_not_found,
                                           "unknown method " + request.method));
    return;
  }
  if (entry->mode == execution::ordered) return run_request(request, token, entry->handler);
  boost::asio::post(executor_, [this, request = std::move(request), token, handler = entry->handler] {
    run_request(request, token, handler);
  });
}

void lsp_server::run_request(const protocol::request& request, const cancel_token& token,
                             const request_handler& handler) {
  // The single place where a handler's outcome becomes exactly one reply.
  json message;
  try {
    if (token->cancelled()) throw cancelled_error{};
    json work_done_token = request.params.is_object() ? request.params.value("workDoneToken", json()) : json();
    request_context context(*this, request.id, token, std::move(work_done_token));
    json result = handler(request.params, context);
    message = protocol::make_result(request.id, std::move(result));
  } catch (const cancelled_error&) {
  } catch (const protocol::rpc_error& e) {
    message = protocol::make_error(request.id, e.code(), e.what(), e.data());
  } catch (const std::exception& e) {
    log_.error(request.method + " failed: " + e.what());
    message = protocol::make_error(request.id, error_code::internal_error, request.method + " failed: " + e.what());
  } catch (...) {
    message = protocol::make_error(request.id, error_code::internal_error, request.method + " failed");
  }
  // A cancelled request answers with the reason even if the handler finished: the client has
  // already moved on, and for ContentModified the result was computed on stale text.
  if (const auto reason = token->reason()) {
    message = protocol::make_error(request.id, *reason,
                                   *reason == error_code::content_modified ? "the document changed"
                                                                           : "request cancelled");
  }
  reply(request.id, message);
}

void lsp_server::reply(const protocol::request_id& id, const json& message) {
  {
    std::lock_guard lock(in_flight_mutex_);
    in_flight_.erase(protocol::id_key(id));
  }
  send(message);
}

void lsp_server::send(const json& message) {
  // Documents may hold invalid UTF-8; replace it rather than fail the whole reply.
  io_.write(protocol::frame(message.dump(-1, ' ', false, json::error_handler_t::replace)));
}

void lsp_server::run_in_background(std::function<void()> work) {
  boost::asio::post(executor_, [this, work = std::move(work)] {
    try {
      work();
    } catch (const std::exception& e) {
      log_.warn(std::string("background work failed: ") + e.what());
    }
  });
}

void lsp_server::notify(std::string_view method, json params) {
  send(protocol::make_notification(method, std::move(params)));
}

std::optional<json> lsp_server::call_client(std::string_view method, json params, std::chrono::milliseconds timeout) {
  std::future<std::optional<json>> answer;
  std::string id;
  {
    std::lock_guard lock(calls_mutex_);
    if (exiting_) return std::nullopt;
    id = "kblaster-" + std::to_string(next_call_++);
    answer = calls_[protocol::id_key(json(id))].get_future();
  }
  send(protocol::make_request(id, method, std::move(params)));
  // On a single thread the answer can only have come while the request was being written.
  if (answer.wait_for(single_threaded() ? std::chrono::milliseconds(0) : timeout) == std::future_status::ready)
    return answer.get();
  std::lock_guard lock(calls_mutex_);
  calls_.erase(protocol::id_key(json(id)));
  log_.warn(std::string(method) + ": the client did not answer in time");
  return std::nullopt;
}

void lsp_server::mark_initialized(const json& initialize_params) {
  client_ = protocol::lsp::client_capabilities::from(initialize_params);
  initialized_ = true;
  const auto pid = initialize_params.find("processId");
  if (options_.watch_client_process && !options_.client_process_id && pid != initialize_params.end() &&
      pid->is_number_integer() && pid->get<long long>() > 0)
    watch_client(static_cast<pid_t>(pid->get<long long>()));
}

void lsp_server::watch_client(pid_t pid) {
  std::lock_guard lock(watch_mutex_);
  if (client_watch_ || exiting_) return;
  if (!process_alive(pid)) {
    // Another pid namespace (an editor outside the container the daemon runs in), or a wrong
    // number: a process never seen cannot be seen to end.
    log_.warn("the client's process " + std::to_string(pid) + " is not visible from here: not watching it");
    return;
  }
  client_watch_.emplace(pid, [this, pid] {
    log_.warn("the client's process " + std::to_string(pid) + " has ended without exit: exiting");
    request_exit();
  });
}

void lsp_server::request_exit() {
  exiting_ = true;
  io_.close();
}

json lsp_server::settings() const {
  std::lock_guard lock(settings_mutex_);
  return settings_;
}

void lsp_server::merge_settings(const json& patch) {
  std::lock_guard lock(settings_mutex_);
  settings_.merge_patch(patch);
}

void lsp_server::register_progress(const json& token, cancel_token cancel) {
  std::lock_guard lock(progress_mutex_);
  progress_[token.dump()] = std::move(cancel);
}

void lsp_server::unregister_progress(const json& token) {
  std::lock_guard lock(progress_mutex_);
  progress_.erase(token.dump());
}

void lsp_server::cancel_progress(const json& token) {
  std::lock_guard lock(progress_mutex_);
  if (const auto it = progress_.find(token.dump()); it != progress_.end())
    it->second->cancel(error_code::request_cancelled);
}

}  // namespace kblaster::server
