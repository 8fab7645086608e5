// The open documents, as the client last described them.
//
// Snapshots are immutable and shared, so a request keeps reading the text it started with while
// edits arrive. Requests that "watch" a document are cancelled with ContentModified when an
// edit lands after they took their snapshot. Thread-safe.
#pragma once

#include "engine/source/kernel_locator.h"
#include "protocol/lsp_types.h"
#include "server/cancellation.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kblaster::server {

/// One version of one document. Immutable; symbols are computed once, on first use.
class document_snapshot {
 public:
  document_snapshot(std::string uri, std::string language_id, int version, std::string text);
  document_snapshot(const document_snapshot&) = delete;
  document_snapshot& operator=(const document_snapshot&) = delete;

  const std::string& uri() const { return uri_; }
  const std::string& language_id() const { return language_id_; }
  int version() const { return version_; }
  const std::string& text() const { return text_; }
  const protocol::line_index& lines() const { return lines_; }

  /// The CUDA symbols of this version (cached after the first call; thread-safe).
  const std::vector<engine::cuda_symbol>& symbols() const;

  protocol::range to_range(const engine::byte_range& r) const {
    return {lines_.position_of(r.begin), lines_.position_of(r.end)};
  }

 private:
  std::string uri_, language_id_;
  int version_;
  std::string text_;
  protocol::line_index lines_;  // views text_, which never moves
  mutable std::once_flag symbols_once_;
  mutable std::vector<engine::cuda_symbol> symbols_;
};

using document_ptr = std::shared_ptr<const document_snapshot>;

class document_store {
 public:
  /// Opens (or re-opens, replacing) a document.
  document_ptr open(std::string uri, std::string language_id, int version, std::string text);
  /// Applies edits in order; throws rpc_error(invalid_params) for an unknown document. Requests
  /// watching the document are cancelled with ContentModified.
  document_ptr change(const std::string& uri, int version, const std::vector<protocol::lsp::content_change>& changes);
  /// Forgets the document; watchers are cancelled with ContentModified.
  void close(const std::string& uri);

  /// The current snapshot, or nullptr.
  document_ptr get(const std::string& uri) const;
  /// The current snapshot and, atomically, a watch that cancels `token` on the next edit.
  /// Throws rpc_error(invalid_params) if the document is not open.
  document_ptr watch(const std::string& uri, const cancel_token& token);
  void unwatch(const std::string& uri, const cancel_token& token);

  std::size_t size() const;

 private:
  void cancel_watchers_locked(const std::string& uri);

  mutable std::mutex mutex_;
  std::map<std::string, document_ptr> documents_;
  std::map<std::string, std::vector<cancel_token>> watchers_;
};

/// Applies one LSP content change to `text` (positions in UTF-16 code units).
void apply_change(std::string& text, const protocol::lsp::content_change& change);

}  // namespace kblaster::server
