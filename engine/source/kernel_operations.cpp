// The operations a kernel's device code shows, read from its tokens (rules in kernel_operations.h).
#include "engine/source/kernel_operations.h"

#include "engine/source/cuda_lexer.h"
#include "engine/source/kernel_locator.h"
#include "kb/note_needs.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

namespace kblaster::engine {
namespace {

using tokens = std::vector<cuda_token>;

bool one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

bool transcendental_name(std::string_view s) {
  if (s.starts_with("std::")) s.remove_prefix(5);
  while (s.starts_with("_")) s.remove_prefix(1);  // __expf, __fsqrt_rn
  static constexpr std::array<std::string_view, 22> stems = {
      "exp", "log", "pow", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan",
      "atan2", "erf", "erfc", "sqrt", "rsqrt", "cbrt", "expm1", "log1p", "sincos", "fsqrt"};
  for (const auto stem : stems) {
    if (!s.starts_with(stem)) continue;
    // The stem, then at most a base or precision suffix: expf, exp2f, exp10, log2f, sinpif, __fsqrt_rn.
    std::string_view rest = s.substr(stem.size());
    if (rest.empty() || one_of(rest, {"f", "2", "2f", "10", "10f", "pi", "pif", "_rn", "_rz", "_ru", "_rd", "l"}))
      return true;
  }
  return false;
}

bool float_literal(std::string_view s) {
  if (s.starts_with("0x") || s.starts_with("0X")) return s.find_first_of("pP") != std::string_view::npos;
  return s.find_first_of(".eEfF") != std::string_view::npos;
}

// Reads the device functions of one source.
class reader {
 public:
  reader(std::string_view source, const tokens& t) : src_(source), t_(t) {}

  // The tokens of [begin, end) belong to one function body (its braces included).
  void body(std::size_t begin, std::size_t end) {
    std::vector<bool> scopes;  // per open brace: a loop's body
    int single_statement_loops = 0;
    int single_statement_depth = -1;
    for (std::size_t i = begin; i < end; ++i) {
      const auto& tok = t_[i];
      const auto text = tok.text(src_);
      const bool in_loop = single_statement_loops > 0 || std::find(scopes.begin(), scopes.end(), true) != scopes.end();
      if (tok.kind == cuda_token_kind::identifier) {
        if (text == "__shared__") found_.insert(kb::note_operation::shared_memory);
        if (text.starts_with("atomic") || text.starts_with("__shfl") || text.starts_with("__reduce_") ||
            one_of(text, {"BlockReduce", "WarpReduce", "reduce"}))
          if (followed_by_call(i) || text == "BlockReduce" || text == "WarpReduce")
            found_.insert(kb::note_operation::reduction);
        if (transcendental_name(text) && followed_by_call(i)) found_.insert(kb::note_operation::transcendental);
        if (one_of(text, {"for", "while"}) && i + 1 < end && t_[i + 1].is('(')) {
          const std::size_t close = matching(i + 1, '(', ')');
          note_counters(i + 1, close, text == "while");
          i = close;
          if (i + 1 < end && t_[i + 1].is('{')) {
            pending_loop_brace_ = true;
          } else if (i + 1 < end && !t_[i + 1].is(';')) {
            ++single_statement_loops;
            single_statement_depth = static_cast<int>(scopes.size());
          }
          continue;
        }
        if (text == "do" && i + 1 < end && t_[i + 1].is('{')) pending_loop_brace_ = true;
        if (statement_start(i) && declares_array(i)) {
          found_.insert(kb::note_operation::per_thread_array);
          local_arrays_.insert(std::string(t_[array_name_at(i)].text(src_)));
        }
        if (in_loop && accumulates(i)) found_.insert(kb::note_operation::reduction);
      } else if (tok.is('{')) {
        scopes.push_back(pending_loop_brace_);
        pending_loop_brace_ = false;
      } else if (tok.is('}')) {
        if (!scopes.empty()) scopes.pop_back();
        if (single_statement_loops > 0 && static_cast<int>(scopes.size()) <= single_statement_depth)
          single_statement_loops = 0;
      } else if (tok.is(';')) {
        if (single_statement_loops > 0 && static_cast<int>(scopes.size()) == single_statement_depth)
          single_statement_loops = 0;
      } else if (tok.is('%')) {
        found_.insert(kb::note_operation::division);
      } else if (tok.is('/') && i + 1 < end) {
        const auto& next = t_[i + 1];
        const bool by_float = next.kind == cuda_token_kind::number && float_literal(next.text(src_));
        if (!by_float) found_.insert(kb::note_operation::division);
      }
    }
  }

  std::set<std::string> result() const { return found_; }

 private:
  bool followed_by_call(std::size_t i) const { return i + 1 < t_.size() && t_[i + 1].is('('); }

  std::size_t matching(std::size_t open, char o, char c) const {
    int depth = 0;
    for (std::size_t i = open; i < t_.size(); ++i) {
      if (t_[i].is(o)) ++depth;
      else if (t_[i].is(c) && --depth == 0) return i;
    }
    return t_.size() - 1;
  }

  // A loop header's counters: in a for-header the names assigned or stepped (`int i = 0`,
  // `i += stride`, `++i`); in a while-condition every name it tests (`while (k < n) { k += 4; }`).
  void note_counters(std::size_t open, std::size_t close, bool every_name) {
    for (std::size_t i = open + 1; i < close; ++i) {
      if (t_[i].kind != cuda_token_kind::identifier) continue;
      const bool assigned = i + 1 < close && (t_[i + 1].is('=') || assignment_op(i + 1) || step(i + 1));
      const bool stepped = i >= 2 && step(i - 2);
      if (every_name || assigned || stepped) counters_.insert(std::string(t_[i].text(src_)));
    }
  }

