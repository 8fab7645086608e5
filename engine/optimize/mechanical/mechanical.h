// The mechanical tier: deterministic source transformations that need no model. They are the
// loop's cheap first probes and the whole optimizer when no model is configured. Each variant
// is an ordinary candidate (verified and timed by the harness) and is recorded in the KB as an
// attempt of its technique, so the KB learns from these too.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kblaster::engine::optimize {

/// One transformed source.
struct mechanical_variant {
  std::string technique;  ///< the KB technique it is an attempt of, e.g. block_size_tuning
  std::string label;      ///< short, for progress and reports: "block 512", "unroll 4"
  std::string source;     ///< the complete new source (differs from the input)
  nlohmann::json parameters = nlohmann::json::object();  ///< e.g. {"block": 512}
};

/// What the transformations may assume.
struct mechanical_context {
  std::optional<double> atol, rtol;  ///< the task's tolerance overrides (fast math needs room)
  std::string arch;                  ///< e.g. sm_90; empty when unknown
  int max_variants = 4;              ///< per technique, most promising first
};

/// The variants for one technique, or why there are none.
struct mechanical_result {
  std::vector<mechanical_variant> variants;
  std::string not_applicable;  ///< non-empty when the technique does not apply to this source
};

/// KB technique names the tier implements, in the order the no-model optimizer probes them.
const std::vector<std::string>& mechanical_techniques();

/// True when `technique` is one of mechanical_techniques().
bool is_mechanical(const std::string& technique);

/// Variants of `source` for `technique`. Deterministic; never throws for odd sources (a source
/// the transformation cannot understand gives not_applicable with the reason).
mechanical_result mechanical_variants(const std::string& source, const std::string& technique,
                                      const mechanical_context& context);

}  // namespace kblaster::engine::optimize
