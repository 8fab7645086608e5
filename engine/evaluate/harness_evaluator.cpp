// The live evaluator: work directory, builds, the per-GPU harness pool, the in-memory cache and
// the turn of a harness reply into an evaluation. Profiling lives in harness_evaluator_profile.cpp.
#include "engine/evaluate/harness_evaluator.h"
#include "support/text.h"
#include "support/device_lock.h"
#include "support/files.h"

#include "engine/evaluate/harness_client.h"
#include "engine/profile/ncu_runner.h"
#include "engine/toolchain/nvcc_driver.h"
#include "support/run_process.h"
#include "support/sandbox.h"
#include "engine/toolchain/task_build.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>

namespace kblaster::engine::optimize {
namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) {
    const auto b = item.find_first_not_of(" \t\r");
    const auto e = item.find_last_not_of(" \t\r");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

// nvidia-smi's GPUs as (index, name); empty without nvidia-smi or a GPU. It ignores
// CUDA_VISIBLE_DEVICES, so indices are physical.
std::vector<std::pair<std::string, std::string>> smi_gpus() {
  if (support::find_in_path("nvidia-smi").empty()) return {};
  const auto r = support::run_process({"nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"}, std::chrono::seconds(20));
  std::vector<std::pair<std::string, std::string>> out;
  if (!r.ok()) return out;
  for (const auto& line : split(r.out, '\n')) {
    const auto fields = split(line, ',');
    if (fields.size() >= 2) out.emplace_back(fields[0], fields[1]);
  }
  return out;
}

// A directory name for a task name (names come from task files and may hold anything).
std::string safe_name(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return out.empty() ? "task" : out;
}

// The first compiler error, as "kernel.cu:12: message"; else the log's first line.
std::string first_error(const candidate_build& b) {
  for (const auto& d : b.diagnostics)
    if (d.severity == diagnostic_severity::error)
      return fs::path(d.file).filename().string() + (d.line > 0 ? ":" + std::to_string(d.line) : "") + ": " + d.message;
  const auto lines = split(b.log, '\n');
  return lines.empty() ? std::string("the compiler failed without a message") : lines.front();
}

}  // namespace

class harness_evaluator::lease {
 public:
  explicit lease(harness_evaluator& ev) : ev_(ev) {
    std::unique_lock lock(ev_.pool_mutex_);
    ev_.pool_cv_.wait(lock, [&] { return !ev_.free_.empty(); });
    slot_ = ev_.free_.back();
    ev_.free_.pop_back();
  }
  ~lease() {
    {
      std::lock_guard lock(ev_.pool_mutex_);
      ev_.free_.push_back(slot_);
    }
    ev_.pool_cv_.notify_one();
  }
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;
  slot& get() { return *slot_; }

 private:
  harness_evaluator& ev_;
  slot* slot_ = nullptr;
};

