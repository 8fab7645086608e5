// The editor's analysis service: debouncing, supersession, the content-hash cache, and the
// static-then-live sequence.
#include "engine/analysis/file_analysis.h"
#include "engine/analysis/file_role.h"
#include "engine/capture/capture_profile.h"
#include "engine/source/kernel_launches.h"
#include "engine/state/program_profile_pipeline.h"
#include "engine/source/program_entry.h"
#include "support/time.h"
#include "support/hash.h"
#include "support/stop_wait.h"

#include "engine/toolchain/nvcc_driver.h"
#include "support/files.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace kblaster::engine {

namespace {

// Enough for a workspace's worth of files and versions; results are small (no raw pages).
constexpr std::size_t cache_capacity = 64;

// The text is compiled from a private copy (the editor's buffer may differ from the disk, and
// the file may not exist at all), named like the original so that messages read naturally.
// The copy is content-addressed in this user's scratch folder and written atomically: every
// daemon that analyses the same text writes the same bytes to the same place, and none deletes
// it (a daemon's cleanup must not pull a file from under another's nvcc; stale copies are
// pruned by age). Its path is stable, so nvcc_driver's cache serves a text compiled before.
std::string write_private_copy(const std::string& path, const std::string& text, const std::string& hash) {
  static const fs::path root = [] {
    const fs::path dir = support::user_scratch_root() / "analysis";
    support::remove_entries_older_than(dir, std::chrono::hours(24 * 7));
    return dir;
  }();
  fs::path name = fs::path(path).filename();
  if (name.empty() || (name.extension() != ".cu" && name.extension() != ".cuh")) name = "source.cu";
  if (name.extension() == ".cuh") name.replace_extension(".cu");  // nvcc compiles .cu only
  const fs::path file = root / hash / name;
  support::write_file_atomically(file, text);
  return file.string();
}

}  // namespace

std::string analysis_capabilities::missing() const {
  if (!nvcc) return "nvcc was not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): KernelBlaster can show symbols "
                    "and hovers but no compiler diagnostics, resources or profiles.";
  if (gpu_arch.empty() && !ncu)
    return "No GPU and no Nsight Compute (ncu) on this machine: compiler diagnostics, registers, spills and "
           "occupancy still work; live profiling on save is off.";
  if (gpu_arch.empty())
    return "No GPU on this machine (nvidia-smi found none): compiler diagnostics, registers, spills and occupancy "
           "still work; live profiling on save is off.";
  if (!ncu)
    return "Nsight Compute (ncu) was not found (set kblaster.ncuPath): compiler diagnostics, registers, spills and "
           "occupancy still work; live profiling on save is off.";
  return "";
}

analysis_capabilities detect_capabilities(const std::string& ncu_override) {
  analysis_capabilities c;
  c.nvcc = find_nvcc();
  c.gpu_arch = detect_local_arch();
  if (!ncu_override.empty()) {
    if (fs::exists(ncu_override)) c.ncu = ncu_override;
  } else {
    c.ncu = find_ncu();
  }
  return c;
}

std::string file_analysis_options::key() const {
  std::string k = arch + "|" + std::to_string(profile_live) + "|" + std::to_string(assumed_block_size) + "|" + live_refusal;
  for (const auto& f : nvcc_flags) k += "|" + f;
  if (program_capture) {
    k += "|capture " + std::to_string(program_capture->launch) + "|" + program_capture->run.cwd + "|" + harness;
    for (const auto& v : {program_capture->run.args, program_capture->run.env, program_capture->run.command,
                          program_capture->run.build})
      for (const auto& a : v) k += "|" + a;
  }
  return k;
}

