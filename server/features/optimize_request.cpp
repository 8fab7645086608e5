// Settings in, a sentence out: nothing here decides how to optimize (engine/optimize/service).
#include "server/features/optimize_request.h"
#include "support/text.h"

#include "engine/llm/llm_config.h"
#include "engine/optimize/run_report.h"
#include "server/features/cuda_document.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace kblaster::server {

namespace fs = std::filesystem;
namespace opt = engine::optimize;

namespace {

// A batch folder given relative to the file, as the user reads the setting beside it.
std::string beside_file(const std::string& deferred, const fs::path& file) {
  const auto colon = deferred.find(':');
  if (colon == std::string::npos || fs::path(deferred.substr(colon + 1)).is_absolute()) return deferred;
  return deferred.substr(0, colon + 1) + (file.parent_path() / deferred.substr(colon + 1)).string();
}

}  // namespace

opt::optimize_request optimize_request_of(const editor_settings& s, const document_snapshot& doc, const command_args& args) {
  opt::optimize_request q;
  q.file = document_path(doc);
  q.kernel = args.kernel;
  q.buffer = doc.text();
  q.program = program_run_of(s);
  // "Apply technique" is one step of one technique.
  const bool one_step = !args.technique.empty();
  q.loop.breadth = one_step ? 1 : s.breadth;
  q.loop.depth = one_step ? 1 : s.depth;
  q.loop.iterations = one_step ? 1 : s.iterations;
  q.loop.limits = {.tokens = s.budget_tokens, .gpu_seconds = s.budget_gpu_seconds, .wall_seconds = s.budget_wall_seconds,
                   .candidates = s.budget_candidates};
  q.loop.arch = s.arch;
  q.loop.top_k = s.top_k;
  q.loop.policy = s.policy;
  q.loop.seed = static_cast<std::uint64_t>(s.seed);
  q.loop.only_technique = args.technique;
  if (!s.replay_harness.empty()) q.evaluator.replay = {s.replay_harness};
  q.evaluator.replay_pace = s.replay_pace;
  q.evaluator.harness = s.harness;
  q.evaluator.ncu = s.ncu_path;
  q.model.replay = s.llm_replay;
  if (!s.llm_batch.empty() && s.llm_replay.empty()) q.model.deferred = beside_file(s.llm_batch, q.file);
  if (!s.llm_provider.empty()) q.model.editor.values["provider"] = s.llm_provider;
  if (!s.llm_endpoint.empty()) q.model.editor.values["base_url"] = s.llm_endpoint;
  if (!s.llm_model.empty()) q.model.editor.values["model"] = s.llm_model;
  if (!s.llm_key_env.empty()) q.model.editor.values["key_env"] = s.llm_key_env;
  q.model.budget_tokens = s.budget_tokens;
  q.wait_for_model = s.llm_batch_wait;
  q.poll_seconds = s.llm_batch_poll_s;
  q.kb_path = s.kb_path;
  q.runs_base = s.output_dir;
  // One run folder per (input, options): Optimize again after a cancel, or after a deferred
  // model's answers arrived, resumes; an optimized kernel or other settings start beside it.
  q.keyed_run_folder = true;
  q.run_prefix = one_step ? args.technique + "-" : "";
  return q;
}

nlohmann::json model_facts(const opt::model_settings& model) {
  namespace llm = engine::llm;
  llm::llm_config c;
  const auto env = llm::process_environment();
  try {
    c = llm::resolve_config(llm::read_config_file(model.config_file.empty() ? llm::default_config_file() : model.config_file),
                            model.editor, env, model.flags);
  } catch (const std::exception&) {
    return nlohmann::json::object();
  }
  const auto from = [&](const char* key) { return c.origin.count(key) ? c.origin.at(key) : std::string("default"); };
  nlohmann::json f = {{"model", c.model}, {"provider", llm::to_string(c.api)}, {"providerFrom", from("provider")},
                      {"keyEnv", c.key_env}, {"keyEnvFrom", from("key_env")}};
  const auto key = env(c.key_env);
  if ((!key || key->empty()) && !llm::is_loopback_url(c.base_url)) f["reason"] = "no_key";
  // A model named for the other provider's API: the provider setting is what to change.
  std::string name = c.model;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (c.api != llm::provider::anthropic && name.find("claude") != std::string::npos) {
    f["suggestedProvider"] = "anthropic";
    f["suggestedKeyEnv"] = from("key_env") == "default" ? "ANTHROPIC_API_KEY" : c.key_env;
  } else if (c.api == llm::provider::anthropic && (name.rfind("gpt", 0) == 0 || name.rfind("o1", 0) == 0 || name.rfind("o3", 0) == 0)) {
    f["suggestedProvider"] = "openai";
    f["suggestedKeyEnv"] = from("key_env") == "default" ? "OPENAI_API_KEY" : c.key_env;
  }
  return f;
}