harness_evaluator::harness_evaluator(std::vector<task_spec> tasks, harness_evaluator_options options)
    : options_(std::move(options)) {
  harness_ = options_.harness.empty() ? find_harness() : options_.harness;
  if (harness_.empty() || ::access(harness_.c_str(), X_OK) != 0)
    throw evaluation_error("kblaster-harness " + (harness_.empty() ? std::string("not found") : harness_ + " is not executable") +
                           " (build it with LibTorch installed, or set KBLASTER_HARNESS)");
  const auto gpus = smi_gpus();
  device_ = options_.device;
  if (device_ == "auto") device_ = gpus.empty() ? "cpu" : "cuda";
  if (device_ != "cpu" && device_ != "cuda")
    throw evaluation_error("device must be cpu, cuda or auto, not '" + options_.device + "'");
  work_dir_ = options_.work_dir.empty() ? fs::path(nvcc_driver::default_cache_dir()).parent_path() / "evaluations"
                                        : options_.work_dir;
  std::error_code ec;
  fs::create_directories(work_dir_, ec);
  if (ec) throw evaluation_error("cannot create the work directory " + work_dir_.string() + ": " + ec.message());

  if (options_.ncu != "none" && device_ == "cuda") {
    if (!options_.ncu.empty()) ncu_ = options_.ncu;
    else if (const auto n = find_ncu()) ncu_ = *n;
  }
  // What the harnesses read, shown to them from the start (a folder a later request names
  // restarts its harness): the tasks' folders and ncu's installation.
  std::vector<fs::path> readable;
  for (const auto& t : tasks)
    if (!t.dir.empty()) readable.push_back(t.dir);
  if (!ncu_.empty())
    for (const auto& dir : support::ncu_folders(ncu_)) readable.push_back(dir);
  auto add_slot = [&](const std::string& visible, const std::string& name) {
    auto s = std::make_unique<slot>();
    s->visible = visible;
    s->device_name = name;
    harness_options ho;
    ho.executable = harness_;
    ho.device = device_;
    ho.watchdog = options_.watchdog;
    ho.readable = readable;
    if (!visible.empty()) ho.environment.push_back("CUDA_VISIBLE_DEVICES=" + visible);
    s->client = std::make_unique<harness_client>(ho);
    slots_.push_back(std::move(s));
  };
  if (device_ == "cpu") {
    add_slot("", "cpu");
    arch_ = "cpu";
  } else {
    const auto nvcc = find_nvcc();
    if (!nvcc) throw evaluation_error("nvcc not found (looked in PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): cannot build .cu candidates");
    nvcc_ = std::make_unique<nvcc_driver>(*nvcc, nvcc_driver::default_cache_dir());
    arch_ = nvcc_->target_arch("");
    // The GPUs this process may use: CUDA_VISIBLE_DEVICES's entries when set, else nvidia-smi's.
    std::vector<std::string> visible;
    const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
    if (env && *env) visible = split(env, ',');
    else
      for (const auto& g : gpus) visible.push_back(g.first);
    if (visible.empty()) throw evaluation_error("device cuda: no GPU is visible (nvidia-smi lists none)");
    auto name_of = [&](const std::string& v) {
      for (const auto& g : gpus)
        if (g.first == v) return g.second;
      return std::string();
    };
    if (options_.gpus.empty()) {
      for (const auto& v : visible) add_slot(v, name_of(v));
    } else {
      for (int i : options_.gpus) {
        if (i < 0 || i >= static_cast<int>(visible.size()))
          throw evaluation_error("GPU index " + std::to_string(i) + " is out of range: " + std::to_string(visible.size()) +
                                 " GPU(s) visible");
        add_slot(visible[static_cast<std::size_t>(i)], name_of(visible[static_cast<std::size_t>(i)]));
      }
    }
  }
  for (auto& s : slots_) free_.push_back(s.get());
  for (const auto& t : tasks) add_task(t, builds_stop_.get_token());
}

harness_evaluator::~harness_evaluator() { builds_stop_.request_stop(); }

double harness_evaluator::seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

void harness_evaluator::add_task(const task_spec& task, std::stop_token stop) {
  auto entry = std::make_shared<task_entry>();
  entry->spec = task;
  if (task.reference.kind == reference_kind::kernel) {
    const auto& src = device_ == "cpu" ? task.reference.cpu_path : task.reference.path;
    if (src.empty())
      throw evaluation_error("task '" + task.name + "': its reference is a kernel but names no " +
                             (device_ == "cpu" ? "cpu_kernel (host C++) for the CPU path" : "CUDA source"));
    const auto b = device_ == "cpu" ? build_host_candidate(src, (work_dir_ / "build").string(), true, stop)
                                    : build_candidate(src, task.arch, *nvcc_, true, stop);
    if (b.cancelled) throw evaluation_error("task '" + task.name + "': stopped while its reference kernel was being built");
    if (!b.ok) throw evaluation_error("task '" + task.name + "': the reference kernel " + src + " does not build:\n" + b.log);
    entry->reference_library = b.library;
  }
  std::lock_guard lock(tasks_mutex_);
  tasks_[task.name] = std::move(entry);
}

int harness_evaluator::harness_starts() const {
  std::lock_guard lock(pool_mutex_);
  int n = 0;
  for (const auto& s : slots_) n += s->client->starts();
  return n;
}

std::string harness_evaluator::describe() const {
  const std::string sandbox = ", " + support::sandbox_support().summary;
  if (device_ == "cpu") return "live: kblaster-harness on the CPU (host C++ candidates)" + sandbox;
  std::map<std::string, int> names;
  std::lock_guard lock(pool_mutex_);
  for (const auto& s : slots_) ++names[s->device_name.empty() ? "GPU " + s->visible : s->device_name];
  std::string out = "live: kblaster-harness on ";
  bool first = true;
  for (const auto& [name, n] : names) {
    out += (first ? "" : " + ") + std::to_string(n) + " x " + name;
    first = false;
  }
  return out + " (" + arch_ + ")" + (ncu_.empty() ? ", static profiles (no ncu)" : ", ncu profiles") + sandbox;
}

