// The editor's side of "Optimize this kernel": its settings and the command's arguments as the
// engine's optimize_request, and the outcome as the sentence the Problems panel shows.
#pragma once

#include "engine/optimize/service.h"
#include "server/document_store.h"
#include "server/features/commands.h"
#include "server/features/editor_settings.h"
#include "server/work_done_progress.h"

#include <nlohmann/json.hpp>

#include <mutex>

#include <string>

namespace kblaster::server {

/// The request for `doc` (its text as the buffer: unsaved edits are what the user sees).
engine::optimize::optimize_request optimize_request_of(const editor_settings& settings, const document_snapshot& doc,
                                                       const command_args& args);

/// An Optimize run's events as $/progress reports: each line it says, and from its steps the
/// percentage and the best speedup so far, `best_note` after it (", replayed"). The trajectories
/// report from their own threads, so the reports are serialized here; it must outlive the run.
class optimize_progress {
 public:
  optimize_progress(work_done_progress& progress, std::string best_note) : progress_(progress), best_note_(std::move(best_note)) {}
  engine::optimize::service_events events();

 private:
  work_done_progress& progress_;
  std::string best_note_;
  std::mutex mutex_;
  int percent_ = 0;
};

/// The progress's last words: the speedup and how it was had ("1.42x measured"; "1.42x,
/// replayed from a recording, not measured here"), or what stopped the run ("stopped: replay: no
/// recording of ..."), never a speedup for a run that measured nothing.
std::string optimize_end_text(const engine::optimize::optimize_outcome& outcome);

/// The GPU a replayed run's results were recorded on ("NVIDIA H100 80GB HBM3"); empty when the
/// run measured live or the recording does not say.
std::string recorded_gpu(const engine::optimize::optimize_outcome& outcome);

/// What a no_model refusal needs to name its fix (refusal.h): the model, its provider and the
/// key's variable, each with where it came from; "reason": "no_key" when that variable is unset
/// or empty in this process's environment (the daemon's: a remote window's is the remote side's);
/// "suggestedProvider" when the model's name belongs to the other provider. Empty when the
/// configuration itself cannot be read (the engine's words say why).
nlohmann::json model_facts(const engine::optimize::model_settings& model);

/// The measured speedup first, then what the KB predicted for the step that produced it, then
/// what became of a program's rewrite and anything that did not go as planned.
std::string optimize_result_message(const std::string& kernel, const engine::optimize::optimize_outcome& outcome,
                                    bool edited_meanwhile);

}  // namespace kblaster::server
