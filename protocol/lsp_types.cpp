// Readers and builders for the LSP types KernelBlaster uses.
#include "protocol/lsp_types.h"

namespace kblaster::protocol::lsp {
namespace {

[[noreturn]] void invalid(std::string_view path, std::string_view what) {
  throw rpc_error(error_code::invalid_params, "invalid params: '" + std::string(path) + "' " + std::string(what));
}

const json* walk(const json& params, std::string_view path, bool required) {
  const json* at = &params;
  std::string_view rest = path;
  while (!rest.empty()) {
    const std::size_t dot = rest.find('.');
    const std::string key(rest.substr(0, dot));
    if (!at->is_null() && !at->is_object()) {
      // Name the part that has the wrong type, not the field that then seems missing.
      const std::string_view parent = path.substr(0, path.size() - rest.size() - (at == &params ? 0 : 1));
      if (parent.empty()) invalid("params", "must be an object");
      invalid(parent, "must be an object");
    }
    if (!at->is_object() || !at->contains(key) || (*at)[key].is_null()) {
      if (required) invalid(path, "is missing");
      return nullptr;
    }
    at = &(*at)[key];
    rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  }
  return at;
}

std::string join(std::string_view path, std::string_view field) {
  return std::string(path) + "." + std::string(field);
}

}  // namespace

const json& required_field(const json& params, std::string_view path) { return *walk(params, path, true); }
const json* optional_field(const json& params, std::string_view path) { return walk(params, path, false); }

std::string required_string(const json& params, std::string_view path) {
  const json& v = required_field(params, path);
  if (!v.is_string()) invalid(path, "must be a string");
  return v.get<std::string>();
}

int required_int(const json& params, std::string_view path) {
  const json& v = required_field(params, path);
  if (!v.is_number_integer()) invalid(path, "must be an integer");
  const auto n = v.get<long long>();
  if (n < INT32_MIN || n > INT32_MAX) invalid(path, "is out of range");
  return static_cast<int>(n);
}

position required_position(const json& params, std::string_view path) {
  position p{required_int(params, join(path, "line")), required_int(params, join(path, "character"))};
  if (p.line < 0) invalid(join(path, "line"), "must not be negative");
  if (p.character < 0) invalid(join(path, "character"), "must not be negative");
  return p;
}

range required_range(const json& params, std::string_view path) {
  range r{required_position(params, join(path, "start")), required_position(params, join(path, "end"))};
  if (r.end.line < r.start.line || (r.end.line == r.start.line && r.end.character < r.start.character))
    invalid(path, "ends before it starts");
  return r;
}

text_document_position_params text_document_position_params::from(const json& params) {
  return {required_string(params, "textDocument.uri"), required_position(params, "position")};
}

did_open_params did_open_params::from(const json& params) {
  did_open_params p;
  p.uri = required_string(params, "textDocument.uri");
  p.language_id = required_string(params, "textDocument.languageId");
  p.version = required_int(params, "textDocument.version");
  p.text = required_string(params, "textDocument.text");
  return p;
}

did_change_params did_change_params::from(const json& params) {
  did_change_params p;
  p.uri = required_string(params, "textDocument.uri");
  p.version = required_int(params, "textDocument.version");
  const json& changes = required_field(params, "contentChanges");
  if (!changes.is_array()) invalid("contentChanges", "must be an array");
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const std::string at = "contentChanges[" + std::to_string(i) + "]";
    const json& c = changes[i];
    if (!c.is_object()) invalid(at, "must be an object");
    content_change change;
    if (!c.contains("text") || !c["text"].is_string()) invalid(at + ".text", "must be a string");
    change.text = c["text"].get<std::string>();
    if (c.contains("range") && !c["range"].is_null()) {
      // Re-read through the path helpers, keyed by the element's own name, so that errors name
      // e.g. 'contentChanges[0].range.start.line'.
      change.where = required_range(json{{at, c}}, at + ".range");
    }
    p.changes.push_back(std::move(change));
  }
  return p;
}

document_uri_params document_uri_params::from(const json& params) {
  return {required_string(params, "textDocument.uri")};
}

code_action_params code_action_params::from(const json& params) {
  code_action_params p{required_string(params, "textDocument.uri"), {}};
  try {
    p.where = required_field(params, "range").get<range>();
  } catch (const nlohmann::json::exception&) {
    throw rpc_error(error_code::invalid_params, "invalid params: 'range' must be a Range");
  }
  return p;
}

client_capabilities client_capabilities::from(const json& params) {
  client_capabilities c;
  auto flag = [&](std::string_view path) {
    const json* v = optional_field(params, path);
    return v && v->is_boolean() && v->get<bool>();
  };
  c.work_done_progress = flag("capabilities.window.workDoneProgress");
  c.hierarchical_symbols = flag("capabilities.textDocument.documentSymbol.hierarchicalDocumentSymbolSupport");
  if (const json* formats = optional_field(params, "capabilities.textDocument.hover.contentFormat");
      formats && formats->is_array())
    for (const auto& f : *formats)
      if (f == "markdown") c.markdown_hover = true;
  return c;
}

json document_symbol(std::string_view name, std::string_view detail, symbol_kind kind, const range& full,
                     const range& selection) {
  return {{"name", name}, {"detail", detail}, {"kind", static_cast<int>(kind)},
          {"range", full}, {"selectionRange", selection}};
}

json hover(std::string_view markdown, const range& where) {
  return {{"contents", {{"kind", "markdown"}, {"value", markdown}}}, {"range", where}};
}

json progress_begin(std::string_view title, std::string_view message, bool cancellable) {
  return {{"kind", "begin"}, {"title", title}, {"message", message}, {"cancellable", cancellable},
          {"percentage", 0}};
}

json progress_report(std::string_view message, int percentage) {
  return {{"kind", "report"}, {"message", message}, {"percentage", percentage}};
}

json progress_end(std::string_view message) { return {{"kind", "end"}, {"message", message}}; }

}  // namespace kblaster::protocol::lsp