namespace {

// Each kernel of a program profiled from its captured launch; the whole program under ncu when
// the harness is not there to replay captures.
// How the program spends its GPU time (each kernel's share, the GPU's idle time: the lenses'
// figures and the file's program line) from one more run of it under the timeline collector;
// the captures give each kernel's counters, not that. Without a timeline (no collector, CUPTI
// not loadable here) the kernels' profiles stand alone and `program_unavailable` says why.
void add_program_timeline(profile_outcome& out, const std::string& path, const capture_request& how, build_profile_options build,
                          const fs::path& scratch) {
  std::vector<std::string> argv;
  if (!how.run.command.empty()) {
    argv = own_build_argv(how.run);
  } else {
    profile_outcome built;
    const auto compiled = compile_for_profile(path, build, output_kind::executable, built);
    if (!compiled) {
      out.program_unavailable = "the program could not be built for its timeline";
      return;
    }
    argv = {compiled->output_path};
    argv.insert(argv.end(), how.run.args.begin(), how.run.args.end());
  }
  build.ncu.report_base = (scratch / (fs::path(path).stem().string() + "-program")).string();
  std::string why_not;
  auto timed = timeline_of_program(argv, build, why_not);
  if (!timed) {
    out.program_unavailable = why_not;
    return;
  }
  join_kernel_views(timed->profile, out.kernels);
  out.program = std::move(timed->profile);
}

profile_outcome profile_program_kernels(const std::string& path, const capture_request& how, const profile_outcome& statics,
                                        const build_profile_options& build, const fs::path& scratch, const optimize::harness_evaluator_options& evaluator,
                                        const std::function<void(const std::string&)>& progress, std::stop_token stop) {
  captured_profile_options o;
  o.progress = progress;
  o.evaluator = evaluator;
  o.base = how;
  o.base.source = path;
  for (const auto& k : statics.kernels)
    if (!k.signature.function.empty()) o.kernels.push_back(k.signature.function);
  try {
    auto out = profile_captured_launches(o, stop);
    if (!stop.stop_requested() && !out.kernels.empty()) add_program_timeline(out, path, how, build, scratch);
    return out;
  } catch (const optimize::evaluation_error& e) {
    if (!how.run.command.empty()) {  // built by the user's build: there is no whole program of this file to run
      profile_outcome none;
      none.error = std::string("the kernels' captured launches cannot be replayed here: ") + e.what();
      return none;
    }
    auto whole = profile_live(path, build);
    whole.warnings.push_back(std::string("the whole program was profiled: its kernels' captured launches cannot be replayed "
                                         "here (") + e.what() + ")");
    return whole;
  }
}

}  // namespace

std::string content_hash(const std::string& text) { return support::fnv1a_hex(text); }

task_lookup find_task_for(const std::string& cu_path, const std::string& text) {
  task_lookup out;
  const fs::path p(cu_path);
  std::error_code ec;
  if (!fs::exists(p, ec)) return out;  // an unsaved buffer has no task yet
  fs::path sibling = p;
  sibling.replace_extension(".task.json");
  const fs::path dir_spec = p.parent_path() / "task.json";
  try {
    if (text.find("/* kblaster-task") != std::string::npos || fs::exists(sibling, ec)) {
      out.where = fs::exists(sibling, ec) ? sibling.string() : "";
      out.task = load_task(p.string());
    } else if (fs::exists(dir_spec, ec)) {
      auto t = load_task(p.parent_path().string());
      // A task.json beside the file is this file's task only when it names it.
      if (fs::weakly_canonical(t.kernel, ec) == fs::weakly_canonical(p, ec)) {
        out.where = dir_spec.string();
        out.task = std::move(t);
      }
    }
  } catch (const std::exception& e) {
    out.task.reset();
    out.error = e.what();
  }
  // Read or not, a task file names its kernels through the kb_forward it runs (a file's other
  // kernels are not its concern: a broken task must not block them).
  if (out.task || !out.error.empty()) out.kernels = kernels_launched_by(text, "kb_forward");
  return out;
}

bool task_lookup::is_for(const std::string& kernel) const {
  return kernels.empty() || std::find(kernels.begin(), kernels.end(), kernel) != kernels.end();
}

