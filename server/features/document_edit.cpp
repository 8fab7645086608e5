// workspace/applyEdit, sent and answered.
#include "server/features/document_edit.h"

#include <chrono>

namespace kblaster::server {

namespace {
// Long enough for an editor that asks the user first; an edit unanswered by then is not applied.
constexpr std::chrono::seconds apply_timeout{60};
}  // namespace

bool apply_workspace_edit(lsp_server& server, const std::string& label, const protocol::json& edit) {
  const auto answer = server.call_client("workspace/applyEdit", {{"label", label}, {"edit", edit}}, apply_timeout);
  return answer && answer->is_object() && answer->value("applied", false);
}

bool replace_document_text(lsp_server& server, const document_snapshot& doc, const std::string& label, const std::string& text) {
  if (text.empty() || text == doc.text()) return false;
  const auto end = doc.lines().position_of(doc.text().size());
  const protocol::json edit = {
      {"changes", {{doc.uri(), protocol::json::array({{{"range", protocol::range{{0, 0}, end}}, {"newText", text}}})}}}};
  return apply_workspace_edit(server, label, edit);
}

}  // namespace kblaster::server
