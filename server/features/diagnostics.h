// The analysis of open CUDA documents as LSP diagnostics (used by text sync and commands).
#pragma once

#include "engine/analysis/file_analysis.h"
#include "server/document_store.h"
#include "server/features/editor_state.h"

#include <functional>
#include <optional>
#include <stop_token>
#include <string>

namespace kblaster::server {

class lsp_server;

/// The analysis as LSP Diagnostic objects positioned in `doc` (the analysed snapshot).
protocol::json to_lsp_diagnostics(const engine::file_analysis& a, const document_snapshot& doc);

/// Analyses `doc` now (after the debounce when asked) and publishes its diagnostics; the first
/// analysis of the session also tells the user, once, what this machine cannot do. nullptr
/// when a newer analysis of the file took over or `stop` fired. `progress` hears the live
/// profile's steps (a program's captures). `stop` (a request's, ctx.stop_token()) kills the
/// analysis's nvcc, ncu or harness in flight.
std::shared_ptr<const engine::file_analysis> analyze_and_publish(lsp_server& server, editor_state& state,
                                                                const document_ptr& doc, bool wait_for_debounce,
                                                                std::optional<std::uint64_t> ticket = std::nullopt,
                                                                std::function<void(const std::string&)> progress = {},
                                                                std::stop_token stop = {});

/// analyze_and_publish in the background, debounced, for CUDA documents when analysis is on.
void publish_analysis(lsp_server& server, editor_state& state, document_ptr doc);

/// Stops the analysis of a closed document and clears its diagnostics.
void clear_analysis(lsp_server& server, editor_state& state, const std::string& uri);

}  // namespace kblaster::server
