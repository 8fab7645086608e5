// Internal to the kernel locator: reading one declaration head (the tokens before its body or
// ';') as a function: template heads, specifiers, name, parameter list.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/source/cuda_lexer.h"

namespace kblaster::engine::locator_detail {

inline constexpr std::size_t npos = static_cast<std::size_t>(-1);

/// What a declaration head says about the function it declares (token indices).
struct function_head {
  std::size_t start = 0;         // first token of the full range: `template` or a specifier
  std::size_t spec_begin = 0;    // first token of the signature, after the template heads
  std::size_t qual_first = 0;    // first token of the written qualifier (`ops::`), or name_first
  std::size_t name_first = 0;    // the name: one token, or several for `operator()` and such
  std::size_t name_last = 0;
  std::size_t params_open = 0;   // '(' of the parameter list
  std::size_t params_close = 0;  // its ')'
  std::vector<std::string> template_parameters;
  std::string launch_bounds;
  bool global = false;     // __global__
  bool device = false;     // __device__
  bool extern_c = false;   // extern "C" in the head itself
};

/// Reads tokens [begin, end) (end is the head's terminating '{', ';' or '}') as a function
/// declaration; false when they declare something else (a variable, a class, an explicit
/// instantiation, a namespace, ...).
bool read_function_head(std::string_view source, std::span<const cuda_token> tokens,
                        std::size_t begin, std::size_t end, function_head& out);

/// Tokens [first, last] as text: comments dropped, whitespace runs turned into one space, and
/// no space just inside brackets or before a comma, e.g. "k(float* a, int n)".
std::string normalized_text(std::string_view source, std::span<const cuda_token> tokens,
                            std::size_t first, std::size_t last);

/// Index of the bracket ('(', '[' or '{') closing tokens[open], counting all three kinds; npos
/// if none before `limit`.
std::size_t match_close(std::span<const cuda_token> tokens, std::size_t open, std::size_t limit);

/// True for an identifier token spelling `word`.
inline bool is_word(std::string_view source, const cuda_token& t, std::string_view word) {
  return t.kind == cuda_token_kind::identifier && t.text(source) == word;
}

}  // namespace kblaster::engine::locator_detail
