// One run's set-up, for every front end (the CLI's `optimize` and `bench`, the editor's
// Optimize): the evaluators that measure candidates (replayed from recordings, paced, live
// through the harness, recorded), the model that answers (an answer book or cassette, an HTTP
// model from the layered configuration, or none), and the run's folder. The callers keep only
// what is theirs: flags or editor settings in; a progress line and Ctrl-C, or LSP progress and
// an edit, out.
#pragma once

#include "engine/evaluate/evaluator.h"
#include "engine/evaluate/harness_evaluator.h"
#include "engine/evaluate/recorded_evaluator.h"
#include "engine/llm/deferred_backend.h"
#include "engine/llm/llm_client.h"
#include "engine/llm/llm_config.h"
#include "engine/task/task.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine::optimize {

/// Where candidates are measured.
struct evaluator_settings {
  std::vector<std::filesystem::path> replay;  ///< recorded GPU results served by source hash; empty: live
  double replay_pace = 0;                     ///< > 0: a replay waits this fraction of each recorded GPU time
  std::filesystem::path record;               ///< also append every result here (a recording)
  std::string harness;                        ///< kblaster-harness; empty: found
  std::string ncu;                            ///< ncu; empty: found; "none": static profiles only
  std::string device = "auto";                ///< cpu | cuda | auto
  std::chrono::milliseconds watchdog{10'000};
  std::chrono::seconds profile_timeout{300};  ///< one ncu run; past it the version keeps a static profile
  bool profile_full_shape = false;            ///< profile slow tasks at their own shape too (profile_shape.h)
  std::function<void(const std::string&)> on_device_wait;  ///< another measurement holds the GPU (harness_evaluator_options)
};

/// Live measurement was asked for on a machine without a GPU; what() says what to do instead.
class no_gpu_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The evaluators of one run, owned together: a pacer or a recorder wraps the one beneath it.
class evaluator_stack {
 public:
  /// Throws no_gpu_error (live, device not cpu, no GPU here) or evaluation_error.
  evaluator_stack(const evaluator_settings& settings, std::vector<task_spec> tasks);
  evaluator& top() { return *top_; }
  /// True when results are served from recordings, not measured now.
  bool replayed() const { return replayed_; }
  /// Makes a task known to the live evaluator (a replay needs none); `stop` kills its reference's build.
  void add_task(const task_spec& task, std::stop_token stop);
  /// The task's reference probed for degeneracy by the live evaluator's harness (reference_probe.h);
  /// nullopt when results are replayed (no harness runs). Adds the task first.
  std::optional<reference_probe> probe_reference(const task_spec& task, std::stop_token stop);

 private:
  std::unique_ptr<evaluator> base_, paced_, recorder_, resumed_;
  std::unique_ptr<replay_evaluator> earlier_;  // what the recording held when a resumed run started
  harness_evaluator* live_ = nullptr;
  evaluator* top_ = nullptr;
  bool replayed_ = false;
};

/// Which model answers.
struct model_settings {
  bool disabled = false;                       ///< the mechanical tier only, whatever is configured
  std::string disabled_reason;                 ///< said to the user when disabled
  std::filesystem::path replay;                ///< an answer book or cassette: no model is called
  /// A model whose answers arrive later ("files:DIR"): questions are handed over at the end of a
  /// round and the run stops waiting (stop_kind::waiting); the same command resumes.
  std::string deferred;
  std::filesystem::path config_file;           ///< empty: the default config file
  llm::config_layer editor;                    ///< the editor's settings (below flags and environment)
  llm::llm_flags flags;                        ///< the command line's
  std::int64_t budget_tokens = 0;              ///< 0: the configuration's
  std::filesystem::path record;                ///< a live model's exchanges are recorded here
  std::string record_note;
  llm::log_sink log;
};

struct model_choice {
  std::unique_ptr<llm::llm_client> client;  ///< null: the mechanical tier only
  llm::deferred_backend* deferred = nullptr;  ///< the client's backend when its answers arrive later
  std::string note;                         ///< one line for the user: which model, or why none
};

/// The model of `s`: its replay when set; else its deferred provider (the configuration, when
/// one names a model, shapes the requests); else an HTTP model when a model is named by the
/// flags, the environment (KBLASTER_LLM_MODEL / _BASE_URL), the editor or the config file; else
/// none, saying so. Throws llm::llm_error for a configuration that names a model but is unusable.
model_choice choose_model(const model_settings& s);

/// The folder of a run: BASE/TASK/NAME, where NAME is `prefix` (made file-safe) followed by a
/// hash of `key` (the input and every option that changes the run): the same run again
/// resumes there, and a changed input or option starts a fresh run beside it.
std::filesystem::path run_folder(const std::filesystem::path& base, const std::string& task, const std::string& key,
                                 const std::string& prefix = "");

}  // namespace kblaster::engine::optimize
