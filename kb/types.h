// Plain value types the knowledge base stores and returns.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::kb {

/// The architecture key that aggregates statistics over every GPU.
inline constexpr const char* all_archs = "all";

/// A performance state: a named region of the space of profiles with its known optimizations.
struct state {
  std::int64_t id = 0;
  std::string name;
  std::string primary_bottleneck;               ///< e.g. memory_bound_dram
  std::vector<std::string> secondary;           ///< e.g. uncoalesced_global_access
  nlohmann::json criteria = nlohmann::json::array();  ///< metric conditions that identify it
  std::string scope = all_archs;                ///< "all" or an architecture family (sm_90)
  std::string origin = "seed";                  ///< seed | discovered | imported
  std::string description;
  std::string notes;
};

/// An optimization technique, shared by every state that lists it.
struct technique {
  std::int64_t id = 0;
  std::string name;
  std::string category;
  std::string description;  ///< what to do, written so that an LLM can act on it
};

/// What searches kept from the steps that applied a technique (issue 49). A step evaluates one
/// or more variants and keeps its best, so a technique earns from that best alone: its gain over
/// the version the step started from, a failure or a slowdown counting as no gain (log 1 = 0).
/// Older steps weigh less: each newer step of the same row multiplies the decayed sums by
/// kb::credit_decay (stats_math.h).
struct search_credit {
  std::int64_t steps = 0;      ///< steps credited
  std::int64_t gains = 0;      ///< of them, steps whose best variant beat the version they started from
  std::int64_t new_bests = 0;  ///< of them, steps that produced their run's new best
  double weight = 0;           ///< decayed count of steps
  double log_gain = 0;         ///< decayed sum of log(max(1, best variant's speedup over the start))
  double best_log_gain = 0;    ///< the largest log gain of one step
  /// The parameters of that winning variant (block size, unroll factor, vector width, ...), as
  /// the variant stated them; null when none won or the winner had none.
  nlohmann::json best_parameters = nullptr;
};

/// Outcome counts and log-speedup moments for one (state, technique, architecture).
struct stats {
  std::int64_t attempts = 0;
  std::int64_t compile_failures = 0;
  std::int64_t incorrect = 0;
  std::int64_t successes = 0;   ///< correct and faster than the version it started from
  std::int64_t n_measured = 0;  ///< correct attempts (the sample of log-speedups)
  double mean_log_speedup = 0;
  double m2_log_speedup = 0;    ///< sum of squared deviations (Welford)
  std::optional<std::string> last_used;
  search_credit credit;         ///< per step, what the search kept (the selection's evidence)

  /// Sample variance of the log-speedup (0 with fewer than two samples).
  double variance_log_speedup() const noexcept {
    return n_measured > 1 ? m2_log_speedup / static_cast<double>(n_measured - 1) : 0.0;
  }
};

/// A technique as known for one state, with its statistics and the derived prediction.
struct optimization {
  std::string technique;
  std::string category;
  std::string description;
  std::string note;             ///< state-specific advice
  /// The operations the note speaks of, as clauses (every clause must hold, any name of one):
  /// a note is not shown for a kernel whose source lacks them (kb/note_needs.h). Empty: always.
  std::vector<std::vector<std::string>> note_needs;
  double prior_speedup = 1.1;   ///< belief before evidence; set by seed or update agents
  std::string arch = all_archs; ///< which statistics row was used
  stats statistics;
  double predicted_speedup = 1.0;
  double confidence = 0.0;      ///< 0..1, grows with attempts
};

/// One attempt in the replay buffer: one technique applied to one kernel version.
struct attempt {
  std::int64_t id = 0;
  std::string task;
  std::string trajectory;
  int iteration = 0;
  int step = 0;
  std::string state_before;
  std::string state_after;  ///< empty when unknown (e.g. compile failure)
  std::string technique;
  std::optional<double> predicted_speedup;
  std::optional<double> measured_speedup;  ///< vs the version the step started from
  bool compile_ok = true;
  bool correct = false;
  std::optional<std::int64_t> elapsed_cycles;
  std::optional<double> runtime_ms;
  std::map<std::string, std::int64_t> tokens_by_role;
  std::string gpu_name;
  std::string arch;  ///< architecture family, e.g. sm_80
  std::string code_hash;
  /// The variant's parameters as the transformation stated them ({"block": 128}); empty object
  /// for a model's rewrite.
  nlohmann::json parameters = nlohmann::json::object();
  /// This attempt stands for its step in the technique's search credit: the step's best variant
  /// (or, when none was correct, its first). Exactly one attempt of a step carries it.
  bool credits_step = false;
  /// Credited steps only: the step's best became the run's best so far.
  bool new_best = false;
  std::string started_at;   ///< ISO 8601; filled with now when empty
  std::string finished_at;
};

/// A free-text lesson written by the LLM, with where it came from.
struct lesson {
  std::int64_t id = 0;
  std::string state;
  std::string technique;  ///< empty when it is about the state as a whole
  std::string arch = all_archs;
  std::string text;
  std::string provenance;
  std::string created_at;
};

/// Observed (state before, technique) -> state after, with the mean log-speedup.
struct transition {
  std::string from_state;
  std::string technique;
  std::string to_state;
  std::int64_t count = 0;
  double mean_log_speedup = 0;
};

/// Why the KB changed: recorded with every update.
struct update_cause {
  std::string kind = "manual";  ///< numeric | textual_gradient | import | seed | manual | revert
  std::string detail;           ///< free text, e.g. the agents' output
  std::vector<std::int64_t> attempt_ids;
};

/// One entry of the update log.
struct update_record {
  std::int64_t id = 0;
  std::string created_at;
  update_cause cause;
  std::optional<std::int64_t> reverted_by;
  nlohmann::json changes = nlohmann::json::array();  ///< [{table, key, op, before, after}]
};

/// Counts for `kblaster kb stats`.
struct kb_summary {
  std::string path;     ///< a file, or a server URI with its password redacted
  std::string backend;  ///< "sqlite" or "postgresql"
  int schema_version = 0;
  std::int64_t states = 0, techniques = 0, optimizations = 0, attempts = 0, lessons = 0,
               transitions = 0, updates = 0;
  std::int64_t correct_attempts = 0, successful_attempts = 0;
  std::map<std::string, std::int64_t> attempts_by_arch;
  /// Who taught them (kb/attribution.h); "" for what was written before schema version 7.
  std::map<std::string, std::int64_t> attempts_by_user, updates_by_user;
  std::int64_t file_bytes = 0;  ///< the file's size, or the server database's
  bool read_only = false;
};

}  // namespace kblaster::kb
