// The Nsight Compute runner: builds the ncu command (sections, kernel filter by regex or NVTX
// range, explicit clock control), keeps the .ncu-rep for the Nsight Compute GUI, exports the
// details, raw and source pages as CSV, and turns failures into clear messages.
#pragma once

#include "support/run_process.h"
#include "support/sandbox.h"

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kblaster::engine {

/// One section asked of ncu: its identifier (for --section), the name its metric rows carry on
/// the details page (its rule rows carry the identifier), and what kblaster reads from it. Each
/// costs replay passes; tests/unit/engine/profile/ncu_sections_test.cpp holds the list to what the
/// classifier and the hover read on every recorded H100 report (none missing, none unread).
struct ncu_section {
  std::string identifier;    // "SpeedOfLight"
  std::string display_name;  // "GPU Speed Of Light Throughput"
  std::string read_for;      // what depends on it
};

/// The sections profiled, with why.
const std::vector<ncu_section>& requested_ncu_sections();

/// Their identifiers: what ncu_options asks for by default.
const std::vector<std::string>& default_ncu_sections();

/// The sections the optimization loop's profiles ask for (harness_evaluator_profile): those its
/// state (primary and secondary), KB evidence and prompt summary read; the hover's view, which
/// the loop only records, asks nothing of its own. tests/unit/engine/profile/ncu_loop_sections_test.cpp
/// holds it to that on every recorded H100 report (none missing, none unread). Today every
/// requested section is among them; the comment in ncu_runner.cpp says what keeps each.
const std::vector<std::string>& loop_ncu_sections();

/// The raw counters a state is classified from without any section or ncu rule: what
/// state_classifier reads by its raw-page name, plus those that stand in for the rules of the
/// memory tables and SourceCounters (global sectors per request, shared-memory wavefronts and
/// bank conflicts, branch uniformity). ncu records the launch__* and device__* attributes with
/// any of them. tests/unit/engine/profile/ncu_state_metrics_test.cpp holds a state from these alone
/// to the state from the editor's sections on every recorded H100 report.
const std::vector<std::string>& state_ncu_metrics();

/// Metrics collected beside the sections: those the achieved DRAM bandwidth and FP32 FLOP rate
/// against the GPU's peaks are computed from (state_classifier's sol_figures).
const std::vector<std::string>& default_ncu_metrics();

/// Options of one profiling run.
struct ncu_options {
  std::vector<std::string> sections = default_ncu_sections();
  std::vector<std::string> metrics = default_ncu_metrics();  // --metrics, beside the sections
  std::string kernel_regex;     // -k regex:…; empty: all kernels
  std::string kernel_name_base; // --kernel-name-base (function, demangled, mangled) the regex matches; empty: ncu's
  std::string nvtx_include;     // --nvtx --nvtx-include …; empty: no NVTX filter
  std::string clock_control = "base";  // always passed explicitly: base, none, reset
  int launch_count = 0;         // -c N; 0: every matching launch
  std::string report_base;      // output path without ".ncu-rep"
  bool import_source = true;
  std::chrono::seconds timeout{600};
  std::stop_token stop;         // a stop kills ncu and its program (the run comes back cancelled)
  /// Profiles inside this sandbox (candidate code: the report's folder must be writable in it).
  std::optional<support::sandbox_policy> sandbox;
};

/// The ncu command line that profiles `program` (argv) with `options`, starting with `ncu_path`.
std::vector<std::string> build_ncu_command(const std::string& ncu_path, const ncu_options& options,
                                           const std::vector<std::string>& program);

/// Path of ncu from $PATH, $CUDA_HOME/bin, /usr/local/cuda/bin or /opt/nvidia/nsight-compute/*/;
/// nullopt when absent.
std::optional<std::string> find_ncu();

/// What a profiling run produced.
struct ncu_run_result {
  bool ok = false;
  std::string error;         // a clear message when !ok
  std::string report_path;   // the .ncu-rep, kept for the Nsight Compute GUI
  std::string details_csv;   // --page details --print-details all
  std::string raw_csv;       // --page raw --print-units base
  std::string source_csv;    // --page source --print-source cuda,sass
  std::string log;           // what ncu and the program printed
  double seconds = 0;          // the whole run: profile and export
  double profile_seconds = 0;  // the profiled program under ncu (the part that holds the GPU)
  double report_seconds = 0;   // ncu writing its report once the profiled program is gone (the GPU is free)
  double export_seconds = 0;   // the pages read back from the report (CPU, the three at once)
  bool reused = false;         // the pages of an earlier run of the same profile (profile_cache.h)
  bool started_ahead = false;  // the harness had started the runner under ncu before it was asked
};

/// A clear message for a failed ncu run, or empty when `r` succeeded. Recognises a missing
/// program, ERR_NVGPUCTRPERM (with how to enable the counters), no kernel profiled, a failed
/// program and a timeout.
std::string explain_ncu_failure(const support::process_result& r, std::chrono::seconds timeout);

/// Where run_ncu keeps the exported pages of `report_path` (X.ncu-rep): X.details.csv,
/// X.raw.csv and X.source.csv beside it, so that a profile can be analysed again without ncu.
struct ncu_page_files {
  std::string details, raw, source;
};
ncu_page_files ncu_pages_beside(const std::string& report_path);

/// The section identifiers the ncu at `ncu_path` has (`ncu --list-sections`, asked once per path
/// and kept); nullopt when it cannot say.
std::optional<std::set<std::string>> ncu_section_list(const std::string& ncu_path);

/// Of `wanted`, the sections that ncu has: an older ncu lacks some (WorkloadDistribution is
/// recent) and fails a run that asks for one it does not know. `wanted` whole when the list
/// cannot be read.
std::vector<std::string> sections_known_to(const std::string& ncu_path, const std::vector<std::string>& wanted);

/// The command run_ncu runs: the sections this ncu lacks left out (and named, for the log).
struct ncu_command {
  std::vector<std::string> argv;
  std::string missing_sections;  // "WorkloadDistribution", or empty
  std::string report_path;       // options.report_base + ".ncu-rep"
  std::stop_token stop;          // options.stop: the report's exports stop with the profile
};
ncu_command prepare_ncu_command(const std::string& ncu_path, const ncu_options& options,
                                const std::vector<std::string>& program);

/// Profiles `program` with ncu at `ncu_path`, exports the pages and keeps them beside the report.
/// Sections the ncu does not have are left out, and the log says so.
ncu_run_result run_ncu(const std::string& ncu_path, const ncu_options& options, const std::vector<std::string>& program);

/// What run_ncu does once `command` has run (however it was started: the live evaluator's
/// harness starts its runner under it): explains a failed `run`, else exports the report's three
/// pages and keeps them beside it. `out.log` and `out.profile_seconds` are the caller's.
void read_ncu_report(const std::string& ncu_path, const ncu_command& command, const support::process_result& run,
                     std::chrono::seconds timeout, ncu_run_result& out);

}  // namespace kblaster::engine
