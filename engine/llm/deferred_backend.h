// A model whose answers arrive later (issue 15): a batch interface, or any script or person
// answering files. A request whose answer is not there yet throws answer_pending and waits in
// the backend; the loop advances every trajectory until each waits, then the front end hands
// every waiting request over at once (hand_over) and stops, saying how many wait and where.
// The same command resumes once answers are there: requests are named by their content
// (batch_custom_id), so a resumed run asks the same questions under the same names and finds
// the answers already given.
//
// `files:DIR`: waiting requests are written to DIR/requests-N.jsonl in OpenAI's batch input
// format ({custom_id, method, url, body}); answers are read from every DIR/*.results.jsonl in
// OpenAI's batch output format ({custom_id, response: {status_code, body}, error}), in any order.
// The requests files are the record of what was submitted: a request is written once, and again
// only after every submission of it was answered with an error, an expiry or a cancellation (up
// to `max_resubmits` times; then it is the agent's failure, as a failed synchronous call is). A
// refusal (HTTP 4xx other than 429) is the agent's failure at once: the same request again
// cannot fare better.
#pragma once

#include "engine/llm/batch_services.h"
#include "engine/llm/llm_client.h"
#include "engine/llm/llm_config.h"

#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine::llm {

/// Thrown by a deferred backend for a request whose answer has not arrived. Not an llm_error:
/// nothing failed, the trajectory that asked waits for the next round.
class answer_pending : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What a hand-over did.
struct hand_over_report {
  int written = 0;          ///< requests handed over now (a new batch)
  int awaiting = 0;         ///< requests handed over before and still unanswered
  std::string where;        ///< the new batch (a file, a batch id); empty when none
  std::string description;  ///< one sentence for the user: what waits, where, how to answer
};

/// A backend whose answers arrive later.
class deferred_backend : public chat_backend {
 public:
  /// Hands every request that waits and was not handed over yet to the provider, at once.
  virtual hand_over_report hand_over() = 0;
  /// Looks for answers that arrived since (new results). True when some did.
  virtual bool poll() = 0;
  /// Cancels the provider's jobs still running; how many. A batch folder has none to cancel.
  virtual int cancel_jobs() = 0;
};

/// The `files:DIR` provider; with a `service`, the `openai:DIR` and `anthropic:DIR` providers:
/// each requests file is also submitted to the service as one job (its record in
/// DIR/requests-N.job.json), and an ended job's results are brought back as DIR/requests-N plus
/// the service's results suffix, every request the job did not answer written there as expired.
class files_backend final : public deferred_backend {
 public:
  /// `config` shapes the requests (model, limits) and names them; DIR is created when missing.
  files_backend(llm_config config, std::filesystem::path dir, int max_resubmits = 2, log_sink log = {},
                std::unique_ptr<batch_service> service = nullptr);
  chat_response send(const chat_request& r) override;
  std::string describe() const override;
  hand_over_report hand_over() override;
  bool poll() override;
  int cancel_jobs() override;

 private:
  struct answers_of_id {
    std::optional<chat_response> success;
    int failures = 0;          // results files answering it with an error, expiry or cancellation
    bool refused = false;      // answered with a 4xx other than 429: the request itself was refused, sending it again cannot help
    std::string last_error;
  };
  void scan();     // under mutex_: the requests files (what was submitted) and the results files
  void collect();  // under mutex_: the service's jobs that ended, their results into the folder

  llm_config config_;
  std::filesystem::path dir_;
  int max_resubmits_;
  log_sink log_;
  std::unique_ptr<batch_service> service_;
  mutable std::mutex mutex_;
  std::map<std::string, int> submitted_;          // custom_id -> requests files holding it
  int requests_files_ = 0;                        // the highest N of requests-N.jsonl
  std::map<std::string, answers_of_id> answers_;  // by custom_id
  std::set<std::string> results_seen_;            // "name:size" of the results files read
  std::map<std::string, chat_request> waiting_;   // asked this run, not answered; handed over or not
};

/// Looks for answers every `poll_seconds` until some arrived (true) or `stop` is requested
/// (false): what `--wait` does between rounds. `handed` is the round's hand-over: when it left
/// nothing written and nothing awaiting, the answers came in while it looked (a job that ended
/// just then), so no later look can bring more and this is true at once rather than waiting forever.
bool await_answers(deferred_backend& backend, const hand_over_report& handed, double poll_seconds, std::stop_token stop);

/// A deferred provider as the command line names it: "files:DIR", "openai:DIR", "anthropic:DIR".
struct deferred_spec {
  std::string kind;  // files | openai | anthropic
  std::filesystem::path dir;
};
/// nullopt for anything else.
std::optional<deferred_spec> parse_deferred(const std::string& spec);

}  // namespace kblaster::engine::llm
