// Reading one declaration head as a function declaration (see kernel_locator_head.h).
#include "engine/source/kernel_locator_head.h"

#include <algorithm>
#include <array>

namespace kblaster::engine::locator_detail {
namespace {

// Identifiers that may stand before '(' in a head without being the function's name.
constexpr auto non_names = std::to_array<std::string_view>({
    "__launch_bounds__", "__attribute__", "__declspec", "alignas", "__align__", "decltype",
    "noexcept", "throw", "sizeof", "alignof", "static_assert", "requires", "__cluster_dims__",
    "__maxnreg__", "__global__", "__device__", "__host__", "__forceinline__", "__noinline__",
    "__inline__", "inline", "static", "extern", "const", "volatile", "void", "int", "float",
    "double", "char", "bool", "long", "short", "unsigned", "signed", "auto", "return", "if",
    "for", "while", "switch", "typedef", "using", "new", "delete", "template", "typename",
    "class", "struct", "union", "enum", "constexpr", "consteval", "constinit", "explicit",
    "virtual", "friend", "asm", "__asm__", "_Pragma", "__shared__", "__constant__",
});

// Words that may follow a parameter list's ')' (the other punctuators are in follows_params).
constexpr auto after_params = std::to_array<std::string_view>({
    "const", "volatile", "noexcept", "override", "final", "throw", "requires",
    "__attribute__", "try", "mutable", "__restrict__",
});

bool is_one_of(std::string_view word, auto const& list) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

bool is_open(const cuda_token& t) { return t.is('(') || t.is('[') || t.is('{'); }
bool is_close(const cuda_token& t) { return t.is(')') || t.is(']') || t.is('}'); }

// Index of the '>' closing the '<' at tokens[open]; brackets inside are skipped, so
// `(N > 4)` is fine, and `>>` is two tokens.
std::size_t match_angle(std::span<const cuda_token> tokens, std::size_t open, std::size_t limit) {
  int angles = 0;
  for (std::size_t i = open; i < limit; ++i) {
    const cuda_token& t = tokens[i];
    if (is_open(t)) {
      i = match_close(tokens, i, limit);
      if (i == npos) return npos;
    } else if (is_close(t) || t.is(';')) {
      return npos;
    } else if (t.is('<')) {
      ++angles;
    } else if (t.is('>') && --angles == 0) {
      return i;
    }
  }
  return npos;
}

bool is_macro_name(std::string_view word) {
  bool upper = false;
  for (const char c : word) {
    if (c >= 'a' && c <= 'z') return false;
    upper = upper || (c >= 'A' && c <= 'Z');
  }
  return upper;
}

// `FOO(args)` alone at the head's start, with the next token on a later line: a macro
// statement written without ';' (INSTANTIATE(float)), not part of the declaration after it.
std::size_t skip_macro_statement(std::string_view source, std::span<const cuda_token> tokens,
                                 std::size_t s, std::size_t end) {
  if (s + 1 >= end || tokens[s].kind != cuda_token_kind::identifier || !tokens[s + 1].is('(') ||
      !is_macro_name(tokens[s].text(source))) {
    return s;
  }
  const std::size_t close = match_close(tokens, s + 1, end);
  if (close == npos || close + 1 >= end) return s;
  const std::string_view gap =
      source.substr(tokens[close].end, tokens[close + 1].begin - tokens[close].end);
  return gap.find('\n') == std::string_view::npos ? s : close + 1;
}

std::vector<std::string> split_template_parameters(std::string_view source,
                                                   std::span<const cuda_token> tokens,
                                                   std::size_t open, std::size_t close) {
  std::vector<std::string> params;
  int depth = 0;
  std::size_t first = open + 1;
  for (std::size_t i = open + 1; i <= close; ++i) {
    const cuda_token& t = tokens[i];
    if (i == close || (depth == 0 && t.is(','))) {
      if (i > first) params.push_back(normalized_text(source, tokens, first, i - 1));
      first = i + 1;
    } else if (is_open(t)) {  // (1 << 8) holds no angle brackets
      const std::size_t end = match_close(tokens, i, close);
      if (end == npos) break;
      i = end;
    } else if (t.is('<')) {
      ++depth;
    } else if (t.is('>')) {
      --depth;
    }
  }
  return params;
}

// Last token of an operator-function-id starting at tokens[op] ("operator"), or npos.
std::size_t operator_name_end(std::string_view source, std::span<const cuda_token> tokens,
                              std::size_t op, std::size_t end) {
  const std::size_t k = op + 1;
  if (k >= end) return npos;
  const cuda_token& t = tokens[k];
  if ((t.is('(') && k + 1 < end && tokens[k + 1].is(')')) ||
      (t.is('[') && k + 1 < end && tokens[k + 1].is(']'))) {
    return k + 1;
  }
  if (is_word(source, t, "new") || is_word(source, t, "delete")) {
    return k + 2 < end && tokens[k + 1].is('[') && tokens[k + 2].is(']') ? k + 2 : k;
  }
  if (t.kind == cuda_token_kind::punct) {  // +, <<=, <=>, ->*: adjacent punctuators
    std::size_t last = k;
    while (last + 1 < end && tokens[last + 1].kind == cuda_token_kind::punct &&
           !tokens[last + 1].is('(') && tokens[last + 1].begin == tokens[last].end) {
      ++last;
    }
    return last;
  }
  if (t.kind == cuda_token_kind::string) {  // operator""_km
    return k + 1 < end && tokens[k + 1].kind == cuda_token_kind::identifier &&
                   tokens[k + 1].begin == t.end
               ? k + 1
               : k;
  }
  // Conversion function: operator float, operator const T&.
  std::size_t last = k;
  while (last + 1 < end && !tokens[last + 1].is('(')) ++last;
  return last;
}

bool follows_params(std::string_view source, const cuda_token& t) {
  if (t.kind == cuda_token_kind::identifier) return is_one_of(t.text(source), after_params);
  return t.is('{') || t.is(';') || t.is('=') || t.is('&') || t.is('[') || t.is(':') ||
         t.is('}') || t.is_arrow();
}

// `__device__ int counter(0);` declares a variable: its "parameters" start with a literal.
bool looks_like_initializer(std::span<const cuda_token> tokens, std::size_t open,
                            std::size_t close) {
  if (open + 1 >= close) return false;
  const cuda_token_kind k = tokens[open + 1].kind;
  return k == cuda_token_kind::number || k == cuda_token_kind::string ||
         k == cuda_token_kind::character;
}

// Extends the name backwards over a written qualifier: `ops::detail::`, `Vec<T>::`, `~`.
std::size_t qualifier_start(std::span<const cuda_token> tokens, std::size_t name,
                            std::size_t floor) {
  std::size_t q = name;
  while (q >= floor + 2 && tokens[q - 1].is_scope()) {
    std::size_t p = q - 2;
    if (tokens[p].is('>')) {  // template arguments: walk back to the matching '<'
      int depth = 0;
      while (p > floor) {
        if (tokens[p].is('>')) ++depth;
        if (tokens[p].is('<') && --depth == 0) break;
        --p;
      }
      if (depth != 0 || p == floor) break;
      --p;
    }
    if (tokens[p].kind != cuda_token_kind::identifier) break;
    q = p;
  }
  return q;
}

void read_specifiers(std::string_view source, std::span<const cuda_token> tokens,
                     function_head& out) {
  for (std::size_t i = out.spec_begin; i < out.qual_first; ++i) {
    const cuda_token& t = tokens[i];
    if (is_open(t)) {  // macro and attribute arguments hold no specifiers
      const std::size_t close = match_close(tokens, i, out.qual_first);
      if (close == npos) return;
      i = close;
      continue;
    }
    if (t.kind != cuda_token_kind::identifier) continue;
    const std::string_view word = t.text(source);
    if (word == "__global__") {
      out.global = true;
    } else if (word == "__device__") {
      out.device = true;
    } else if (word == "extern" && i + 1 < out.qual_first &&
               tokens[i + 1].kind == cuda_token_kind::string) {
      out.extern_c = tokens[i + 1].text(source) == "\"C\"";
    } else if (word == "__launch_bounds__" && i + 1 < out.qual_first && tokens[i + 1].is('(')) {
      const std::size_t close = match_close(tokens, i + 1, out.qual_first);
      if (close == npos) return;
      if (close > i + 2) out.launch_bounds = normalized_text(source, tokens, i + 2, close - 1);
      i = close;
    }
  }
}

}  // namespace

std::size_t match_close(std::span<const cuda_token> tokens, std::size_t open, std::size_t limit) {
  int depth = 0;
  for (std::size_t i = open; i < limit; ++i) {
    if (is_open(tokens[i])) {
      ++depth;
    } else if (is_close(tokens[i]) && --depth == 0) {
      return i;
    }
  }
  return npos;
}

std::string normalized_text(std::string_view source, std::span<const cuda_token> tokens,
                            std::size_t first, std::size_t last) {
  std::string text;
  if (first == npos || last == npos || first > last || last >= tokens.size()) return text;
  for (std::size_t i = first; i <= last; ++i) {
    const cuda_token& t = tokens[i];
    if (i > first) {
      const cuda_token& prev = tokens[i - 1];
      const bool gap = t.begin > prev.end;
      const bool tight = prev.is('(') || prev.is('[') || t.is(')') || t.is(']') || t.is(',');
      if (gap && !tight) text += ' ';
    }
    text += t.text(source);
  }
  return text;
}

bool read_function_head(std::string_view source, std::span<const cuda_token> tokens,
                        std::size_t begin, std::size_t end, function_head& out) {
  std::size_t s = begin;
  for (std::size_t next = skip_macro_statement(source, tokens, s, end); next != s;
       next = skip_macro_statement(source, tokens, s, end)) {
    s = next;
  }
  out = function_head{};
  out.start = s;
  while (s < end && is_word(source, tokens[s], "template")) {
    if (s + 1 >= end || !tokens[s + 1].is('<')) return false;  // explicit instantiation
    const std::size_t close = match_angle(tokens, s + 1, end);
    if (close == npos) return false;
    auto params = split_template_parameters(source, tokens, s + 1, close);
    out.template_parameters.insert(out.template_parameters.end(), params.begin(), params.end());
    s = close + 1;
  }
  if (s + 1 < end && is_word(source, tokens[s], "extern") &&
      is_word(source, tokens[s + 1], "template")) {
    return false;
  }
  out.spec_begin = s;

  std::vector<std::size_t> angles;  // open '<' at bracket depth 0
  std::size_t last_angle_open = npos;
  std::size_t last_angle_close = npos;
  for (std::size_t i = s; i < end; ++i) {
    const cuda_token& t = tokens[i];
    std::size_t name_first = npos;
    std::size_t name_last = npos;
    std::size_t open = npos;
    if (is_word(source, t, "operator") && angles.empty()) {
      const std::size_t last = operator_name_end(source, tokens, i, end);
      if (last == npos || last + 1 >= end || !tokens[last + 1].is('(')) return false;
      name_first = i;
      name_last = last;
      open = last + 1;
    } else if (t.is('(') || t.is('[') || t.is('{')) {
      if (t.is('(') && angles.empty() && i > s) {
        open = i;
        if (tokens[i - 1].kind == cuda_token_kind::identifier) {
          name_first = name_last = i - 1;
        } else if (tokens[i - 1].is('>') && i - 1 == last_angle_close && last_angle_open > s &&
                   tokens[last_angle_open - 1].kind == cuda_token_kind::identifier) {
          name_first = name_last = last_angle_open - 1;  // template-id: k<float>(…)
        }
        if (name_first != npos && is_one_of(tokens[name_first].text(source), non_names)) {
          name_first = npos;
        }
      }
      if (name_first == npos) {
        const std::size_t close = match_close(tokens, i, end);
        if (close == npos) return false;
        i = close;
        continue;
      }
    } else if (t.is('<')) {
      angles.push_back(i);
      continue;
    } else if (t.is('>')) {
      if (!angles.empty()) {
        last_angle_open = angles.back();
        last_angle_close = i;
        angles.pop_back();
      }
      continue;
    } else if (t.is('=') && angles.empty()) {
      return false;  // an initializer: a variable, an alias, a lambda
    } else {
      continue;
    }
    // A candidate name and its '(': it names the function if a parameter list's follower
    // comes after the ')'; otherwise it was a macro or attribute (KB_LAUNCH_BOUNDS(256) k(…)).
    const std::size_t close = match_close(tokens, open, end);
    if (close == npos) return false;
    const bool ends_head = close + 1 >= end;
    if ((ends_head || follows_params(source, tokens[close + 1])) &&
        !looks_like_initializer(tokens, open, close)) {
      if (name_first == name_last && name_first > s && tokens[name_first - 1].is('~')) {
        --name_first;  // destructor
      }
      out.name_first = name_first;
      out.name_last = name_last;
      out.params_open = open;
      out.params_close = close;
      out.qual_first = qualifier_start(tokens, name_first, s);
      read_specifiers(source, tokens, out);
      return true;
    }
    i = close;
  }
  return false;
}

}  // namespace kblaster::engine::locator_detail
