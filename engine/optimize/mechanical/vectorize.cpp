// The mechanical tier's vectorized_memory_access: an element-wise float kernel, in either the
// one-element-per-thread form `i = <global index>; if (i < n) BODY` or the grid-stride form
// `for (T i = <global index>; i < n; i += <grid stride>) BODY`, where every pointer the body
// uses is a float pointer parameter accessed as `p[i]`, gets a main part in 16-byte (float4) or
// 8-byte (float2) loads and stores and a scalar tail, as PyTorch's element-wise kernels do.
//
// Correctness:
//   - The vector part runs only when every pointer the body uses is aligned to the vector
//     width (checked at run time); otherwise the whole range takes the original scalar path.
//   - The vector part covers the first n / W * W elements; the tail (n % W elements) runs the
//     original body, element by element. In the one-element-per-thread form thread t < n / W
//     does vector t, and threads n / W ... n / W + n % W - 1 do the tail, so a launch sized for
//     n threads (or more) still covers everything.
//   - Inside a vector, the body runs once per lane over registers: `p[i]` becomes the lane of
//     a register array loaded with one vector load (pointers the body reads) and stored with one
//     vector store (pointers it writes); any other use of `i` becomes the lane's element index.
//     A pointer written only under a condition (the body has control flow) is loaded first, so
//     lanes the body does not write keep their values.
#include <algorithm>
#include <set>

#include "engine/optimize/mechanical/detail.h"

