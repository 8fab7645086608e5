// The mechanical tier's grid techniques: grid_stride_loop (the one-element-per-thread forms
// `i = blockIdx.x*blockDim.x+threadIdx.x; if (i < n) {...}` and `if (i >= n) return; ...`
// become a grid-stride loop) and grid_size_tuning (on a grid-stride kernel), both capping the
// launch's grid at a multiple of the SM count, queried once at run time by an injected helper.
#include <algorithm>
#include <set>

#include "engine/optimize/mechanical/detail.h"

namespace kblaster::engine::optimize::mech {
namespace {

constexpr std::string_view cap_helper = "kblaster_grid_cap";

// The helper the capped launches call; `static` so that it never clashes across objects.
constexpr std::string_view cap_helper_source =
    "// kblaster mechanical tier: caps a 1-D grid at blocks_per_sm blocks per SM; the SM count is\n"
    "// queried once (a failed query clears its error and leaves the grid uncapped).\n"
    "static unsigned long long kblaster_grid_cap(unsigned long long grid, unsigned blocks_per_sm) {\n"
    "  static const int sms = [] {\n"
    "    int device = 0, count = 0;\n"
    "    if (cudaGetDevice(&device) != cudaSuccess ||\n"
    "        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {\n"
    "      (void)cudaGetLastError();\n"
    "      count = 0;\n"
    "    }\n"
    "    return count;\n"
    "  }();\n"
    "  if (sms <= 0) return grid;\n"
    "  const unsigned long long cap = static_cast<unsigned long long>(sms) * blocks_per_sm;\n"
    "  return grid < cap ? grid : cap;\n"
    "}\n\n";

}  // namespace

bool is_assignment_after(const parsed_source& s, std::size_t i, std::size_t limit) {
  // name = …, name op= …, name++ / name-- (the lexer splits operators into characters)
  if (i + 1 >= limit) return false;
  const cuda_token& a = s.tokens[i + 1];
  const bool next_eq = i + 2 < limit && s.tokens[i + 2].is('=') && s.tokens[i + 2].begin == a.end;
  if (a.is('=')) return !next_eq;
  if ((a.is('+') || a.is('-')) && i + 2 < limit && s.tokens[i + 2].is(a.ch) &&
      s.tokens[i + 2].begin == a.end)
    return true;
  return next_eq && (a.is('+') || a.is('-') || a.is('*') || a.is('/') || a.is('%') || a.is('&') ||
                     a.is('|') || a.is('^'));
}

// Why the per-element code `r` must not run several times per thread; "" when it may.
std::string per_element_hazard(const parsed_source& s, token_range r, std::string_view index) {
  for (std::size_t i = r.begin; i < r.end; ++i) {
    if (s.tokens[i].kind != cuda_token_kind::identifier) continue;
    const std::string_view w = s.text(i);
    if (w == "__syncthreads" || w == "__shared__" || w == "return" || w == "goto" ||
        w == "threadIdx" || w == "blockIdx" || w.starts_with("__shfl") || w.starts_with("__syncwarp") ||
        w.starts_with("__ballot") || w.starts_with("__activemask") || w == "__any_sync" ||
        w == "__all_sync" || w == "this_thread_block" || w == "grid_group")
      return "its per-element code uses `" + std::string(w) + "`";
    if (w == index && (is_assignment_after(s, i, r.end) ||
                       (i >= r.begin + 2 && (s.tokens[i - 1].is('+') || s.tokens[i - 1].is('-')) &&
                        s.tokens[i - 2].is(s.tokens[i - 1].ch))))
      return "its per-element code modifies the index `" + std::string(index) + "`";
  }
  return {};
}

// The bound of `name < bound` (or `bound > name`) for less, `name >= bound` (or `bound <=
// name`) otherwise; an empty range when the condition is not of that form.
token_range bound_of(const parsed_source& s, token_range c, std::string_view name, bool less) {
  auto simple = [&](token_range r) {
    if (r.begin >= r.end) return false;
    for (std::size_t i = r.begin; i < r.end; ++i) {
      const cuda_token& t = s.tokens[i];
      if (t.kind == cuda_token_kind::punct &&
          (t.is('<') || t.is('>') || t.is('=') || t.is('?') || t.is('&') || t.is('|') || t.is('!') ||
           t.is(',') || t.is(':')))
        return false;
      if (s.word(i, name)) return false;
    }
    return true;
  };
  const std::size_t n = c.end - c.begin;
  if (n < 3) return {};
  const auto& t = s.tokens;
  if (s.word(c.begin, name)) {  // name < b   |  name >= b
    if (less && t[c.begin + 1].is('<') && !t[c.begin + 2].is('=') && !t[c.begin + 2].is('<'))
      return simple({c.begin + 2, c.end}) ? token_range{c.begin + 2, c.end} : token_range{};
    if (!less && t[c.begin + 1].is('>') && t[c.begin + 2].is('='))
      return simple({c.begin + 3, c.end}) ? token_range{c.begin + 3, c.end} : token_range{};
  }
  if (s.word(c.end - 1, name)) {  // b > name   |  b <= name
    if (less && t[c.end - 2].is('>') && !t[c.end - 3].is('>'))
      return simple({c.begin, c.end - 2}) ? token_range{c.begin, c.end - 2} : token_range{};
    if (!less && t[c.end - 2].is('=') && t[c.end - 3].is('<'))
      return simple({c.begin, c.end - 3}) ? token_range{c.begin, c.end - 3} : token_range{};
  }
  return {};
}

namespace {

// The rewrite of one kernel into a grid-stride loop: its edits, or why not.
std::string convert_kernel(const parsed_source& s, const function_info& k, std::vector<edit>& edits) {
  const std::size_t limit = k.body_close;
  const std::size_t d0 = k.body_open + 1;
  const std::size_t d1 = s.statement_end(d0, limit);
  // [const] TYPE name = INIT ;
  std::size_t eq = d0;
  while (eq < d1 && (s.tokens[eq].kind == cuda_token_kind::identifier || s.tokens[eq].is_scope())) ++eq;
  const std::string no_pattern =
      "kernel " + k.name + " does not start with `i = blockIdx.x * blockDim.x + threadIdx.x;` "
      "followed by `if (i < n) …` or `if (i >= n) return;`";
  if (eq >= d1 || !s.tokens[eq].is('=') || s.tokens[eq + 1].is('=') || eq < d0 + 2 ||
      !s.tokens[d1 - 1].is(';'))
    return no_pattern;
  for (std::size_t i = eq; i < d1; ++i)
    if (s.tokens[i].is(',')) return no_pattern;
  const std::size_t name_tok = eq - 1;
  const std::string name(s.text(name_tok));
  if (!is_global_index(s, {eq + 1, d1 - 1})) {
    for (std::size_t i = eq + 1; i < d1; ++i)
      if (s.text(i) == "blockIdx" && i + 2 < d1 && !s.word(i + 2, "x"))
        return "kernel " + k.name + " indexes in more than one dimension (2-D/3-D kernels are not converted)";
    return no_pattern;
  }
  std::string type;
  for (std::size_t i = d0; i < name_tok; ++i) {
    if (s.word(i, "const") || s.word(i, "constexpr")) continue;
    if (!type.empty() && !s.tokens[i].is_scope() && !s.tokens[i - 1].is_scope()) type += ' ';
    type += s.text(i);
  }
  if (type.empty()) return no_pattern;
  if (!s.word(d1, "if") || d1 + 1 >= limit || !s.tokens[d1 + 1].is('(')) return no_pattern;
  const std::size_t cond_close = s.match(d1 + 1);
  if (cond_close == none || cond_close >= limit) return no_pattern;
  const token_range cond{d1 + 2, cond_close};
  const std::size_t if_end = s.statement_end(d1, limit);
  const bool early_return = s.word(cond_close + 1, "return") && cond_close + 3 == if_end &&
                            s.tokens[cond_close + 2].is(';');
  token_range bound, rest;
  if (early_return) {
    bound = bound_of(s, cond, name, false);
    rest = {if_end, limit};
  } else {
    bound = bound_of(s, cond, name, true);
    rest = {cond_close + 1, if_end};
    if (if_end != limit)
      return "kernel " + k.name + " has code after its `if (" + name + " < …)` block";
    for (std::size_t i = rest.begin; i < rest.end; ++i)
      if (s.word(i, "else") && s.statement_end(cond_close + 1, limit) == i)
        return "kernel " + k.name + "'s bounds check has an else branch";
  }
  if (bound.begin == bound.end) return no_pattern;
  if (rest.begin == rest.end) return "kernel " + k.name + " has no per-element code";
  if (const std::string hazard = per_element_hazard(s, rest, name); !hazard.empty())
    return "kernel " + k.name + " cannot run its element code in a loop: " + hazard;
  std::string limit_text = s.raw(bound);
  if (bound.end - bound.begin > 1) limit_text = "(" + limit_text + ")";
  const std::string stride = type == "auto" ? "gridDim.x * blockDim.x"
                                             : "static_cast<" + type + ">(gridDim.x) * blockDim.x";
  const std::string head = "for (" + type + " " + name + " = " + s.raw({eq + 1, d1 - 1}) + "; " +
                           name + " < " + limit_text + "; " + name + " += " + stride + ")";
  const std::size_t start = s.tokens[d0].begin;
  if (!early_return) {
    edits.push_back({start, s.tokens[cond_close].end, head});
    return {};
  }
  const std::string indent = s.indent_at(start);
  edits.push_back({start, s.tokens[if_end - 1].end, head + " {"});
  // Indent the loop's body by two spaces at every line start between tokens.
  for (std::size_t i = rest.begin; i < rest.end; ++i) {
    const std::size_t from = s.tokens[i - 1].end;
    for (std::size_t p = from; p < s.tokens[i].begin; ++p)
      if (s.source[p] == '\n' && p + 1 < s.tokens[i].begin + 1 && s.source[p + 1] != '\n')
        edits.push_back({p + 1, p + 1, "  "});
  }
  if (s.starts_line(limit)) {
    std::size_t line = s.tokens[limit].begin;
    while (line > 0 && s.source[line - 1] != '\n') --line;
    edits.push_back({line, line, indent + "}\n"});
  } else {
    edits.push_back({s.tokens[limit].begin, s.tokens[limit].begin, "} "});
  }
  return {};
}

// Where the helper goes: the start of the line of `f`'s definition, above its leading comments.
std::size_t helper_position(const parsed_source& s, const function_info& f) {
  std::size_t pos = s.tokens[f.head_begin].begin;
  while (pos > 0 && s.source[pos - 1] != '\n') --pos;
  while (pos > 0) {
    std::size_t prev = pos - 1;
    while (prev > 0 && s.source[prev - 1] != '\n') --prev;
    const std::string line = s.source.substr(prev, pos - prev);
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line.compare(first, 2, "//") != 0) break;
    pos = prev;
  }
  return pos;
}

struct cap_plan {
  std::vector<const launch_info*> launches;
  std::optional<long long> current;  // blocks per SM of an earlier cap
  std::optional<long long> block;    // the known block size, for the order of candidates
};

// The launches of `kernels` whose grids can be capped, or why not.
std::string plan_caps(const parsed_source& s, const std::vector<const function_info*>& kernels, cap_plan& plan) {
  for (const function_info* k : kernels) {
    const auto launches = s.launches_of(k->name);
    if (launches.empty()) return "kernel " + k->name + " is not launched in this source, so its grid cannot be capped";
    for (const launch_info* l : launches) {
      const token_range g = l->config[0];
      bool dim3 = g.end == g.begin + 1 && s.is_dim3(s.text(g.begin), 0, l->config_open);
      for (std::size_t i = g.begin; i < g.end; ++i) dim3 = dim3 || s.word(i, "dim3");
      if (dim3) return "kernel " + k->name + " is launched with a dim3 grid (only 1-D grids are capped)";
      for (std::size_t i = g.begin; i < g.end; ++i) {
        if (!s.word(i, cap_helper) || i + 1 >= g.end || !s.tokens[i + 1].is('(')) continue;
        const std::size_t close = s.match(i + 1);
        if (close != none && close > i + 2) plan.current = s.integer({close - 1, close});
      }
      std::string why;
      if (!plan.block) plan.block = known_block_size(s, *l, why);
      plan.launches.push_back(l);
    }
  }
  return {};
}

// One variant per blocks-per-SM figure: the grid of every planned launch capped.
void cap_variants(const parsed_source& s, const cap_plan& plan, std::vector<edit> kernel_edits,
                  mechanical_result& result, const mechanical_context& c, const std::string& label) {
  // Full occupancy (2048 threads per SM) first when the block is known, then a wave more,
  // half, and four times as many.
  std::vector<long long> figures = {8, 16, 4, 32, 2};
  if (plan.block && *plan.block > 0 && 2048 % *plan.block == 0) {
    const long long full = 2048 / *plan.block;
    figures = {full, full * 2, std::max(1LL, full / 2), full * 4, std::max(1LL, full / 4)};
  }
  std::vector<long long> unique;
  for (const long long f : figures)
    if (std::find(unique.begin(), unique.end(), f) == unique.end() && f != plan.current) unique.push_back(f);
  const bool have_helper = std::any_of(s.tokens.begin(), s.tokens.end(), [&](const cuda_token& t) {
    return t.kind == cuda_token_kind::identifier && t.text(s.source) == cap_helper;
  });
  for (const long long per_sm : unique) {
    if (static_cast<int>(result.variants.size()) >= c.max_variants) break;
    std::vector<edit> edits = kernel_edits;
    const function_info* first_host = nullptr;
    for (const launch_info* l : plan.launches) {
      const token_range g = l->config[0];
      bool replaced = false;
      for (std::size_t i = g.begin; i < g.end && !replaced; ++i) {
        if (!s.word(i, cap_helper) || !s.tokens[i + 1].is('(')) continue;
        const std::size_t close = s.match(i + 1);
        if (close == none || !s.integer({close - 1, close})) continue;
        edits.push_back({s.tokens[close - 1].begin, s.tokens[close - 1].end, std::to_string(per_sm)});
        replaced = true;
      }
      if (replaced) continue;
      edits.push_back({s.tokens[g.begin].begin, s.tokens[g.end - 1].end,
                       "static_cast<unsigned>(" + std::string(cap_helper) + "(" + s.raw(g) + ", " +
                           std::to_string(per_sm) + "))"});
      if (l->host != none && (!first_host || s.functions[l->host].head_begin < first_host->head_begin))
        first_host = &s.functions[l->host];
    }
    if (!have_helper && first_host)
      edits.push_back({helper_position(s, *first_host), helper_position(s, *first_host),
                       std::string(cap_helper_source)});
    mechanical_variant v;
    v.label = label + "grid cap " + std::to_string(per_sm) + " blocks/SM";
    v.source = apply_edits(s.source, std::move(edits));
    v.parameters = {{"blocks_per_sm", per_sm}};
    result.variants.push_back(std::move(v));
  }
}

}  // namespace

