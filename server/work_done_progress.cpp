// $/progress reporting for a request.
#include "server/work_done_progress.h"

#include "protocol/lsp_types.h"
#include "server/lsp_server.h"

#include <algorithm>
#include <atomic>

namespace kblaster::server {
namespace {
// Clients answer create within milliseconds; a client that never answers must not hang work.
constexpr std::chrono::milliseconds create_timeout{2000};
std::atomic<std::uint64_t> next_token{1};
}  // namespace

work_done_progress::work_done_progress(request_context& ctx, const std::string& title, const std::string& message)
    : server_(ctx.server()) {
  if (!ctx.work_done_token().is_null()) {
    token_ = ctx.work_done_token();
  } else if (server_.client().work_done_progress) {
    protocol::json token = "kblaster/progress/" + std::to_string(next_token++);
    if (!server_.call_client("window/workDoneProgress/create", {{"token", token}}, create_timeout)) return;
    token_ = token;
  } else {
    return;
  }
  server_.register_progress(token_, ctx.token());
  server_.notify("$/progress", {{"token", token_}, {"value", protocol::lsp::progress_begin(title, message, true)}});
  state_ = state::begun;
}

work_done_progress::~work_done_progress() {
  if (state_ == state::begun) end("");
}

void work_done_progress::report(const std::string& message, int percentage) {
  if (state_ != state::begun) return;
  last_percentage_ = std::max(last_percentage_, std::clamp(percentage, 0, 100));
  server_.notify("$/progress", {{"token", token_}, {"value", protocol::lsp::progress_report(message, last_percentage_)}});
}

void work_done_progress::end(const std::string& message) {
  if (state_ != state::begun) return;
  state_ = state::ended;
  server_.unregister_progress(token_);
  server_.notify("$/progress", {{"token", token_}, {"value", protocol::lsp::progress_end(message)}});
}

}  // namespace kblaster::server
