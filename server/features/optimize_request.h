// The editor's side of "Optimize this kernel": its settings and the command's arguments as the
// engine's optimize_request, and the outcome as the sentence the Problems panel shows.
#pragma once

#include "engine/optimize/service.h"
#include "server/document_store.h"
#include "server/features/commands.h"
#include "server/features/editor_settings.h"

#include <string>

namespace kblaster::server {

/// The request for `doc` (its text as the buffer: unsaved edits are what the user sees).
engine::optimize::optimize_request optimize_request_of(const editor_settings& settings, const document_snapshot& doc,
                                                       const command_args& args);

/// The measured speedup first, then what the KB predicted for the step that produced it, then
/// what became of a program's rewrite and anything that did not go as planned.
std::string optimize_result_message(const std::string& kernel, const engine::optimize::optimize_outcome& outcome,
                                    bool edited_meanwhile);

}  // namespace kblaster::server
