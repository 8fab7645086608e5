// Where each LSP feature registers its handlers, by method name (one file per feature, as in
// ccls). Params parsing errors thrown as rpc_error become error responses in one place: the
// dispatcher in lsp_server.cpp.
#pragma once

#include "protocol/json_rpc.h"
#include "server/request_context.h"

#include <functional>
#include <map>
#include <string>

namespace kblaster::server {

/// Ordered handlers run one at a time in arrival order, interleaved with notifications
/// (lifecycle, cheap state changes); concurrent ones run on the worker pool.
enum class execution { ordered, concurrent };

using request_handler = std::function<protocol::json(const protocol::json& params, request_context& ctx)>;
using notification_handler = std::function<void(const protocol::json& params)>;

class feature_registry {
 public:
  struct request_entry {
    execution mode;
    request_handler handler;
  };

  void on_request(const std::string& method, execution mode, request_handler handler) {
    requests_[method] = {mode, std::move(handler)};
  }
  void on_notification(const std::string& method, notification_handler handler) {
    notifications_[method] = std::move(handler);
  }

  /// The typed binder (clangd's LSPBinder): `Params::from(json)` reads the params before the
  /// handler runs, so a handler sees only typed values, and a bad field is an InvalidParams
  /// error naming it ("'textDocument.uri' must be a string"), raised in one place.
  template <class Params, class Handler>
  void on_typed_request(const std::string& method, execution mode, Handler handler) {
    on_request(method, mode, [handler = std::move(handler)](const protocol::json& params, request_context& ctx) {
      return protocol::json(handler(Params::from(params), ctx));
    });
  }
  template <class Params, class Handler>
  void on_typed_notification(const std::string& method, Handler handler) {
    on_notification(method, [handler = std::move(handler)](const protocol::json& params) { handler(Params::from(params)); });
  }

  const request_entry* find_request(const std::string& method) const {
    const auto it = requests_.find(method);
    return it == requests_.end() ? nullptr : &it->second;
  }
  const notification_handler* find_notification(const std::string& method) const {
    const auto it = notifications_.find(method);
    return it == notifications_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, request_entry> requests_;
  std::map<std::string, notification_handler> notifications_;
};

}  // namespace kblaster::server
