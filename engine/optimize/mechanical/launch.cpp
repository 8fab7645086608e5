// The mechanical tier's launch-shape techniques: block_size_tuning (another 1-D block size at
// every launch, the grid recomputed to keep at least the same number of threads) and
// launch_bounds (__launch_bounds__(block, minBlocks) on kernels whose block size is known).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "engine/optimize/mechanical/detail.h"

namespace kblaster::engine::optimize::mech {
namespace {

bool contains_word(const parsed_source& s, token_range r, std::string_view w) {
  for (std::size_t i = r.begin; i < r.end; ++i)
    if (s.word(i, w)) return true;
  return false;
}

// The first argument of a __launch_bounds__ list, e.g. 256 of "256, 2".
std::optional<long long> launch_bounds_max(const std::string& bounds) {
  if (bounds.empty()) return std::nullopt;
  const std::string first = bounds.substr(0, bounds.find(','));
  std::string trimmed;
  for (const char c : first)
    if (c != ' ') trimmed += c;
  return parse_integer_literal(trimmed);
}

// The x extent of a 1-D launch dimension written as a dim3, `dim3(X)` or `dim3(X, 1, 1)` (as a
// captured launch's launcher writes it), or nothing for anything else.
std::optional<token_range> one_d_dim3_x(const parsed_source& s, token_range r) {
  if (!(s.word(r.begin, "dim3") && r.end > r.begin + 2 && s.tokens[r.begin + 1].is('(') && s.match(r.begin + 1) == r.end - 1))
    return std::nullopt;
  std::vector<token_range> args;
  std::size_t from = r.begin + 2;
  for (std::size_t j = from; j < r.end - 1; ++j) {
    if (s.tokens[j].is('(') || s.tokens[j].is('[') || s.tokens[j].is('{')) {
      j = s.match(j);
      continue;
    }
    if (s.tokens[j].is(',')) {
      args.push_back({from, j});
      from = j + 1;
    }
  }
  args.push_back({from, r.end - 1});
  if (args.empty() || args.size() > 3 || args[0].begin >= args[0].end) return std::nullopt;
  for (std::size_t a = 1; a < args.size(); ++a)
    if (s.integer(args[a]) != 1) return std::nullopt;
  return args[0];
}

// Why the body of `k` cannot take another block size, or "" when it can as far as we see.
std::string block_dependence(const parsed_source& s, const function_info& k, long long block,
                             const std::string& block_name) {
  for (std::size_t i = k.body_open + 1; i < k.body_close; ++i) {
    const bool literal = s.tokens[i].kind == cuda_token_kind::number &&
                         parse_integer_literal(s.text(i)) == block;
    const bool named = !block_name.empty() && s.word(i, block_name);
    if (!literal && !named) continue;
    // Look back over the statement for __shared__: the usual way a body bakes the block in.
    std::size_t b = i;
    while (b > k.body_open && !s.tokens[b - 1].is(';') && !s.tokens[b - 1].is('{') &&
           !s.tokens[b - 1].is('}'))
      --b;
    const std::string what = literal ? "the literal " + std::to_string(block) : "`" + block_name + "`";
    if (contains_word(s, {b, i}, "__shared__"))
      return "kernel " + k.name + " has a __shared__ array sized by " + what + " (the block size)";
    return "kernel " + k.name + "'s body uses " + what +
           ", the block size, so it may assume that block size";
  }
  return {};
}

int max_threads_per_sm(const std::string& arch) {
  // Volta and Ampere A100/Hopper/Blackwell datacenter parts run 2048 threads per SM; Turing
  // 1024; consumer Ampere, Ada and Blackwell 1536.
  if (arch == "sm_75") return 1024;
  if (arch == "sm_86" || arch == "sm_87" || arch == "sm_89" || arch == "sm_120" || arch == "sm_121")
    return 1536;
  return 2048;
}

}  // namespace

std::optional<long long> known_block_size(const parsed_source& s, const launch_info& l, std::string& why) {
  if (l.config.size() < 2) {
    why = "the launch has no block argument";
    return std::nullopt;
  }
  const token_range r = l.config[1];
  if (const auto v = s.integer(r)) return v;
  if (const auto x = one_d_dim3_x(s, r))
    if (const auto v = s.integer(*x)) return v;
  const std::string text = s.compact(r);
  if (contains_word(s, r, "dim3")) {
    why = "its block is a dim3 expression (" + text + "); only 1-D integer blocks are tuned";
    return std::nullopt;
  }
  if (r.end == r.begin + 1 && s.tokens[r.begin].kind == cuda_token_kind::identifier) {
    const std::string name(s.text(r.begin));
    const std::size_t from = l.host == none ? 0 : s.functions[l.host].body_open;
    if (s.is_dim3(name, from, l.config_open) || s.is_dim3(name, 0, l.config_open)) {
      why = "its block `" + name + "` is a dim3 (2-D/3-D launches are not tuned)";
      return std::nullopt;
    }
    if (auto v = s.integer_constant(name, from, l.config_open)) return v;
    if (auto v = s.integer_constant(name, 0, l.config_open)) return v;
  }
  why = "its block `" + text + "` is not an integer literal or a const integer initialised with one";
  return std::nullopt;
}

std::optional<long long> known_total_block(const parsed_source& s, const launch_info& l) {
  std::string why;
  if (auto v = known_block_size(s, l, why)) return v;
  if (l.config.size() < 2) return std::nullopt;
  const token_range r = l.config[1];
  std::vector<long long> dims;
  if (r.end == r.begin + 1 && s.tokens[r.begin].kind == cuda_token_kind::identifier) {
    const std::string name(s.text(r.begin));
    const std::size_t from = l.host == none ? 0 : s.functions[l.host].body_open;
    dims = s.dim3_literals(name, from, l.config_open);
  } else if (s.word(r.begin, "dim3") && r.end > r.begin + 2 && s.tokens[r.begin + 1].is('(') &&
             s.match(r.begin + 1) == r.end - 1) {
    std::size_t arg = r.begin + 2;
    for (std::size_t j = arg; j < r.end; ++j) {
      if (!(s.tokens[j].is(',') || j == r.end - 1)) continue;
      const auto v = s.integer({arg, j});
      if (!v) return std::nullopt;
      dims.push_back(*v);
      arg = j + 1;
    }
  }
  if (dims.empty() || dims.size() > 3) return std::nullopt;
  long long total = 1;
  for (const long long d : dims) total *= d;
  return total;
}

mechanical_result block_size_variants(const parsed_source& s, const mechanical_context& c) {
  struct eligible {
    const launch_info* launch;
    long long block;
    std::optional<long long> bound;
  };
  std::vector<eligible> launches;
  std::vector<std::string> reasons;
  for (const launch_info& l : s.launches) {
    const function_info* k = s.kernel(l.kernel);
    if (l.kernel.empty()) {
      reasons.push_back("a templated launch (`k<...><<<`) is not tuned");
      continue;
    }
    if (!k) continue;  // a kernel defined elsewhere: we cannot see what it assumes
    std::string why;
    const auto block = known_block_size(s, l, why);
    if (!block) {
      reasons.push_back("launch of " + l.kernel + ": " + why);
      continue;
    }
    const token_range grid = l.config[0];
    const bool grid_dim3 = (contains_word(s, grid, "dim3") && !one_d_dim3_x(s, grid)) ||
                           (grid.end == grid.begin + 1 &&
                            s.is_dim3(s.text(grid.begin), 0, l.config_open));
    if (grid_dim3) {
      reasons.push_back("launch of " + l.kernel + ": its grid is a dim3 (2-D/3-D launches are not tuned)");
      continue;
    }
    if (l.config.size() >= 3 && s.integer(l.config[2]) != 0) {
      reasons.push_back("launch of " + l.kernel + ": dynamic shared memory (" + s.compact(l.config[2]) +
                        ") may be sized for the block");
      continue;
    }
    const token_range b = l.config[1];
    const std::string block_name =
        s.tokens[b.begin].kind == cuda_token_kind::identifier ? std::string(s.text(b.begin)) : "";
    if (const std::string dep = block_dependence(s, *k, *block, block_name); !dep.empty()) {
      reasons.push_back(dep);
      continue;
    }
    launches.push_back({&l, *block, launch_bounds_max(k->launch_bounds)});
  }
  mechanical_result result;
  if (launches.empty()) {
    result.not_applicable = reasons.empty() ? "no launch of a kernel defined in this source"
                                            : join_reasons(reasons);
    return result;
  }
  // Most promising first: the nearest sizes to the current one (in powers of two), the larger
  // first on a tie because it rarely lowers occupancy.
  const long long current = launches.front().block;
  std::vector<long long> sizes = {64, 128, 256, 512, 1024};
  sizes.erase(std::remove(sizes.begin(), sizes.end(), current), sizes.end());
  std::stable_sort(sizes.begin(), sizes.end(), [&](long long a, long long b) {
    const double da = std::abs(std::log2(double(a)) - std::log2(double(current)));
    const double db = std::abs(std::log2(double(b)) - std::log2(double(current)));
    return da != db ? da < db : a > b;
  });
  std::vector<std::string> bounded;
  for (const long long size : sizes) {
    std::vector<edit> edits;
    for (const eligible& e : launches) {
      if (e.block == size) continue;
      if (e.bound && size > *e.bound) {
        bounded.push_back("kernel " + e.launch->kernel + " has __launch_bounds__(" +
                          std::to_string(*e.bound) + "), below block " + std::to_string(size));
        continue;
      }
      const token_range g = e.launch->config[0];
      const token_range b = e.launch->config[1];
      // ceil(grid * old / new) blocks of the new size: never fewer threads than before. A 1-D
      // dim3 grid (a captured launch's launcher writes `dim3(32, 1, 1)`) is counted by its x, the
      // dim3 kept whole in the text: carried to a program's call site, the site's own grid takes
      // its place (launch_carry.h), so the rewrite holds for every shape, not the captured one.
      const std::string counted = one_d_dim3_x(s, g) ? "(" + s.raw(g) + ").x" : s.raw(g);
      const std::string grid = "static_cast<unsigned>((static_cast<unsigned long long>(" + counted + ") * " +
                               std::to_string(e.block) + " + " + std::to_string(size - 1) + ") / " + std::to_string(size) + ")";
      edits.push_back({s.tokens[g.begin].begin, s.tokens[g.end - 1].end, grid});
      edits.push_back({s.tokens[b.begin].begin, s.tokens[b.end - 1].end, std::to_string(size)});
    }
    if (edits.empty()) continue;
    mechanical_variant v;
    v.label = "block " + std::to_string(size);
    v.source = apply_edits(s.source, std::move(edits));
    v.parameters = {{"block", size}, {"previous_block", current}};
    result.variants.push_back(std::move(v));
  }
  if (result.variants.empty()) result.not_applicable = join_reasons(bounded);
  (void)c;
  return result;
}

mechanical_result launch_bounds_variants(const parsed_source& s, const mechanical_context& c) {
  struct eligible {
    const function_info* kernel;
    long long block;
  };
  std::vector<eligible> kernels;
  std::vector<std::string> reasons;
  for (const function_info& k : s.functions) {
    if (!k.global) continue;
    const auto launches = s.launches_of(k.name);
    if (launches.empty()) {
      reasons.push_back("kernel " + k.name + " is not launched in this source, so its block size is unknown");
      continue;
    }
    std::optional<long long> block;
    std::string why;
    for (const launch_info* l : launches) {
      const auto b = known_total_block(s, *l);
      if (!b) {
        why = "the block size of " + k.name + "'s launch (" +
              (l->config.size() >= 2 ? s.compact(l->config[1]) : std::string("none")) + ") is not known";
        break;
      }
      if (block && *block != *b) {
        why = "kernel " + k.name + " is launched with different block sizes";
        break;
      }
      block = b;
    }
    if (!why.empty()) {
      reasons.push_back(why);
      continue;
    }
    if (s.has_declaration(k.name)) {
      reasons.push_back("kernel " + k.name + " also has a separate declaration");
      continue;
    }
    if (k.name_tok > 0 && s.tokens[k.name_tok - 1].is_scope()) {
      reasons.push_back("kernel " + k.name + " is defined with a qualified name");
      continue;
    }
    kernels.push_back({&k, *block});
  }
  mechanical_result result;
  if (kernels.empty()) {
    result.not_applicable = join_reasons(reasons);
    return result;
  }
  const int per_sm = max_threads_per_sm(c.arch);
  // minBlocks 4 first: it caps registers where it usually pays (64 per thread at 256 threads);
  // 2 is milder, 8 aggressive, and 1 only states the block size.
  for (const int min_blocks : {4, 2, 8, 1}) {
    std::vector<edit> edits;
    for (const eligible& e : kernels) {
      if (e.block * min_blocks > per_sm) continue;
      const std::string args =
          std::to_string(e.block) + (min_blocks > 1 ? ", " + std::to_string(min_blocks) : "");
      const function_info& k = *e.kernel;
      std::size_t lb = none;
      for (std::size_t i = k.head_begin; i < k.name_tok; ++i)
        if (s.word(i, "__launch_bounds__")) lb = i;
      if (lb != none && lb + 1 < k.name_tok && s.tokens[lb + 1].is('(')) {
        const std::size_t close = s.match(lb + 1);
        if (close == none) continue;
        edits.push_back({s.tokens[lb + 2].begin, s.tokens[close].begin, args});
      } else {
        edits.push_back({s.tokens[k.name_tok].begin, s.tokens[k.name_tok].begin,
                         "__launch_bounds__(" + args + ") "});
      }
    }
    if (edits.empty()) continue;
    mechanical_variant v;
    v.label = min_blocks > 1 ? "launch_bounds " + std::to_string(min_blocks) + " blocks/SM"
                             : "launch_bounds max threads only";
    v.source = apply_edits(s.source, std::move(edits));
    v.parameters = {{"min_blocks", min_blocks}, {"max_threads", kernels.front().block}};
    result.variants.push_back(std::move(v));
  }
  if (result.variants.empty()) result.not_applicable = join_reasons(reasons);
  return result;
}

}  // namespace kblaster::engine::optimize::mech
