// KB queries for the editor's hover, code lenses and code actions.
#include "engine/analysis/kernel_insight.h"

#include "engine/state/state_evidence.h"
#include "kb/knowledge_base.h"
#include "kb/location.h"

namespace kblaster::engine {

namespace {
// How far back the replay buffer is scanned for a task's last runtime: attempts come newest
// first, so a task optimized recently is found at once; an old one is not worth a full scan.
constexpr std::size_t attempts_scanned = 500;

std::vector<strategy> to_strategies(const std::vector<kb::optimization>& opts, std::size_t top) {
  std::vector<strategy> out;
  for (const auto& o : opts) {
    if (out.size() >= top) break;
    out.push_back({o.technique, o.description, o.predicted_speedup, o.confidence, o.statistics.n_measured});
  }
  return out;
}
}  // namespace

insight_service::insight_service() = default;
insight_service::~insight_service() = default;

kb::knowledge_base& insight_service::open_locked(const std::filesystem::path& kb_path) {
  const auto path = kb_path.empty() ? kb::default_kb_path() : kb_path;
  if (!kb_ || path != path_) {
    kb::open_options o;
    o.access = kb::open_options::access_mode::automatic;  // a read-only KB still answers
    kb_ = std::make_unique<kb::knowledge_base>(kb::knowledge_base::open(path, o));
    path_ = path;
  }
  return *kb_;
}

kernel_insight insight_service::query(const std::filesystem::path& kb_path, const kernel_view& view,
                                      const std::string& arch, const std::string& task_name, std::size_t top) {
  kernel_insight out;
  std::lock_guard lock(mutex_);
  try {
    auto& kb = open_locked(kb_path);
    const auto evidence = kb_evidence(view.signature);
    if (!evidence.measured) {
      // Nothing measured: no state is claimed, and only techniques that the static facts
      // (spills, what limits occupancy) call for are shown; often none.
      out.strategies = to_strategies(kb.static_strategies(evidence, arch, top), top);
      out.strategies_from_static_facts = true;
    } else if (const auto m = kb.match_state(evidence, arch)) {
      out.kb_state = m->state;
      out.match_score = m->score;
      out.discovered = m->discovered;
      out.strategies = to_strategies(kb.optimizations_for(*m, evidence, arch), top);
    }
    if (!task_name.empty()) {
      for (const auto& a : kb.attempts(attempts_scanned)) {
        if (a.task != task_name || !a.correct || !a.runtime_ms) continue;
        out.last_runtime = measured_runtime{*a.runtime_ms, a.finished_at.empty() ? a.started_at : a.finished_at,
                                            "kb attempt"};
        break;
      }
    }
  } catch (const std::exception& e) {
    kb_.reset();  // reopen next time: the file may have been replaced
    out = kernel_insight{};
    out.error = e.what();
  }
  return out;
}

std::vector<strategy> insight_service::strategies(const std::filesystem::path& kb_path, const std::string& state,
                                                  const std::string& arch, std::size_t top) {
  std::lock_guard lock(mutex_);
  try {
    return to_strategies(open_locked(kb_path).optimizations(state, arch), top);
  } catch (const std::exception&) {
    kb_.reset();
    return {};
  }
}

}  // namespace kblaster::engine
