// Reading a batch's answers: OpenAI Batch output and error files, and Anthropic Message Batches
// results, both JSON Lines, into one answer per request the run sent. Batch answers arrive in
// any order; one request may be answered twice (a resubmitted batch, a file read twice); and a
// results file may hold answers to requests this run never sent (another run's batch, a file
// copied into the wrong folder). Those are ignored and listed, never taken as an answer. Pure
// functions: text in, values out; what to retry and what to log is the caller's.
#pragma once

#include "engine/llm/llm_types.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kblaster::engine::llm {

/// What became of one request in a batch.
enum class batch_outcome {
  succeeded,  ///< an answer (which may still be nonsense: the agents' parsers judge that)
  errored,    ///< the provider refused or failed it (a 4xx/5xx body, an error object)
  expired,    ///< the batch's window closed before it ran
  canceled,   ///< the batch was cancelled before it ran
};

/// "succeeded", "errored", "expired", "canceled".
const char* to_string(batch_outcome o) noexcept;

/// The answer to one request.
struct batch_answer {
  std::string custom_id;
  batch_outcome outcome = batch_outcome::errored;
  std::optional<chat_response> response;  ///< when succeeded
  std::string error;                      ///< otherwise: why, in the provider's words
};

/// A results file read against the requests that were sent.
struct batch_reading {
  std::map<std::string, batch_answer> answers;  ///< by custom_id; only ids that were sent
  std::vector<std::string> unknown_ids;         ///< answered but never sent: ignored
  int duplicates = 0;                           ///< further answers to an id already answered
  std::vector<std::string> unreadable;          ///< "line N: why", for lines that are no answer

  /// Adds `other`'s answers (an error file after an output file, a second poll): a success
  /// replaces a failure, a first success stays.
  void merge(batch_reading other);
};

/// OpenAI Batch output or error file: lines of {custom_id, response: {status_code, body}, error}.
/// A 2xx body is a chat completion; an error code "batch_expired" is an expiry, and
/// "batch_cancelled" a cancellation.
batch_reading read_openai_batch_results(const std::string& jsonl, const std::set<std::string>& sent);

/// Anthropic Message Batches results: lines of {custom_id, result: {type, message | error}}.
batch_reading read_anthropic_batch_results(const std::string& jsonl, const std::set<std::string>& sent);

}  // namespace kblaster::engine::llm
