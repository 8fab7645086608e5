// Internal to the mechanical tier: the token model of a source and byte edits (see
// mechanical_source.h).
#include "engine/optimize/mechanical/source.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "engine/source/kernel_locator.h"

namespace kblaster::engine::optimize::mech {
namespace {

bool is_open(const cuda_token& t) { return t.is('(') || t.is('[') || t.is('{'); }
bool is_close(const cuda_token& t) { return t.is(')') || t.is(']') || t.is('}'); }

bool is_type_word(std::string_view w) {
  return w == "int" || w == "unsigned" || w == "long" || w == "short" || w == "size_t" ||
         w == "std" || w == "const" || w == "constexpr" || w == "static" || w == "signed" ||
         w == "int64_t" || w == "uint32_t" || w == "int32_t" || w == "uint64_t";
}

}  // namespace

std::optional<long long> parse_integer_literal(std::string_view text) {
  std::string digits;
  for (const char c : text)
    if (c != '\'') digits += c;
  while (!digits.empty() && (digits.back() == 'u' || digits.back() == 'U' || digits.back() == 'l' ||
                             digits.back() == 'L'))
    digits.pop_back();
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  int base = 10;
  std::size_t at = 0;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    at = 2;
  }
  long long value = 0;
  for (; at < digits.size(); ++at) {
    const char c = digits[at];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return std::nullopt;
    value = value * base + d;
  }
  return value;
}

parsed_source::parsed_source(std::string src) : source(std::move(src)), tokens(tokenize_cuda(source)) {
  auto token_at = [&](std::size_t byte) -> std::size_t {
    const auto it = std::lower_bound(tokens.begin(), tokens.end(), byte,
                                     [](const cuda_token& t, std::size_t b) { return t.begin < b; });
    return it != tokens.end() && it->begin == byte ? static_cast<std::size_t>(it - tokens.begin()) : none;
  };
  for (const cuda_symbol& s : locate_cuda_symbols(source)) {
    const std::size_t name = token_at(s.name_range.begin);
    if (name == none) continue;
    if (!s.is_definition) {
      declared_names_.push_back(name);
      continue;
    }
    function_info f;
    f.name = s.name;
    f.global = s.kind == cuda_symbol_kind::global_kernel;
    f.device = s.kind == cuda_symbol_kind::device_function;
    f.head_begin = token_at(s.full_range.begin);
    f.name_tok = name;
    f.launch_bounds = s.launch_bounds;
    f.templated = !s.template_parameters.empty();
    std::size_t i = name + 1;
    while (i < tokens.size() && !tokens[i].is('(')) ++i;
    if (i >= tokens.size()) continue;
    f.params_open = i;
    f.params_close = match(i);
    if (f.params_close == none) continue;
    i = f.params_close + 1;
    while (i < tokens.size() && !tokens[i].is('{') && !tokens[i].is(';')) ++i;
    if (i >= tokens.size() || !tokens[i].is('{')) continue;
    f.body_open = i;
    f.body_close = match(i);
    if (f.body_close == none || f.head_begin == none) continue;
    functions.push_back(std::move(f));
  }
  // A function inside another's body is a misreading of broken code (C++ has no nested
  // functions): keep only the outer one, so that no token is edited twice.
  std::vector<function_info> outer;
  for (const function_info& f : functions) {
    const bool nested = std::any_of(functions.begin(), functions.end(), [&](const function_info& o) {
      return o.body_open < f.head_begin && f.head_begin < o.body_close;
    });
    if (!nested) outer.push_back(f);
  }
  functions = std::move(outer);
  // Launch sites: three adjacent '<', the kernel name before them, three adjacent '>' closing
  // the configuration outside brackets.
  for (std::size_t i = 1; i + 2 < tokens.size(); ++i) {
    if (!(tokens[i].is('<') && tokens[i + 1].is('<') && tokens[i + 2].is('<') &&
          tokens[i].end == tokens[i + 1].begin && tokens[i + 1].end == tokens[i + 2].begin))
      continue;
    launch_info l;
    l.config_open = i;
    l.name_tok = i - 1;
    if (tokens[i - 1].kind == cuda_token_kind::identifier) l.kernel = std::string(text(i - 1));
    int depth = 0;
    std::size_t arg_begin = i + 3;
    std::size_t j = i + 3;
    for (; j + 2 < tokens.size(); ++j) {
      const cuda_token& t = tokens[j];
      if (is_open(t)) ++depth;
      else if (is_close(t)) --depth;
      if (depth < 0 || t.is(';')) break;
      if (depth == 0 && t.is(',')) {
        l.config.push_back({arg_begin, j});
        arg_begin = j + 1;
      } else if (depth == 0 && t.is('>') && tokens[j + 1].is('>') && tokens[j + 2].is('>') &&
                 t.end == tokens[j + 1].begin && tokens[j + 1].end == tokens[j + 2].begin) {
        l.config.push_back({arg_begin, j});
        l.config_close = j;
        break;
      }
    }
    if (l.config_close == 0) continue;
    for (std::size_t f = 0; f < functions.size(); ++f)
      if (functions[f].body_open < i && i < functions[f].body_close) l.host = f;
    launches.push_back(std::move(l));
    i = j + 2;
  }
}

