// Internal to the mechanical tier: a CUDA source read once into tokens, functions (parameter
// list and body as token indices) and launch sites (<<<config>>> arguments), plus byte edits
// applied all at once. Everything works on lexer tokens, so comments, strings and
// preprocessor lines never look like code.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/source/cuda_lexer.h"

namespace kblaster::engine::optimize::mech {

inline constexpr std::size_t none = static_cast<std::size_t>(-1);

/// Tokens [begin, end) by index.
struct token_range {
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// One function definition of the source (token indices).
struct function_info {
  std::string name;
  bool global = false;   ///< __global__
  bool device = false;   ///< __device__ (and not __global__)
  std::size_t head_begin = 0;    ///< first token of the definition (template or specifier)
  std::size_t name_tok = 0;
  std::size_t params_open = 0;   ///< '(' of the parameter list
  std::size_t params_close = 0;  ///< its ')'
  std::size_t body_open = 0;     ///< '{' of the body
  std::size_t body_close = 0;    ///< its '}'
  std::string launch_bounds;     ///< arguments of __launch_bounds__, empty if none
  bool templated = false;
};

/// One `kernel<<<grid, block[, smem[, stream]]>>>(args)` launch.
struct launch_info {
  std::string kernel;            ///< the launched name; empty for `k<T><<<` (not handled)
  std::size_t name_tok = 0;
  std::size_t config_open = 0;   ///< first '<' of <<<
  std::size_t config_close = 0;  ///< first '>' of >>>
  std::vector<token_range> config;  ///< grid, block, smem, stream argument tokens
  std::size_t host = none;       ///< index in functions of the enclosing function
};

/// A source read for transformation.
class parsed_source {
 public:
  explicit parsed_source(std::string source);

  std::string source;
  std::vector<cuda_token> tokens;
  std::vector<function_info> functions;
  std::vector<launch_info> launches;

  /// Text of token `i`.
  std::string_view text(std::size_t i) const { return tokens[i].text(source); }
  /// Raw source bytes of tokens [r.begin, r.end) (comments inside kept).
  std::string raw(token_range r) const;
  /// Tokens [r.begin, r.end) joined by single spaces where the source had any whitespace.
  std::string compact(token_range r) const;
  /// True for an identifier token spelling `w`.
  bool word(std::size_t i, std::string_view w) const;
  /// Index of the bracket closing tokens[open] ('(', '[' or '{'); none when unmatched.
  std::size_t match(std::size_t open) const;
  /// The __global__ definition named `name`; nullptr when absent or ambiguous.
  const function_info* kernel(std::string_view name) const;
  /// True when `name` is also declared (not defined) somewhere: a prototype we would have to
  /// keep in step with the definition.
  bool has_declaration(std::string_view name) const;
  /// Launches of `kernel`.
  std::vector<const launch_info*> launches_of(std::string_view kernel) const;
  /// One past the last token of the statement starting at `first` (a block, a control
  /// statement with its sub-statements, or tokens through the next ';' outside brackets);
  /// never beyond `limit`.
  std::size_t statement_end(std::size_t first, std::size_t limit) const;
  /// The whitespace that starts the line holding byte `pos`.
  std::string indent_at(std::size_t pos) const;
  /// True when token `i` is the first token of its line.
  bool starts_line(std::size_t i) const;
  /// Integer value of an integer-literal token range (one token, or a parenthesised one).
  std::optional<long long> integer(token_range r) const;
  /// Value of `name` when it is declared in tokens [from, to) as `const`/`constexpr` integer
  /// initialised with an integer literal (the last such declaration wins); nullopt otherwise.
  std::optional<long long> integer_constant(std::string_view name, std::size_t from,
                                            std::size_t to) const;
  /// True when `name` is declared in tokens [from, to) as a dim3.
  bool is_dim3(std::string_view name, std::size_t from, std::size_t to) const;
  /// The literal arguments of `dim3 name(a, b, c)` declared in [from, to); empty when not
  /// literal or not found.
  std::vector<long long> dim3_literals(std::string_view name, std::size_t from, std::size_t to) const;

 private:
  std::vector<std::size_t> declared_names_;  // name tokens of declarations (prototypes)
};

/// One replacement of source bytes [begin, end) by `text`.
struct edit {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string text;
};

/// `source` with `edits` applied; throws std::logic_error on overlapping edits (a bug).
std::string apply_edits(std::string_view source, std::vector<edit> edits);

/// The value of an integer literal such as 256, 0x100, 256u, 1'024; nullopt otherwise.
std::optional<long long> parse_integer_literal(std::string_view text);

}  // namespace kblaster::engine::optimize::mech
