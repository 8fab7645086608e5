// Merging per-origin diagnostic lists into one publish.
#include "server/features/diagnostics_publisher.h"

#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;

void diagnostics_publisher::publish(lsp_server& server, const std::string& uri, std::optional<int> version,
                                    diagnostics_origin from, json diagnostics) {
  std::lock_guard lock(mutex_);
  auto& lists = by_uri_[uri];
  lists[from] = diagnostics.is_array() ? std::move(diagnostics) : json::array();
  json merged = json::array();
  for (const auto& [origin, list] : lists)
    for (const auto& d : list) merged.push_back(d);
  json params = {{"uri", uri}, {"diagnostics", std::move(merged)}};
  if (version) params["version"] = *version;
  server.notify("textDocument/publishDiagnostics", std::move(params));
}

void diagnostics_publisher::clear(lsp_server& server, const std::string& uri) {
  std::lock_guard lock(mutex_);
  by_uri_.erase(uri);
  server.notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}});
}

}  // namespace kblaster::server