std::string parsed_source::raw(token_range r) const {
  if (r.begin >= r.end) return {};
  return source.substr(tokens[r.begin].begin, tokens[r.end - 1].end - tokens[r.begin].begin);
}

std::string parsed_source::compact(token_range r) const {
  std::string out;
  for (std::size_t i = r.begin; i < r.end; ++i) {
    if (i > r.begin && tokens[i].begin > tokens[i - 1].end) out += ' ';
    out += text(i);
  }
  return out;
}

bool parsed_source::word(std::size_t i, std::string_view w) const {
  return i < tokens.size() && tokens[i].kind == cuda_token_kind::identifier && text(i) == w;
}

std::size_t parsed_source::match(std::size_t open) const {
  int depth = 0;
  for (std::size_t i = open; i < tokens.size(); ++i) {
    if (is_open(tokens[i])) ++depth;
    else if (is_close(tokens[i]) && --depth == 0) return i;
  }
  return none;
}

const function_info* parsed_source::kernel(std::string_view name) const {
  const function_info* found = nullptr;
  for (const function_info& f : functions) {
    if (!f.global || f.name != name) continue;
    if (found) return nullptr;
    found = &f;
  }
  return found;
}

bool parsed_source::has_declaration(std::string_view name) const {
  return std::any_of(declared_names_.begin(), declared_names_.end(),
                     [&](std::size_t t) { return text(t) == name; });
}

std::vector<const launch_info*> parsed_source::launches_of(std::string_view kernel) const {
  std::vector<const launch_info*> out;
  for (const launch_info& l : launches)
    if (l.kernel == kernel) out.push_back(&l);
  return out;
}

std::size_t parsed_source::statement_end(std::size_t first, std::size_t limit) const {
  if (first >= limit) return limit;
  auto after_paren = [&](std::size_t i) -> std::size_t {  // i: the token after the keyword
    if (i >= limit || !tokens[i].is('(')) return limit;
    const std::size_t close = match(i);
    return close == none || close >= limit ? limit : close + 1;
  };
  if (tokens[first].is('{')) {
    const std::size_t close = match(first);
    return close == none || close >= limit ? limit : close + 1;
  }
  if (word(first, "if")) {
    std::size_t end = statement_end(after_paren(first + 1), limit);
    if (end < limit && word(end, "else")) end = statement_end(end + 1, limit);
    return end;
  }
  if (word(first, "for") || word(first, "while") || word(first, "switch"))
    return statement_end(after_paren(first + 1), limit);
  if (word(first, "do")) {
    std::size_t end = statement_end(first + 1, limit);
    if (end < limit && word(end, "while")) end = after_paren(end + 1);
    return end < limit && tokens[end].is(';') ? end + 1 : end;
  }
  int depth = 0;
  for (std::size_t i = first; i < limit; ++i) {
    if (is_open(tokens[i])) ++depth;
    else if (is_close(tokens[i]) && --depth < 0) return i;
    else if (depth == 0 && tokens[i].is(';')) return i + 1;
  }
  return limit;
}

std::string parsed_source::indent_at(std::size_t pos) const {
  std::size_t start = source.rfind('\n', pos == 0 ? 0 : pos - 1);
  start = start == std::string::npos ? 0 : start + 1;
  std::size_t end = start;
  while (end < source.size() && (source[end] == ' ' || source[end] == '\t')) ++end;
  return source.substr(start, end - start);
}

bool parsed_source::starts_line(std::size_t i) const {
  for (std::size_t p = tokens[i].begin; p > 0; --p) {
    const char c = source[p - 1];
    if (c == '\n') return true;
    if (c != ' ' && c != '\t') return false;
  }
  return true;
}

