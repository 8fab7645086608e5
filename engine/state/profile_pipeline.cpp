// End-to-end profiling modes.
#include "engine/state/profile_pipeline.h"
#include "support/files.h"

#include "engine/profile/ncu_csv_parser.h"
#include "engine/profile/ncu_source_parser.h"
#include "engine/toolchain/nvcc_driver.h"
#include "engine/toolchain/occupancy.h"
#include "engine/toolchain/ptxas_parser.h"
#include "engine/profile/source_attribution.h"
#include "engine/source/launch_block.h"
#include "engine/state/program_profile_pipeline.h"
#include "engine/state/state_classifier.h"
#include "engine/toolchain/task_build.h"

#include <filesystem>
#include <map>
#include <optional>

namespace fs = std::filesystem;

namespace kblaster::engine {

namespace {

const state_namer& matcher_or_default(const state_namer* m) {
  static const signature_state_namer fallback;
  return m ? *m : fallback;
}

// The block static occupancy is computed for, and where it comes from (empty: assumed).
struct static_block {
  int threads = 0;
  std::string origin;
};

// Its __launch_bounds__ as compiled (the PTX's .maxntid: macros and template arguments
// expanded), else the launches written in the file when their block is a constant expression,
// else the assumed block.
static_block static_block_of(const kernel_resources& r, std::string_view source, int assumed) {
  if (r.max_threads_per_block > 0)
    return {r.max_threads_per_block, "its __launch_bounds__ (the compiled PTX's .maxntid " +
                                         std::to_string(r.max_threads_per_block) + ")"};
  std::string name = function_name_of(r.demangled_name);
  name = name.substr(0, name.find('<'));
  if (const auto colons = name.rfind("::"); colons != std::string::npos) name = name.substr(colons + 2);
  if (const auto launch = constant_launch_block(source, name))
    return {launch->threads, "the launch `<<<" + launch->configuration + ">>>` in the file"};
  return {assumed, ""};
}

}  // namespace

profile_outcome analyze_pages(const std::string& details_csv, const std::string& raw_csv, const std::string& source_csv,
                              const state_namer* matcher) {
  profile_outcome out;
  profile_report report;
  try {
    try {
      report = parse_ncu_details(details_csv);
    } catch (const ncu_parse_error&) {
      // A profile of counters alone (--metrics, no section) may print no details table: its raw
      // page holds every launch and metric.
      if (raw_csv.empty()) throw;
    }
    if (!raw_csv.empty()) merge_ncu_raw(report, raw_csv);
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  if (report.kernels.empty()) {
    out.error = "the report holds no kernel instance";
    return out;
  }
  out.warnings = report.warnings;
  std::map<std::string, std::vector<hot_line>> hot;  // by function name
  if (!source_csv.empty()) {
    try {
      // A kernel has a block per file its code comes from (inlined headers included): grouped
      // by function, so that its lines are ranked in its own file.
      const auto pages = parse_ncu_source(source_csv);
      std::map<std::string, std::vector<const source_page*>> by_function;
      for (const auto& page : pages) by_function[function_name_of(page.kernel)].push_back(&page);
      for (const auto& [function, pages_of_kernel] : by_function)
        if (auto lines = attribute_kernel_hot_lines(pages_of_kernel); !lines.empty()) hot[function] = std::move(lines);
    } catch (const std::exception& e) {
      out.warnings.push_back(std::string("source page ignored: ") + e.what());
    }
  }
  const auto& m = matcher_or_default(matcher);
  for (auto& sig : classify_report(report)) {
    kernel_view v;
    v.state = m.match(sig);
    if (auto it = hot.find(sig.function); it != hot.end()) v.hot_lines = it->second;
    v.signature = std::move(sig);
    out.kernels.push_back(std::move(v));
  }
  return out;
}

profile_outcome analyze_recorded(const std::string& details_csv_path, const std::optional<std::string>& raw_csv_path,
                                 const std::optional<std::string>& source_csv_path, const state_namer* matcher) {
  std::string details, raw, source;
  try {
    details = support::read_file(details_csv_path);
    if (raw_csv_path) raw = support::read_file(*raw_csv_path);
    if (source_csv_path) source = support::read_file(*source_csv_path);
  } catch (const std::exception& e) {
    profile_outcome out;
    out.error = e.what();
    return out;
  }
  return analyze_pages(details, raw, source, matcher);
}

std::optional<compile_result> compile_for_profile(const std::string& cu_path, const build_profile_options& options,
                                                output_kind kind, profile_outcome& out, bool keep_ptx) {
  const auto nvcc = find_nvcc();
  if (!nvcc) {
    out.error = "nvcc not found (looked in PATH, $CUDA_HOME/bin and /usr/local/cuda/bin)";
    return std::nullopt;
  }
  nvcc_driver driver(*nvcc, nvcc_driver::default_cache_dir());
  nvcc_options o;
  o.arch = options.arch;
  o.extra_flags = options.nvcc_flags;
  o.stop = options.stop;
  o.keep_ptx = keep_ptx;
  // Task kernels include dlpack/dlpack.h; where it is not on the default path, the same place
  // the harness builds use ($KBLASTER_DLPACK_INCLUDE).
  if (const auto dlpack = dlpack_include_dir(); !dlpack.empty()) o.extra_flags.push_back("-I" + dlpack);
  auto built = driver.compile(cu_path, kind, o);
  out.diagnostics = built.diagnostics;
  if (!built.ok) {
    out.error = "compilation failed";
    for (const auto& d : built.diagnostics)
      if (d.severity == diagnostic_severity::error) {
        out.error += ": " + (d.line > 0 ? fs::path(d.file).filename().string() + ":" + std::to_string(d.line) + ": " : "") +
                     d.message;
        break;
      }
    return std::nullopt;
  }
  return built;
}

profile_outcome analyze_static(const std::string& cu_path, const build_profile_options& options, const state_namer* matcher) {
  profile_outcome out;
  // The PTX kept on the way says each entry's __launch_bounds__ as the compiler read it.
  const auto compiled = compile_for_profile(cu_path, options, output_kind::object, out, true);
  if (!compiled) return out;
  const compile_result& built = *compiled;
  const auto limits = limits_for(built.arch);
  if (!limits) {
    out.error = "no occupancy data for " + built.arch + " (supported: compute capability 7.0 to 12.x)";
    return out;
  }
  const auto& m = matcher_or_default(matcher);
  std::string source;
  try {
    source = support::read_file(cu_path);
  } catch (const std::exception&) {
    // Built a moment ago: unreadable now only if it went; the launches are then unknown.
  }
  for (const auto& r : built.resources) {
    kernel_view v;
    const auto block = static_block_of(r, source, options.assumed_block_size);
    v.signature = classify_static(r, *limits, block.threads, 0, block.origin);
    v.state = m.match(v.signature);
    out.kernels.push_back(std::move(v));
  }
  if (out.kernels.empty()) out.warnings.push_back("no __global__ kernel in " + cu_path);
  return out;
}

profile_outcome profile_live(const std::string& cu_path, const build_profile_options& options, const state_namer* matcher) {
  profile_outcome out;
  const auto ncu = find_ncu();
  if (!ncu) {
    out.error = "ncu (Nsight Compute) not found in PATH, $CUDA_HOME/bin, /usr/local/cuda/bin or "
                "/opt/nvidia/nsight-compute; without it use: kblaster profile --static FILE.cu";
    return out;
  }
  const auto compiled = compile_for_profile(cu_path, options, output_kind::executable, out);
  if (!compiled) return out;
  // Built here from the file, the program is then profiled as any built program is: its
  // timeline first where the collector runs (program_profile_pipeline.h).
  build_profile_options o = options;
  if (o.ncu.report_base.empty()) o.ncu.report_base = fs::path(cu_path).stem().string();
  std::vector<std::string> program = {compiled->output_path};
  program.insert(program.end(), options.program_args.begin(), options.program_args.end());
  auto analysed = profile_built_program(*ncu, program, o, matcher);
  analysed.diagnostics = std::move(out.diagnostics);
  return analysed;
}

}  // namespace kblaster::engine
