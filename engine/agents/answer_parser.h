// Strict reading of model answers. Every way an answer can be unusable is detected and named,
// with a message written to be sent back to the model: a truncated answer, a refusal, no code,
// several candidate versions, the wrong entry point, the wrong language, JSON that is not alone
// or not JSON at all.
#pragma once

#include "engine/llm/llm_types.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine::agents {

/// Why an answer cannot be used.
enum class problem_kind {
  truncated, refusal, no_code, several_versions, wrong_entry_point, wrong_language,
  not_json, trailing_text, invalid,  ///< well-formed but breaks the agent's rules or schema
};
const char* to_string(problem_kind k) noexcept;

/// A problem, with the sentence sent back to the model on retry.
struct answer_problem {
  problem_kind kind = problem_kind::invalid;
  std::string message;
};

/// A value or the problem that prevented it.
template <typename T>
struct parsed {
  std::optional<T> value;
  answer_problem problem;
  static parsed ok(T v) { return {std::move(v), {}}; }
  static parsed fail(problem_kind k, std::string message) { return {std::nullopt, {k, std::move(message)}}; }
};

/// One fenced block of an answer.
struct fenced_block {
  std::string language;  ///< as written after the backticks, lower-cased ("cuda", "", "python")
  std::string body;
  bool closed = true;
};

/// The fenced blocks of `text` in order (an unclosed last fence is returned with closed=false).
std::vector<fenced_block> fenced_blocks(const std::string& text);

/// True for an answer that declines the task instead of doing it.
bool looks_like_refusal(const std::string& text);

/// Net count of '{' minus '}' outside comments, strings and character literals.
int brace_balance(const std::string& code);

/// True when `code` defines a function named `name` (name, parameter list, then a body).
bool defines_function(const std::string& code, const std::string& name);

/// Names of __global__ functions declared or defined in `code` (a prototype counts too).
std::vector<std::string> global_kernels(const std::string& code);

/// The complete CUDA source in an answer that must define `entry_point`: the one fenced block
/// that defines it, or the whole answer when it is bare code.
parsed<std::string> extract_cuda_source(const llm::chat_response& answer, const std::string& entry_point);

/// The one JSON object an answer must consist of (bare, or alone in one ```json fence).
parsed<nlohmann::json> extract_json_object(const llm::chat_response& answer);

}  // namespace kblaster::engine::agents
