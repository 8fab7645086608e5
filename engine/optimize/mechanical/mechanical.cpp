// The mechanical tier's entry points: the technique list and the dispatch that parses the
// source once, runs one technique, and keeps its variants distinct, different from the input
// and within the context's cap.
#include "engine/optimize/mechanical/mechanical.h"

#include <algorithm>
#include <exception>
#include <set>

#include "engine/optimize/mechanical/detail.h"

namespace kblaster::engine::optimize {

const std::vector<std::string>& mechanical_techniques() {
  // Cheapest and safest first: launch shape, then code shape, then qualifiers, then the one
  // that trades accuracy.
  static const std::vector<std::string> names = {
      "block_size_tuning", "grid_stride_loop", "grid_size_tuning",         "launch_bounds",
      "loop_unrolling",    "read_only_cache",  "vectorized_memory_access", "fast_math_intrinsics"};
  return names;
}

bool is_mechanical(const std::string& technique) {
  const auto& names = mechanical_techniques();
  return std::find(names.begin(), names.end(), technique) != names.end();
}

mechanical_result mechanical_variants(const std::string& source, const std::string& technique,
                                      const mechanical_context& context) {
  mechanical_result result;
  if (!is_mechanical(technique)) {
    result.not_applicable = "'" + technique + "' is not a mechanical technique";
    return result;
  }
  if (context.max_variants <= 0) {
    result.not_applicable = "no variants asked for (max_variants is " +
                            std::to_string(context.max_variants) + ")";
    return result;
  }
  try {
    const mech::parsed_source parsed(source);
    if (std::none_of(parsed.functions.begin(), parsed.functions.end(),
                     [](const mech::function_info& f) { return f.global; })) {
      result.not_applicable = "no __global__ kernel definition in the source";
      return result;
    }
    if (technique == "block_size_tuning") result = mech::block_size_variants(parsed, context);
    else if (technique == "grid_stride_loop") result = mech::grid_stride_variants(parsed, context);
    else if (technique == "grid_size_tuning") result = mech::grid_size_variants(parsed, context);
    else if (technique == "launch_bounds") result = mech::launch_bounds_variants(parsed, context);
    else if (technique == "loop_unrolling") result = mech::unroll_variants(parsed, context);
    else if (technique == "read_only_cache") result = mech::read_only_variants(parsed, context);
    else if (technique == "vectorized_memory_access") result = mech::vectorize_variants(parsed, context);
    else result = mech::fast_math_variants(parsed, context);
  } catch (const std::exception& e) {
    // A transformation bug must not take the loop down: the technique just does not apply.
    result = {};
    result.not_applicable = std::string("internal error in the mechanical tier: ") + e.what();
    return result;
  }
  std::set<std::string> seen;
  std::vector<mechanical_variant> kept;
  for (auto& v : result.variants) {
    if (v.source == source || !seen.insert(v.source).second) continue;
    v.technique = technique;
    kept.push_back(std::move(v));
    if (static_cast<int>(kept.size()) == context.max_variants) break;
  }
  result.variants = std::move(kept);
  if (result.variants.empty() && result.not_applicable.empty())
    result.not_applicable = "the transformation leaves this source unchanged";
  if (!result.variants.empty()) result.not_applicable.clear();
  return result;
}

}  // namespace kblaster::engine::optimize

namespace kblaster::engine::optimize::mech {

std::string join_reasons(const std::vector<std::string>& reasons) {
  std::string out;
  std::set<std::string> seen;
  for (const auto& r : reasons) {
    if (r.empty() || !seen.insert(r).second) continue;
    if (!out.empty()) out += "; ";
    out += r;
  }
  return out;
}

}  // namespace kblaster::engine::optimize::mech
