// The mechanical tier's read_only_cache: `__restrict__` on kernels' pointer parameters, and
// `const` on the pointee of those the kernel only reads through `p[i]`, so that the compiler
// may route their loads through the read-only (non-coherent) path.
#include "engine/optimize/mechanical/detail.h"

namespace kblaster::engine::optimize::mech {
namespace {

struct pointer_param {
  std::size_t first = 0;     // first token of the declaration
  std::size_t name = 0;      // its name token
  bool is_const = false;     // pointee already const
  bool restricted = false;   // already __restrict__
  bool read_only = false;    // const, or only ever read as p[i] in the body
  bool single = false;       // exactly one '*'
};

// True when every use of `name` in the body is a read `name[…]`.
bool only_indexed_reads(const parsed_source& s, const function_info& k, std::string_view name) {
  for (std::size_t i = k.body_open + 1; i < k.body_close; ++i) {
    if (!s.word(i, name)) continue;
    const cuda_token& before = s.tokens[i - 1];
    if (before.is('.') || before.is_arrow() || before.is_scope()) continue;  // another thing's member
    if (before.is('&') || ((before.is('+') || before.is('-')) && s.tokens[i - 2].is(before.ch))) return false;
    if (!s.tokens[i + 1].is('[')) return false;  // passed on, aliased or dereferenced
    const std::size_t close = s.match(i + 1);
    if (close == none || close + 1 >= k.body_close) return false;
    const cuda_token& a = s.tokens[close + 1];
    const cuda_token& b = s.tokens[close + 2];
    const bool adjacent = a.end == b.begin;
    if (a.is('=') && !b.is('=')) return false;
    if (adjacent && b.is('=') && !a.is('=') && !a.is('!') && !a.is('<') && !a.is('>')) return false;
    if (adjacent && (a.is('+') || a.is('-')) && b.is(a.ch)) return false;
  }
  return true;
}

std::vector<pointer_param> pointer_params(const parsed_source& s, const function_info& k) {
  std::vector<pointer_param> out;
  std::size_t first = k.params_open + 1;
  int depth = 0;
  for (std::size_t i = first; i <= k.params_close; ++i) {
    const cuda_token& t = s.tokens[i];
    if (t.is('(') || t.is('[') || t.is('{') || t.is('<')) ++depth;
    else if ((t.is(')') || t.is(']') || t.is('}') || t.is('>')) && i != k.params_close) --depth;
    if (!(i == k.params_close || (depth == 0 && t.is(',')))) continue;
    const std::size_t last = i;  // one past the declaration
    pointer_param p;
    p.first = first;
    int stars = 0;
    bool skip = last <= first;
    for (std::size_t j = first; j < last && !skip; ++j) {
      const cuda_token& u = s.tokens[j];
      if (u.is('*')) ++stars;
      if (u.is('=') || u.is('&') || u.is('[') || u.is('(') || s.word(j, "volatile")) skip = true;
      if (s.word(j, "__restrict__") || s.word(j, "__restrict")) p.restricted = true;
      if (s.word(j, "const") && stars == 0) p.is_const = true;
    }
    first = i + 1;
    if (skip || stars == 0 || s.tokens[last - 1].kind != cuda_token_kind::identifier) continue;
    p.name = last - 1;
    p.single = stars == 1;
    p.read_only = p.is_const || (p.single && only_indexed_reads(s, k, s.text(p.name)));
    out.push_back(p);
  }
  return out;
}

}  // namespace

mechanical_result read_only_variants(const parsed_source& s, const mechanical_context& c) {
  std::vector<std::string> reasons;
  std::vector<edit> all, read_only;
  for (const function_info& k : s.functions) {
    if (!k.global) continue;
    if (s.has_declaration(k.name)) {
      reasons.push_back("kernel " + k.name + " also has a separate declaration, which would no longer match");
      continue;
    }
    const auto params = pointer_params(s, k);
    if (params.empty()) {
      reasons.push_back("kernel " + k.name + " has no pointer parameters");
      continue;
    }
    bool changed = false;
    for (const pointer_param& p : params) {
      std::vector<edit> mine;
      if (p.read_only && !p.is_const)
        mine.push_back({s.tokens[p.first].begin, s.tokens[p.first].begin, "const "});
      if (!p.restricted)
        mine.push_back({s.tokens[p.name].begin, s.tokens[p.name].begin, "__restrict__ "});
      changed = changed || !mine.empty();
      all.insert(all.end(), mine.begin(), mine.end());
      if (p.read_only) read_only.insert(read_only.end(), mine.begin(), mine.end());
    }
    if (!changed)
      reasons.push_back("every pointer parameter of kernel " + k.name + " is already __restrict__ and const where read-only");
  }
  mechanical_result result;
  if (!all.empty()) {
    mechanical_variant v;
    v.label = "__restrict__ on all pointers";
    v.source = apply_edits(s.source, all);
    v.parameters = {{"restrict", "all"}};
    result.variants.push_back(std::move(v));
  }
  if (!read_only.empty() && static_cast<int>(result.variants.size()) < c.max_variants) {
    // A narrower promise, about the inputs only: the candidate to keep if marking the outputs
    // too turns out not to pay or not to hold.
    mechanical_variant v;
    v.label = "__restrict__ on read-only pointers";
    v.source = apply_edits(s.source, read_only);
    v.parameters = {{"restrict", "read_only"}};
    result.variants.push_back(std::move(v));
  }
  if (result.variants.empty()) result.not_applicable = join_reasons(reasons);
  return result;
}

}  // namespace kblaster::engine::optimize::mech
