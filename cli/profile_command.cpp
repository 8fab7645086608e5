// `kblaster profile`: classify a recorded Nsight Compute report, profile a program live on a
// GPU, or analyse a source statically (no GPU), printing the state, its evidence and the lines
// that hurt, or JSON with --json. A program is profiled by its timeline first: the table of its
// kernels' share of the GPU time over all their launches, then one section per kernel.
#include "cli/command_registry.h"
#include "cli/command_words.h"
#include "cli/interrupt_stop.h"
#include "engine/state/profile_pipeline.h"
#include "engine/state/program_profile_pipeline.h"
#include "support/run_process.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct profile_options {
  std::string file;
  std::vector<std::string> program_args;
  std::string ncu_csv;
  std::string ncu_raw;
  std::string ncu_source;
  bool static_only = false;
  bool json = false;
  std::string arch;
  int block_size = 256;
  std::string kernel;
  std::string nvtx;
  std::string clock_control = "base";
  std::string report;
  int timeout_s = 600;
  std::string timeline;              // a recorded timeline (the collector's JSON lines)
  bool no_timeline = false;
  std::string run_line, build_line;  // --run, --build: a program the user's own build makes
};

nlohmann::json diagnostics_json(const std::vector<kblaster::engine::diagnostic>& diags) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : diags)
    out.push_back({{"file", d.file}, {"line", d.line}, {"column", d.column},
                   {"severity", kblaster::engine::to_string(d.severity)}, {"code", d.code},
                   {"message", d.message}, {"tool", d.tool}});
  return out;
}

int print(const kblaster::engine::profile_outcome& o, bool json) {
  using namespace kblaster::engine;
  if (json) {
    nlohmann::json j;
    j["kernels"] = nlohmann::json::array();
    for (const auto& k : o.kernels) j["kernels"].push_back(to_json(k));
    if (o.program) j["program"] = to_json(*o.program);
    if (!o.program_unavailable.empty()) j["program_unavailable"] = o.program_unavailable;
    j["warnings"] = o.warnings;
    j["diagnostics"] = diagnostics_json(o.diagnostics);
    if (!o.report_path.empty()) j["report"] = o.report_path;
    if (!o.error.empty()) j["error"] = o.error;
    std::cout << j.dump(2) << "\n";
  } else {
    for (const auto& d : o.diagnostics)
      std::cerr << (d.file.empty() ? std::string("nvcc") : d.file) << ":" << d.line << ":" << d.column << ": "
                << to_string(d.severity) << ": " << d.message << "\n";
    for (const auto& w : o.warnings) std::cerr << "kblaster: warning: " << w << "\n";
    if (!o.program_unavailable.empty()) std::cerr << "kblaster: note: " << o.program_unavailable << "\n";
    if (o.program) std::cout << program_table_text(*o.program) << "\n";
    for (const auto& k : o.kernels) std::cout << render_human(k) << "\n";
    if (!o.report_path.empty()) std::cout << "Nsight Compute report kept at " << o.report_path << "\n";
    if (!o.error.empty()) std::cerr << "kblaster: " << o.error << "\n";
  }
  return o.error.empty() ? 0 : 1;
}

std::optional<std::string> optional_path(const std::string& path) {
  return path.empty() ? std::nullopt : std::optional<std::string>(path);
}

// What a stopped profile may leave half written: ncu's reports named after `base` (one per kernel,
// "BASE.KERNEL.ncu-rep", and the pages exported beside each), in base's folder. Those the run
// made are removed when it was stopped; files there before it are the user's and stay.
class report_files_of_run {
 public:
  explicit report_files_of_run(const fs::path& base)
      : folder_(base.parent_path().empty() ? fs::path(".") : base.parent_path()), prefix_(base.filename().string() + ".") {
    before_ = names();
  }
  void remove_new() const {
    std::error_code ec;
    for (const auto& name : names())
      if (!before_.count(name)) fs::remove_all(folder_ / name, ec);
  }

 private:
  std::set<std::string> names() const {
    std::set<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder_, ec))
      if (const auto name = e.path().filename().string(); name.starts_with(prefix_)) out.insert(name);
    return out;
  }
  fs::path folder_;
  std::string prefix_;
  std::set<std::string> before_;
};

// A stopped profile prints nothing of what it had: it says so, leaves no report of its own, and
// ends with the shell's status for an interrupt.
int interrupted(const report_files_of_run& reports) {
  reports.remove_new();
  std::cerr << "kblaster profile: interrupted: nothing was profiled\n";
  return 130;
}

// --run PROGRAM [--build CMD]: the user's build, then the program it made, profiled as it is.
int run_user_program(const profile_options& opts, const kblaster::engine::build_profile_options& b) {
  using namespace kblaster;
  const auto ncu = engine::find_ncu();
  if (!ncu) {
    std::cerr << "kblaster profile: ncu (Nsight Compute) not found; without it use --static\n";
    return 1;
  }
  auto program = cli::command_words(opts.run_line);
  program.insert(program.end(), opts.program_args.begin(), opts.program_args.end());
  const report_files_of_run reports(b.ncu.report_base.empty() ? fs::path(program.front()).stem() : fs::path(b.ncu.report_base));
  if (const auto build = cli::command_words(opts.build_line); !build.empty()) {
    const auto built = support::run_process(build, std::chrono::minutes(30), std::nullopt, b.stop);
    if (built.cancelled) return interrupted(reports);
    if (!built.ok()) {
      std::cerr << built.out << built.err << "kblaster profile: the build (" << opts.build_line << ") failed\n";
      return 1;
    }
  }
  const auto outcome = engine::profile_built_program(*ncu, program, b);
  if (b.stop.stop_requested()) return interrupted(reports);
  return print(outcome, opts.json);
}

