// Cassettes: recorded exchanges as JSON lines, one per call (fingerprint, agent role, request,
// response, usage, latency). A line holding "$source" says where the file came from and is
// skipped on reading. Used to record real runs, to replay them without a model, and as test
// fixtures served over HTTP by the loopback server.
#pragma once

#include "engine/llm/llm_types.h"
#include "engine/llm/redact.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kblaster::engine::llm {

/// One recorded exchange.
struct cassette_entry {
  std::string fingerprint;  ///< of the request (empty in hand-written fixtures: replay in order)
  std::string role;         ///< agent role; checked on replay when both sides name one
  nlohmann::json request;   ///< {system, messages, max_tokens, temperature}; never headers
  chat_response response;   ///< text, finish_reason, model, usage, latency_ms
  /// Answer books only: substrings that must all occur in the request's system prompt and
  /// messages for this answer to be served (by_content replay).
  std::vector<std::string> match;
  bool reuse = false;       ///< answer books only: may be served more than once
};

/// Stable fingerprint of a request: FNV-1a 64 over its role, system prompt and messages (the
/// model and sampling settings are left out so a cassette replays under another model name).
std::string fingerprint(const chat_request& r);

/// The request as a cassette stores it.
nlohmann::json request_json(const chat_request& r);
nlohmann::json entry_json(const cassette_entry& e);
/// Throws llm_error(bad_response) naming the field when `j` is not an entry.
cassette_entry entry_from_json(const nlohmann::json& j);

/// Reads a cassette file; throws llm_error(config) with the file and line on bad content.
std::vector<cassette_entry> read_cassette(const std::filesystem::path& path);
/// Reads cassette lines held in memory (read_cassette's parser, also fuzzed on its own);
/// `origin` names them in errors as "ORIGIN:LINE: ...".
std::vector<cassette_entry> parse_cassette(std::string_view text, const std::string& origin);

/// Appends exchanges to a cassette file, one line each, redacted. Thread-safe.
class cassette_writer {
 public:
  /// Opens (truncates) `path` and writes a "$source" line saying what recorded it.
  cassette_writer(const std::filesystem::path& path, std::shared_ptr<const redactor> redact,
                  const std::string& source_note);
  void append(const cassette_entry& e);

 private:
  std::mutex mutex_;
  std::ofstream out_;
  std::shared_ptr<const redactor> redact_;
};

/// How a replay picks the answer for a request.
enum class replay_mode {
  by_fingerprint,  ///< the first unused entry with the request's fingerprint
  in_order,        ///< the next entry, whatever the request (prompts that embed run numbers)
  by_content,      ///< an answer book: the first usable entry of the role whose `match` strings
                   ///< all occur in the request; deterministic whatever order threads ask in
};

/// The mode a file of entries replays in: an answer book (any entry with `match`) by content, a
/// fingerprinted recording by fingerprint, anything else (hand-written, unkeyed) in order.
replay_mode replay_mode_for(const std::vector<cassette_entry>& entries);

/// Serves recorded answers. Thread-safe.
class cassette_player {
 public:
  cassette_player(std::vector<cassette_entry> entries, replay_mode mode);
  /// The answer for `r`; throws llm_error(replay_miss) saying what was asked and what is left.
  cassette_entry next(const chat_request& r);
  std::size_t remaining() const;

 private:
  mutable std::mutex mutex_;
  cassette_entry next_by_content(const chat_request& r);
  std::vector<cassette_entry> entries_;
  std::vector<bool> used_;
  replay_mode mode_;
  std::size_t cursor_ = 0;
};

}  // namespace kblaster::engine::llm