namespace {

// A profile names an instantiation ("matmul_tiled<16>", "void matmul_tiled<16>(float const*, ...)")
// where the editor names the template: compare the plain name.
std::string plain_kernel_name(const std::string& function) {
  std::string name = function.substr(0, function.find_first_of("<("));
  if (const auto space = name.find_last_of(' '); space != std::string::npos) name = name.substr(space + 1);
  if (const auto scope = name.rfind("::"); scope != std::string::npos) name = name.substr(scope + 2);
  return name;
}

}  // namespace

const kernel_view* file_analysis::kernel(const std::string& function) const {
  for (const auto* outcome : {live_profile ? &*live_profile : nullptr, &static_profile}) {
    if (!outcome) continue;
    const kernel_view* best = nullptr;
    for (const auto& k : outcome->kernels) {
      if (k.signature.function != function && plain_kernel_name(k.signature.function) != function) continue;
      // Several launches of one kernel: the longest one speaks for it.
      if (!best || k.signature.sol.duration_us.value_or(0) > best->signature.sol.duration_us.value_or(0)) best = &k;
    }
    if (best) return best;
  }
  return nullptr;
}

file_analyzer::file_analyzer(std::optional<analysis_capabilities> caps, live_profiler live)
    : live_(std::move(live)) {
  if (caps) {
    caps_ = std::move(*caps);
    caps_given_ = true;
  }
}

const analysis_capabilities& file_analyzer::capabilities() {
  std::call_once(caps_once_, [this] {
    if (!caps_given_) caps_ = detect_capabilities();
  });
  return caps_;
}

bool file_analyzer::superseded(const std::string& path, std::uint64_t generation) const {
  std::lock_guard lock(mutex_);
  const auto it = generation_.find(path);
  return it == generation_.end() || it->second != generation;
}

bool file_analyzer::pending(const std::string& path) const {
  std::lock_guard lock(mutex_);
  return queued_.count(path) > 0 || running_.count(path) > 0;
}

std::shared_ptr<const file_analysis> file_analyzer::latest(const std::string& path) const {
  std::lock_guard lock(mutex_);
  const auto it = latest_.find(path);
  return it == latest_.end() ? nullptr : it->second;
}

void file_analyzer::forget(const std::string& path) {
  std::lock_guard lock(mutex_);
  if (auto it = running_.find(path); it != running_.end()) it->second.request_stop();
  running_.erase(path);
  queued_.erase(path);
  latest_.erase(path);
  ++generation_[path];
}

std::uint64_t file_analyzer::reserve(const std::string& path) {
  std::lock_guard lock(mutex_);
  queued_.insert(path);
  return ++generation_[path];
}

