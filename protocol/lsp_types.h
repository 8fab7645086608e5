// The LSP 3.17 types KernelBlaster uses, written by hand (see docs/testing.md, "Where to start": the
// product uses a dozen methods, and hand-written readers name the offending field in
// InvalidParams errors, which generated bindings from metaModel.json did not give us).
#pragma once

#include "protocol/json_rpc.h"
#include "protocol/position.h"

#include <optional>
#include <string>
#include <vector>

namespace kblaster::protocol::lsp {

// --- reading params: every failure is rpc_error(invalid_params) naming the field -----------

/// The value at a dotted path ("textDocument.uri"); throws invalid_params if missing.
const json& required_field(const json& params, std::string_view path);
/// The value at a dotted path, or nullptr when absent or null.
const json* optional_field(const json& params, std::string_view path);

std::string required_string(const json& params, std::string_view path);
int required_int(const json& params, std::string_view path);
position required_position(const json& params, std::string_view path);
range required_range(const json& params, std::string_view path);

// --- requests and notifications -------------------------------------------------------------

struct text_document_position_params {
  std::string uri;
  position pos;
  static text_document_position_params from(const json& params);
};

struct did_open_params {
  std::string uri, language_id, text;
  int version = 0;
  static did_open_params from(const json& params);
};

struct content_change {
  std::optional<range> where;  // absent: the whole text is replaced
  std::string text;
};

struct did_change_params {
  std::string uri;
  int version = 0;
  std::vector<content_change> changes;
  static did_change_params from(const json& params);
};

struct document_uri_params {  // didClose, didSave, documentSymbol, codeLens
  std::string uri;
  static document_uri_params from(const json& params);
};

struct code_action_params {  // textDocument/codeAction (the context is not read)
  std::string uri;
  range where;
  static code_action_params from(const json& params);
};

struct client_capabilities {
  bool work_done_progress = false;        // window.workDoneProgress
  bool hierarchical_symbols = false;      // textDocument.documentSymbol.hierarchicalDocumentSymbolSupport
  bool markdown_hover = false;            // textDocument.hover.contentFormat contains markdown
  static client_capabilities from(const json& initialize_params);
};

// --- results --------------------------------------------------------------------------------

/// LSP SymbolKind values used here.
enum class symbol_kind : int { namespace_ = 3, method = 6, function = 12, event = 24 };

json document_symbol(std::string_view name, std::string_view detail, symbol_kind kind,
                     const range& full, const range& selection);
json hover(std::string_view markdown, const range& where);

/// `$/progress` values.
json progress_begin(std::string_view title, std::string_view message, bool cancellable);
json progress_report(std::string_view message, int percentage);
json progress_end(std::string_view message);

/// LSP MessageType for window/logMessage and window/showMessage.
enum class message_type : int { error = 1, warning = 2, info = 3, log = 4 };

}  // namespace kblaster::protocol::lsp
