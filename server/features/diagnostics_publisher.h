// One publisher of textDocument/publishDiagnostics per daemon. LSP replaces a file's whole
// diagnostic list on every publish, so the analysis (compiler and profiler) and the optimizer
// each keep their own list here and every publish sends the union: an Optimize result no
// longer wipes nvcc's errors, and a re-analysis after a save no longer wipes the Optimize result.
#pragma once

#include "protocol/json_rpc.h"

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace kblaster::server {

class lsp_server;

/// Who produced a list of diagnostics.
enum class diagnostics_origin { analysis, optimizer };

class diagnostics_publisher {
 public:
  /// Replaces `from`'s diagnostics of `uri` and publishes every origin's, merged.
  void publish(lsp_server& server, const std::string& uri, std::optional<int> version, diagnostics_origin from,
               protocol::json diagnostics);
  /// Forgets every origin's diagnostics of `uri` and publishes the empty list (a closed file).
  void clear(lsp_server& server, const std::string& uri);

 private:
  std::mutex mutex_;  // held while sending, so that publishes of one file reach the client in order
  std::map<std::string, std::map<diagnostics_origin, protocol::json>> by_uri_;
};

}  // namespace kblaster::server