namespace kblaster::engine::optimize::mech {
namespace {

struct pointer_use {
  std::string name;
  bool is_const = false;  // `const float*`
  bool read = false;
  bool written = false;
};

// The element-wise loop of one kernel, as found.
struct elementwise {
  bool grid_stride = false;
  std::string type;         // the index's declared type
  std::string index;        // its name
  token_range init;         // <global index>
  token_range bound;        // n
  token_range stride;       // the grid-stride form's stride
  token_range body;         // the statement (a block or one statement) run per element
  token_range replaced;     // tokens the rewrite replaces
};

// `[const] T name = INIT ;` starting at `d0` (up to `d1`): the '=' token, or none.
std::size_t declaration_eq(const parsed_source& s, std::size_t d0, std::size_t d1) {
  std::size_t eq = d0;
  while (eq < d1 && (s.tokens[eq].kind == cuda_token_kind::identifier || s.tokens[eq].is_scope())) ++eq;
  if (eq >= d1 || !s.tokens[eq].is('=') || s.tokens[eq + 1].is('=') || eq < d0 + 2) return none;
  return eq;
}

std::string type_of(const parsed_source& s, std::size_t from, std::size_t name_tok) {
  std::string type;
  for (std::size_t i = from; i < name_tok; ++i) {
    if (s.word(i, "const") || s.word(i, "constexpr")) continue;
    if (!type.empty() && !s.tokens[i].is_scope() && !s.tokens[i - 1].is_scope()) type += ' ';
    type += s.text(i);
  }
  return type;
}

// Finds the element-wise loop of kernel `k`; empty `why` on success.
std::string find_elementwise(const parsed_source& s, const function_info& k, elementwise& e) {
  const std::size_t limit = k.body_close;
  const std::size_t d0 = k.body_open + 1;
  const std::string no_pattern = "kernel " + k.name + " is not element-wise (`i = <global index>; if (i < n) …` or a "
                                 "grid-stride loop over i)";
  if (d0 >= limit) return no_pattern;
  if (s.word(d0, "for") && s.tokens[d0 + 1].is('(')) {
    const std::size_t close = s.match(d0 + 1);
    if (close == none || close >= limit || s.statement_end(d0, limit) != limit) return no_pattern;
    std::vector<std::size_t> semis;
    for (std::size_t j = d0 + 2; j < close; ++j)
      if (s.tokens[j].is(';')) semis.push_back(j);
    if (semis.size() != 2) return no_pattern;
    const std::size_t eq = declaration_eq(s, d0 + 2, semis[0]);
    if (eq == none || !is_global_index(s, {eq + 1, semis[0]})) return no_pattern;
    e.index = std::string(s.text(eq - 1));
    e.type = type_of(s, d0 + 2, eq - 1);
    const std::size_t inc = semis[1] + 1;
    if (!(inc + 3 < close && s.word(inc, e.index) && s.tokens[inc + 1].is('+') && s.tokens[inc + 2].is('=') &&
          is_grid_stride(s, {inc + 3, close})))
      return no_pattern;
    e.grid_stride = true;
    e.init = {eq + 1, semis[0]};
    e.bound = bound_of(s, {semis[0] + 1, semis[1]}, e.index, true);
    e.stride = {inc + 3, close};
    e.body = {close + 1, limit};
    e.replaced = {d0, limit};
  } else {
    const std::size_t d1 = s.statement_end(d0, limit);
    const std::size_t eq = declaration_eq(s, d0, d1);
    if (eq == none || !s.tokens[d1 - 1].is(';') || !is_global_index(s, {eq + 1, d1 - 1})) return no_pattern;
    e.index = std::string(s.text(eq - 1));
    e.type = type_of(s, d0, eq - 1);
    if (!s.word(d1, "if") || d1 + 1 >= limit || !s.tokens[d1 + 1].is('(')) return no_pattern;
    const std::size_t cond_close = s.match(d1 + 1);
    if (cond_close == none || cond_close >= limit) return no_pattern;
    const std::size_t then_end = s.statement_end(cond_close + 1, limit);
    if (then_end != limit) return "kernel " + k.name + " has code after (or an else to) its bounds check";
    e.bound = bound_of(s, {d1 + 2, cond_close}, e.index, true);
    e.init = {eq + 1, d1 - 1};
    e.body = {cond_close + 1, limit};
    e.replaced = {d1, limit};
  }
  if (e.type.empty()) return no_pattern;
  if (e.bound.begin == e.bound.end) return no_pattern;
  if (e.body.begin == e.body.end) return "kernel " + k.name + " has no per-element code";
  return {};
}

// The float pointer parameters of `k`: name -> const-ness; other pointers map to nothing.
struct param_info {
  bool is_pointer = false;
  bool is_float = false;
  bool is_const = false;
};

std::vector<std::pair<std::string, param_info>> params_of(const parsed_source& s, const function_info& k) {
  std::vector<std::pair<std::string, param_info>> out;
  std::size_t first = k.params_open + 1;
  for (std::size_t i = first; i <= k.params_close; ++i) {
    if (i != k.params_close && !s.tokens[i].is(',')) {
      if (s.tokens[i].is('(') || s.tokens[i].is('<') || s.tokens[i].is('[')) {
        const std::size_t m = s.tokens[i].is('<') ? none : s.match(i);
        if (m != none) i = m;
      }
      continue;
    }
    if (i > first && s.tokens[i - 1].kind == cuda_token_kind::identifier) {
      param_info p;
      int stars = 0;
      bool other = false;
      for (std::size_t j = first; j + 1 < i; ++j) {
        if (s.tokens[j].is('*')) ++stars;
        else if (s.word(j, "float")) p.is_float = true;
        else if (s.word(j, "const") && stars == 0) p.is_const = true;
        else if (s.tokens[j].kind == cuda_token_kind::identifier && !s.word(j, "const") && !s.word(j, "__restrict__") &&
                 !s.word(j, "__restrict"))
          other = true;
      }
      p.is_pointer = stars > 0;
      p.is_float = p.is_float && !other && stars == 1;
      out.emplace_back(std::string(s.text(i - 1)), p);
    }
    first = i + 1;
  }
  return out;
}

// The pointers the body uses, each only as `p[index]`; empty `why` on success.
std::string pointer_uses(const parsed_source& s, const function_info& k, const elementwise& e,
                         std::vector<pointer_use>& uses) {
  const auto params = params_of(s, k);
  for (std::size_t i = e.body.begin; i < e.body.end; ++i) {
    if (s.tokens[i].kind != cuda_token_kind::identifier) continue;
    const std::string_view w = s.text(i);
    if (w.starts_with("kb_")) return "kernel " + k.name + " already uses names starting with kb_";
    if (w == "break" || w == "continue" || w == "asm") return "its per-element code uses `" + std::string(w) + "`";
    const auto p = std::find_if(params.begin(), params.end(), [&](const auto& x) { return x.first == w; });
    if (p == params.end() || !p->second.is_pointer) continue;
    if (i > e.body.begin && (s.tokens[i - 1].is('.') || s.tokens[i - 1].is_arrow())) continue;
    if (!p->second.is_float) return "pointer " + std::string(w) + " is not a float*";
    if (!(i + 3 < e.body.end && s.tokens[i + 1].is('[') && s.word(i + 2, e.index) && s.tokens[i + 3].is(']')))
      return "pointer " + std::string(w) + " is used other than as " + std::string(w) + "[" + e.index + "]";
    auto u = std::find_if(uses.begin(), uses.end(), [&](const pointer_use& x) { return x.name == w; });
    if (u == uses.end()) u = uses.insert(uses.end(), pointer_use{std::string(w), p->second.is_const, false, false});
    const bool assigned = is_assignment_after(s, i + 3, e.body.end);
    const bool plain = assigned && s.tokens[i + 4].is('=');  // `p[i] = …` reads nothing of p[i]
    if (assigned) u->written = true;
    if (!plain) u->read = true;
    if (i >= e.body.begin + 2 && (s.tokens[i - 1].is('+') || s.tokens[i - 1].is('-')) && s.tokens[i - 2].is(s.tokens[i - 1].ch))
      u->read = u->written = true;  // ++p[i]
    i += 3;
  }
  if (uses.empty()) return "kernel " + k.name + "'s per-element code reads or writes no float pointer parameter";
  for (const auto& u : uses)
    if (u.written && u.is_const) return "pointer " + u.name + " is const but written";
  return {};
}

// The body's text with `p[index]` and `index` rewritten; bytes between tokens kept.
std::string rewrite(const parsed_source& s, const elementwise& e, const std::vector<pointer_use>& uses,
                    const std::string& lane_array_suffix, const std::string& index_text) {
  std::string out;
  std::size_t at = s.tokens[e.body.begin].begin;
  for (std::size_t i = e.body.begin; i < e.body.end; ++i) {
    const cuda_token& t = s.tokens[i];
    out.append(s.source, at, t.begin - at);
    const std::string_view w = s.text(i);
    const bool pointer = t.kind == cuda_token_kind::identifier &&
                         std::any_of(uses.begin(), uses.end(), [&](const pointer_use& u) { return u.name == w; }) &&
                         i + 3 < e.body.end && s.tokens[i + 1].is('[') && s.word(i + 2, e.index) && s.tokens[i + 3].is(']') &&
                         !(i > e.body.begin && (s.tokens[i - 1].is('.') || s.tokens[i - 1].is_arrow()));
    if (pointer && !lane_array_suffix.empty()) {
      out += "kb_" + std::string(w) + lane_array_suffix;
      at = s.tokens[i + 3].end;
      i += 3;
      continue;
    }
    if (t.kind == cuda_token_kind::identifier && w == e.index &&
        !(i > e.body.begin && (s.tokens[i - 1].is('.') || s.tokens[i - 1].is_arrow())))
      out += index_text;
    else
      out.append(s.source, t.begin, t.end - t.begin);
    at = t.end;
  }
  return out;
}

bool has_control_flow(const parsed_source& s, token_range r) {
  for (std::size_t i = r.begin; i < r.end; ++i)
    if (s.word(i, "if") || s.word(i, "for") || s.word(i, "while") || s.word(i, "switch") || s.word(i, "do") ||
        s.tokens[i].is('?'))
      return true;
  return false;
}

// The replacement text for one kernel at vector width `width` (4 or 2).
std::string vectorized(const parsed_source& s, const elementwise& e, const std::vector<pointer_use>& uses, int width,
                       const std::string& indent) {
  const std::string w = std::to_string(width);
  const std::string vec = "float" + w;
  const std::string align_mask = width == 4 ? "15ull" : "7ull";
  static const char* lanes[] = {"x", "y", "z", "w"};
  const bool conditional = has_control_flow(s, e.body);
  const std::string i1 = indent + "  ", i2 = indent + "    ", i3 = indent + "      ";
  std::string aligned;
  for (const auto& u : uses)
    aligned += (aligned.empty() ? "" : " | ") + std::string("reinterpret_cast<unsigned long long>(") + u.name + ")";
  std::string o = "{\n";
  o += i1 + "// kblaster mechanical tier: " + vec + " loads and stores where every pointer is " +
       std::to_string(width * 4) + "-byte aligned, then a scalar tail\n";
  o += i1 + "const long long kb_n = " + s.raw(e.bound) + ";\n";
  o += i1 + "const bool kb_aligned = ((" + aligned + ") & " + align_mask + ") == 0;\n";
  o += i1 + "const long long kb_nv = kb_aligned ? kb_n / " + w + " : 0;\n";
  // One vector: lanes loaded, the body once per lane over registers, lanes stored.
  auto vector_block = [&](const std::string& in) {
    std::string b;
    for (const auto& u : uses) {
      b += in + "float kb_" + u.name + "[" + w + "];\n";
      if (u.read || conditional) {
        b += in + "{\n" + in + "  const " + vec + " kb_t = reinterpret_cast<const " + vec + "*>(" + u.name + ")[kb_v];\n";
        for (int l = 0; l < width; ++l)
          b += in + "  kb_" + u.name + "[" + std::to_string(l) + "] = kb_t." + lanes[l] + ";\n";
        b += in + "}\n";
      }
    }
    b += "#pragma unroll\n";
    b += in + "for (int kb_l = 0; kb_l < " + w + "; ++kb_l) {\n";
    b += in + "  " + rewrite(s, e, uses, "[kb_l]", "(kb_v * " + w + " + kb_l)") + "\n";
    b += in + "}\n";
    for (const auto& u : uses) {
      if (!u.written) continue;
      b += in + "reinterpret_cast<" + vec + "*>(" + u.name + ")[kb_v] = make_" + vec + "(";
      for (int l = 0; l < width; ++l) b += (l ? ", kb_" : "kb_") + u.name + "[" + std::to_string(l) + "]";
      b += ");\n";
    }
    return b;
  };
  if (e.grid_stride) {
    o += i1 + "for (long long kb_v = " + s.raw(e.init) + "; kb_v < kb_nv; kb_v += " + s.raw(e.stride) + ") {\n";
    o += vector_block(i2);
    o += i1 + "}\n";
    const std::string start = e.type == "auto" ? "kb_nv * " + w + " + (" + s.raw(e.init) + ")"
                                               : "static_cast<" + e.type + ">(kb_nv * " + w + " + (" + s.raw(e.init) + "))";
    o += i1 + "for (" + e.type + " " + e.index + " = " + start + "; " + e.index + " < kb_n; " + e.index +
         " += " + s.raw(e.stride) + ")\n";
    o += i2 + rewrite(s, e, uses, "", e.index) + "\n";
  } else {
    o += i1 + "if (static_cast<long long>(" + e.index + ") < kb_nv) {\n";
    o += i2 + "const long long kb_v = " + e.index + ";\n";
    o += vector_block(i2);
    o += i1 + "} else {\n";
    o += i2 + "const long long kb_j = kb_nv * " + w + " + (static_cast<long long>(" + e.index + ") - kb_nv);\n";
    o += i2 + "if (kb_j < kb_n) {\n";
    o += i3 + rewrite(s, e, uses, "", "kb_j") + "\n";
    o += i2 + "}\n";
    o += i1 + "}\n";
  }
  o += indent + "}";
  return o;
}

}  // namespace

mechanical_result vectorize_variants(const parsed_source& s, const mechanical_context& c) {
  std::vector<std::string> reasons;
  struct plan {
    const function_info* k;
    elementwise e;
    std::vector<pointer_use> uses;
  };
  std::vector<plan> plans;
  for (const function_info& k : s.functions) {
    if (!k.global) continue;
    if (k.templated) {
      reasons.push_back("kernel " + k.name + " is a template");
      continue;
    }
    plan p{&k, {}, {}};
    if (std::string why = find_elementwise(s, k, p.e); !why.empty()) {
      reasons.push_back(why);
      continue;
    }
    if (std::string hazard = per_element_hazard(s, p.e.body, p.e.index); !hazard.empty()) {
      reasons.push_back("kernel " + k.name + " cannot process several elements per thread: " + hazard);
      continue;
    }
    if (std::string why = pointer_uses(s, k, p.e, p.uses); !why.empty()) {
      reasons.push_back("kernel " + k.name + ": " + why);
      continue;
    }
    plans.push_back(std::move(p));
  }
  mechanical_result result;
  for (const int width : {4, 2}) {
    if (plans.empty() || static_cast<int>(result.variants.size()) >= c.max_variants) break;
    std::vector<edit> edits;
    for (const auto& p : plans) {
      const std::size_t begin = s.tokens[p.e.replaced.begin].begin;
      const std::size_t end = s.tokens[p.e.replaced.end - 1].end;
      edits.push_back({begin, end, vectorized(s, p.e, p.uses, width, s.indent_at(begin))});
    }
    mechanical_variant v;
    v.label = "float" + std::to_string(width) + " loads/stores";
    v.source = apply_edits(s.source, edits);
    v.parameters = {{"vector_width", width}};
    result.variants.push_back(std::move(v));
  }
  if (result.variants.empty()) result.not_applicable = join_reasons(reasons);
  return result;
}

}  // namespace kblaster::engine::optimize::mech
