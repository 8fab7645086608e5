// The GPU's stand-in for the loop's unit tests: a feature-priced evaluator (the loop's behaviour
// on real recorded GPU results is tested in tests/optimize).
#pragma once

#include "engine/evaluate/evaluator.h"

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace loop_test {

using namespace kblaster::engine::optimize;

// Prices a source by the features the mechanical tier and the answer book add, so that the
// loop has real improvements to find; fails sources without kb_forward and ones marked BROKEN.
class feature_evaluator final : public evaluator {
 public:
  /// Each line holding it makes a source 15 % faster.
  static constexpr const char* gain_marker = "// kb-test-gain";
  evaluation evaluate(const std::string& task, const std::string& source, const evaluation_request& request) override {
    ++calls;
    evaluation e;
    e.code_hash = source_hash(task, source);
    {
      std::lock_guard lock(beats_mutex);
      beats.emplace(e.code_hash, request.beat_ms);  // the first request: a later one only profiles
      references.emplace(e.code_hash, request.reference_ms);
    }
    e.gpu_name = "feature-priced test evaluator";
    e.arch = "sm_90";
    e.gpu_seconds = 0.25;
    e.compile_ok = source.find("kb_forward") != std::string::npos;
    if (!e.compile_ok) {
      e.verdict = "fail";
      e.check = "compile";
      e.compile_log = "error: kb_forward is missing";
      return e;
    }
    e.correct = source.find("BROKEN") == std::string::npos;
    e.verdict = e.correct ? "pass" : "fail";
    if (!e.correct) {
      e.check = "mismatch";
      e.reason = "max abs error 3.5 at element 17";
      return e;
    }
    double ms = 1.0;
    if (source.find("__restrict__") != std::string::npos) ms *= 0.90;
    if (source.find("#pragma unroll") != std::string::npos) ms *= 0.97;
    if (source.find("__launch_bounds__") != std::string::npos) ms *= 0.98;
    if (source.find("gridDim.x") != std::string::npos) ms *= 0.92;
    if (source.find("float4") != std::string::npos) ms *= 0.70;
    // A made-up gain a test's model can stack, one line per step (deferred_rounds.h).
    for (auto at = source.find(gain_marker); at != std::string::npos; at = source.find(gain_marker, at + 1)) ms *= 0.85;
    e.runtime_ms = ms;
    // As the judge: a candidate clearly slower than the time it must beat is timed no further,
    // and not against the reference.
    if (request.beat_ms && ms > *request.beat_ms * 1.25) {
      e.timed_until_slower = true;
    } else {
      e.reference_ms = request.reference_ms.value_or(0.8);  // a figure given is not timed again
    }
    e.phases.verify = 0.05;
    e.phases.time = 0.2;
    if (!request.profile) return e;
    // Profiled: as the live evaluator, which runs only the profile for a candidate it verified.
    ++profiles;
    {
      std::lock_guard lock(beats_mutex);
      scopes.emplace(e.code_hash, request.scope);
    }
    e.phases.profile = 9;
    e.gpu_seconds += 9;
    profile_snapshot p;
    p.kernel = "vector_add";
    p.primary = "memory_bound_dram";
    if (ms > 0.85) p.secondary = {"uncoalesced_global_access"};
    p.summary = "memory bound, DRAM throughput 88% of peak";
    p.elapsed_cycles = static_cast<std::int64_t>(ms * 1e6);
    e.profile = p;
    return e;
  }
  void prepare(const std::string&, const std::string&) override { ++prepared; }
  std::string describe() const override { return "feature-priced test evaluator"; }
  std::atomic<int> calls{0}, profiles{0}, prepared{0};
  std::mutex beats_mutex;
  std::map<std::string, std::optional<double>> beats;  ///< per candidate hash, the time it was asked to beat
  std::map<std::string, std::optional<double>> references;  ///< per candidate hash, the reference figure it was given
  std::map<std::string, profile_scope> scopes;  ///< per profiled candidate hash, what its profile asked ncu for
};

}  // namespace loop_test
