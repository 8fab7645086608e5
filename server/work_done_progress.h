// Server-initiated progress for one request: begin, reports with rising percentages, end.
//
// A small state machine: inactive (the client cannot show progress) -> begun -> ended. Uses the
// request's workDoneToken when the client sent one, else creates a token with
// window/workDoneProgress/create when the client supports it. The token can be cancelled from
// the editor's progress UI (window/workDoneProgress/cancel), which cancels the request.
#pragma once

#include "protocol/json_rpc.h"
#include "server/request_context.h"

#include <string>

namespace kblaster::server {

class work_done_progress {
 public:
  work_done_progress(request_context& ctx, const std::string& title, const std::string& message = "");
  ~work_done_progress();
  work_done_progress(const work_done_progress&) = delete;
  work_done_progress& operator=(const work_done_progress&) = delete;

  /// Reports `percentage` (clamped to 0..100 and never lower than the last report).
  void report(const std::string& message, int percentage);
  void end(const std::string& message);
  bool active() const { return state_ == state::begun; }

 private:
  enum class state { inactive, begun, ended };
  lsp_server& server_;
  protocol::json token_;
  state state_ = state::inactive;
  int last_percentage_ = 0;
};

}  // namespace kblaster::server
