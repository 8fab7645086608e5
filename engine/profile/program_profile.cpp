// Aggregating a timeline into the program's profile, and its renderings.
#include "engine/profile/program_profile.h"
#include "support/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace kblaster::engine {

namespace {


// The union of [start, end) spans: overlapping streams count once.
double union_us(std::vector<std::pair<std::uint64_t, std::uint64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  std::uint64_t busy = 0, open_start = 0, open_end = 0;
  bool open = false;
  for (const auto& [start, end] : spans) {
    if (open && start <= open_end) {
      open_end = std::max(open_end, end);
      continue;
    }
    if (open) busy += open_end - open_start;
    open_start = start;
    open_end = end;
    open = true;
  }
  if (open) busy += open_end - open_start;
  return static_cast<double>(busy) / 1000;
}

gpu_activity gpu_activity_of(const program_timeline& timeline) {
  gpu_activity g;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  std::uint64_t first = UINT64_MAX, last = 0;
  for (const auto& a : timeline.activities) {
    if (a.end_ns <= a.start_ns) continue;  // no timestamps (CUPTI could not collect them)
    spans.emplace_back(a.start_ns, a.end_ns);
    first = std::min(first, a.start_ns);
    last = std::max(last, a.end_ns);
    const double us = static_cast<double>(a.duration_ns()) / 1000;
    if (a.kind == activity_kind::kernel) g.kernel_us += us;
    if (a.kind == activity_kind::memcpy) g.memcpy_us += us, ++g.memcpys;
    if (a.kind == activity_kind::memset) g.memset_us += us, ++g.memsets;
  }
  if (spans.empty()) return g;
  g.span_us = static_cast<double>(last - first) / 1000;
  g.busy_us = union_us(std::move(spans));
  g.idle_us = std::max(0.0, g.span_us - g.busy_us);
  return g;
}

std::string kernel_key(const timeline_activity& a) { return a.mangled.empty() ? a.name : a.mangled; }

// Kernel launches in the order the host made them (CUPTI's correlation ids grow with each call).
std::vector<const timeline_activity*> launches_in_call_order(const program_timeline& timeline) {
  std::vector<const timeline_activity*> out;
  for (const auto& a : timeline.activities)
    if (a.kind == activity_kind::kernel) out.push_back(&a);
  std::stable_sort(out.begin(), out.end(), [](const auto* x, const auto* y) {
    return x->correlation != y->correlation ? x->correlation < y->correlation : x->start_ns < y->start_ns;
  });
  return out;
}

std::string headroom_text(const std::optional<double>& h) {
  if (!h) return "-";
  return "~" + (*h < 2 ? support::fixed_text(*h, 1) : support::fixed_text(std::round(*h), 0)) + "x";
}

std::string share_text(double pct) { return pct < 1 && pct > 0 ? "<1%" : support::fixed_text(std::round(pct), 0) + "%"; }

// "0.22 ms", "1520.33 ms" reads worse than "1.52 s": the program's figures in ms up to a second.
std::string program_ms(double us) { return us >= 1e6 ? support::seconds_text(us / 1e6, 2) : support::ms_text(us / 1000, 2); }

// A duration in microseconds in the unit it reaches: s or ms with two decimals, else us with
// `us_digits`.
std::string scaled_duration(double us, int us_digits) {
  if (us >= 1e6) return support::seconds_text(us / 1e6, 2);
  if (us >= 1000) return support::ms_text(us / 1000, 2);
  return support::us_text(us, us_digits);
}

// The table's columns: a tenth of a microsecond below a millisecond, then ms or s.
std::string table_duration(double us) { return scaled_duration(us, 1); }

}  // namespace

const kernel_time* program_profile::kernel(const std::string& function) const {
  for (const auto& k : kernels)
    if (k.function == function || k.name == function) return &k;
  // The editor names a template or a kernel in a namespace by its plain name.
  const auto plain = [](const std::string& f) {
    std::string name = f.substr(0, f.find('<'));
    const auto scope = name.rfind("::");
    return scope == std::string::npos ? name : name.substr(scope + 2);
  };
  for (const auto& k : kernels)
    if (plain(k.function) == function) return &k;
  return nullptr;
}

program_profile aggregate_timeline(const program_timeline& timeline) {
  program_profile out;
  out.gpu = gpu_activity_of(timeline);
  out.warnings = timeline_warnings(timeline);
  std::map<std::string, std::size_t> index;  // by mangled name
  for (const auto* a : launches_in_call_order(timeline)) {
    auto [at, fresh] = index.try_emplace(kernel_key(*a), out.kernels.size());
    if (fresh) out.kernels.push_back({a->function, a->name, a->mangled, 0, 0, 0, 0, std::nullopt});
    auto& k = out.kernels[at->second];
    ++k.launches;
    k.total_us += static_cast<double>(a->duration_ns()) / 1000;
  }
  for (auto& k : out.kernels) {
    k.mean_us = k.launches ? k.total_us / static_cast<double>(k.launches) : 0;
    k.share_pct = out.gpu.kernel_us > 0 ? 100 * k.total_us / out.gpu.kernel_us : 0;
  }
  // Largest first; a tie keeps the order of first launch (stable).
  std::stable_sort(out.kernels.begin(), out.kernels.end(), [](const auto& x, const auto& y) { return x.total_us > y.total_us; });
  return out;
}

