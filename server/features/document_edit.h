// Edits the daemon asks the editor to make (workspace/applyEdit), so that the user can undo them:
// one way to send them and one wait for the answer, for every feature that proposes an edit.
#pragma once

#include "protocol/json_rpc.h"
#include "server/document_store.h"
#include "server/lsp_server.h"

#include <string>

namespace kblaster::server {

/// Sends `edit` (a WorkspaceEdit) under `label` and waits for the client's answer; true when the
/// client applied it.
bool apply_workspace_edit(lsp_server& server, const std::string& label, const protocol::json& edit);

/// Replaces the whole text of `doc` with `text`; false when they are equal or the client did not
/// apply it.
bool replace_document_text(lsp_server& server, const document_snapshot& doc, const std::string& label, const std::string& text);

}  // namespace kblaster::server