std::shared_ptr<const file_analysis> file_analyzer::analyze(const std::string& path, const std::string& text,
                                                            const file_analysis_options& options, std::stop_token stop,
                                                            std::optional<std::uint64_t> ticket) {
  const std::string hash = content_hash(text);
  // The task file is read from disk: a fix to it is a new analysis of the same text.
  const auto role = role_of(path, text, options.program_capture ? options.program_capture->run : program_run{});
  const std::string cache_key = path + "|" + hash + "|" + options.key() + "|" + role.task.where + "|" + role.task.error;
  std::uint64_t generation = 0;
  std::stop_source mine;
  {
    std::lock_guard lock(mutex_);
    if (ticket && *ticket != generation_[path]) return nullptr;  // a newer request was reserved
    generation = ticket ? *ticket : ++generation_[path];
    queued_.erase(path);  // the newest reservation is this one: it is running, not waiting
    if (auto it = running_.find(path); it != running_.end()) it->second.request_stop();
    running_[path] = mine;
    if (auto hit = cache_.find(cache_key); hit != cache_.end()) {
      latest_[path] = hit->second;
      running_.erase(path);
      return hit->second;
    }
  }
  // However this analysis ends (superseded, stopped, thrown), it is no longer running: pending()
  // must not say "analysing" for a file nothing analyses.
  struct leave_running {
    file_analyzer& self;
    const std::string& path;
    const std::stop_source& mine;
    ~leave_running() {
      std::lock_guard lock(self.mutex_);
      if (const auto it = self.running_.find(path); it != self.running_.end() && it->second == mine) self.running_.erase(it);
    }
  } left{*this, path, mine};
  std::stop_callback forward(stop, [&mine] { mine.request_stop(); });
  const auto stale = [&] { return mine.stop_requested() || superseded(path, generation); };
  // The debounce: a newer save is looked for every 10 ms, a stop heard at once.
  if (support::wait_until(stale, mine.get_token(), support::wait_clock::now() + options.debounce,
                          std::chrono::milliseconds(10)) ||
      stale())
    return nullptr;

  const auto started = std::chrono::steady_clock::now();
  auto result = std::make_shared<file_analysis>();
  result->path = path;
  result->content_hash = hash;
  const auto& caps = capabilities();

  build_profile_options build;
  build.arch = options.arch;
  build.assumed_block_size = options.assumed_block_size;
  build.nvcc_flags = options.nvcc_flags;
  // A newer save, forget() (the document closed) or the caller's stop kills the compiler and
  // the profiler in flight, not only the steps after them.
  build.stop = mine.get_token();
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty()) build.nvcc_flags.push_back("-I" + dir.string());
  const std::string copy = write_private_copy(path, text, hash);
  result->static_profile = analyze_static(copy, build);
  for (auto& d : result->static_profile.diagnostics)
    if (d.file == copy || fs::path(d.file).filename() == fs::path(copy).filename()) d.file = path;
  if (stale()) return nullptr;

  result->task = role.task;
  if (!options.profile_live) {
    result->live_skipped = "live profiling on save is off (profileOnSave)";
    result->skipped = live_skip::off;
  } else if (!caps.can_profile_live()) {
    result->live_skipped = caps.gpu_arch.empty() ? "no GPU on this machine" : "ncu not found";
    result->skipped = caps.gpu_arch.empty() ? live_skip::no_gpu : live_skip::no_ncu;
  } else if (!options.live_refusal.empty()) {
    // After the machine's limits: where no GPU could profile anyway, trust is not the reason.
    result->live_skipped = options.live_refusal;
    result->live_refused = true;
    result->skipped = live_skip::refused;
  } else if (!result->static_profile.error.empty()) {
    result->live_skipped = "the file does not compile";
    result->skipped = live_skip::does_not_compile;
  } else if (!result->task.task && !live_ && !role.is_program()) {
    result->live_skipped = "no task for this file (create one: kblaster.createTask)";
    result->skipped = live_skip::no_task;
  } else {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      result->live_skipped = "the file is not saved";
      result->skipped = live_skip::not_saved;
    } else if (live_) {
      result->live_profile = live_(path, result->task.task, options, mine.get_token());
    } else if (!result->task.task && options.program_capture && role.is_program()) {
      optimize::harness_evaluator_options evaluator;
      evaluator.harness = options.harness;
      evaluator.ncu = caps.ncu.value_or("");
      result->live_profile = profile_program_kernels(path, *options.program_capture, result->static_profile, build,
                                                     fs::path(copy).parent_path(), evaluator, options.progress, mine.get_token());
    } else if (defines_main(text)) {
      result->live_profile = profile_live(path, build);
    } else {
      result->live_skipped = "live profiling of a task kernel needs the harness";
      result->skipped = live_skip::needs_harness;
    }
  }
  if (stale()) return nullptr;

  result->analysed_at = support::utc_now();
  result->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::shared_ptr<const file_analysis> done = std::move(result);
  std::lock_guard lock(mutex_);
  if (generation_[path] != generation) return nullptr;
  running_.erase(path);
  latest_[path] = done;
  if (cache_.emplace(cache_key, done).second) cache_order_.push_back(cache_key);
  while (cache_order_.size() > cache_capacity) {
    cache_.erase(cache_order_.front());
    cache_order_.erase(cache_order_.begin());
  }
  return done;
}

}  // namespace kblaster::engine
