// The mechanical tier's fast_math_intrinsics: expf/logf/sinf/cosf/powf become their hardware
// approximations and float divisions whose operand types are clear become __fdividef, in
// kernels and device functions; only when the task's tolerance leaves room for their error.
#include <map>
#include <set>

#include "engine/optimize/mechanical/detail.h"

namespace kblaster::engine::optimize::mech {
namespace {

enum class value_type { integer, single, other };

const std::map<std::string_view, std::string_view>& intrinsics() {
  static const std::map<std::string_view, std::string_view> m = {
      {"expf", "__expf"}, {"logf", "__logf"}, {"sinf", "__sinf"},
      {"cosf", "__cosf"}, {"powf", "__powf"}, {"exp10f", "__exp10f"}};
  return m;
}

bool float_function(std::string_view name) {
  static const std::set<std::string_view> names = {
      "expf",  "__expf", "logf",  "__logf", "sinf",   "__sinf",   "cosf",  "__cosf",
      "powf",  "__powf", "sqrtf", "rsqrtf", "fmaxf",  "fminf",    "fabsf", "tanhf",
      "exp2f", "log2f",  "__fdividef", "__frcp_rn", "__fsqrt_rn", "fmaf", "__fmaf_rn"};
  return names.count(name) > 0;
}

// Declared types of a function's names: float and integer scalars and pointers; a name
// declared twice with different types is `other`.
struct type_table {
  std::map<std::string, value_type> scalars, pointees;
};

void declare(std::map<std::string, value_type>& m, const std::string& name, value_type t) {
  const auto [it, inserted] = m.emplace(name, t);
  if (!inserted && it->second != t) it->second = value_type::other;
}

type_table types_of(const parsed_source& s, const function_info& f) {
  static const std::set<std::string_view> ints = {"int", "unsigned", "long", "short", "size_t",
                                                  "int64_t", "uint32_t", "int32_t", "uint64_t"};
  type_table t;
  for (std::size_t i = f.params_open + 1; i + 1 < f.body_close; ++i) {
    if (s.tokens[i].kind != cuda_token_kind::identifier) continue;
    const cuda_token& next = s.tokens[i + 1];
    if (!(next.is('=') || next.is(';') || next.is(',') || next.is(')') || next.is('['))) continue;
    std::size_t b = i;
    bool pointer = false;
    while (b > f.params_open && (s.tokens[b - 1].is('*') || s.word(b - 1, "const") ||
                                 s.word(b - 1, "__restrict__"))) {
      pointer = pointer || s.tokens[b - 1].is('*');
      --b;
    }
    // `a * b = …` is not a declaration: only a type word before the name (or its '*') is.
    static const std::set<std::string_view> others = {"double", "half", "__half", "__nv_bfloat16",
                                                      "auto", "bool", "char", "float2", "float4"};
    const std::string_view type = s.text(b - 1);
    value_type v;
    if (type == "float") v = value_type::single;
    else if (ints.count(type)) v = value_type::integer;
    else if (others.count(type)) v = value_type::other;
    else continue;
    const bool array = next.is('[');
    declare(pointer || array ? t.pointees : t.scalars, std::string(s.text(i)), v);
  }
  return t;
}

value_type combine(value_type a, value_type b) {
  if (a == value_type::other || b == value_type::other) return value_type::other;
  return a == value_type::single || b == value_type::single ? value_type::single : value_type::integer;
}

// The type of tokens [r.begin, r.end) as an arithmetic expression of known names; `other`
// when anything in it is not understood.
value_type type_of(const parsed_source& s, const type_table& t, token_range r) {
  std::optional<value_type> result;
  for (std::size_t i = r.begin; i < r.end; ++i) {
    const cuda_token& tok = s.tokens[i];
    value_type v;
    if (tok.kind == cuda_token_kind::number) {
      const std::string_view x = s.text(i);
      const bool hex = x.size() > 1 && (x[1] == 'x' || x[1] == 'X');
      const bool floating = !hex && x.find_first_of(".eE") != std::string_view::npos;
      if (!floating) v = value_type::integer;
      else v = (x.back() == 'f' || x.back() == 'F') ? value_type::single : value_type::other;
    } else if (tok.kind == cuda_token_kind::identifier) {
      const std::string name(s.text(i));
      if (i + 1 < r.end && s.tokens[i + 1].is('(')) {
        if (!float_function(name)) return value_type::other;
        v = value_type::single;
        i = s.match(i + 1);
        if (i == none || i >= r.end) return value_type::other;
      } else if (i + 1 < r.end && s.tokens[i + 1].is('[')) {
        const auto it = t.pointees.find(name);
        if (it == t.pointees.end()) return value_type::other;
        v = it->second;
        i = s.match(i + 1);
        if (i == none || i >= r.end) return value_type::other;
      } else {
        const auto it = t.scalars.find(name);
        if (it == t.scalars.end()) return value_type::other;
        v = it->second;
      }
    } else if (tok.is('+') || tok.is('-') || tok.is('*') || tok.is('(') || tok.is(')')) {
      continue;
    } else {
      return value_type::other;
    }
    result = result ? combine(*result, v) : v;
  }
  return result.value_or(value_type::other);
}

bool operand_end(const cuda_token& t) {
  return t.kind == cuda_token_kind::identifier || t.kind == cuda_token_kind::number || t.is(')') || t.is(']');
}

// Index of the bracket opening the one closed at `close`, scanning backwards; none if absent.
std::size_t match_back(const parsed_source& s, std::size_t close, std::size_t floor) {
  int depth = 0;
  for (std::size_t i = close + 1; i-- > floor;) {
    const cuda_token& t = s.tokens[i];
    if (t.is(')') || t.is(']') || t.is('}')) ++depth;
    else if ((t.is('(') || t.is('[') || t.is('{')) && --depth == 0) return i;
  }
  return none;
}

// First token of the operand ending at `last` (a name, literal, call, index or parentheses).
std::size_t operand_begin(const parsed_source& s, std::size_t last, std::size_t floor) {
  std::size_t i = last;
  while (s.tokens[i].is(')') || s.tokens[i].is(']')) {
    const std::size_t open = match_back(s, i, floor);
    if (open == none || open <= floor) return none;
    if (s.tokens[open - 1].kind != cuda_token_kind::identifier && !s.tokens[open - 1].is(']')) return open;
    i = open - 1;
    if (s.tokens[i].kind == cuda_token_kind::identifier) break;
  }
  if (s.tokens[i].kind != cuda_token_kind::identifier && s.tokens[i].kind != cuda_token_kind::number) return none;
  return i;
}

// One past the operand starting at `first`.
std::size_t operand_end_at(const parsed_source& s, std::size_t first, std::size_t limit) {
  std::size_t i = first;
  if (s.tokens[i].is('(')) {
    const std::size_t close = s.match(i);
    return close == none || close >= limit ? none : close + 1;
  }
  if (s.tokens[i].kind == cuda_token_kind::number) return i + 1;
  if (s.tokens[i].kind != cuda_token_kind::identifier) return none;
  ++i;
  while (i < limit && (s.tokens[i].is('(') || s.tokens[i].is('['))) {
    const std::size_t close = s.match(i);
    if (close == none || close >= limit) return none;
    i = close + 1;
  }
  return i;
}

}  // namespace

mechanical_result fast_math_variants(const parsed_source& s, const mechanical_context& c) {
  mechanical_result result;
  const bool room = (c.rtol && *c.rtol >= 1e-3) || (c.atol && *c.atol >= 1e-3);
  if (!room) {
    auto show = [](const std::optional<double>& v) { return v ? std::to_string(*v) : std::string("default"); };
    result.not_applicable = "the task's tolerance (rtol " + show(c.rtol) + ", atol " + show(c.atol) +
                            ") leaves no room for fast-math error; it needs rtol or atol >= 1e-3";
    return result;
  }
  std::vector<edit> calls, divisions;
  for (const function_info& f : s.functions) {
    if (!f.global && !f.device) continue;
    const type_table types = types_of(s, f);
    for (std::size_t i = f.body_open + 1; i + 1 < f.body_close; ++i) {
      const cuda_token& t = s.tokens[i];
      if (t.kind == cuda_token_kind::identifier) {
        const auto it = intrinsics().find(s.text(i));
        const cuda_token& before = s.tokens[i - 1];
        if (it != intrinsics().end() && s.tokens[i + 1].is('(') && !before.is('.') && !before.is_arrow() &&
            !before.is_scope())
          calls.push_back({t.begin, t.end, std::string(it->second)});
        continue;
      }
      if (!t.is('/') || s.tokens[i + 1].is('=') || !operand_end(s.tokens[i - 1])) continue;
      const std::size_t left = operand_begin(s, i - 1, f.body_open);
      const std::size_t right_end = operand_end_at(s, i + 1, f.body_close);
      if (left == none || right_end == none) continue;
      // The operator before the left operand must bind more loosely than '/', and the one
      // after the right operand must not be a member access.
      const cuda_token& before = s.tokens[left - 1];
      const bool loose = before.is('=') || before.is('(') || before.is(',') || before.is('?') ||
                         before.is(':') || before.is(';') || before.is('{') || before.is('}') ||
                         s.word(left - 1, "return") ||
                         ((before.is('+') || before.is('-')) && operand_end(s.tokens[left - 2]));
      const cuda_token& after = s.tokens[right_end];
      if (!loose || after.is('.') || after.is_arrow()) continue;
      const value_type lt = type_of(s, types, {left, i});
      const value_type rt = type_of(s, types, {i + 1, right_end});
      if (combine(lt, rt) != value_type::single) continue;
      divisions.push_back({s.tokens[left].begin, s.tokens[left].begin, "__fdividef("});
      divisions.push_back({s.tokens[i - 1].end, s.tokens[i + 1].begin, ", "});
      divisions.push_back({s.tokens[right_end - 1].end, s.tokens[right_end - 1].end, ")"});
      i = right_end - 1;
    }
  }
  if (calls.empty() && divisions.empty()) {
    result.not_applicable =
        "no expf/logf/sinf/cosf/powf call and no float division with operands of clear type in any kernel";
    return result;
  }
  std::vector<edit> all = calls;
  all.insert(all.end(), divisions.begin(), divisions.end());
  const std::pair<const char*, const std::vector<edit>*> plans[] = {
      {"intrinsics and __fdividef", &all}, {"intrinsics only", &calls}, {"__fdividef only", &divisions}};
  for (const auto& [label, edits] : plans) {
    if (edits->empty()) continue;
    mechanical_variant v;
    v.label = label;
    v.source = apply_edits(s.source, *edits);
    v.parameters = {{"intrinsics", edits != &divisions}, {"fdividef", edits != &calls}};
    result.variants.push_back(std::move(v));
  }
  // Identical plans (nothing but calls, or nothing but divisions) are dropped by the caller.
  return result;
}

}  // namespace kblaster::engine::optimize::mech