struct harness_evaluator::timed_build {
  fs::path dir;          // the candidate's content-addressed folder
  fs::path path;         // its source file there
  candidate_build build;
  double seconds = 0;    // the compiler's wall time
  std::string error;     // the source could not be written: no evaluation is possible
};

std::shared_future<harness_evaluator::timed_build> harness_evaluator::build_of(const task_entry& task,
                                                                               const std::string& source,
                                                                               const std::string& hash) {
  std::lock_guard lock(builds_mutex_);
  if (const auto it = builds_.find(hash); it != builds_.end()) return it->second;
  timed_build t;
  // Content-addressed: the same source always lands in the same file, so nvcc's cache and the
  // ncu report sit beside it and a later run can be inspected by hash.
  t.dir = work_dir_ / safe_name(task.spec.name) / hash;
  std::error_code ec;
  fs::create_directories(t.dir, ec);
  t.path = t.dir / (device_ == "cpu" ? "kernel.cpp" : "kernel.cu");
  if (!fs::exists(t.path, ec) || fs::file_size(t.path, ec) != source.size()) {
    try {
      support::write_file_atomically(t.path, source);  // the rename makes it appear whole
    } catch (const support::file_error& error) {
      t.error = "cannot write the candidate: " + std::string(error.what());
    }
  }
  std::shared_future<timed_build> f;
  if (!t.error.empty()) {
    std::promise<timed_build> p;
    p.set_value(std::move(t));
    f = p.get_future().share();
  } else {
    const std::string arch = task.spec.arch;
    f = std::async(std::launch::async, [this, t = std::move(t), arch]() mutable {
          const auto start = clock_type::now();
          try {
            const auto stop = builds_stop_.get_token();
            t.build = device_ == "cpu" ? build_host_candidate(t.path.string(), (work_dir_ / "build").string(), true, stop)
                                       : build_candidate(t.path.string(), arch, *nvcc_, true, stop);
          } catch (const std::exception& x) {
            t.build.ok = false;
            t.build.log = std::string("the build could not run: ") + x.what();
          }
          t.seconds = seconds_since(start);
          return std::move(t);
        }).share();
  }
  builds_.emplace(hash, f);
  return f;
}

void harness_evaluator::prepare(const std::string& task_name, const std::string& source) {
  std::shared_ptr<const task_entry> task;
  {
    std::lock_guard lock(tasks_mutex_);
    if (const auto it = tasks_.find(task_name); it != tasks_.end()) task = it->second;
  }
  if (!task) return;  // evaluate() will say so
  try {
    (void)build_of(*task, source, source_hash(task_name, source));
  } catch (const std::exception&) {
    // A hint only (a thread that could not start, say): evaluate() builds it itself.
  }
}

