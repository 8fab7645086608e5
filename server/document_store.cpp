// Open-document store with immutable snapshots and ContentModified watches.
#include "server/document_store.h"

#include <algorithm>

namespace kblaster::server {

using protocol::error_code;
using protocol::rpc_error;

document_snapshot::document_snapshot(std::string uri, std::string language_id, int version, std::string text)
    : uri_(std::move(uri)), language_id_(std::move(language_id)), version_(version), text_(std::move(text)),
      lines_(text_) {}

const std::vector<engine::cuda_symbol>& document_snapshot::symbols() const {
  std::call_once(symbols_once_, [this] { symbols_ = engine::locate_cuda_symbols(text_); });
  return symbols_;
}

void apply_change(std::string& text, const protocol::lsp::content_change& change) {
  if (!change.where) {
    text = change.text;
    return;
  }
  const protocol::line_index lines(text);
  const std::size_t begin = lines.offset_of(change.where->start);
  const std::size_t end = std::max(begin, lines.offset_of(change.where->end));
  text.replace(begin, end - begin, change.text);
}

document_ptr document_store::open(std::string uri, std::string language_id, int version, std::string text) {
  auto doc = std::make_shared<const document_snapshot>(uri, std::move(language_id), version, std::move(text));
  std::lock_guard lock(mutex_);
  cancel_watchers_locked(uri);
  documents_[uri] = doc;
  return doc;
}

document_ptr document_store::change(const std::string& uri, int version,
                                    const std::vector<protocol::lsp::content_change>& changes) {
  document_ptr current = get(uri);
  if (!current) throw rpc_error(error_code::invalid_params, "invalid params: document " + uri + " is not open");
  // Edits are applied outside the lock: only the strand that orders notifications changes
  // documents, so no other change can interleave.
  std::string text = current->text();
  for (const auto& c : changes) apply_change(text, c);
  auto doc = std::make_shared<const document_snapshot>(uri, current->language_id(), version, std::move(text));
  std::lock_guard lock(mutex_);
  cancel_watchers_locked(uri);
  documents_[uri] = doc;
  return doc;
}

void document_store::close(const std::string& uri) {
  std::lock_guard lock(mutex_);
  cancel_watchers_locked(uri);
  documents_.erase(uri);
}

document_ptr document_store::get(const std::string& uri) const {
  std::lock_guard lock(mutex_);
  const auto it = documents_.find(uri);
  return it == documents_.end() ? nullptr : it->second;
}

document_ptr document_store::watch(const std::string& uri, const cancel_token& token) {
  std::lock_guard lock(mutex_);
  const auto it = documents_.find(uri);
  if (it == documents_.end())
    throw rpc_error(error_code::invalid_params, "invalid params: document " + uri + " is not open");
  watchers_[uri].push_back(token);
  return it->second;
}

void document_store::unwatch(const std::string& uri, const cancel_token& token) {
  std::lock_guard lock(mutex_);
  const auto it = watchers_.find(uri);
  if (it == watchers_.end()) return;
  std::erase(it->second, token);
  if (it->second.empty()) watchers_.erase(it);
}

std::size_t document_store::size() const {
  std::lock_guard lock(mutex_);
  return documents_.size();
}

void document_store::cancel_watchers_locked(const std::string& uri) {
  const auto it = watchers_.find(uri);
  if (it == watchers_.end()) return;
  for (const auto& token : it->second) token->cancel(error_code::content_modified);
  watchers_.erase(it);
}

}  // namespace kblaster::server