std::optional<double> headroom_of(std::optional<double> compute_pct, std::optional<double> memory_pct) {
  const double busiest = std::max(compute_pct.value_or(0), memory_pct.value_or(0));
  if (busiest <= 0) return std::nullopt;
  return 100 / std::min(busiest, 100.0);
}

std::vector<const kernel_time*> kernels_worth_profiling(const program_profile& profile, const worth_profiling_policy& policy) {
  std::vector<const kernel_time*> out;
  for (const auto& k : profile.kernels) {
    if (out.size() >= policy.max_kernels) break;
    if (out.empty() || k.share_pct >= policy.min_share_pct) out.push_back(&k);
  }
  return out;
}

std::vector<ncu_pass> plan_ncu_passes(const program_timeline& timeline, const std::vector<const kernel_time*>& chosen,
                                      int max_wasted_launches) {
  std::vector<ncu_pass> out;
  if (chosen.empty()) return out;
  std::set<std::string> wanted, seen;
  for (const auto* k : chosen) wanted.insert(k->mangled.empty() ? k->name : k->mangled);
  // ncu counts only the launches its filter matches: how many of those come before the last
  // chosen kernel's first launch is how many one run must profile.
  int count = 0;
  for (const auto* a : launches_in_call_order(timeline)) {
    if (!wanted.count(kernel_key(*a))) continue;
    ++count;
    seen.insert(kernel_key(*a));
    if (seen.size() == wanted.size()) break;
  }
  const auto one_pass = [](const std::vector<const kernel_time*>& kernels, int launches) {
    ncu_pass p;
    std::string alternatives;
    for (const auto* k : kernels) {
      alternatives += (alternatives.empty() ? "" : "|") + (k->mangled.empty() ? k->name : k->mangled);
      p.functions.push_back(k->function);
    }
    p.mangled_regex = kernels.size() == 1 ? "^" + alternatives + "$" : "^(" + alternatives + ")$";
    p.launch_count = launches;
    return p;
  };
  if (count - static_cast<int>(wanted.size()) <= max_wasted_launches) {
    out.push_back(one_pass(chosen, std::max(count, 1)));
    return out;
  }
  for (const auto* k : chosen) out.push_back(one_pass({k}, 1));
  return out;
}

std::string duration_text(double us) { return scaled_duration(us, us >= 100 ? 0 : 1); }

std::string program_table_text(const program_profile& profile) {
  std::size_t width = 6;
  for (const auto& k : profile.kernels) width = std::max(width, k.function.size());
  std::ostringstream o;
  char row[512];
  std::snprintf(row, sizeof row, "%-*s  %8s  %10s  %10s  %6s  %8s\n", static_cast<int>(width), "kernel", "launches", "total",
                "mean", "share", "headroom");
  o << row;
  for (const auto& k : profile.kernels) {
    std::snprintf(row, sizeof row, "%-*s  %8ld  %10s  %10s  %6s  %8s\n", static_cast<int>(width), k.function.c_str(),
                  k.launches, table_duration(k.total_us).c_str(), table_duration(k.mean_us).c_str(),
                  (support::fixed_text(k.share_pct, 1) + "%").c_str(), headroom_text(k.headroom).c_str());
    o << row;
  }
  const auto& g = profile.gpu;
  o << "program: GPU busy " << program_ms(g.busy_us) << ", idle " << program_ms(g.idle_us) << " ("
    << support::fixed_text(g.idle_pct(), 0) << " %) over " << program_ms(g.span_us);
  if (g.memcpys > 0) o << "; " << g.memcpys << (g.memcpys == 1 ? " copy, " : " copies, ") << duration_text(g.memcpy_us);
  o << "\n";
  for (const auto& w : profile.warnings) o << "  note: " << w << "\n";
  return o.str();
}

std::string kernel_time_line(const kernel_time& k) {
  std::string line = share_text(k.share_pct) + " of GPU time · " + std::to_string(k.launches) +
                     (k.launches == 1 ? " launch · " : " launches · ") + duration_text(k.total_us);
  if (k.launches > 1) line += " (" + duration_text(k.mean_us) + " each)";
  if (k.headroom) line += " · headroom " + headroom_text(k.headroom);
  return line;
}

std::string program_line(const program_profile& profile) {
  const auto n = profile.kernels.size();
  return "program: GPU busy " + program_ms(profile.gpu.busy_us) + ", idle " + program_ms(profile.gpu.idle_us) + " · " +
         std::to_string(n) + (n == 1 ? " kernel" : " kernels");
}

nlohmann::json to_json(const program_profile& profile) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : profile.kernels)
    kernels.push_back({{"function", k.function}, {"name", k.name}, {"mangled", k.mangled}, {"launches", k.launches},
                       {"total_us", k.total_us}, {"mean_us", k.mean_us}, {"share_pct", k.share_pct},
                       {"headroom", k.headroom ? nlohmann::json(*k.headroom) : nlohmann::json(nullptr)}});
  const auto& g = profile.gpu;
  return {{"kernels", kernels},
          {"gpu", {{"span_us", g.span_us}, {"busy_us", g.busy_us}, {"idle_us", g.idle_us}, {"idle_pct", g.idle_pct()},
                   {"kernel_us", g.kernel_us}, {"memcpy_us", g.memcpy_us}, {"memset_us", g.memset_us},
                   {"memcpys", g.memcpys}, {"memsets", g.memsets}}},
          {"warnings", profile.warnings},
          {"source", profile.source}};
}

}  // namespace kblaster::engine
