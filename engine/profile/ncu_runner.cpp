// Running Nsight Compute and exporting its report pages.
#include "engine/profile/ncu_runner.h"

#include "support/device_lock.h"
#include "support/files.h"
#include "support/untrusted_text.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace kblaster::engine {

const std::vector<ncu_section>& requested_ncu_sections() {
  static const std::vector<ncu_section> sections = {
      {"SpeedOfLight", "GPU Speed Of Light Throughput",
       "compute, memory, DRAM, L2 and L1 throughput and the duration: the primary bottleneck (SOLBottleneck)"},
      {"Occupancy", "Occupancy",
       "theoretical and achieved occupancy and the block limits that set them (AchievedOccupancy, TheoreticalOccupancy)"},
      {"LaunchStats", "Launch Statistics",
       "grid, block, registers, shared memory and waves; an undersized grid's weight (LaunchConfiguration)"},
      {"WarpStateStats", "Warp State Statistics", "active threads per warp and the stall reasons (ThreadDivergence, CPIStall)"},
      {"SchedulerStats", "Scheduler Statistics", "issue-slot use, among the findings shown (IssueSlotUtilization)"},
      {"MemoryWorkloadAnalysis", "Memory Workload Analysis",
       "register-spill requests, in the spill evidence; its tables and chart below extend it"},
      {"MemoryWorkloadAnalysis_Tables", "Memory Workload Analysis Tables",
       "uncoalesced global and local access patterns and shared-memory bank conflicts (MemoryCacheAccessPattern, "
       "SharedMemoryConflicts)"},
      {"MemoryWorkloadAnalysis_Chart", "Memory Workload Analysis Chart",
       "the traffic between the memory levels: data reuse, atomic requests at L2 (MemoryL2Compression)"},
      {"ComputeWorkloadAnalysis", "Compute Workload Analysis", "pipe use, the tensor pipe's among it (HighPipeUtilization)"},
      {"InstructionStats", "Instruction Statistics",
       "executed instructions, which the local-memory share is a part of (FPInstructions)"},
      {"SourceCounters", "Source Counters",
       "branch efficiency, per-line stall samples and excess sectors: the hot lines (UncoalescedGlobalAccess, "
       "UncoalescedSharedAccess)"},
      {"WorkloadDistribution", "GPU and Memory Workload Distribution",
       "work spread unevenly over the SMs, beside atomic contention (WorkloadImbalance)"}};
  return sections;
}

const std::vector<std::string>& default_ncu_sections() {
  static const std::vector<std::string> identifiers = [] {
    std::vector<std::string> out;
    for (const auto& s : requested_ncu_sections()) out.push_back(s.identifier);
    return out;
  }();
  return identifiers;
}

const std::vector<std::string>& loop_ncu_sections() {
  // The loop reads the state, the KB evidence and the prompt's summary, not the hover's view, but
  // on the recorded reports no section can go without changing one of them. In brackets, the ncu
  // replay passes each costs on top of the other eleven (ncu 2025.3.1, H100, the spills kernel of
  // tests/fixtures/ncu-h100; all twelve: 36):
  //   MemoryWorkloadAnalysis_Tables (9): the uncoalesced-access and bank-conflict secondaries and
  //     the spill weight (MemoryCacheAccessPattern, SharedMemoryConflicts); the raw page's atomic
  //     requests at L2 and data reuse (dram__sectors_read.sum) come with it;
  //   MemoryWorkloadAnalysis_Chart (2): MemoryL2Compression among the summary's top findings;
  //   SourceCounters (1): UncoalescedGlobalAccess / UncoalescedSharedAccess (secondaries' weights
  //     and evidence; the whole uncoalesced secondary of the small SpMVs), branch efficiency;
  //   ComputeWorkloadAnalysis (0): HighPipeUtilization among the summary's top findings;
  //   InstructionStats (0): FPInstructions among the summary's top findings;
  //   MemoryWorkloadAnalysis (0): the register-spill requests in the spill evidence (its metric
  //     leaves the raw page with it);
  //   SpeedOfLight, Occupancy, LaunchStats, WarpStateStats, SchedulerStats, WorkloadDistribution
  //     (0 each): the primary and duration, occupancy, the launch and grid, divergence, issue
  //     slots, work imbalance (findings and secondaries).
  // Chart, ComputeWorkloadAnalysis and InstructionStats are kept only by the summary's three top
  // ncu findings; together they cost about two passes. tools/gpu/ncu_cost/leave_one_out.sh
  // measures the passes.
  static const std::vector<std::string> identifiers = default_ncu_sections();
  return identifiers;
}

