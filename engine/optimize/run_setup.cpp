// The evaluator stack, the model choice and the run folder.
#include "engine/optimize/run_setup.h"

#include "engine/evaluate/paced_evaluator.h"
#include "engine/evaluate/recorded_evaluator.h"
#include "engine/toolchain/nvcc_driver.h"

#include <cctype>

namespace fs = std::filesystem;

namespace kblaster::engine::optimize {

evaluator_stack::evaluator_stack(const evaluator_settings& s, std::vector<task_spec> tasks) {
  if (!s.replay.empty()) {
    base_ = std::make_unique<replay_evaluator>(s.replay);
    top_ = base_.get();
    replayed_ = true;
    // Paced: the run unfolds at (a fraction of) the recorded GPU time, as a live one would.
    if (s.replay_pace > 0) {
      paced_ = std::make_unique<paced_evaluator>(*top_, s.replay_pace);
      top_ = paced_.get();
    }
  } else {
    if (s.device != "cpu" && detect_local_arch().empty())
      throw no_gpu_error("no GPU here: candidates cannot be measured. Run on a machine with an NVIDIA GPU, or replay "
                         "recorded GPU results (--harness-replay FILE; kblaster.optimize.replayHarness in the editor)");
    harness_evaluator_options o;
    o.device = s.device;
    o.harness = s.harness;
    o.ncu = s.ncu;
    o.watchdog = s.watchdog;
    o.profile_timeout = s.profile_timeout;
    o.profile_full_shape = s.profile_full_shape;
    o.on_device_wait = s.on_device_wait;
    auto live = std::make_unique<harness_evaluator>(std::move(tasks), o);
    live_ = live.get();
    base_ = std::move(live);
    top_ = base_.get();
  }
  if (!s.record.empty()) {
    // A recording resumed: what it holds already is served, not measured again (a resumed bench).
    std::error_code ec;
    const bool resumed = s.replay.empty() && fs::file_size(s.record, ec) > 0 && !ec;
    if (resumed) earlier_ = std::make_unique<replay_evaluator>(std::vector<fs::path>{s.record});
    recorder_ = std::make_unique<recording_evaluator>(*top_, s.record);
    top_ = recorder_.get();
    if (resumed) {
      resumed_ = std::make_unique<recorded_first_evaluator>(*earlier_, *top_);
      top_ = resumed_.get();
    }
  }
}

void evaluator_stack::add_task(const task_spec& task, std::stop_token stop) {
  if (live_) live_->add_task(task, stop);
}

std::optional<reference_probe> evaluator_stack::probe_reference(const task_spec& task, std::stop_token stop) {
  if (!live_) return std::nullopt;
  live_->add_task(task, stop);
  return live_->probe_reference(task.name, stop);
}

model_choice choose_model(const model_settings& s) {
  model_choice out;
  if (s.disabled) {
    out.note = s.disabled_reason.empty() ? "no model: the mechanical tier only" : s.disabled_reason;
    return out;
  }
  if (!s.replay.empty()) {
    llm::client_options co;
    co.budget_tokens = s.budget_tokens;
    out.client = llm::make_replay_client(s.replay, co);
    if (!s.record.empty()) out.client->record_to(s.record, s.record_note);
    out.note = "model: REPLAY of " + s.replay.string() + " (recorded answers, no model is called)";
    return out;
  }
  const fs::path file = s.config_file.empty() ? llm::default_config_file() : s.config_file;
  const auto layer = llm::read_config_file(file);
  const auto env = llm::process_environment();
  if (!s.deferred.empty()) {
    const auto spec = llm::parse_deferred(s.deferred);
    if (!spec)
      throw llm::llm_error(llm::error_kind::config,
                           "unknown deferred provider \"" + s.deferred + "\" (use files:DIR, openai:DIR or anthropic:DIR)");
    auto flags = s.flags;
    if (spec->kind != "files") flags.provider = spec->kind;  // the batch interface's wire format
    auto config = llm::resolve_config(layer, s.editor, env, flags);
    if (s.budget_tokens > 0) config.budget_tokens = s.budget_tokens;
    std::unique_ptr<llm::batch_service> service;
    auto options = llm::options_from(config);
    if (spec->kind != "files") {
      service = llm::make_batch_service(config, llm::api_key_for(config, env));
      // Both providers sell batch calls at half the price of the same calls made one at a time.
      options.usd_per_mtok_in *= 0.5;
      options.usd_per_mtok_out *= 0.5;
    }
    auto backend = std::make_unique<llm::files_backend>(config, spec->dir, 2, s.log, std::move(service));
    out.deferred = backend.get();
    out.client = std::make_unique<llm::llm_client>(std::move(backend), options);
    out.note = "model: " + out.client->backend().describe();
    return out;
  }
  const bool named = !s.flags.model.empty() || !s.flags.base_url.empty() || !s.flags.provider.empty() || env("KBLASTER_LLM_MODEL").has_value() ||
                     env("KBLASTER_LLM_BASE_URL").has_value() || s.editor.values.contains("model") ||
                     layer.values.contains("model") || !s.config_file.empty();
  if (!named) {
    out.note = "no model configured (" + file.string() + " names none; set one with --llm-model, KBLASTER_LLM_MODEL "
               "or kblaster.llm.model): the mechanical tier only";
    return out;
  }
  auto config = llm::resolve_config(layer, s.editor, env, s.flags);
  if (s.budget_tokens > 0) config.budget_tokens = s.budget_tokens;
  out.client = llm::make_http_client(config, env, s.log);
  if (!s.record.empty()) out.client->record_to(s.record, s.record_note);
  out.note = "model: " + out.client->backend().describe();
  return out;
}

fs::path run_folder(const fs::path& base, const std::string& task, const std::string& key, const std::string& prefix) {
  std::string name = prefix;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return base / task / (name + source_hash(task, key).substr(0, 12));
}

}  // namespace kblaster::engine::optimize
