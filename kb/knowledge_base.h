// The knowledge base: states, techniques, their statistics, the replay buffer of attempts,
// transitions, lessons and the revertible log of every change, in one SQLite file (the
// embedded default) or in a PostgreSQL database shared by a team (a postgresql:// URI).
#pragma once

#include "kb/evidence.h"
#include "kb/selection_policy.h"
#include "kb/sql.h"
#include "kb/state_match.h"
#include "kb/types.h"

#include <filesystem>
#include <map>
#include <memory>

namespace kblaster::kb {

/// How to open a KB file.
struct open_options {
  enum class access_mode {
    read_write,  ///< create if missing, migrate, seed; error if not writable
    read_only,   ///< never write; error if missing or if it needs a migration
    automatic,   ///< read_write where possible, read_only for an existing unwritable file
  };
  access_mode access = access_mode::read_write;
  bool seed = true;             ///< load the shipped seed KB into a new, empty file
  bool check_integrity = false; ///< run PRAGMA quick_check before using the file
  int busy_timeout_ms = 5000;   ///< how long to wait for another writer
};

/// Summary of an import.
struct import_summary {
  std::int64_t update_id = 0;
  std::int64_t states = 0, techniques = 0, optimizations = 0, lessons = 0, transitions = 0;
};

/// A connection to one KB. Safe for several processes at once (a file: WAL, busy timeout, short
/// IMMEDIATE transactions; a server: an advisory write lock, and a write whose connection drops
/// is run again once it reconnects); an instance itself is not thread-safe: use one per thread.
/// Every method throws kb_error.
class knowledge_base {
 public:
  /// Opens (and if allowed creates, migrates and seeds) the KB at `path`: a file, or a server
  /// when `path` is a postgresql:// (or postgres://) URI. Refuses corrupt, non-SQLite, foreign
  /// and too-new files without modifying them.
  static knowledge_base open(const std::filesystem::path& path, const open_options& options = {});

  knowledge_base(knowledge_base&&) noexcept;
  knowledge_base& operator=(knowledge_base&&) noexcept;
  ~knowledge_base();

  /// Where the KB is, as given to open() (a server URI keeps its password: never show it).
  const std::filesystem::path& path() const noexcept { return path_; }
  /// Where the KB is, for messages: the path, or the URI with its password redacted.
  const std::string& location() const noexcept { return shown_; }
  bool read_only() const noexcept { return read_only_; }

  // --- states, techniques, optimizations, lessons (kb_catalog.cpp) ---
  std::vector<state> states();
  std::optional<state> find_state(const std::string& name);
  std::vector<technique> techniques();
  std::optional<technique> find_technique(const std::string& name);
  /// Inserts or replaces a state by name; returns its id.
  std::int64_t put_state(const state& s, const update_cause& cause);
  /// Inserts or replaces a technique by name; returns its id.
  std::int64_t put_technique(const technique& t, const update_cause& cause);
  /// Lists a technique for a state (or updates its prior, note and the operations the note
  /// speaks of: kb/note_needs.h).
  void put_optimization(const std::string& state, const std::string& technique, double prior_speedup,
                        const std::string& note, const update_cause& cause,
                        const std::vector<std::vector<std::string>>& note_needs = {});
  /// Optimizations of a state with statistics for `arch` (falling back to all architectures
  /// where that architecture has no attempts), best predicted first.
  std::vector<optimization> optimizations(const std::string& state, const std::string& arch = "");
  std::int64_t add_lesson(const lesson& l, const update_cause& cause);
  std::vector<lesson> lessons(const std::string& state);
  std::vector<transition> transitions_from(const std::string& state);

  // --- replay buffer (kb_attempts.cpp) ---
  /// Stores an attempt and applies its numeric update (statistics, transition) in one
  /// transaction, logged as one update. Unknown states and techniques are added as discovered.
  /// Returns the attempt's id once committed.
  std::int64_t record_attempt(const attempt& a);
  /// Stores several attempts in one transaction (all or none), each with its own logged
  /// update; cheaper per attempt when a batch of rollouts finishes together.
  std::vector<std::int64_t> record_attempts(const std::vector<attempt>& batch);
  /// Attempts, newest first (all when limit is 0).
  std::vector<attempt> attempts(std::size_t limit = 0);
  /// The tasks whose steps taught the credit of `technique` in `state` (architecture `arch`;
  /// "all" or empty: any), most recent first, at most `limit`: what a prediction was learnt from.
  std::vector<std::string> tasks_behind(const std::string& state, const std::string& technique,
                                        const std::string& arch, std::size_t limit = 3);
  /// A task's attempts whose trajectory starts with `trajectory_prefix` (one run, one
  /// iteration), oldest first; served by the (task, trajectory) index.
  std::vector<attempt> attempts_of(const std::string& task, const std::string& trajectory_prefix);

