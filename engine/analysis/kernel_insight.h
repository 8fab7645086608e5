// What the editor shows about one kernel besides its profile: the knowledge base's state for it,
// the best strategies known for that state, and the last runtime measured for its task. Reads
// the KB only; one connection, opened on first use and kept (reopened when the path changes).
#pragma once

#include "engine/state/profile_summary.h"

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::kb {
class knowledge_base;
}

namespace kblaster::engine {

/// One strategy the KB predicts for a state.
struct strategy {
  std::string technique;
  std::string description;
  double predicted_speedup = 1;
  double confidence = 0;      ///< 0..1
  long long attempts = 0;     ///< measured attempts behind the prediction
  /// What the prediction was learnt from (kb::search_credit): steps that tried the technique in
  /// this state, those that gained, the tasks they were on (most recent first, a few), and the
  /// architecture whose statistics were used ("all": pooled over every GPU).
  long long steps = 0, gains = 0;
  std::vector<std::string> tasks;
  std::string arch;
};

/// A lesson the KB holds for the kernel's state.
struct state_lesson {
  std::string technique;      ///< empty: about the state as a whole
  std::string text;
};

/// A runtime measured for a task, and when.
struct measured_runtime {
  double runtime_ms = 0;
  std::string when;           ///< ISO 8601
  std::string source;         ///< "kb attempt" or "live profile"
};

/// The KB's view of one kernel.
struct kernel_insight {
  std::string kb_state;       ///< the KB state matched (empty when the KB has none, or nothing was measured)
  double match_score = 0;     ///< the share of the evidence the state explains
  bool discovered = false;    ///< no known state explains the profile: kb_state is a discovered one
  bool strategies_from_static_facts = false;  ///< no profile: strategies only from ptxas/occupancy facts
  std::vector<strategy> strategies;  ///< best predicted first
  std::vector<state_lesson> lessons; ///< the state's learnt lessons, newest first (a few)
  std::optional<measured_runtime> last_runtime;
  std::string error;          ///< the KB could not be read (the rest is empty then)
};

/// Answers insight queries from one KB file. Thread-safe (one connection behind a mutex).
class insight_service {
 public:
  insight_service();
  ~insight_service();
  insight_service(const insight_service&) = delete;
  insight_service& operator=(const insight_service&) = delete;

  /// The state, the `top` strategies for it on `arch`, and the last runtime of `task_name`
  /// (from the KB's attempts; empty task name: none). `kb_path` empty: the per-user default.
  kernel_insight query(const std::filesystem::path& kb_path, const kernel_view& view, const std::string& arch,
                       const std::string& task_name, std::size_t top = 3);

  /// The KB's strategies for a state name (for code actions on a known state).
  std::vector<strategy> strategies(const std::filesystem::path& kb_path, const std::string& state,
                                   const std::string& arch, std::size_t top = 3);

 private:
  kb::knowledge_base& open_locked(const std::filesystem::path& kb_path);
  std::mutex mutex_;
  std::filesystem::path path_;
  std::unique_ptr<kb::knowledge_base> kb_;
};

}  // namespace kblaster::engine
