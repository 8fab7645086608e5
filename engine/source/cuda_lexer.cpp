// Tokens of CUDA C++ source, for the kernel locator (see cuda_lexer.h).
#include "engine/source/cuda_lexer.h"

#include <array>

namespace kblaster::engine {
namespace {

// Character classes by table: the lexer's inner loops run once per byte of a 2 MB file.
constexpr unsigned char ident_start_bit = 1;
constexpr unsigned char ident_char_bit = 2;
constexpr auto char_classes = [] {
  std::array<unsigned char, 256> table{};
  for (int c = 0; c < 256; ++c) {
    const bool start =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
    const bool digit = c >= '0' && c <= '9';
    table[static_cast<std::size_t>(c)] = static_cast<unsigned char>(
        (start ? ident_start_bit : 0) | (start || digit ? ident_char_bit : 0));
  }
  return table;
}();

bool is_ident_start(unsigned char c) { return (char_classes[c] & ident_start_bit) != 0; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(unsigned char c) { return (char_classes[c] & ident_char_bit) != 0; }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// A raw string's delimiter: at most 16 characters, none of them space, parenthesis or backslash.
constexpr std::size_t max_raw_delimiter = 16;

}  // namespace

cuda_lexer::cuda_lexer(std::string_view source, std::size_t start)
    : src_(source), pos_(start < source.size() ? start : source.size()) {
  // A directive needs its '#' first on a line, so look back to the previous newline.
  line_start_ = true;
  for (std::size_t i = pos_; i > 0; --i) {
    const char c = src_[i - 1];
    if (c == '\n') break;
    if (!is_blank(c)) {
      line_start_ = false;
      break;
    }
  }
}

// Length of a backslash-newline line splice at `at` (blanks allowed before the newline, as
// GCC accepts), or 0.
std::size_t cuda_lexer::splice_length(std::size_t at) const {
  if (at >= src_.size() || src_[at] != '\\') return 0;
  std::size_t i = at + 1;
  while (i < src_.size() && is_blank(src_[i])) ++i;
  if (i < src_.size() && src_[i] == '\n') return i + 1 - at;
  return 0;
}

void cuda_lexer::skip_line_comment() {
  // A backslash at the end of a // comment continues it onto the next line.
  for (;;) {
    const std::size_t nl = src_.find('\n', pos_);
    if (nl == std::string_view::npos) {
      pos_ = src_.size();
      return;
    }
    std::size_t k = nl;
    while (k > pos_ && is_blank(src_[k - 1])) --k;
    if (k > pos_ && src_[k - 1] == '\\') {
      pos_ = nl + 1;
      continue;
    }
    pos_ = nl;  // the newline itself is left for next(), which marks the line start
    return;
  }
}

void cuda_lexer::skip_block_comment() {
  const std::size_t close = src_.find("*/", pos_ + 2);
  pos_ = close == std::string_view::npos ? src_.size() : close + 2;
}

// Reads the directive name after '#' (pos_ just past it) and leaves pos_ after the name.
std::string_view cuda_lexer::directive_name() {
  while (pos_ < src_.size()) {
    if (is_blank(src_[pos_])) {
      ++pos_;
    } else if (src_.compare(pos_, 2, "/*") == 0) {
      skip_block_comment();
    } else if (const std::size_t s = splice_length(pos_); s != 0) {
      pos_ += s;
    } else {
      break;
    }
  }
  const std::size_t begin = pos_;
  while (pos_ < src_.size() && is_ident_char(static_cast<unsigned char>(src_[pos_]))) ++pos_;
  return src_.substr(begin, pos_ - begin);
}

// True when the rest of an `#if` line is the literal 0 (a group nobody compiles).
bool cuda_lexer::rest_of_line_is_zero() {
  std::size_t i = pos_;
  while (i < src_.size() && is_blank(src_[i])) ++i;
  if (i >= src_.size() || src_[i] != '0') return false;
  ++i;
  while (i < src_.size() && is_blank(src_[i])) ++i;
  return i >= src_.size() || src_[i] == '\n' || src_.compare(i, 2, "//") == 0 ||
         src_.compare(i, 2, "/*") == 0;
}

// Skips to the end of the directive's logical line (continuations, comments and quotes
// included); leaves pos_ on the newline.
void cuda_lexer::skip_directive_rest() {
  while (pos_ < src_.size()) {
    const char c = src_[pos_];
    if (c == '\n') return;
    if (c == '\\') {
      const std::size_t s = splice_length(pos_);
      pos_ += s != 0 ? s : 1;
    } else if (c == '/' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '*') {
      skip_block_comment();
    } else if (c == '/' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '/') {
      skip_line_comment();
      return;
    } else if (c == '"' || c == '\'') {
      // A quote inside a directive (#include "x", #error don't) ends at the line's end at most.
      ++pos_;
      while (pos_ < src_.size() && src_[pos_] != c && src_[pos_] != '\n') {
        pos_ += src_[pos_] == '\\' && pos_ + 1 < src_.size() && src_[pos_ + 1] != '\n' ? 2 : 1;
      }
      if (pos_ < src_.size() && src_[pos_] == c) ++pos_;
    } else {
      ++pos_;
    }
  }
}

void cuda_lexer::skip_directive() {
  ++pos_;  // '#'
  const std::string_view name = directive_name();
  const bool if_zero = name == "if" && rest_of_line_is_zero();
  skip_directive_rest();
  if (if_zero) skip_false_group();
}

// Skips the lines of an `#if 0` group up to its #else/#elif (whose group is then lexed) or
// #endif, following nested conditionals. Comments still count (a "*/" may hide an #endif).
void cuda_lexer::skip_false_group() {
  int depth = 0;
  while (pos_ < src_.size()) {
    if (src_[pos_] == '\n') ++pos_;
    while (pos_ < src_.size() && is_blank(src_[pos_])) ++pos_;
    if (pos_ < src_.size() && src_[pos_] == '#') {
      ++pos_;
      const std::string_view name = directive_name();
      if (name == "if" || name == "ifdef" || name == "ifndef") {
        ++depth;
      } else if (name == "endif") {
        if (depth == 0) {
          skip_directive_rest();
          return;
        }
        --depth;
      } else if (depth == 0 && (name == "else" || name == "elif" || name == "elifdef" ||
                                name == "elifndef")) {
        skip_directive_rest();
        return;
      }
      skip_directive_rest();
      continue;
    }
    while (pos_ < src_.size() && src_[pos_] != '\n') {
      if (src_[pos_] == '/' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '*') {
        skip_block_comment();
      } else if (src_[pos_] == '/' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '/') {
        skip_line_comment();
      } else {
        ++pos_;
      }
    }
  }
}

void cuda_lexer::lex_quoted(char quote) {
  ++pos_;  // opening quote
  while (pos_ < src_.size()) {
    const char c = src_[pos_];
    if (c == quote) {
      ++pos_;
      return;
    }
    if (c == '\n') return;  // unterminated: end at the line's end, like the compiler's error
    pos_ += c == '\\' && pos_ + 1 < src_.size() ? 2 : 1;
  }
}

void cuda_lexer::lex_raw_string() {
  // pos_ is on the opening quote of R"delim( … )delim".
  const std::size_t open = pos_;
  std::size_t i = open + 1;
  while (i < src_.size() && i - open - 1 <= max_raw_delimiter) {
    const char c = src_[i];
    if (c == '(') break;
    if (c == ')' || c == '\\' || c == ' ' || c == '"' || c == '\n' || is_blank(c)) {
      lex_quoted('"');  // not a valid raw string: lex it as an ordinary one
      return;
    }
    ++i;
  }
  if (i >= src_.size() || src_[i] != '(') {
    lex_quoted('"');
    return;
  }
  const std::string_view delim = src_.substr(open + 1, i - open - 1);
  for (std::size_t at = src_.find(')', i + 1); at != std::string_view::npos;
       at = src_.find(')', at + 1)) {
    if (src_.compare(at + 1, delim.size(), delim) == 0 && at + 1 + delim.size() < src_.size() &&
        src_[at + 1 + delim.size()] == '"') {
      pos_ = at + delim.size() + 2;
      return;
    }
  }
  pos_ = src_.size();  // unterminated raw string runs to the end
}

void cuda_lexer::lex_identifier(cuda_token& out) {
  const std::size_t begin = pos_;
  while (pos_ < src_.size() && is_ident_char(static_cast<unsigned char>(src_[pos_]))) ++pos_;
  out.kind = cuda_token_kind::identifier;
  if (pos_ >= src_.size()) return;
  const char next = src_[pos_];
  if (next != '"' && next != '\'') return;
  // Encoding prefixes and raw strings: u8"…", L'x', R"(…)", u8R"d(…)d".
  const std::string_view word = src_.substr(begin, pos_ - begin);
  const bool encoding = word == "u8" || word == "u" || word == "U" || word == "L";
  if (next == '"' && (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
    out.kind = cuda_token_kind::string;
    lex_raw_string();
  } else if (encoding) {
    out.kind = next == '"' ? cuda_token_kind::string : cuda_token_kind::character;
    lex_quoted(next);
  }
}

void cuda_lexer::lex_number() {
  // pp-number: digits, letters, '.', digit separators and exponent signs.
  ++pos_;
  while (pos_ < src_.size()) {
    const auto c = static_cast<unsigned char>(src_[pos_]);
    const bool has_next = pos_ + 1 < src_.size();
    const auto n = has_next ? static_cast<unsigned char>(src_[pos_ + 1]) : 0;
    if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') && (n == '+' || n == '-')) {
      pos_ += 2;
    } else if (c == '\'' && has_next && is_ident_char(n)) {
      pos_ += 2;
    } else if (is_ident_char(c) || c == '.') {
      ++pos_;
    } else {
      break;
    }
  }
}

bool cuda_lexer::next(cuda_token& out) {
  const std::size_t size = src_.size();
  while (pos_ < size) {
    const auto c = static_cast<unsigned char>(src_[pos_]);
    if (c == '\n') {
      ++pos_;
      line_start_ = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
      continue;
    }
    if (c == '/' && pos_ + 1 < size && src_[pos_ + 1] == '/') {
      skip_line_comment();
      continue;
    }
    if (c == '/' && pos_ + 1 < size && src_[pos_ + 1] == '*') {
      skip_block_comment();
      continue;
    }
    if (c == '\\') {
      if (const std::size_t s = splice_length(pos_); s != 0) {
        pos_ += s;
        continue;
      }
    }
    if (c == '#' && line_start_) {
      skip_directive();
      continue;
    }
    line_start_ = false;
    out.begin = static_cast<std::uint32_t>(pos_);
    out.ch = static_cast<char>(c);
    if (is_ident_start(c)) {
      lex_identifier(out);
    } else if (is_digit(c) || (c == '.' && pos_ + 1 < size && is_digit(static_cast<unsigned char>(src_[pos_ + 1])))) {
      out.kind = cuda_token_kind::number;
      lex_number();
    } else if (c == '"') {
      out.kind = cuda_token_kind::string;
      lex_quoted('"');
    } else if (c == '\'') {
      out.kind = cuda_token_kind::character;
      lex_quoted('\'');
    } else {
      out.kind = cuda_token_kind::punct;
      const char n = pos_ + 1 < size ? src_[pos_ + 1] : '\0';
      pos_ += (c == ':' && n == ':') || (c == '-' && n == '>') ? 2 : 1;
    }
    out.end = static_cast<std::uint32_t>(pos_);
    return true;
  }
  return false;
}

std::vector<cuda_token> tokenize_cuda(std::string_view source) {
  std::vector<cuda_token> tokens;
  tokens.reserve(source.size() / 4 + 16);  // typical CUDA code: one token per 4-6 bytes
  cuda_lexer lexer(source);
  cuda_token token;
  while (lexer.next(token)) tokens.push_back(token);
  return tokens;
}

}  // namespace kblaster::engine