std::string recorded_gpu(const opt::optimize_outcome& o) {
  if (!o.replayed || !o.result.report.is_object()) return "";
  const auto gpu = o.result.report.find("gpu");
  return gpu != o.result.report.end() && gpu->is_string() ? gpu->get<std::string>() : "";
}

namespace {

// How the figure was had: measured here, or replayed from a recording made elsewhere.
std::string how_had(const opt::optimize_outcome& o) {
  if (!o.replayed) return "measured";
  const auto gpu = recorded_gpu(o);
  return "replayed from a recording" + (gpu.empty() ? std::string() : " made on an " + gpu) + ", not measured here";
}

}  // namespace

opt::service_events optimize_progress::events() {
  opt::service_events events;
  events.say = [this](const std::string& line) {
    const std::lock_guard lock(mutex_);
    progress_.report(line, percent_);
  };
  events.progress = [this](const opt::progress_event& e) {
    const std::lock_guard lock(mutex_);
    percent_ = e.steps_total > 0 ? 100 * e.steps_done / e.steps_total : 0;
    // No best before the input's measure.
    progress_.report(e.phase == "baseline" ? e.message
                                           : e.message + " (best so far " + support::times_text(e.best_speedup, 2) + best_note_ + ")",
                     percent_);
  };
  return events;
}

std::string optimize_end_text(const opt::optimize_outcome& o) {
  const auto& r = o.result;
  if (r.stop_reason == opt::stop_kind::waiting) return "waiting for the model's answers";
  if (r.stop_reason == opt::stop_kind::error) return "stopped: " + r.stop_reason.error;
  return support::times_text(r.best_speedup, 2) + ", " + how_had(o);
}

std::string optimize_result_message(const std::string& kernel, const opt::optimize_outcome& o, bool edited_meanwhile) {
  const auto& r = o.result;
  std::string m = o.replayed ? "[REPLAYED] " : "";
  if (r.stop_reason == opt::stop_kind::error && !o.improved()) {
    // Nothing to report but what stopped it: no "no faster version found" for a run that could
    // not measure (a replay with no recording of this kernel says so here).
    m += "optimizing " + kernel + " stopped before any result: " + r.stop_reason.error;
  } else if (r.stop_reason == opt::stop_kind::waiting) {
    m += "optimizing " + kernel + ": waiting for the model's answers (" + o.waiting_for + "); Optimize again resumes the run";
  } else if (!o.improved() || r.best_speedup <= 1.0) {
    m += "optimized " + kernel + ": no faster version found (" + support::count_text(r.candidates, "candidate") + " measured)";
  } else {
    m += "optimized " + kernel + ": " + support::times_text(r.best_speedup, 2) + " faster, " + how_had(o);
    if (const auto& step = r.best_step) {
      m += " (" + step->technique;
      if (step->predicted_speedup) m += ": predicted " + support::times_text(*step->predicted_speedup, 2);
      if (step->measured_speedup) m += ", measured " + support::times_text(*step->measured_speedup, 2);
      if (!step->state.empty()) m += ", from state " + step->state;
      m += ")";
    }
  }
  if (const auto why = opt::describe_stop(r.stop_reason);
      !why.empty() && r.stop_reason != opt::stop_kind::waiting && !(r.stop_reason == opt::stop_kind::error && !o.improved()))
    m += "; stopped early: " + why;
  if (edited_meanwhile && o.improved())
    m += "; not applied: the file changed during the run (the best version is " + (o.out_dir / "best.cu").string() + ")";
  if (o.rewrite) {
    for (const auto& line : opt::describe_rewrite(*o.rewrite, *o.captured)) m += "; " + line;
    if (o.rewrite->check != engine::rewrite_check::reproduced)
      m += "; not applied (the program with the rewrite is " + o.rewrite->edited_path + ")";
  }
  if (!o.rewrite_error.empty()) m += "; not applied: " + o.rewrite_error;
  return m + ". Report: " + (o.out_dir / "report.md").string();
}

}  // namespace kblaster::server