mechanical_result grid_stride_variants(const parsed_source& s, const mechanical_context& c) {
  mechanical_result result;
  std::vector<std::string> reasons;
  std::vector<const function_info*> converted;
  std::vector<edit> edits;
  for (const function_info& k : s.functions) {
    if (!k.global) continue;
    std::vector<edit> mine;
    if (std::string why = convert_kernel(s, k, mine); !why.empty()) {
      if (has_grid_stride_loop(s, k))
        why = "kernel " + k.name + " is already a grid-stride loop (grid_size_tuning tunes its grid)";
      reasons.push_back(std::move(why));
      continue;
    }
    cap_plan probe;
    if (std::string why = plan_caps(s, {&k}, probe); !why.empty()) {
      reasons.push_back(std::move(why));
      continue;
    }
    converted.push_back(&k);
    edits.insert(edits.end(), mine.begin(), mine.end());
  }
  if (converted.empty()) {
    result.not_applicable = join_reasons(reasons);
    return result;
  }
  cap_plan plan;
  plan_caps(s, converted, plan);
  plan.current.reset();  // a fresh conversion: every figure is new
  cap_variants(s, plan, edits, result, c, "grid-stride loop, ");
  return result;
}

mechanical_result grid_size_variants(const parsed_source& s, const mechanical_context& c) {
  mechanical_result result;
  std::vector<std::string> reasons;
  std::vector<const function_info*> kernels;
  for (const function_info& k : s.functions) {
    if (!k.global) continue;
    const bool strided = has_grid_stride_loop(s, k);
    if (!strided) {
      reasons.push_back("kernel " + k.name + " has no grid-stride loop (`for (i = blockIdx.x * blockDim.x + "
                        "threadIdx.x; …; i += gridDim.x * blockDim.x)`); try grid_stride_loop");
      continue;
    }
    cap_plan probe;
    if (std::string why = plan_caps(s, {&k}, probe); !why.empty()) {
      reasons.push_back(std::move(why));
      continue;
    }
    kernels.push_back(&k);
  }
  if (kernels.empty()) {
    result.not_applicable = join_reasons(reasons);
    return result;
  }
  cap_plan plan;
  plan_caps(s, kernels, plan);
  cap_variants(s, plan, {}, result, c, "");
  return result;
}

}  // namespace kblaster::engine::optimize::mech