const std::vector<std::string>& state_ncu_metrics() {
  // Grouped by what reads them (state_classifier.cpp). ncu 2025.3.1 on an H100 collects the list
  // in 13 replay passes; the editor's twelve sections take 36.
  static const std::vector<std::string> metrics = {
      // Speed of Light: the primary bottleneck, the busiest memory level, the duration.
      "sm__throughput.avg.pct_of_peak_sustained_elapsed", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
      "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
      "l1tex__throughput.avg.pct_of_peak_sustained_active", "gpu__time_duration.sum", "gpc__cycles_elapsed.max",
      // Occupancy, theoretical and achieved (the block limits are launch__ attributes).
      "sm__maximum_warps_per_active_cycle_pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
      // The instruction mix, active threads per warp, and the SM's issue (divergence's cost).
      "smsp__cycles_elapsed.avg", "smsp__inst_executed.sum", "smsp__thread_inst_executed_per_inst_executed.ratio",
      "sm__inst_executed.avg.pct_of_peak_sustained_elapsed",
      "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed",
      "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
      "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
      // Local memory (spills) and atomics at L2.
      "smsp__sass_inst_executed_op_local_ld.sum", "smsp__sass_inst_executed_op_local_st.sum",
      "lts__t_requests_srcunit_tex_op_red.sum", "lts__t_requests_srcunit_tex_op_atom_dot_alu.sum",
      "lts__t_requests_srcunit_tex_op_atom_dot_cas.sum",
      // Pipes: tensor cores, FP16, FP64, and the integer side.
      "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
      "sm__inst_executed_pipe_fma_type_fp16.avg.pct_of_peak_sustained_active",
      "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active",
      "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
      "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
      // Data reuse: global-load sectors per DRAM sector read.
      "dram__sectors_read.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
      // Coalescing, in place of UncoalescedGlobalAccess and the tables' store pattern: global
      // sectors moved against those the accesses need, and the bytes a store uses of a sector.
      "memory_l2_theoretical_sectors_global", "memory_l2_theoretical_sectors_global_ideal",
      "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
      // Shared-memory bank conflicts, in place of SharedMemoryConflicts: conflict wavefronts
      // among the wavefronts of shared loads and of shared stores.
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"};
  return metrics;
}

const std::vector<std::string>& default_ncu_metrics() {
  // What the roofline section reads (by metric, not by that section's name, which ncu versions
  // spell differently): DRAM bytes per second and its peak; FP32 add, multiply and FMA rates per
  // cycle and the FMA peak, with the clocks that turn cycles into seconds.
  static const std::vector<std::string> metrics = {
      "dram__bytes.sum.per_second", "dram__bytes.sum.peak_sustained", "dram__cycles_elapsed.avg.per_second",
      "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
      "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
      "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", "smsp__cycles_elapsed.avg.per_second",
      "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", "sm__cycles_elapsed.avg.per_second"};
  return metrics;
}

std::vector<std::string> build_ncu_command(const std::string& ncu_path, const ncu_options& o,
                                           const std::vector<std::string>& program) {
  std::vector<std::string> cmd = {ncu_path};
  for (const auto& s : o.sections) { cmd.push_back("--section"); cmd.push_back(s); }
  if (!o.metrics.empty()) {
    std::string list;
    for (const auto& m : o.metrics) list += (list.empty() ? "" : ",") + m;
    cmd.push_back("--metrics");
    cmd.push_back(list);
  }
  if (!o.kernel_name_base.empty()) { cmd.push_back("--kernel-name-base"); cmd.push_back(o.kernel_name_base); }
  if (!o.kernel_regex.empty()) { cmd.push_back("-k"); cmd.push_back("regex:" + o.kernel_regex); }
  if (!o.nvtx_include.empty()) { cmd.push_back("--nvtx"); cmd.push_back("--nvtx-include"); cmd.push_back(o.nvtx_include); }
  // Explicit, so that figures are comparable between runs and machines.
  cmd.push_back("--clock-control");
  cmd.push_back(o.clock_control.empty() ? "base" : o.clock_control);
  if (o.launch_count > 0) { cmd.push_back("-c"); cmd.push_back(std::to_string(o.launch_count)); }
  if (o.import_source) { cmd.push_back("--import-source"); cmd.push_back("yes"); }
  cmd.push_back("-f");
  cmd.push_back("-o");
  cmd.push_back(o.report_base);
  cmd.insert(cmd.end(), program.begin(), program.end());
  return cmd;
}

std::optional<std::string> find_ncu() {
  if (auto p = support::find_in_path("ncu"); !p.empty()) return p;
  if (const char* home = std::getenv("CUDA_HOME"))
    if (auto p = support::find_in_path(std::string(home) + "/bin/ncu"); !p.empty()) return p;
  if (auto p = support::find_in_path("/usr/local/cuda/bin/ncu"); !p.empty()) return p;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/opt/nvidia/nsight-compute", ec))
    if (auto p = support::find_in_path((e.path() / "ncu").string()); !p.empty()) return p;
  return std::nullopt;
}

std::string explain_ncu_failure(const support::process_result& r, std::chrono::seconds timeout) {
  const std::string all = r.out + "\n" + r.err;
  if (r.failed_to_start) return "cannot run ncu: " + r.err;
  if (r.cancelled) return "cancelled";
  if (r.timed_out)
    return "profiling did not finish within " + std::to_string(timeout.count()) +
           " s (ncu replays each kernel many times; narrow it with --kernel or raise --timeout)";
  if (all.find("ERR_NVGPUCTRPERM") != std::string::npos)
    return "no permission to read the GPU performance counters (ERR_NVGPUCTRPERM). Run as root, or "
           "allow all users: echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' | sudo tee "
           "/etc/modprobe.d/ncu-counters.conf, then reboot (https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
  if (all.find("does not exist or is not an executable") != std::string::npos)
    return "the program to profile does not exist or is not executable: " + all.substr(all.find("==ERROR=="));
  if (all.find("LibraryNotLoaded") != std::string::npos)
    return "ncu could not initialise the profiler (LibraryNotLoaded): the driver does not allow profiling here";
  if (const auto at = all.find("Failed to find metric"); at != std::string::npos)
    return "this ncu does not know a metric kblaster asked for (" + all.substr(at, all.find('\n', at) - at) +
           "): an older or newer Nsight Compute than the one the counters were chosen on";
  if (all.find("No kernels were profiled") != std::string::npos)
    return "no kernel was profiled: the kernel filter matched nothing, or the program launched no kernel";
  if (!r.ok()) {
    std::string msg = r.signal ? "the program was killed by signal " + std::to_string(r.signal)
                               : "the program failed under ncu (exit code " + std::to_string(r.exit_code) + ")";
    const auto err = all.find("==ERROR==");
    if (err != std::string::npos) return msg + ": " + all.substr(err, all.find('\n', err) - err);
    // No ncu error line (ncu itself could not start its target, or the program failed on its
    // own): the end of what was printed says why, bounded and marked as the program's.
    const std::string printed = r.err.empty() ? r.out : r.err;
    if (!printed.empty()) msg += ": " + support::candidate_text(printed, "output under ncu", 600, support::keep_end::tail);
    return msg;
  }
  return {};
}

std::optional<std::set<std::string>> ncu_section_list(const std::string& ncu_path) {
  static std::mutex mutex;
  static std::map<std::string, std::optional<std::set<std::string>>> by_path;
  const std::lock_guard lock(mutex);
  if (const auto at = by_path.find(ncu_path); at != by_path.end()) return at->second;
  std::optional<std::set<std::string>> list;
  // Each row of the table starts with the section's identifier (the header rows' words are kept
  // too; they name no section).
  if (const auto r = support::run_process({ncu_path, "--list-sections"}, std::chrono::seconds(60)); r.ok()) {
    list.emplace();
    std::istringstream rows(r.out);
    for (std::string row; std::getline(rows, row);) {
      std::istringstream words(row);
      if (std::string first; words >> first) list->insert(first);
    }
  }
  return by_path[ncu_path] = list;
}

std::vector<std::string> sections_known_to(const std::string& ncu_path, const std::vector<std::string>& wanted) {
  const auto known = ncu_section_list(ncu_path);
  if (!known) return wanted;
  std::vector<std::string> out;
  for (const auto& s : wanted)
    if (known->count(s)) out.push_back(s);
  return out.empty() ? wanted : out;  // none recognised: a list kblaster cannot read, not an ncu without them
}

ncu_command prepare_ncu_command(const std::string& ncu_path, const ncu_options& options,
                                const std::vector<std::string>& program) {
  ncu_command out;
  ncu_options asked = options;
  asked.sections = sections_known_to(ncu_path, options.sections);
  for (const auto& s : options.sections)
    if (std::find(asked.sections.begin(), asked.sections.end(), s) == asked.sections.end())
      out.missing_sections += (out.missing_sections.empty() ? "" : ", ") + s;
  out.argv = build_ncu_command(ncu_path, asked, program);
  out.report_path = options.report_base + ".ncu-rep";
  out.stop = options.stop;
  return out;
}

ncu_run_result run_ncu(const std::string& ncu_path, const ncu_options& options, const std::vector<std::string>& program) {
  ncu_run_result out;
  if (options.report_base.empty()) {
    out.error = "no report path given";
    return out;
  }
  const auto started = std::chrono::steady_clock::now();
  const auto command = prepare_ncu_command(ncu_path, options, program);
  auto cmd = command.argv;
  if (options.sandbox) cmd = support::sandboxed_command(cmd, *options.sandbox);
  // ncu locks the clocks and replays kernels for seconds: no other kblaster measurement on this
  // GPU meanwhile (support/device_lock.h), nor this profile beside one.
  std::optional<support::device_lock> device;
  try {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    device = support::device_lock::acquire(support::device_lock::gpu(visible ? visible : ""), "kblaster profiling a program under ncu",
                                           options.stop, [](const std::string& holder) {
                                             std::fprintf(stderr, "[kblaster] the GPU is busy (%s): waiting for it\n", holder.c_str());
                                           });
  } catch (const support::file_error&) {
    // No runtime folder for the lock: profile unguarded rather than not at all.
  }
  if (!device && options.stop.stop_requested()) {
    out.error = "cancelled";
    return out;
  }
  const auto r = support::run_process(cmd, options.timeout, std::nullopt, options.stop);
  device.reset();  // the report is read back on the CPU
  out.log = r.out + r.err;
  out.report_path = command.report_path;
  out.profile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  read_ncu_report(ncu_path, command, r, options.timeout, out);
  return out;
}

void read_ncu_report(const std::string& ncu_path, const ncu_command& command, const support::process_result& run,
                     std::chrono::seconds timeout, ncu_run_result& out) {
  out.report_path = command.report_path;
  if (!command.missing_sections.empty())
    out.log += "\nkblaster: this ncu has no section " + command.missing_sections + "; profiled without it\n";
  if (std::string why = explain_ncu_failure(run, timeout); !why.empty()) {
    out.error = why;
    return;
  }
  if (!fs::exists(out.report_path)) {
    out.error = "ncu wrote no report (" + out.report_path + "); its output:\n" + out.log;
    return;
  }
  // Three pages, each a start of ncu reading the report (about a second apiece): at once, on
  // the CPU, with the GPU already free.
  const auto export_started = std::chrono::steady_clock::now();
  const auto page = [&](std::vector<std::string> args, std::string* into) {
    return std::async(std::launch::async, [&ncu_path, &command, &out, args = std::move(args), into] {
      std::vector<std::string> c = {ncu_path, "-i", out.report_path, "--csv"};
      c.insert(c.end(), args.begin(), args.end());
      const auto p = support::run_process(c, std::chrono::seconds(300), std::nullopt, command.stop);
      if (!p.ok()) return "exporting " + args[1] + " failed: " + p.err;
      *into = p.out;
      return std::string();
    });
  };
  auto details = page({"--page", "details", "--print-details", "all"}, &out.details_csv);
  auto raw = page({"--page", "raw", "--print-units", "base"}, &out.raw_csv);
  auto source = page({"--page", "source", "--print-source", "cuda,sass"}, &out.source_csv);
  const std::string details_error = details.get(), raw_error = raw.get(), source_error = source.get();
  out.export_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - export_started).count();
  out.seconds = out.profile_seconds + out.export_seconds;
  if (!details_error.empty()) {
    out.error = details_error;
    return;
  }
  // The raw and source pages refine the analysis; without them it still stands.
  if (!raw_error.empty()) out.log += "\n" + raw_error;
  if (!source_error.empty()) out.log += "\n" + source_error;
  const auto kept = ncu_pages_beside(out.report_path);
  for (const auto& [path, text] : {std::pair{kept.details, &out.details_csv}, {kept.raw, &out.raw_csv}, {kept.source, &out.source_csv}})
    if (!text->empty()) try {
        support::write_file_atomically(path, *text);
      } catch (const std::exception& e) {
        out.log += std::string("\nkeeping a page beside the report failed: ") + e.what();  // the profile stands
      }
  out.ok = true;
}

ncu_page_files ncu_pages_beside(const std::string& report_path) {
  std::string base = report_path;
  if (const std::string ext = ".ncu-rep"; base.size() > ext.size() && base.ends_with(ext)) base.resize(base.size() - ext.size());
  return {base + ".details.csv", base + ".raw.csv", base + ".source.csv"};
}

}  // namespace kblaster::engine
