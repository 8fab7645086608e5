// The CUDA symbol locator's declaration walk (see kernel_locator.h).
//
// One pass over the tokens at declaration level: namespaces, extern "C" blocks and class
// bodies are entered as scopes; every other braced region (function bodies, initializers,
// enums) is skipped by brace matching, which is exact because the lexer has already removed
// comments, literals and directives. Function bodies are scanned once for `<<<`.
#include "engine/source/kernel_locator.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "engine/source/cuda_lexer.h"
#include "engine/source/kernel_locator_head.h"

namespace kblaster::engine {
namespace {

using locator_detail::function_head;
using locator_detail::is_word;
using locator_detail::match_close;
using locator_detail::normalized_text;
using locator_detail::npos;

struct scope {
  bool linkage = false;   // extern "C" { … } or extern "C++" { … }: no name of its own
  bool extern_c = false;  // for a linkage scope
  std::string name;       // namespace or class name; empty when anonymous
};

class declaration_walker {
 public:
  explicit declaration_walker(std::string_view source)
      : src_(source), toks_(tokenize_cuda(source)) {}

  std::vector<cuda_symbol> run();

 private:
  std::size_t head_end(std::size_t i) const;
  std::size_t body_start(const function_head& head, std::size_t end) const;
  std::size_t body_end(std::size_t open, bool& launches) const;
  bool open_scope(std::size_t begin, std::size_t brace);
  std::string record_name(std::size_t key, std::size_t brace) const;
  void emit(function_head& head, std::size_t last, bool definition, bool launches);
  std::string name_text(const function_head& head) const;

