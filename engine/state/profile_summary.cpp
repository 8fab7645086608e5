// Text and JSON renderings of classified kernels.
#include "engine/state/profile_summary.h"
#include "support/text.h"

#include "engine/state/state_classifier.h"

#include <cstdio>
#include <sstream>

namespace kblaster::engine {

namespace {


nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string sol_line(const sol_figures& f) {
  std::string s;
  auto item = [&](const char* label, const std::optional<double>& v, const char* unit) {
    if (!v) return;
    if (!s.empty()) s += ", ";
    s += std::string(label) + " " + support::fixed_text(*v, 1) + unit;
  };
  item("SM", f.compute_pct, "%");
  item("Memory", f.memory_pct, "%");
  item("DRAM", f.dram_pct, "%");
  item("L2", f.l2_pct, "%");
  item("L1/TEX", f.l1_pct, "%");
  if (f.duration_us && *f.duration_us >= 1000) item("duration", *f.duration_us / 1000, " ms");
  else item("duration", f.duration_us, " us");
  item("theoretical occupancy", f.theoretical_occupancy_pct, "%");
  item("achieved occupancy", f.achieved_occupancy_pct, "%");
  return s;
}

std::string dim3_text(const dim3_value& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

// 2.59e12 -> "2.59 T"; the unit follows.
std::string si_text(double v) {
  static const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i < 5) { v /= 1000; ++i; }
  return support::fixed_text(v, v < 10 ? 2 : v < 100 ? 1 : 0) + " " + prefixes[i];
}

// "63.0 global-load sectors per DRAM sector read (data is re-read)": whether there is
// anything for tiling to keep on chip.
std::string reuse_line(double reuse) {
  return support::fixed_text(reuse, 1) + " global-load sectors per DRAM sector read (" +
         (reuse >= classifier_thresholds{}.data_reuse_ratio ? "data is re-read: on-chip reuse can pay"
                                                            : "each byte is read about once: nothing to tile") +
         ")";
}

std::string hot_line_text(const hot_line& h) {
  std::string where = h.line > 0 ? "line " + std::to_string(h.line) : std::string("sass");
  std::string what = h.reason == hot_reason::stall_samples ? support::fixed_text(h.share * 100, 0) + "% of stall samples"
                     : h.reason == hot_reason::uncoalesced_global ? support::fixed_text(h.share * 100, 0) + "% of excessive global sectors"
                                                                  : support::fixed_text(h.share * 100, 0) + "% of excessive shared wavefronts";
  if (h.reason == hot_reason::stall_samples && !h.top_stall.empty()) what += " (mostly " + h.top_stall + ")";
  if (!h.inlined_from.empty()) what += ", " + support::fixed_text(h.inlined_share * 100, 0) + "% of it in " + h.inlined_from + " (inlined)";
  return where + ": " + what + ": " + h.text;
}

}  // namespace

std::string device_text(const device_facts& d) {
  if (d.name.empty() && !d.sm_count) return "";
  auto kib = [](double b) { return support::fixed_text(b / 1024, 0) + " KiB"; };
  std::string s = d.name.empty() ? "a GPU" : d.name;
  if (!d.compute_capability.empty()) s += " (compute capability " + d.compute_capability + ")";
  if (d.sm_count) s += ", " + support::fixed_text(*d.sm_count, 0) + " SMs";
  if (d.l2_bytes) s += ", " + support::fixed_text(*d.l2_bytes / (1024 * 1024), 0) + " MiB L2";
  if (d.shared_bytes_per_sm) s += ", " + kib(*d.shared_bytes_per_sm) + " shared memory per SM";
  if (d.shared_bytes_per_block_optin) s += " (" + kib(*d.shared_bytes_per_block_optin) + " per block opted in)";
  if (d.registers_per_sm) s += ", " + support::fixed_text(*d.registers_per_sm, 0) + " registers per SM";
  return s;
}

std::string summarize_for_prompt(const kernel_view& v, std::size_t max_chars) {
  const auto& s = v.signature;
  std::ostringstream o;
  o << "Kernel " << s.function << (s.static_only ? " (static analysis only)" : "") << "\n";
  // What an engineer asks first: the GPU, the launch and its resources, the time and where it
  // sits against the GPU's peaks.
  if (const auto gpu = device_text(s.device); !gpu.empty()) o << "GPU: " << gpu << "\n";
  if (const auto launch = launch_text(s.launch); !launch.empty()) o << "Launch: " << launch << "\n";
  if (!s.static_only && s.sol.duration_us) {
    o << "Time: " << support::fixed_text(*s.sol.duration_us, 1) << " us";
    if (const auto rates = achieved_rates_text(s.sol); !rates.empty()) o << "; achieved " << rates;
    o << "\n";
  }
  o << "State: " << v.state.state << "\n";
  o << "Primary: " << s.primary << "\n";
  for (const auto& e : s.primary_evidence) o << "  - " << e << "\n";
  if (!s.static_only) o << "SOL: " << sol_line(s.sol) << "\n";
  if (s.global_load_reuse) o << "Reuse: " << reuse_line(*s.global_load_reuse) << "\n";
  if (!s.secondary.empty()) {
    o << "Secondary:\n";
    for (const auto& c : s.secondary) o << "  - " << c.name << ": " << c.evidence << "\n";
  }
  if (!s.findings.empty()) {
    o << "Top ncu findings (est. speedup):\n";
    for (std::size_t i = 0; i < s.findings.size() && i < 3; ++i)
      o << "  - " << s.findings[i].rule << " " << support::fixed_text(s.findings[i].estimated_speedup.value_or(0), 1) << "%\n";
  }
  if (!v.hot_lines.empty()) {
    o << "Hot lines:\n";
    for (std::size_t i = 0; i < v.hot_lines.size() && i < 4; ++i) o << "  - " << hot_line_text(v.hot_lines[i]) << "\n";
  }
  if (!s.unknown.empty()) {
    o << "Unknown:";
    for (const auto& u : s.unknown) o << " " << u << ";";
    o << "\n";
  }
  std::string out = o.str();
  if (out.size() > max_chars) out = out.substr(0, max_chars - 4) + "...\n";
  return out;
}

std::string render_human(const kernel_view& v) {
  const auto& s = v.signature;
  std::ostringstream o;
  o << "== " << (s.static_only ? "" : "[" + std::to_string(s.id) + "] ") << s.name << "\n";
  o << "   state:   " << v.state.description << "\n";
  o << "   primary: " << s.primary << (s.sol_band.empty() ? "" : "  (" + s.sol_band + ")") << "\n";
  for (const auto& e : s.primary_evidence) o << "            " << e << "\n";
  if (!s.static_only) o << "   SOL:     " << sol_line(s.sol) << "\n";
  if (const auto rates = achieved_rates_text(s.sol); !s.static_only && !rates.empty()) o << "   rates:   " << rates << "\n";
  if (const auto launch = launch_text(s.launch); !launch.empty()) o << "   launch:  " << launch << "\n";
  if (s.global_load_reuse) o << "   reuse:   " << reuse_line(*s.global_load_reuse) << "\n";
  if (s.static_only && s.sol.theoretical_occupancy_pct)
    o << "   theoretical occupancy: " << support::fixed_text(*s.sol.theoretical_occupancy_pct, 0) << "%\n";
  for (const auto& c : s.secondary) {
    o << "   + " << c.name;
    if (c.estimated_speedup) o << " (up to " << support::fixed_text(*c.estimated_speedup, 1) << "% faster)";
    o << "\n       " << c.evidence << "\n";
  }
  if (!s.findings.empty()) {
    o << "   top findings:\n";
    for (const auto& f : s.findings)
      o << "     " << support::fixed_text(f.estimated_speedup.value_or(0), 1) << "%  " << f.rule << ": " << f.text << "\n";
  }
  if (!v.hot_lines.empty()) {
    o << "   lines that hurt:\n";
    for (const auto& h : v.hot_lines) o << "     " << hot_line_text(h) << "\n";
  }
  for (const auto& u : s.unknown) o << "   unknown: " << u << "\n";
  return o.str();
}

std::string launch_text(const launch_config& l) {
  if (l.grid.total() <= 0 || l.block.total() <= 0 || (l.grid.total() == 1 && l.block.total() == 1 && !l.registers_per_thread))
    return "";
  std::string s = "grid " + dim3_text(l.grid) + " x block " + dim3_text(l.block);
  if (l.registers_per_thread) s += ", " + support::fixed_text(*l.registers_per_thread, 0) + " registers/thread";
  const double shared = l.static_shared_bytes.value_or(0) + l.dynamic_shared_bytes.value_or(0);
  if (shared > 0) s += ", " + (shared >= 1024 ? support::fixed_text(shared / 1024, 1) + " KiB" : support::fixed_text(shared, 0) + " B") + " shared/block";
  return s;
}

std::string achieved_rates_text(const sol_figures& f) {
  std::string s;
  auto rate = [&](const char* what, const std::optional<double>& got, const std::optional<double>& peak, const char* unit) {
    if (!got) return;
    if (!s.empty()) s += "; ";
    s += std::string(what) + " " + si_text(*got) + unit;
    if (peak && *peak > 0) s += " of " + si_text(*peak) + unit + " (" + support::fixed_text(100 * *got / *peak, 1) + "%)";
  };
  rate("DRAM", f.dram_bytes_per_s, f.dram_peak_bytes_per_s, "B/s");
  rate("FP32", f.fp32_flops_per_s, f.fp32_peak_flops_per_s, "FLOP/s");
  return s;
}

nlohmann::json to_json(const kernel_view& v) {
  const auto& s = v.signature;
  nlohmann::json j;
  j["id"] = s.id;
  j["name"] = s.name;
  j["function"] = s.function;
  j["primary"] = s.primary;
  j["secondary"] = s.secondary_names();
  j["sol_band"] = s.sol_band;
  if (!s.memory_level.empty()) j["memory_level"] = s.memory_level;
  j["primary_evidence"] = s.primary_evidence;
  nlohmann::json ev = nlohmann::json::object();
  for (const auto& c : s.secondary) ev[c.name] = {{"evidence", c.evidence}, {"estimated_speedup", opt(c.estimated_speedup)}};
  j["secondary_evidence"] = ev;
  j["sol"] = {{"compute_pct", opt(s.sol.compute_pct)},   {"memory_pct", opt(s.sol.memory_pct)},
              {"dram_pct", opt(s.sol.dram_pct)},         {"l2_pct", opt(s.sol.l2_pct)},
              {"l1_pct", opt(s.sol.l1_pct)},             {"duration_us", opt(s.sol.duration_us)},
              {"waves_per_sm", opt(s.sol.waves_per_sm)},
              {"theoretical_occupancy_pct", opt(s.sol.theoretical_occupancy_pct)},
              {"achieved_occupancy_pct", opt(s.sol.achieved_occupancy_pct)},
              {"dram_bytes_per_s", opt(s.sol.dram_bytes_per_s)},   {"dram_peak_bytes_per_s", opt(s.sol.dram_peak_bytes_per_s)},
              {"fp32_flops_per_s", opt(s.sol.fp32_flops_per_s)},   {"fp32_peak_flops_per_s", opt(s.sol.fp32_peak_flops_per_s)}};
  const auto dims = [](const dim3_value& d) { return nlohmann::json::array({d.x, d.y, d.z}); };
  j["launch"] = {{"grid", dims(s.launch.grid)}, {"block", dims(s.launch.block)},
                 {"registers_per_thread", opt(s.launch.registers_per_thread)},
                 {"static_shared_bytes", opt(s.launch.static_shared_bytes)},
                 {"dynamic_shared_bytes", opt(s.launch.dynamic_shared_bytes)}};
  if (s.global_load_reuse) j["global_load_reuse"] = *s.global_load_reuse;
  if (s.ffma_share) j["ffma_share"] = *s.ffma_share;
  if (s.fp32_share) j["fp32_share"] = *s.fp32_share;
  if (s.matrix_product) j["matrix_product"] = true;
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : s.findings)
    findings.push_back({{"rule", f.rule}, {"type", f.type}, {"estimated_speedup", opt(f.estimated_speedup)},
                        {"speedup_type", f.speedup_type}, {"text", f.text}});
  j["findings"] = findings;
  nlohmann::json hot = nlohmann::json::array();
  for (const auto& h : v.hot_lines)
    hot.push_back({{"file", h.file}, {"line", h.line}, {"text", h.text}, {"reason", to_string(h.reason)},
                   {"share", h.share}, {"amount", h.amount}, {"top_stall", h.top_stall},
                   {"inlined_from", h.inlined_from}, {"inlined_share", h.inlined_share}});
  j["hot_lines"] = hot;
  j["state"] = {{"key", v.state.state}, {"description", v.state.description}, {"confidence", v.state.confidence}};
  j["unknown"] = s.unknown;
  j["static_only"] = s.static_only;
  return j;
}

}  // namespace kblaster::engine
