// Tokens of CUDA C++ source, for the kernel locator.
//
// Comments, whitespace, preprocessor directives (with their line continuations) and `#if 0`
// groups produce no tokens; string, raw-string and character literals are single tokens. So a
// brace, `__global__` or `<<<` seen as a token is real code, which is all the locator needs.
// The lexer never fails: unterminated comments and literals end at the end of the line or file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace kblaster::engine {

enum class cuda_token_kind : std::uint8_t {
  identifier,  // also keywords; bytes >= 0x80 count as identifier characters
  number,      // a preprocessing number: 1'000, 0x1p-3f, 1e+5
  string,      // "…", u8"…", R"d(…)d" and friends
  character,   // 'a', L'\n'
  punct,       // one character, except the two-character "::" and "->"
};

/// One token: byte range [begin, end) and kind; `ch` is the first character.
struct cuda_token {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  cuda_token_kind kind = cuda_token_kind::punct;
  char ch = 0;

  std::string_view text(std::string_view source) const {
    return source.substr(begin, end - begin);
  }
  /// True for the one-character punctuator `c`.
  bool is(char c) const { return kind == cuda_token_kind::punct && ch == c && end - begin == 1; }
  /// True for "::".
  bool is_scope() const { return kind == cuda_token_kind::punct && ch == ':' && end - begin == 2; }
  /// True for "->".
  bool is_arrow() const { return kind == cuda_token_kind::punct && ch == '-' && end - begin == 2; }
};

/// Produces tokens one at a time from `source`, starting at a byte offset that must not lie
/// inside a comment, literal or directive (offset 0, or the start or end of a token).
class cuda_lexer {
 public:
  explicit cuda_lexer(std::string_view source, std::size_t start = 0);

  /// Stores the next token in `out`; false at the end of the source.
  bool next(cuda_token& out);

 private:
  void skip_line_comment();
  void skip_block_comment();
  void skip_directive();
  void skip_directive_rest();
  void skip_false_group();
  std::size_t splice_length(std::size_t at) const;
  std::string_view directive_name();
  bool rest_of_line_is_zero();
  void lex_identifier(cuda_token& out);
  void lex_number();
  void lex_quoted(char quote);
  void lex_raw_string();

  std::string_view src_;
  std::size_t pos_ = 0;
  bool line_start_ = true;  // only whitespace since the last newline: a '#' starts a directive
};

/// Every token of `source`, in order.
std::vector<cuda_token> tokenize_cuda(std::string_view source);

}  // namespace kblaster::engine