  // --- candidates, selection and state matching (kb_candidates.cpp) ---
  /// Chooses techniques to try in a state. Deterministic for request.seed.
  std::vector<choice> select(const selection_request& request);
  /// The state's techniques as the policies see them (kb/selection_policy.h): statistics for `arch`,
  /// the state's record over every architecture, and what each technique's learnt transitions
  /// lead to (candidate::follow_on).
  std::vector<candidate> candidates(const std::string& state, const std::string& arch = "");
  /// The follow-on value of each technique that has transitions from `state` (candidate::follow_on).
  std::map<std::string, double> follow_on(const std::string& state, const std::string& arch = "");
  /// The state for a kernel's evidence (state_matcher::best): a known state that explains most
  /// of it, else a discovered one; nullopt for static evidence or a KB without states.
  std::optional<state_match> match_state(const kernel_evidence& evidence, const std::string& arch = "");
  /// The same for a signature given by names alone, every characteristic at the default weight.
  std::optional<state_match> match_state(const std::string& primary,
                                         const std::vector<std::string>& secondary,
                                         const std::string& arch = "");
  /// The techniques for a match that fit the evidence (their needs hold), best predicted first:
  /// the state's own when it is in the KB, else (a discovered state not adopted yet) those of its
  /// components, each under the first component that lists it, the heaviest evidence first.
  std::vector<optimization> optimizations_for(const state_match& match, const kernel_evidence& evidence,
                                              const std::string& arch = "");
  /// Stores a discovered match as a state (origin "discovered") with the techniques of its
  /// components that fit the evidence, logged as one update; nothing when it exists already.
  /// Returns the state's name.
  std::string adopt_discovered(const state_match& match, const kernel_evidence& evidence);
  /// Without a profile: the techniques that static facts support, i.e. whose needs are stated
  /// and all hold for `evidence` (register spills -> register pressure techniques, ...), each
  /// at its best prediction over the states that list it, best first; none when no fact points
  /// to one.
  std::vector<optimization> static_strategies(const kernel_evidence& evidence, const std::string& arch = "",
                                              std::size_t top = 3);

  // --- update log (kb_history.cpp) ---
  /// Updates, newest first.
  std::vector<update_record> history(std::size_t limit = 50);
  std::optional<update_record> find_update(std::int64_t id);
  /// Undoes an update; refuses (kind conflict) when a later update changed the same values.
  /// Returns the id of the revert's own update record.
  std::int64_t revert(std::int64_t update_id, const std::string& detail = "");

  // --- import / export (kb_json.cpp) ---
  /// The whole KB keyed by state, in the paper's shape (replay buffer and log excluded).
  nlohmann::json export_json();
  /// Merges a document produced by export_json (or the seed file) into this KB.
  import_summary import_json(const nlohmann::json& doc, const update_cause& cause);

  /// Counts for `kblaster kb stats`.
  kb_summary summary();

  /// The raw connection, for tests and tools.
  sql::database& db() noexcept { return *db_; }

 private:
  knowledge_base() = default;
  static knowledge_base open_server(const std::string& uri, const open_options& options);
  friend class change_log;
  void seed_if_empty();
  std::int64_t state_id(const std::string& name);       // throws not_found
  std::int64_t technique_id(const std::string& name);   // throws not_found
  std::int64_t ensure_state(const std::string& name, class change_log& log);
  std::int64_t ensure_technique(const std::string& name, class change_log& log);
  void require_writable() const;
  std::int64_t insert_attempt(const attempt& a);  // inside the caller's transaction

  std::filesystem::path path_;
  std::string shown_;
  bool read_only_ = false;
  std::unique_ptr<sql::database> db_;
  std::unique_ptr<state_matcher> matcher_;
};

}  // namespace kblaster::kb