  bool adjacent(std::size_t i) const { return i + 1 < t_.size() && t_[i].end == t_[i + 1].begin; }
  // `++` or `--` at i.
  bool step(std::size_t i) const {
    return i + 1 < t_.size() && adjacent(i) &&
           ((t_[i].is('+') && t_[i + 1].is('+')) || (t_[i].is('-') && t_[i + 1].is('-')));
  }
  // `+=`, `-=`, `*=`, `|=`, `&=`, `^=` at i (not `==`, `<=`, `>=`, `!=`).
  bool assignment_op(std::size_t i) const {
    if (i + 1 >= t_.size() || !adjacent(i) || !t_[i + 1].is('=')) return false;
    return t_[i].is('+') || t_[i].is('-') || t_[i].is('*') || t_[i].is('|') || t_[i].is('&') || t_[i].is('^');
  }

  bool statement_start(std::size_t i) const {
    if (i == 0) return true;
    const auto& p = t_[i - 1];
    return p.is(';') || p.is('{') || p.is('}') || p.is(')') || p.is(':');
  }

  // The type of a declaration starting at i, past its qualifiers.
  std::size_t type_at(std::size_t i) const {
    std::size_t j = i;
    while (j < t_.size() && t_[j].kind == cuda_token_kind::identifier &&
           one_of(t_[j].text(src_), {"const", "constexpr", "static", "volatile", "register", "unsigned", "signed", "long", "short"}))
      ++j;
    return j;
  }
  std::size_t array_name_at(std::size_t i) const { return type_at(i) + 1; }

  // `TYPE NAME[` at a statement's start, not shared memory: a per-thread array.
  bool declares_array(std::size_t i) const {
    const std::size_t j = type_at(i);
    if (j + 2 >= t_.size() || t_[j].kind != cuda_token_kind::identifier) return false;
    const auto type = t_[j].text(src_);
    if (one_of(type, {"return", "case", "else", "goto", "delete", "new", "throw", "sizeof", "co_return", "__shared__",
                      "extern", "using", "typedef"}))
      return false;
    return t_[j + 1].kind == cuda_token_kind::identifier && t_[j + 2].is('[');
  }

  // `acc += …` into a plain variable that is not a loop counter; `acc[i][j] += …` into a
  // per-thread array; `s[i] += s[j]` (the same array on both sides: a tree through memory);
  // `m = fmaxf(m, …)`.
  bool accumulates(std::size_t i) const {
    const auto name = t_[i].text(src_);
    const bool plain = i == 0 || !(t_[i - 1].is('.') || t_[i - 1].is_arrow() || t_[i - 1].is_scope());
    if (!plain || counters_.count(std::string(name))) return false;
    if (i + 1 < t_.size() && assignment_op(i + 1)) return true;
    if (i + 1 < t_.size() && t_[i + 1].is('[')) {
      const std::size_t close = matching(i + 1, '[', ']');
      std::size_t after = close + 1;
      while (after < t_.size() && t_[after].is('[')) after = matching(after, '[', ']') + 1;  // acc[i][j]
      if (after >= t_.size() || !assignment_op(after)) return false;
      if (local_arrays_.count(std::string(name))) return true;
      for (std::size_t k = after + 2; k < t_.size() && !t_[k].is(';'); ++k)
        if (t_[k].kind == cuda_token_kind::identifier && t_[k].text(src_) == name) return true;
      return false;
    }
    if (i + 4 < t_.size() && t_[i + 1].is('=') && !t_[i + 2].is('=') &&
        one_of(t_[i + 2].text(src_), {"fmaxf", "fminf", "fmax", "fmin", "max", "min"}) && t_[i + 3].is('(') &&
        t_[i + 4].text(src_) == name)
      return true;
    return false;
  }

  std::string_view src_;
  const tokens& t_;
  std::set<std::string> found_;
  std::set<std::string> counters_;
  std::set<std::string> local_arrays_;
  bool pending_loop_brace_ = false;
};

}  // namespace

std::set<std::string> kernel_operations(std::string_view source) {
  const auto symbols = locate_cuda_symbols(source);
  const tokens t = tokenize_cuda(source);
  reader r(source, t);
  for (const auto& s : symbols) {
    if (s.kind == cuda_symbol_kind::host_launcher || !s.is_definition) continue;
    // The body: the first '{' after the parameter list, to the symbol's closing brace.
    auto first = std::lower_bound(t.begin(), t.end(), s.name_range.end,
                                  [](const cuda_token& tok, std::size_t at) { return tok.begin < at; });
    std::size_t i = static_cast<std::size_t>(first - t.begin());
    while (i < t.size() && !t[i].is('(')) ++i;
    int depth = 0;
    for (; i < t.size(); ++i) {
      if (t[i].is('(')) ++depth;
      else if (t[i].is(')') && --depth == 0) break;
    }
    while (i < t.size() && t[i].begin < s.full_range.end && !t[i].is('{')) ++i;
    std::size_t end = i;
    while (end < t.size() && t[end].begin < s.full_range.end) ++end;
    if (i < end) r.body(i, end);
  }
  return r.result();
}

}  // namespace kblaster::engine
