// The mechanical tier's loop_unrolling: `#pragma unroll N` before every innermost `for` loop of
// the kernels and device functions that carry no unroll pragma yet.
#include "engine/optimize/mechanical/detail.h"

namespace kblaster::engine::optimize::mech {

mechanical_result unroll_variants(const parsed_source& s, const mechanical_context& c) {
  struct loop {
    std::size_t for_tok;
  };
  std::vector<loop> loops;
  std::vector<std::string> reasons;
  for (const function_info& f : s.functions) {
    if (!f.global && !f.device) continue;
    const std::string body = s.raw({f.body_open, f.body_close + 1});
    if (body.find("#pragma unroll") != std::string::npos || body.find("_Pragma") != std::string::npos) {
      reasons.push_back((f.global ? "kernel " : "function ") + f.name + " already has unroll pragmas");
      continue;
    }
    bool any = false;
    for (std::size_t i = f.body_open + 1; i + 1 < f.body_close; ++i) {
      if (!s.word(i, "for") || !s.tokens[i + 1].is('(')) continue;
      const std::size_t close = s.match(i + 1);
      if (close == none || close >= f.body_close) continue;
      const std::size_t end = s.statement_end(close + 1, f.body_close);
      bool inner = true;
      for (std::size_t j = close + 1; j < end && inner; ++j)
        inner = !(s.word(j, "for") || s.word(j, "while") || s.word(j, "do"));
      if (!inner) continue;
      any = true;
      // A pragma needs a statement position of its own: after `if (…)`, `else` or a label we
      // would have to add braces, so such loops are left alone.
      const cuda_token& before = s.tokens[i - 1];
      if (!(before.is(';') || before.is('{') || before.is('}'))) {
        reasons.push_back("a loop in " + f.name + " is the body of another statement");
        continue;
      }
      loops.push_back({i});
    }
    if (!any) reasons.push_back((f.global ? "kernel " : "function ") + f.name + " has no for loop");
  }
  mechanical_result result;
  if (loops.empty()) {
    result.not_applicable = join_reasons(reasons);
    return result;
  }
  // 4 first: it usually exposes enough independent loads without bloating registers.
  for (const int factor : {4, 8, 2}) {
    if (static_cast<int>(result.variants.size()) >= c.max_variants) break;
    const std::string pragma = "#pragma unroll " + std::to_string(factor) + "\n";
    std::vector<edit> edits;
    for (const loop& l : loops) {
      const std::size_t at = s.tokens[l.for_tok].begin;
      const std::string indent = s.indent_at(at);
      if (s.starts_line(l.for_tok)) {
        edits.push_back({at - indent.size(), at - indent.size(), indent + pragma});
      } else {
        edits.push_back({at, at, "\n" + pragma + indent});
      }
    }
    mechanical_variant v;
    v.label = "unroll " + std::to_string(factor);
    v.source = apply_edits(s.source, std::move(edits));
    v.parameters = {{"unroll", factor}, {"loops", loops.size()}};
    result.variants.push_back(std::move(v));
  }
  return result;
}

}  // namespace kblaster::engine::optimize::mech