int run_profile(const profile_options& opts) {
  using namespace kblaster::engine;
  if (!opts.timeline.empty())
    return print(analyze_recorded_program(opts.timeline, optional_path(opts.ncu_csv), optional_path(opts.ncu_raw),
                                          optional_path(opts.ncu_source)),
                 opts.json);
  if (!opts.ncu_csv.empty())
    return print(analyze_recorded(opts.ncu_csv, optional_path(opts.ncu_raw), optional_path(opts.ncu_source)), opts.json);
  if (opts.file.empty() && opts.run_line.empty()) {
    std::cerr << "kblaster profile: give FILE.cu, --run PROGRAM, or --ncu-csv DETAILS.csv (see --help)\n";
    return 2;
  }
  build_profile_options b;
  b.arch = opts.arch;
  b.assumed_block_size = opts.block_size;
  b.program_args = opts.program_args;
  b.ncu.kernel_regex = opts.kernel;
  b.ncu.nvtx_include = opts.nvtx;
  b.ncu.clock_control = opts.clock_control;
  b.ncu.report_base = opts.report;
  b.ncu.timeout = std::chrono::seconds(opts.timeout_s);
  b.timeline = !opts.no_timeline;
  kblaster::cli::interrupt_stop ctrl_c("kblaster profile", "the compiler, ncu or the program in flight is stopped");
  b.stop = ctrl_c.token();
  if (!opts.run_line.empty()) return run_user_program(opts, b);
  const report_files_of_run reports(opts.report.empty() ? fs::path(opts.file).stem() : fs::path(opts.report));
  const auto outcome = opts.static_only ? analyze_static(opts.file, b) : profile_live(opts.file, b);
  if (b.stop.stop_requested()) return interrupted(reports);
  return print(outcome, opts.json);
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto* app = root.add_subcommand(
      "profile",
      "Profile CUDA kernels and classify their performance state.\n"
      "  kblaster profile FILE.cu [-- ARGS]       build and profile on this machine's GPU (ncu)\n"
      "  kblaster profile --ncu-csv DETAILS.csv   classify a recorded report, running nothing\n"
      "  kblaster profile --static FILE.cu        ptxas resources and occupancy, no GPU needed\n"
      "  kblaster profile --run PROG [--build CMD] [-- ARGS]   a program your own build makes\n"
      "  kblaster profile --timeline T.jsonl [--ncu-csv D.csv]  a recorded timeline (and report), running nothing\n"
      "A program runs once under the CUPTI timeline collector (libkblaster_timeline.so): its kernels' share of\n"
      "the GPU time over all their launches and the GPU's idle time come first; ncu then profiles one launch\n"
      "of each kernel worth it (5 % of the kernel time or more, the top 3), not every launch.");
  auto opts = std::make_shared<profile_options>();
  app->add_option("file", opts->file, "CUDA source with a main() (live) or any kernels (--static)");
  app->add_option("args", opts->program_args, "arguments of the profiled program (after --)");
  app->add_option("--ncu-csv", opts->ncu_csv, "details page: ncu -i R.ncu-rep --csv --page details --print-details all");
  app->add_option("--ncu-raw", opts->ncu_raw, "raw page: ncu -i R.ncu-rep --csv --page raw --print-units base");
  app->add_option("--ncu-source", opts->ncu_source, "source page of a -lineinfo build: --page source --print-source cuda,sass");
  app->add_flag("--static", opts->static_only, "static analysis only: ptxas -v and the occupancy calculator");
  app->add_flag("--json", opts->json, "print JSON: one object per kernel instance under \"kernels\"");
  app->add_option("--arch", opts->arch, "target architecture, e.g. sm_90 (default: the local GPU's, else sm_90)");
  app->add_option("--block-size", opts->block_size, "static mode: block size to compute occupancy for")->check(CLI::Range(1, 1024));
  app->add_option("--kernel", opts->kernel, "live mode: profile kernels whose name matches this regex");
  app->add_option("--nvtx", opts->nvtx, "live mode: profile only inside this NVTX range");
  app->add_option("--clock-control", opts->clock_control, "live mode: ncu clock control (base, none, reset)");
  app->add_option("--report", opts->report, "live mode: where to keep the .ncu-rep (without extension)");
  app->add_option("--timeline", opts->timeline, "a recorded timeline: the collector's JSON lines (KBLASTER_TIMELINE_OUT)");
  app->add_flag("--no-timeline", opts->no_timeline, "live mode: no timeline run; ncu profiles every launch");
  app->add_option("--run", opts->run_line, "a program your own build makes, run instead of building FILE");
  app->add_option("--build", opts->build_line, "with --run: the command that builds it, run first (e.g. \"make app\")");
  app->add_option("--timeout", opts->timeout_s, "live mode: seconds before profiling is abandoned")->check(CLI::PositiveNumber);
  app->get_option("--static")->excludes(app->get_option("--ncu-csv"));
  app->get_option("--build")->needs(app->get_option("--run"));
  return kblaster::cli::command{app, [opts] { return run_profile(*opts); }};
});

}  // namespace
