// Performance text for hovers and code lenses.
#include "server/features/kernel_text.h"
#include "support/text.h"

#include <algorithm>

namespace kblaster::server {

std::string format_ms(double ms) {
  if (ms < 1) return support::fixed_text(ms * 1000, 1) + " µs";
  return support::ms_text(ms, ms < 100 ? 3 : 1);
}

std::optional<engine::measured_runtime> last_runtime(const engine::file_analysis& a, const engine::kernel_view& v,
                                                     const engine::kernel_insight& insight) {
  if (insight.last_runtime) return insight.last_runtime;
  if (!v.signature.static_only && v.signature.sol.duration_us)
    return engine::measured_runtime{*v.signature.sol.duration_us / 1000, a.analysed_at, "live profile"};
  return std::nullopt;
}

std::string state_in_words(const std::string& key) {
  std::string words;
  for (const char c : key) words += c == '_' ? std::string(" ") : c == '+' ? std::string(", ") : std::string(1, c);
  return words;
}

std::string utc_in_words(const std::string& iso) {
  // "2026-11-23T21:14:02Z" -> "2026-11-23 21:14 UTC"; anything else as it is.
  if (iso.size() >= 16 && iso[10] == 'T') return iso.substr(0, 10) + " " + iso.substr(11, 5) + " UTC";
  return iso;
}

namespace {
// "registers" from "occupancy_limited_by_registers"; empty when no limiter is known.
std::string occupancy_limiter(const engine::performance_signature& s) {
  for (const auto& c : s.secondary)
    if (c.name.rfind("occupancy_limited_by_", 0) == 0) return c.name.substr(21);
  return "";
}
}  // namespace

std::string live_skip_words(const engine::file_analysis& a) {
  switch (a.skipped) {
    case engine::live_skip::no_gpu: return "no GPU";
    case engine::live_skip::no_ncu: return "no ncu";
    case engine::live_skip::refused: return "not trusted";
    case engine::live_skip::off: return "profileOnSave is off";
    case engine::live_skip::no_task: return "no task";
    case engine::live_skip::not_saved: return "not saved";
    case engine::live_skip::needs_harness: return "no harness";
    case engine::live_skip::none:
    case engine::live_skip::does_not_compile: break;
  }
  return "";
}

std::string performance_line(const engine::kernel_view& v, const engine::kernel_insight& insight, const std::string& why_not) {
  std::string line;
  if (v.signature.static_only) {
    // Without a profile no bottleneck is known: the lens says what ptxas and the occupancy
    // calculator do know, and claims no state.
    line = why_not.empty() ? "not profiled" : "not profiled (" + why_not + ")";
    if (v.signature.sol.theoretical_occupancy_pct) {
      line += " · occupancy " + support::fixed_text(*v.signature.sol.theoretical_occupancy_pct, 0) + "% (theoretical";
      const std::string limiter = occupancy_limiter(v.signature);
      line += limiter.empty() ? ")" : ", limited by " + limiter + ")";
    }
    for (const auto& c : v.signature.secondary)
      if (c.name == "register_spills") line += " · register spills";
  } else {
    line = state_in_words(insight.kb_state.empty() ? v.state.state : insight.kb_state);
  }
  if (insight.last_runtime) line += " · " + format_ms(insight.last_runtime->runtime_ms);
  // ncu's own duration, at the clocks it locks: beside the program's share lens (its time in the
  // program, from the timeline) the two differ, so the lens says which this one is.
  else if (!v.signature.static_only && v.signature.sol.duration_us)
    line += " · " + format_ms(*v.signature.sol.duration_us / 1000) + " under ncu";
  return line;
}

namespace {

// The part of the hover shown without a profile: what ptxas, the occupancy calculator and the
// source say, and that the performance state needs a run.
std::string static_facts_markdown(const engine::performance_signature& s, const std::vector<std::string>& launches) {
  std::string md =
      "State: `not measured` — where the kernel sits against the roofline (memory, compute, latency, "
      "the grid) is known only from a profile on a GPU.\n\nKnown without a run:\n\n";
  for (const auto& e : s.primary_evidence) md += "- " + e + "\n";
  if (s.sol.theoretical_occupancy_pct) {
    md += "- Occupancy: theoretical " + support::fixed_text(*s.sol.theoretical_occupancy_pct, 1) + "%";
    const std::string limiter = occupancy_limiter(s);
    md += limiter.empty() ? std::string(", no resource limits it") : ", limited by " + limiter;
    md += "\n";
  }
  bool spills = false;
  for (const auto& c : s.secondary)
    if (c.name == "register_spills") {
      md += "- Register spills: " + c.evidence + "\n";
      spills = true;
    }
  if (!spills) md += "- No register spills\n";
  for (const auto& l : launches) md += "- Launch in the source: `<<<" + l + ">>>`\n";
  return md;
}

// What a prediction was learnt from, in words: "3 gains in 4 tries, on spmv_csr and
// row_softmax, sm_90"; "prior only" before any try.
std::string learnt_from(const engine::strategy& st) {
  auto count = [](long long n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  if (st.steps > 0) {
    std::string out = count(st.gains, "gain", "gains") + " in " + count(st.steps, "try", "tries");
    for (std::size_t i = 0; i < st.tasks.size(); ++i)
      out += (i == 0 ? ", on " : i + 1 == st.tasks.size() ? " and " : ", ") + st.tasks[i];
    return out + ", " + (st.arch.empty() || st.arch == "all" ? std::string("any GPU") : st.arch);
  }
  if (st.attempts == 0) return "prior only, not measured yet";
  return support::fixed_text(st.confidence * 100, 0) + "% (" + std::to_string(st.attempts) + " measured)";
}

std::string strategies_table(const std::string& title, const std::vector<engine::strategy>& strategies) {
  std::string md = title + "\n\n| technique | predicted | learnt from |\n| --- | --- | --- |\n";
  for (const auto& st : strategies)
    md += "| `" + st.technique + "` | " + support::fixed_text(st.predicted_speedup, 2) + "× | " + learnt_from(st) + " |\n";
  return md;
}

// The state's lessons, as the KB's update agents (a model) wrote them: one line each, bounded.
std::string lessons_list(const std::vector<engine::state_lesson>& lessons) {
  constexpr std::size_t longest = 300;
  if (lessons.empty()) return "";
  std::string md = "\n**Lessons** learnt in this state\n\n";
  for (const auto& l : lessons) {
    std::string text = l.text;
    if (text.size() > longest) {
      std::size_t cut = longest;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
      text = text.substr(0, cut) + "…";
    }
    std::replace(text.begin(), text.end(), '\n', ' ');  // one list item each
    md += "- " + (l.technique.empty() ? std::string() : "`" + l.technique + "`: ") + text + "\n";
  }
  return md;
}

// The KB's strategies under `title`, or why the KB could not be read; empty when it has neither.
std::string strategies_or_error(const std::string& title, const engine::kernel_insight& insight) {
  if (!insight.strategies.empty()) return "\n" + strategies_table(title, insight.strategies);
  if (!insight.error.empty()) return "\n_Knowledge base unavailable: " + insight.error + "_\n";
  return "";
}

// "Last runtime: not measured yet" and why: an untrusted workspace (its full reason is the hover's
// last paragraph; here, its gist), the machine (no GPU, ...), else `otherwise`.
std::string not_measured_line(const engine::file_analysis& a, const std::string& otherwise) {
  return "\nLast runtime: not measured yet" +
         std::string(a.live_refused ? " (the workspace was not trusted at the last save)"
                     : !a.live_skipped.empty() ? " (" + a.live_skipped + ")"
                                               : otherwise) +
         "\n";
}

// " (KERNEL was not profiled: why)" when the live profile ran but could not cover this kernel.
std::string not_profiled_reason(const engine::file_analysis& a, const std::string& function) {
  if (!a.live_profile) return "";
  const auto why = a.live_profile->not_profiled.find(function);
  return why == a.live_profile->not_profiled.end() ? "" : " (" + function + " was not profiled: " + why->second + ")";
}

}  // namespace

std::string performance_markdown(const engine::file_analysis& a, const engine::kernel_view& v,
                                  const engine::kernel_insight& insight, const std::vector<std::string>& launches) {
  const auto& s = v.signature;
  const auto& sol = s.sol;
  std::string md = "---\n\n**Performance** (" +
                   std::string(s.static_only ? "static: ptxas + occupancy, not a profile" : "ncu profile") + ", " +
                   utc_in_words(a.analysed_at) + ")\n\n";
  if (s.static_only) {
    md += static_facts_markdown(s, launches);
    const auto strategies = strategies_or_error("**Strategies** for what ptxas shows (knowledge base; not measured)", insight);
    md += strategies.empty() ? "\n_No strategy: nothing known without a profile calls for one._\n" : strategies;
    return md + not_measured_line(a, not_profiled_reason(a, s.function));
  }
  if (a.live_profile)
    if (const auto o = a.live_profile->origins.find(s.function); o != a.live_profile->origins.end())
      md += "Profiled: " + o->second + "\n\n";
  md += "State: `" + (insight.kb_state.empty() ? v.state.state : insight.kb_state) + "`";
  if (s.primary != "unknown") md += " — primary `" + s.primary + "`";
  if (insight.discovered) md += " (discovered: no known state explains this profile)";
  md += "\n\n";
  if (sol.compute_pct || sol.memory_pct) {
    md += "- Speed of light: compute " + (sol.compute_pct ? support::fixed_text(*sol.compute_pct, 1) + "%" : "?") + ", memory " +
          (sol.memory_pct ? support::fixed_text(*sol.memory_pct, 1) + "%" : "?");
    if (sol.dram_pct) md += " (DRAM " + support::fixed_text(*sol.dram_pct, 1) + "%)";
    md += "\n";
  }
  if (const auto rates = engine::achieved_rates_text(sol); !rates.empty()) md += "- Achieved: " + rates + "\n";
  if (const auto launch = engine::launch_text(s.launch); !launch.empty()) md += "- Launch: " + launch + "\n";
  if (sol.theoretical_occupancy_pct || sol.achieved_occupancy_pct) {
    md += "- Occupancy: ";
    if (sol.achieved_occupancy_pct) md += "achieved " + support::fixed_text(*sol.achieved_occupancy_pct, 1) + "%, ";
    if (sol.theoretical_occupancy_pct) md += "theoretical " + support::fixed_text(*sol.theoretical_occupancy_pct, 1) + "%";
    for (const auto& c : s.secondary)
      if (c.name.rfind("occupancy_limited_by_", 0) == 0) md += ", limited by " + c.name.substr(21);
    md += "\n";
  }
  for (const auto& e : s.primary_evidence) md += "- " + e + "\n";
  for (const auto& c : s.secondary) md += "- `" + c.name + "`: " + c.evidence + "\n";
  std::size_t rules = 0;
  for (const auto& f : s.findings) {
    if (rules++ >= 3) break;
    md += "- rule `" + f.rule + "`";
    if (f.estimated_speedup) md += " (est. " + support::fixed_text(*f.estimated_speedup, 0) + "%)";
    md += "\n";
  }
  md += strategies_or_error("**Strategies** (knowledge base)", insight);
  if (!insight.strategies.empty()) md += lessons_list(insight.lessons);
  if (const auto rt = last_runtime(a, v, insight))
    return md + "\nLast runtime: **" + format_ms(rt->runtime_ms) + "** (" + rt->source + ", " + utc_in_words(rt->when) + ")\n";
  return md + not_measured_line(a, "");
}

}  // namespace kblaster::server
