// The program's profile: its timeline first, then ncu on the kernels worth it.
#include "engine/state/program_profile_pipeline.h"

#include "support/files.h"

#include <filesystem>
#include <regex>
#include <set>

namespace fs = std::filesystem;

namespace kblaster::engine {

namespace {

// "matmul<16>" and "ns::matmul" name the kernel the editor calls "matmul".
std::string plain_name(const std::string& function) {
  std::string name = function.substr(0, function.find('<'));
  if (const auto scope = name.rfind("::"); scope != std::string::npos) name = name.substr(scope + 2);
  return name;
}

kernel_time* kernel_of_view(program_profile& profile, const kernel_view& view) {
  for (auto& k : profile.kernels)
    if (k.name == view.signature.name || k.function == view.signature.function) return &k;
  for (auto& k : profile.kernels)
    if (plain_name(k.function) == plain_name(view.signature.function)) return &k;
  return nullptr;
}

// The ncu runs of `passes`, each with a report of its own, their views together.
profile_outcome profile_passes(const std::string& ncu_path, const std::vector<std::string>& program,
                               const std::vector<ncu_pass>& passes, const build_profile_options& options,
                               const state_namer* matcher) {
  profile_outcome out;
  ncu_options n = options.ncu;
  const std::string base = n.report_base.empty() ? fs::path(program.front()).stem().string() : n.report_base;
  if (!n.stop.stop_possible()) n.stop = options.stop;
  for (std::size_t i = 0; i < passes.size(); ++i) {
    n.kernel_name_base = "mangled";  // exact: two instantiations of a template are two kernels
    n.kernel_regex = passes[i].mangled_regex;
    n.launch_count = passes[i].launch_count;
    n.report_base = passes.size() == 1 ? base : base + "." + passes[i].functions.front();
    const auto run = run_ncu(ncu_path, n, program);
    if (!run.report_path.empty()) out.report_path += (out.report_path.empty() ? "" : ", ") + run.report_path;
    if (!run.ok) {
      out.error = run.error;
      return out;
    }
    auto analysed = analyze_pages(run.details_csv, run.raw_csv, run.source_csv, matcher);
    if (!analysed.error.empty()) {
      out.error = analysed.error;
      return out;
    }
    for (auto& k : analysed.kernels) out.kernels.push_back(std::move(k));
    out.warnings.insert(out.warnings.end(), analysed.warnings.begin(), analysed.warnings.end());
  }
  return out;
}

}  // namespace

void join_kernel_views(program_profile& profile, std::vector<kernel_view>& views) {
  std::vector<kernel_view> joined(profile.kernels.size()), unknown;
  std::vector<bool> filled(profile.kernels.size(), false);
  for (auto& v : views) {
    const kernel_time* k = kernel_of_view(profile, v);
    if (!k) {
      unknown.push_back(std::move(v));
      continue;
    }
    const auto at = static_cast<std::size_t>(k - profile.kernels.data());
    if (filled[at]) continue;  // a second launch of a kernel profiled already: the first speaks for it
    profile.kernels[at].headroom = headroom_of(v.signature.sol.compute_pct, v.signature.sol.memory_pct);
    joined[at] = std::move(v);
    filled[at] = true;
  }
  std::vector<kernel_view> out;
  for (std::size_t i = 0; i < joined.size(); ++i)
    if (filled[i]) out.push_back(std::move(joined[i]));
  for (auto& v : unknown) out.push_back(std::move(v));
  views = std::move(out);
}

std::optional<timed_program> timeline_of_program(const std::vector<std::string>& program, const build_profile_options& options,
                                                std::string& why_not) {
  const std::string base = options.ncu.report_base.empty() ? fs::path(program.front()).stem().string() : options.ncu.report_base;
  timeline_run_options t;
  t.output = base + ".timeline.jsonl";
  t.timeout = options.ncu.timeout;
  t.stop = options.stop;
  const auto ran = run_under_timeline(program, t);
  if (!ran.ok) {
    why_not = ran.error;
    return std::nullopt;
  }
  auto profile = aggregate_timeline(ran.timeline);
  if (profile.kernels.empty()) {
    why_not = "the timeline holds no kernel: CUPTI recorded nothing, or the program launched none";
    return std::nullopt;
  }
  profile.source = "CUPTI timeline of one run (" + t.output + ")";
  return timed_program{std::move(profile), ran.timeline};
}

std::optional<profile_outcome> profile_program_by_timeline(const std::string& ncu_path, const std::vector<std::string>& program,
                                                           const build_profile_options& options, const state_namer* matcher,
                                                           std::string& why_not) {
  if (!options.ncu.nvtx_include.empty()) {
    why_not = "an NVTX range was asked, which the timeline does not follow";
    return std::nullopt;
  }
  auto timed = timeline_of_program(program, options, why_not);
  if (!timed) return std::nullopt;
  auto& program_profile = timed->profile;
  std::vector<const kernel_time*> chosen = kernels_worth_profiling(program_profile, options.worth);
  if (!options.ncu.kernel_regex.empty()) {
    // The user's --kernel names what ncu sees, whatever its share.
    chosen.clear();
    try {
      const std::regex asked(options.ncu.kernel_regex);
      for (const auto& k : program_profile.kernels)
        if (std::regex_search(k.function, asked) && chosen.size() < options.worth.max_kernels) chosen.push_back(&k);
    } catch (const std::regex_error& e) {
      why_not = "the kernel filter is not a regular expression: " + std::string(e.what());
      return std::nullopt;
    }
  }
  const auto passes = plan_ncu_passes(timed->timeline, chosen);
  auto out = profile_passes(ncu_path, program, passes, options, matcher);
  join_kernel_views(program_profile, out.kernels);
  out.program = std::move(program_profile);
  return out;
}

profile_outcome profile_built_program(const std::string& ncu_path, const std::vector<std::string>& program,
                                      const build_profile_options& options, const state_namer* matcher) {
  std::string why_not = "off (--no-timeline)";
  if (options.timeline) {
    if (auto by_timeline = profile_program_by_timeline(ncu_path, program, options, matcher, why_not)) return std::move(*by_timeline);
  }
  ncu_options n = options.ncu;
  if (n.report_base.empty()) n.report_base = fs::path(program.front()).stem().string();
  if (!n.stop.stop_possible()) n.stop = options.stop;
  const auto run = run_ncu(ncu_path, n, program);
  profile_outcome out;
  if (run.ok) out = analyze_pages(run.details_csv, run.raw_csv, run.source_csv, matcher);
  else out.error = run.error;
  out.report_path = run.report_path;
  out.program_unavailable = "no program timeline: " + why_not + "; every launch was profiled";
  return out;
}

profile_outcome analyze_recorded_program(const std::string& timeline_path, const std::optional<std::string>& details_csv_path,
                                         const std::optional<std::string>& raw_csv_path,
                                         const std::optional<std::string>& source_csv_path, const state_namer* matcher) {
  profile_outcome out;
  program_timeline timeline;
  try {
    timeline = parse_timeline(support::read_file(timeline_path));
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  if (details_csv_path) out = analyze_recorded(*details_csv_path, raw_csv_path, source_csv_path, matcher);
  auto program = aggregate_timeline(timeline);
  program.source = "recorded: " + timeline_path;
  join_kernel_views(program, out.kernels);
  out.program = std::move(program);
  return out;
}

}  // namespace kblaster::engine
