// KB queries for the editor's hover, code lenses and code actions.
#include "engine/analysis/kernel_insight.h"

#include "engine/state/state_evidence.h"
#include "kb/knowledge_base.h"
#include "kb/location.h"

#include <algorithm>

namespace kblaster::engine {

namespace {
// How far back the replay buffer is scanned for a task's last runtime: attempts come newest
// first, so a task optimized recently is found at once; an old one is not worth a full scan.
constexpr std::size_t attempts_scanned = 500;

// Lessons shown under the strategies.
constexpr std::size_t lessons_shown = 3;

// `state` empty: strategies gathered over several states (static facts), whose tasks are not looked up.
std::vector<strategy> to_strategies(kb::knowledge_base& kb, const std::string& state,
                                    const std::vector<kb::optimization>& opts, std::size_t top) {
  std::vector<strategy> out;
  for (const auto& o : opts) {
    if (out.size() >= top) break;
    strategy s;
    s.technique = o.technique;
    s.description = o.description;
    s.predicted_speedup = o.predicted_speedup;
    s.confidence = o.confidence;
    s.attempts = o.statistics.n_measured;
    s.steps = o.statistics.credit.steps;
    s.gains = o.statistics.credit.gains;
    s.arch = o.arch;
    if (!state.empty() && s.steps > 0) s.tasks = kb.tasks_behind(state, o.technique, o.arch);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<state_lesson> lessons_of(kb::knowledge_base& kb, const std::string& state) {
  std::vector<state_lesson> out;
  if (!kb.find_state(state)) return out;  // a discovered state not stored yet has none
  auto all = kb.lessons(state);
  std::sort(all.begin(), all.end(), [](const kb::lesson& a, const kb::lesson& b) { return a.created_at > b.created_at; });
  for (const auto& l : all) {
    if (out.size() >= lessons_shown) break;
    out.push_back({l.technique, l.text});
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
      out.strategies = to_strategies(kb, "", kb.static_strategies(evidence, arch, top), top);
      out.strategies_from_static_facts = true;
    } else if (const auto m = kb.match_state(evidence, arch)) {
      out.kb_state = m->state;
      out.match_score = m->score;
      out.discovered = m->discovered;
      out.strategies = to_strategies(kb, m->state, kb.optimizations_for(*m, evidence, arch), top);
      out.lessons = lessons_of(kb, m->state);
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
    auto& kb = open_locked(kb_path);
    return to_strategies(kb, state, kb.optimizations(state, arch), top);
  } catch (const std::exception&) {
    kb_.reset();
    return {};
  }
}

}  // namespace kblaster::engine
