// What a request handler gets besides its params: its id, its cancellation token, the
// progress token the client offered, and a way to read documents so that later edits cancel it.
#pragma once

#include "protocol/json_rpc.h"
#include "server/cancellation.h"
#include "server/document_store.h"

#include <string>
#include <vector>

namespace kblaster::server {

class lsp_server;

/// One running request. Not thread-safe: it belongs to the thread running the handler.
class request_context {
 public:
  request_context(lsp_server& server, protocol::request_id id, cancel_token token, protocol::json work_done_token);
  ~request_context();
  request_context(const request_context&) = delete;
  request_context& operator=(const request_context&) = delete;

  lsp_server& server() { return server_; }
  const protocol::request_id& id() const { return id_; }
  const cancel_token& token() const { return token_; }
  /// The client's `workDoneToken` for this request, or null.
  const protocol::json& work_done_token() const { return work_done_token_; }

  bool cancelled() const { return token_->cancelled(); }
  /// The request's cancellation as a std::stop_token, for engine work: a cancel from the client
  /// or the progress UI (or an edit to a watched document) stops it and kills its child processes.
  std::stop_token stop_token() const { return token_->stop_token(); }
  /// Throws cancelled_error when the request was cancelled; call between steps of long work.
  void check_cancelled() const {
    if (token_->cancelled()) throw cancelled_error{};
  }

  /// The document's current snapshot; an edit to it from now on makes this request answer
  /// ContentModified. Throws InvalidParams if the document is not open.
  document_ptr watch_document(const std::string& uri);

 private:
  lsp_server& server_;
  protocol::request_id id_;
  cancel_token token_;
  protocol::json work_done_token_;
  std::vector<std::string> watched_;
};

}  // namespace kblaster::server