std::optional<long long> parsed_source::integer(token_range r) const {
  while (r.end - r.begin >= 3 && tokens[r.begin].is('(') && match(r.begin) == r.end - 1) {
    ++r.begin;
    --r.end;
  }
  if (r.end != r.begin + 1 || tokens[r.begin].kind != cuda_token_kind::number) return std::nullopt;
  return parse_integer_literal(text(r.begin));
}

std::optional<long long> parsed_source::integer_constant(std::string_view name, std::size_t from,
                                                         std::size_t to) const {
  std::optional<long long> value;
  for (std::size_t i = from + 1; i + 3 < to && i + 3 < tokens.size(); ++i) {
    if (!word(i, name) || !(tokens[i + 1].is('=') || tokens[i + 1].is('{') || tokens[i + 1].is('(')))
      continue;
    bool constant = false, typed = false;
    std::size_t b = i;
    while (b > from && tokens[b - 1].kind == cuda_token_kind::identifier && is_type_word(text(b - 1))) {
      --b;
      constant = constant || text(b) == "const" || text(b) == "constexpr";
      typed = typed || (text(b) != "const" && text(b) != "constexpr" && text(b) != "static");
    }
    if (!constant || !typed || b == i) continue;
    std::size_t v = i + 2;
    const bool braced = !tokens[i + 1].is('=');
    if (!braced && v < to && tokens[v].is('{')) continue;
    const std::optional<long long> literal = integer({v, v + 1});
    const std::size_t after = v + 1 + (braced ? 1 : 0);
    if (!literal || after >= to || !(tokens[after].is(';') || tokens[after].is(','))) continue;
    value = literal;
  }
  return value;
}

namespace {

// Index of the declarator `name` in [from, to): an identifier followed by '(', '{', '=', ';'
// or ','; the token before the statement's declarator list is returned through `type_first`.
bool dim3_declarator(const parsed_source& s, std::size_t i, std::size_t from) {
  std::size_t b = i;
  if (b > from && s.tokens[b - 1].is(',')) {
    // Walk back over earlier declarators of the same statement to its start.
    int depth = 0;
    while (b > from) {
      const cuda_token& t = s.tokens[b - 1];
      if (is_close(t)) ++depth;
      else if (is_open(t) && --depth < 0) break;
      else if (depth == 0 && t.is(';')) break;
      --b;
    }
    while (b < i && (s.word(b, "const") || s.word(b, "static") || s.word(b, "constexpr"))) ++b;
    return s.word(b, "dim3");
  }
  return b > from && s.word(b - 1, "dim3");
}

}  // namespace

bool parsed_source::is_dim3(std::string_view name, std::size_t from, std::size_t to) const {
  for (std::size_t i = from; i + 1 < to && i + 1 < tokens.size(); ++i)
    if (word(i, name) && dim3_declarator(*this, i, from)) return true;
  return false;
}

std::vector<long long> parsed_source::dim3_literals(std::string_view name, std::size_t from,
                                                    std::size_t to) const {
  std::vector<long long> out;
  for (std::size_t i = from; i + 1 < to && i + 1 < tokens.size(); ++i) {
    if (!word(i, name) || !dim3_declarator(*this, i, from)) continue;
    std::size_t open = i + 1;
    if (tokens[open].is('=') && word(open + 1, "dim3")) open += 2;
    if (open >= to || !(tokens[open].is('(') || tokens[open].is('{'))) return {};
    const std::size_t close = match(open);
    if (close == none || close >= to) return {};
    std::size_t arg = open + 1;
    for (std::size_t j = open + 1; j <= close; ++j) {
      if (!(tokens[j].is(',') || j == close)) continue;
      const auto v = integer({arg, j});
      if (!v) return {};
      out.push_back(*v);
      arg = j + 1;
    }
    return out;
  }
  return out;
}

std::string apply_edits(std::string_view source, std::vector<edit> edits) {
  std::stable_sort(edits.begin(), edits.end(),
                   // An insertion goes before a replacement that starts at the same byte.
                   [](const edit& a, const edit& b) {
                     return a.begin != b.begin ? a.begin < b.begin : a.end == a.begin && b.end > b.begin;
                   });
  std::string out;
  std::size_t at = 0;
  for (const edit& e : edits) {
    if (e.begin < at || e.end < e.begin || e.end > source.size())
      throw std::logic_error("mechanical: overlapping source edits");
    out.append(source.substr(at, e.begin - at));
    out += e.text;
    at = e.end;
  }
  out.append(source.substr(at));
  return out;
}

}  // namespace kblaster::engine::optimize::mech
