// symbol_at: the located symbol named at an offset, by its own name or at a launch or call
// site (see kernel_locator.h).
#include "engine/source/cuda_lexer.h"
#include "engine/source/kernel_locator.h"

namespace kblaster::engine {
namespace {

// How far symbol_at reads template arguments after a name before giving up (tokens).
constexpr int max_template_argument_tokens = 512;

// Where lexing may safely start for `offset`: a symbol's first token or the end of its range
// (both outside comments and literals), the nearest one before `offset`.
std::size_t safe_start(const std::vector<cuda_symbol>& symbols, std::string_view source,
                       std::size_t offset) {
  std::size_t start = 0;
  for (const cuda_symbol& s : symbols) {
    if (s.full_range.begin > offset) break;
    start = offset < s.full_range.end ? s.full_range.begin : s.full_range.end;
  }
  return start <= source.size() ? start : 0;
}

bool is_launch(const cuda_token& a, const cuda_token& b, const cuda_token& c) {
  return a.is('<') && b.is('<') && c.is('<') && b.begin == a.end && c.begin == b.end;
}

enum class site { none, call, launch };

// What follows the name: `(…)`, `<<<…>>>`, or either after template arguments `<T, 4>`.
site read_site(cuda_lexer& lexer) {
  cuda_token a, b, c;
  if (!lexer.next(a)) return site::none;
  if (a.is('(')) return site::call;
  if (!a.is('<') || !lexer.next(b)) return site::none;
  if (b.is('<') && b.begin == a.end) {
    return lexer.next(c) && is_launch(a, b, c) ? site::launch : site::none;
  }
  int depth = 1;
  cuda_token t = b;
  for (int budget = max_template_argument_tokens; budget > 0; --budget) {
    if (t.is('<')) ++depth;
    if (t.is('>') && --depth == 0) break;
    if (t.is(';') || t.is('{') || t.is('}')) return site::none;
    if (!lexer.next(t)) return site::none;
  }
  if (depth != 0 || !lexer.next(a)) return site::none;
  if (a.is('(')) return site::call;
  return lexer.next(b) && lexer.next(c) && is_launch(a, b, c) ? site::launch : site::none;
}

// Whether `qualified` ends with `qualifier::name`.
bool qualifier_matches(const std::string& qualified, std::string_view qualifier,
                       std::string_view name) {
  const std::string tail = std::string(qualifier) + "::" + std::string(name);
  if (qualified.size() < tail.size()) return false;
  if (qualified.compare(qualified.size() - tail.size(), tail.size(), tail) != 0) return false;
  return qualified.size() == tail.size() ||
         qualified.compare(qualified.size() - tail.size() - 2, 2, "::") == 0;
}

}  // namespace

const cuda_symbol* symbol_at(const std::vector<cuda_symbol>& symbols, std::string_view source,
                             std::size_t offset) {
  if (offset > source.size()) return nullptr;
  for (const cuda_symbol& s : symbols) {
    if (offset >= s.name_range.begin && offset < s.name_range.end) return &s;
  }
  if (source.size() >= 0xffffffffU) return nullptr;

  // Lex up to the token under the cursor, so that names in comments and strings don't count;
  // an identifier that ends at the cursor counts too (the cursor just after `softmax`).
  cuda_lexer lexer(source, safe_start(symbols, source, offset));
  cuda_token t, prev, prev2;
  bool found = false;
  int seen = 0;
  while (lexer.next(t)) {
    if (t.begin > offset) break;
    const bool word = t.kind == cuda_token_kind::identifier;
    if (offset < t.end || (word && offset == t.end)) {
      found = word;
      break;
    }
    prev2 = prev;
    prev = t;
    ++seen;
  }
  if (!found) return nullptr;
  const std::string_view name = t.text(source);
  std::string_view qualifier;
  if (seen >= 2 && prev.is_scope() && prev2.kind == cuda_token_kind::identifier) {
    qualifier = prev2.text(source);
  }
  const site where = read_site(lexer);
  if (where == site::none) return nullptr;

  // Best match: written qualifier agrees, a kernel at a launch, a definition over a prototype.
  const cuda_symbol* best = nullptr;
  int best_score = -1;
  for (const cuda_symbol& s : symbols) {
    if (s.name != name) continue;
    int score = s.is_definition ? 1 : 0;
    if (where == site::launch && s.kind == cuda_symbol_kind::global_kernel) score += 2;
    if (!qualifier.empty() && qualifier_matches(s.qualified_name, qualifier, name)) score += 4;
    if (score > best_score) {
      best = &s;
      best_score = score;
    }
  }
  return best;
}

const cuda_symbol* enclosing_kernel(const std::vector<cuda_symbol>& symbols, std::string_view source,
                                    std::size_t offset) {
  for (const cuda_symbol& s : symbols)
    if (s.kind == cuda_symbol_kind::global_kernel && s.is_definition && s.full_range.begin <= offset &&
        offset <= s.full_range.end)
      return &s;
  const cuda_symbol* named = symbol_at(symbols, source, offset);
  return named && named->kind == cuda_symbol_kind::global_kernel ? named : nullptr;
}

}  // namespace kblaster::engine