  std::string_view src_;
  std::vector<cuda_token> toks_;
  std::vector<scope> scopes_;
  std::vector<cuda_symbol> symbols_;
};

// The token ending the declaration that starts at i: its first '{', ';' or '}' outside
// brackets.
std::size_t declaration_walker::head_end(std::size_t i) const {
  int depth = 0;
  for (; i < toks_.size(); ++i) {
    const cuda_token& t = toks_[i];
    if (t.kind != cuda_token_kind::punct) continue;
    switch (t.ch) {
      case '(':
      case '[':
        ++depth;
        break;
      case ')':
      case ']':
        if (depth > 0) --depth;
        break;
      case '{':
        if (depth == 0) return i;
        ++depth;
        break;
      case '}':
        if (depth == 0) return i;
        --depth;
        break;
      case ';':
        if (depth == 0) return i;
        break;
      default:
        break;
    }
  }
  return toks_.size();
}

// The '{' of a function's body, or the ';' of a declaration. A constructor's initializer list
// (`: a(x), b{y} {`) holds braces that are not the body.
std::size_t declaration_walker::body_start(const function_head& head, std::size_t end) const {
  std::size_t j = head.params_close + 1;
  if (j >= toks_.size() || !toks_[j].is(':')) return end;
  ++j;
  while (j < toks_.size()) {
    while (j < toks_.size() && !toks_[j].is('(') && !toks_[j].is('{') && !toks_[j].is(';') &&
           !toks_[j].is('}')) {
      ++j;
    }
    if (j >= toks_.size() || toks_[j].is(';') || toks_[j].is('}')) return j;
    const std::size_t close = match_close(toks_, j, toks_.size());
    if (close == npos) return toks_.size();
    j = close + 1;
    if (j < toks_.size() && toks_[j].is(',')) {
      ++j;
      continue;
    }
    break;
  }
  return j;
}

// The '}' closing the body that opens at `open` (npos if the file ends first); sets
// `launches` when the body holds a `<<<` kernel launch.
std::size_t declaration_walker::body_end(std::size_t open, bool& launches) const {
  int depth = 0;
  const std::size_t n = toks_.size();
  for (std::size_t j = open; j < n; ++j) {
    const cuda_token& t = toks_[j];
    if (t.kind != cuda_token_kind::punct) continue;
    if (t.ch == '{') {
      ++depth;
    } else if (t.ch == '}') {
      if (--depth == 0) return j;
    } else if (t.ch == '<' && j + 2 < n && toks_[j + 1].is('<') && toks_[j + 2].is('<') &&
               toks_[j + 1].begin == t.end && toks_[j + 2].begin == toks_[j + 1].end) {
      launches = true;
    }
  }
  return npos;
}

// Name of a class declared by the head whose class-key is at `key`: the last plain identifier
// before the base clause or the brace (skips attributes, alignas(16), `final`, `S<T*>`).
std::string declaration_walker::record_name(std::size_t key, std::size_t brace) const {
  std::string name;
  for (std::size_t j = key + 1; j < brace; ++j) {
    const cuda_token& t = toks_[j];
    if (t.is(':')) break;
    if (t.is('(') || t.is('[')) {
      const std::size_t close = match_close(toks_, j, brace);
      if (close == npos) break;
      j = close;
    } else if (t.is('<')) {
      int angles = 0;
      for (; j < brace; ++j) {
        if (toks_[j].is('<')) ++angles;
        if (toks_[j].is('>') && --angles == 0) break;
      }
    } else if (t.kind == cuda_token_kind::identifier && !is_word(src_, t, "final") &&
               !(j + 1 < brace && toks_[j + 1].is('('))) {
      name = t.text(src_);
    }
  }
  return name;
}

// Enters the scope that the head [begin, brace) opens, if it is a namespace, a linkage block
// or a class; false for any other braced region.
bool declaration_walker::open_scope(std::size_t begin, std::size_t brace) {
  if (begin == brace) return false;
  std::size_t s = begin;
  if (is_word(src_, toks_[s], "inline")) ++s;
  if (s < brace && is_word(src_, toks_[s], "namespace")) {
    scope ns;
    for (std::size_t j = s + 1; j < brace; ++j) {
      const cuda_token& t = toks_[j];
      if (t.is('[')) {
        const std::size_t close = match_close(toks_, j, brace);
        if (close == npos) break;
        j = close;
      } else if (t.is_scope()) {
        ns.name += "::";
      } else if (t.kind == cuda_token_kind::identifier && !is_word(src_, t, "inline")) {
        ns.name += t.text(src_);
      }
    }
    scopes_.push_back(std::move(ns));
    return true;
  }
  if (brace == begin + 2 && is_word(src_, toks_[begin], "extern") &&
      toks_[begin + 1].kind == cuda_token_kind::string) {
    scopes_.push_back(scope{true, toks_[begin + 1].text(src_) == "\"C\"", {}});
    return true;
  }
  int depth = 0;
  int angles = 0;
  for (std::size_t j = begin; j < brace; ++j) {
    const cuda_token& t = toks_[j];
    if (t.is('(') || t.is('[')) ++depth;
    if ((t.is(')') || t.is(']')) && depth > 0) --depth;
    if (depth != 0) continue;
    if (t.is('<')) ++angles;
    if (t.is('>') && angles > 0) --angles;
    if (t.is('=')) return false;  // `struct S s = { … }`: an initializer
    if (angles != 0 || t.kind != cuda_token_kind::identifier) continue;
    const std::string_view word = t.text(src_);
    if (word == "enum") return false;
    if (word == "class" || word == "struct" || word == "union") {
      scopes_.push_back(scope{false, false, record_name(j, brace)});
      return true;
    }
  }
  return false;
}

std::string declaration_walker::name_text(const function_head& head) const {
  const cuda_token& first = toks_[head.name_first];
  if (head.name_last > head.name_first && is_word(src_, first, "operator")) {
    // "operator()", "operator+=" but "operator float".
    const cuda_token& symbol = toks_[head.name_first + 1];
    const bool word = symbol.kind == cuda_token_kind::identifier;
    return std::string("operator") + (word ? " " : "") +
           normalized_text(src_, toks_, head.name_first + 1, head.name_last);
  }
  return normalized_text(src_, toks_, head.name_first, head.name_last);
}

void declaration_walker::emit(function_head& head, std::size_t last, bool definition,
                              bool launches) {
  cuda_symbol sym;
  if (head.global) {
    sym.kind = cuda_symbol_kind::global_kernel;
  } else if (head.device) {
    sym.kind = cuda_symbol_kind::device_function;
  } else if (definition && launches) {
    sym.kind = cuda_symbol_kind::host_launcher;
  } else {
    return;
  }
  sym.name = name_text(head);
  std::string prefix;
  for (const scope& s : scopes_) {
    if (!s.linkage && !s.name.empty()) prefix += s.name + "::";
  }
  if (head.qual_first < head.name_first) {
    prefix += normalized_text(src_, toks_, head.qual_first, head.name_first - 1);
  }
  sym.qualified_name = prefix + sym.name;
  sym.full_range = {toks_[head.start].begin, last == npos ? src_.size() : toks_[last].end};
  sym.name_range = {toks_[head.name_first].begin, toks_[head.name_last].end};
  sym.signature = normalized_text(src_, toks_, head.spec_begin, head.params_close);
  sym.template_parameters = std::move(head.template_parameters);
  sym.launch_bounds = std::move(head.launch_bounds);
  sym.extern_c = head.extern_c;
  for (auto it = scopes_.rbegin(); !head.extern_c && it != scopes_.rend(); ++it) {
    if (it->linkage) {  // the innermost linkage block decides
      sym.extern_c = it->extern_c;
      break;
    }
  }
  sym.is_definition = definition;
  symbols_.push_back(std::move(sym));
}

std::vector<cuda_symbol> declaration_walker::run() {
  const std::size_t n = toks_.size();
  std::size_t i = 0;
  while (i < n) {
    const cuda_token& t = toks_[i];
    if (t.is(';')) {
      ++i;
      continue;
    }
    if (t.is('}')) {  // end of a scope; a stray one in broken code is ignored
      if (!scopes_.empty()) scopes_.pop_back();
      ++i;
      continue;
    }
    if (i + 1 < n && toks_[i + 1].is(':') &&
        (is_word(src_, t, "public") || is_word(src_, t, "private") ||
         is_word(src_, t, "protected"))) {
      i += 2;
      continue;
    }
    const std::size_t end = head_end(i);
    function_head head;
    if (locator_detail::read_function_head(src_, toks_, i, end, head)) {
      const std::size_t body = body_start(head, end);
      if (body < n && toks_[body].is('{')) {
        bool launches = false;
        const std::size_t close = body_end(body, launches);
        emit(head, close, true, launches);
        i = close == npos ? n : close + 1;
      } else if (body < n && toks_[body].is(';')) {
        emit(head, body, false, false);
        i = body + 1;
      } else {
        i = body > i ? body : i + 1;
      }
      continue;
    }
    if (end >= n) break;
    if (toks_[end].is('{') && !open_scope(i, end)) {
      const std::size_t close = match_close(toks_, end, n);
      i = close == npos ? n : close + 1;
    } else {
      i = toks_[end].is('}') ? end : end + 1;
    }
  }
  return std::move(symbols_);
}

}  // namespace

std::vector<cuda_symbol> locate_cuda_symbols(std::string_view source) {
  // Token offsets are 32-bit to keep the token array small (12 bytes a token).
  if (source.size() >= 0xffffffffU) {
    throw std::length_error("kernel locator: source of " + std::to_string(source.size()) +
                            " bytes is over the 4 GiB limit");
  }
  return declaration_walker(source).run();
}

}  // namespace kblaster::engine
