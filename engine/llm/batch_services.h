// The providers' batch interfaces behind a batch folder (deferred_backend.h): each requests file
// the backend writes is submitted as one job, its record kept beside it (requests-N.job.json),
// and an ended job's results are brought back into the folder as a results file. The folder
// alone then says what was asked, which jobs carry it and what came back: a resumed run never
// submits the same questions twice, and the folder can be carried to another machine.
//   OpenAI Batch: upload the JSONL (POST /files, purpose "batch"), create the batch (POST
//   /batches), poll it (GET /batches/ID), download its output and error files (GET
//   /files/ID/content); cancel with POST /batches/ID/cancel.
//   Anthropic Message Batches: POST /messages/batches {requests: [{custom_id, params}]}, poll GET
//   /messages/batches/ID until "ended", stream results_url; cancel with POST .../ID/cancel.
#pragma once

#include "engine/llm/llm_config.h"
#include "engine/llm/llm_types.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine::llm {

/// A provider's batch interface. Throws llm_error (transport, http, bad_response) when the
/// provider cannot be reached or answers out of its protocol.
class batch_service {
 public:
  virtual ~batch_service() = default;
  /// "OpenAI Batch at https://…/v1".
  virtual std::string describe() const = 0;
  /// Submits `requests` as one job; its record (the job's id, its requests' custom_ids, …).
  virtual nlohmann::json submit(const std::vector<chat_request>& requests) = 0;
  /// Looks at the job of `record` again, updating its "status". When the job has ended, its
  /// results (every line the provider returned, output and errors) in the provider's format.
  virtual std::optional<std::string> collect(nlohmann::json& record) = 0;
  /// Asks the provider to cancel the job (what it already answered still comes back).
  virtual void cancel(nlohmann::json& record) = 0;
  /// The suffix of the results files this service's results are kept under:
  /// ".results.jsonl" (OpenAI's output format) or ".results.anthropic.jsonl".
  virtual std::string results_suffix() const = 0;
};

/// The batch interface of `c`'s provider, with `key` (empty for a loopback endpoint).
std::unique_ptr<batch_service> make_batch_service(const llm_config& c, std::string key);

}  // namespace kblaster::engine::llm