evaluation harness_evaluator::evaluate(const std::string& task_name, const std::string& source,
                                       const evaluation_request& request) {
  std::shared_ptr<const task_entry> task;
  {
    std::lock_guard lock(tasks_mutex_);
    if (const auto it = tasks_.find(task_name); it != tasks_.end()) task = it->second;
    if (!task) {
      std::string known;
      for (const auto& [name, _] : tasks_) known += (known.empty() ? "" : ", ") + name;
      throw evaluation_error("unknown task '" + task_name + "' (this evaluator knows: " + (known.empty() ? "none" : known) + ")");
    }
  }
  const auto hash = source_hash(task_name, source);
  // How much of a profile: 0 none, 1 the state's counters, 2 the sections (whose state is the
  // counters' too); a result with at least the profile asked for answers the request.
  const int asked = !request.profile ? 0 : request.scope == profile_scope::state_counters ? 1 : 2;
  auto key = [&](bool t, int p) { return hash + (t ? "|t" : "|-") + "-cp"[p]; };
  std::promise<evaluation> promise;
  std::shared_future<evaluation> result, prior;
  {
    std::lock_guard lock(cache_mutex_);
    // The same request, or one that did more (timed, profiled, with the sections), answers this one.
    for (bool t : {request.time, true})
      for (int p = asked; p <= 2; ++p)
        if (!result.valid())
          if (const auto it = cache_.find(key(t, p)); it != cache_.end()) result = it->second;
    if (result.valid()) return result.get();  // may wait for a concurrent measurement
    // Verified (and timed) with less of a profile than wanted: only the profile runs.
    for (bool t : {request.time, true})
      for (int p = 0; p < asked; ++p)
        if (!prior.valid())
          if (const auto it = cache_.find(key(t, p)); it != cache_.end()) prior = it->second;
    result = promise.get_future().share();
    cache_[key(request.time, asked)] = result;
  }
  try {
    auto e = measure(*task, source, hash, request, prior);
    if (cancelled(e)) {
      std::lock_guard lock(cache_mutex_);
      cache_.erase(key(request.time, asked));  // no verdict: a later run measures it
    }
    promise.set_value(e);
    return e;
  } catch (...) {
    {
      std::lock_guard lock(cache_mutex_);
      cache_.erase(key(request.time, asked));  // a later call may try again
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

reference_probe harness_evaluator::probe_reference(const std::string& task_name, std::stop_token stop) {
  std::shared_ptr<const task_entry> task;
  {
    std::lock_guard lock(tasks_mutex_);
    if (const auto it = tasks_.find(task_name); it != tasks_.end()) task = it->second;
  }
  if (!task) throw evaluation_error("unknown task '" + task_name + "'");
  lease held(*this);
  if (const auto r = start_if_needed(held.get(), stop); !r.ok()) {
    reference_probe p;
    p.error = "kblaster-harness (" + harness_ + ") cannot start: " + r.message;
    return p;
  }
  // The probe runs the reference on the GPU: not beside another kblaster's measurement.
  const auto device = lock_device(held.get(), {{"op", "probe_reference"}, {"task", {{"name", task_name}}}}, stop);
  if (!device.held) {
    reference_probe p;
    p.error = "cancelled while waiting for the GPU";
    return p;
  }
  return engine::probe_reference(*held.get().client, task->spec, task->reference_library, stop);
}

harness_reply harness_evaluator::start_if_needed(slot& s, std::stop_token stop) {
  if (s.client->pid() > 0) return {};
  auto r = s.client->request({{"op", "ping"}}, stop);
  if (r.ok() && !r.body.value("ok", false)) {
    s.client->stop();
    return {{}, "start_failed", "the harness answered its first ping with " + r.body.dump(), ""};
  }
  if (!r.ok()) return r;
  std::lock_guard lock(pool_mutex_);  // describe() reads the names
  s.device_name = r.body.value("device", s.device_name);
  return {};
}

harness_evaluator::device_hold harness_evaluator::lock_device(const slot& s, const nlohmann::json& request,
                                                                std::stop_token stop) const {
  device_hold h;
  if (device_ == "cpu" || !options_.lock_device) return h;
  const std::string device = support::device_lock::gpu(s.visible);
  const auto task = request.find("task");
  const auto op = request.value("op", std::string());
  const std::string what = op == "verify"            ? "verifying a kernel of"
                           : op == "time"            ? "timing a kernel of"
                           : op == "evaluate"        ? "verifying and timing a kernel of"
                           : op == "profile"         ? "profiling a kernel of"
                           : op == "probe_reference" ? "probing the reference of"
                                                     : "measuring a kernel of";
  const std::string doing = "kblaster " + what + " '" +
                            (task != request.end() && task->is_object() ? task->value("name", std::string("?")) : "?") + "'" +
                            (op == "profile" ? " under ncu" : "");
  try {
    auto lock = support::device_lock::acquire(
        device, doing, stop,
        [&](const std::string& holder) {
          const auto line = "GPU " + (s.visible.empty() ? std::string("0") : s.visible) + " is busy (" + holder +
                            "): waiting for it";
          if (options_.on_device_wait) options_.on_device_wait(line);
          else std::fprintf(stderr, "[kblaster] %s\n", line.c_str());
        },
        options_.device_lock_dir);
    if (!lock) {
      h.held = false;  // stopped while waiting
      return h;
    }
    h.waited = lock->waited();
    h.lock = std::make_unique<support::device_lock>(std::move(*lock));
  } catch (const std::exception& ex) {
    // A lock that cannot be taken (no runtime folder) must not stop the measurement: it only
    // loses the guard against a measurement of another process at the same time.
    std::fprintf(stderr, "[kblaster] measuring on %s without its lock: %s\n", device.c_str(), ex.what());
  }
  h.held = true;
  return h;
}

harness_reply harness_evaluator::ask_judge(slot& s, const nlohmann::json& request, evaluation& e, std::stop_token stop,
                                           double& took) {
  const std::string where = s.visible.empty() ? device_ : "GPU " + s.visible;
  std::vector<std::string> failures;
  for (int attempt = 0;; ++attempt) {
    const auto t0 = clock_type::now();
    auto r = start_if_needed(s, stop);
    const double started = seconds_since(t0);
    e.phases.harness_start += started;
    e.gpu_seconds += started;
    took = 0;
    const bool started_ok = r.ok();
    if (started_ok) {
      // Waiting for another measurement on this GPU is not device time of this candidate's.
      const auto device = lock_device(s, request, stop);
      if (!device.held && stop.stop_requested()) return {{}, "cancelled", "cancelled while waiting for " + where, ""};
      e.phases.device_wait += device.waited;
      const auto t1 = clock_type::now();
      r = s.client->request(request, stop);
      took = seconds_since(t1);
    }
    if (!r.judge_failed()) {
      if (!failures.empty()) r.body["judge_retries"] = failures;  // said in the evaluation's raw reply
      return r;
    }
    // No verdict on the candidate: its seconds are the harness's, and a fresh harness tries again.
    e.phases.harness_start += took;
    e.gpu_seconds += took;
    s.client->stop();
    std::string failure = r.ok() ? r.body.value("reason", std::string("the judge failed")) : r.message;
    if (const auto at = failure.rfind("; it will be restarted"); at != std::string::npos) failure.erase(at);
    failures.push_back((started_ok ? "" : "it cannot start: ") + std::move(failure));
    if (stop.stop_requested()) return {{}, "cancelled", "cancelled after the harness failed: " + failures.back(), ""};
    if (attempt >= options_.judge_retries) {
      std::string message = "evaluator error, not the candidate's: kblaster-harness on " + where + " failed " +
                            std::to_string(failures.size()) + (failures.size() == 1 ? " time" : " times") + " on '" +
                            request.value("op", std::string()) + "'";
      for (std::size_t i = 0; i < failures.size(); ++i) message += (i ? "; then " : ": ") + failures[i];
      if (!r.stderr_tail.empty()) message += "\nthe harness's last words:\n" + r.stderr_tail;
      throw evaluation_error(message);
    }
    std::fprintf(stderr, "[kblaster] the judge failed, not the candidate (%s); trying again on a fresh harness (%d of %d)\n",
                 failures.back().c_str(), attempt + 1, options_.judge_retries);
  }
}

namespace {

/// The same candidate measured before with less of a profile, when that measurement stands: not
/// failed as a whole, not cancelled.
std::optional<evaluation> earlier_measurement(std::shared_future<evaluation> prior) {
  if (!prior.valid()) return std::nullopt;
  try {
    auto before = prior.get();
    if (cancelled(before)) return std::nullopt;
    return before;
  } catch (const std::exception&) {
    return std::nullopt;  // that measurement failed as a whole; this one starts from nothing
  }
}

evaluation cancelled_while_built(evaluation e) {
  e.verdict = "error";
  e.check = "cancelled";
  e.reason = "cancelled while the candidate was being built";
  return e;
}

evaluation compile_failure(evaluation e, const candidate_build& b) {
  e.verdict = "fail";
  e.check = "compile";
  e.reason = "does not compile: " + first_error(b);
  e.compile_log = b.log;
  return e;
}

/// The judge's request for a built candidate: verify, and time it against the reference when asked.
nlohmann::json judge_request(const task_spec& task, const std::string& reference_library, const std::string& library,
                             const evaluation_request& request, double max_seconds) {
  nlohmann::json timing{{"max_seconds", max_seconds}};
  if (request.beat_ms && *request.beat_ms > 0) timing["slower_than_ms"] = *request.beat_ms;
  if (request.reference_ms && *request.reference_ms > 0) timing["reference_ms"] = *request.reference_ms;
  nlohmann::json req{{"op", request.time ? "evaluate" : "verify"},
                     {"task", to_json(task)},
                     {"candidate", library},
                     {"timing", timing}};
  if (!reference_library.empty()) req["reference_library"] = reference_library;
  return req;
}

/// The judge's division of the request's `took` seconds; what it does not account for (the
/// exchange, a runner that did not start) is the runner's. Takes "seconds" out of the raw reply.
void read_phases(evaluation& e, double took) {
  const auto phases = e.harness.value("seconds", nlohmann::json::object());
  e.harness.erase("seconds");
  auto phase = [&](const char* name) { return phases.contains(name) && phases[name].is_number() ? phases[name].get<double>() : 0.0; };
  e.phases.reference = phase("reference");
  e.phases.verify = phase("verify");
  e.phases.time = phase("time");
  e.phases.runner = std::max(0.0, took - e.phases.reference - e.phases.verify - e.phases.time);
}

/// The verdict and the figures of the judge's reply (already in e.harness).
void read_verdict(evaluation& e) {
  e.verdict = e.harness.value("verdict", "error");
  e.check = e.harness.value("check", "");
  e.reason = e.harness.value("reason", "");
  // needs_review: every seed passed and the timed calls stayed right; only the speedup is
  // suspicious. Correct, with the verdict kept for the report.
  e.correct = e.verdict == "pass" || e.verdict == "needs_review";
  if (e.harness.contains("timing")) {
    const auto& t = e.harness["timing"];
    if (t.contains("candidate")) {
      e.runtime_ms = t["candidate"].value("median_ms", 0.0);
      e.timed_until_slower = t["candidate"].value("stopped_slower", false);
    }
    if (t.contains("reference")) e.reference_ms = t["reference"].value("median_ms", 0.0);
  }
}

/// A correct candidate's reason when the judge gave none: its seeds and its figures.
std::string correct_reason(const evaluation& e, const task_spec& task, const evaluation_request& request) {
  std::string reason = "correct on " + std::to_string(task.seeds) + " seeds";
  const bool given = e.harness.contains("timing") && e.harness["timing"].contains("reference") &&
                     e.harness["timing"]["reference"].value("given", false);
  if (e.runtime_ms && e.reference_ms)
    reason += "; " + support::significant_text(*e.runtime_ms, 4) + " ms against the reference's " +
              support::significant_text(*e.reference_ms, 4) + " ms" + (given ? " (a figure the request gave, not timed again)" : "");
  else if (e.runtime_ms && e.timed_until_slower && request.beat_ms)
    reason += "; " + support::significant_text(*e.runtime_ms, 4) + " ms, timed only until clearly slower than the " +
              support::significant_text(*request.beat_ms, 4) + " ms it had to beat";
  return reason;
}

}  // namespace

bool harness_evaluator::await_build(const std::shared_future<timed_build>& pending, std::stop_token stop) {
  if (pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return true;
  // A stop while the compiler runs stops every build, and with it the compilers, at once: an
  // evaluator serves one run, and a stopped run builds nothing more.
  const std::stop_callback stop_builds(stop, [this] { builds_stop_.request_stop(); });
  pending.wait();
  return !stop.stop_requested();
}

void harness_evaluator::verify_and_time(const task_entry& task, const candidate_build& b,
                                        const evaluation_request& request, slot& s, evaluation& e) {
  double took = 0;
  const auto reply =
      ask_judge(s, judge_request(task.spec, task.reference_library, b.library, request, options_.max_seconds), e,
                request.stop, took);
  e.gpu_seconds += took;
  {
    std::lock_guard lock(pool_mutex_);
    e.gpu_name = s.device_name;
  }
  e.harness = reply.to_json();
  e.harness.erase("id");
  read_phases(e, took);
  read_verdict(e);
  if (e.correct && e.reason.empty()) e.reason = correct_reason(e, task.spec, request);
}

evaluation harness_evaluator::measure(const task_entry& task, const std::string& source, const std::string& hash,
                                      const evaluation_request& request, std::shared_future<evaluation> prior) {
  const auto before = earlier_measurement(std::move(prior));
  if (before && !before->correct) return *before;  // never profile a candidate that failed
  evaluation e = before.value_or(evaluation{});
  e.code_hash = hash;
  e.arch = device_ == "cpu" ? "cpu" : task.spec.arch.empty() ? arch_ : task.spec.arch;

  const auto wait_start = clock_type::now();
  const auto pending = build_of(task, source, hash);
  if (!await_build(pending, request.stop)) return cancelled_while_built(std::move(e));
  const auto built = pending.get();
  if (!built.error.empty()) throw evaluation_error(built.error);
  if (built.build.cancelled) return cancelled_while_built(std::move(e));
  const auto& b = built.build;
  if (!before) {
    e.build_seconds = built.seconds;
    e.phases.build = built.seconds;
    e.phases.build_wait = seconds_since(wait_start);
  }
  if (!b.ok) return compile_failure(std::move(e), b);
  e.compile_ok = true;

  lease held(*this);
  slot& s = held.get();
  // Verified (and timed) before: only the profile runs now.
  if (!before) verify_and_time(task, b, request, s, e);
  if (e.correct && request.profile)
    profile(task, built.dir, built.path.string(), b.library, s, e, request.scope, request.next_scope.value_or(request.scope),
            request.stop);
  return e;
}

}  // namespace kblaster::engine::optimize
