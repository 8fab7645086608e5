// The profile request: one call of the candidate inside the NVTX range, by a runner started under
// ncu (profile_runner.h), started ahead when the previous profile ended; and profile_report, which
// finishes a profile that replied before ncu had written its report.
#include "harness/judge.h"

#include "harness/judge_replies.h"
#include "harness/shared_arena.h"
#include "harness/tensors.h"
#include "harness/trace.h"

#include <sys/wait.h>

#include <algorithm>
#include <fstream>

namespace kblaster::harness {
namespace {

using clock_type = std::chrono::steady_clock;

/// The last `bytes` of a file, or what there is: ncu's log, where the candidate's own output lands
/// too, so it is never read whole.
std::string read_tail(const std::string& path, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto size = static_cast<std::size_t>(in.tellg());
  const auto from = size > bytes ? size - bytes : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string out(size - from, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

}  // namespace

nlohmann::json judge::finish_profile(profile_runner& started, const std::vector<std::string>& ncu_argv,
                                     const std::vector<std::string>& next_argv, bool passed, deadline until) {
  const int status = started.process().quit_and_wait(until);
  nlohmann::json ncu{{"timed_out", status == -1}, {"started_ahead", started.started_ahead()}};
  if (status != -1) {
    if (WIFEXITED(status)) ncu["exit_code"] = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) ncu["signal"] = WTERMSIG(status);
  }
  std::string log = read_tail(started.log_path(), 16384);
  if (const auto moved = started.deliver_report(ncu_argv); !moved.empty()) log += "\n" + moved;
  ncu["log"] = std::move(log);
  trace_phase(started.started_ahead() ? "profile: ncu done (its runner started ahead)" : "profile: ncu done");
  // The next profile's runner starts now, while the engine reads this one's report. Not after
  // a failure, which the same command would most likely repeat.
  const auto& next = next_argv.empty() ? ncu_argv : next_argv;
  if (passed && status == 0 && !ncu_report_base(next).empty()) {
    try {
      profile_spare_ = std::make_unique<profile_runner>(runner_program_, dev_.is_cuda() ? "cuda" : "cpu", next,
                                                        std::filesystem::temp_directory_path(), ++profiles_, true);
    } catch (const std::exception&) {
      // None ahead: the next profile starts its own runner and reports why that fails.
    }
  }
  return ncu;
}

nlohmann::json judge::profile_report() {
  if (!pending_report_) return fail("error", "request", "no profile is waiting for its report (profile_report follows a profile asked with report_later)");
  auto pending = std::move(*pending_report_);
  pending_report_.reset();
  auto ncu = finish_profile(*pending.runner, pending.ncu_argv, pending.next_argv, true, pending.until);
  const bool written = ncu.value("exit_code", -1) == 0;
  return {{"verdict", written ? "pass" : "error"}, {"ncu", std::move(ncu)}};
}

nlohmann::json judge::profile(const engine::task_spec& task, const std::string& path, reference_model& ref,
                              std::uint64_t seed, const std::vector<std::string>& ncu_argv,
                              const std::vector<std::string>& next_argv, bool report_later, deadline until) {
  const auto inputs = make_inputs(task, seed, dev_.torch_device());
  trace_phase("profile: inputs drawn");
  const auto expected = ref.run(inputs);
  trace_phase("profile: reference run");
  const auto args = with_params(inputs, ref);
  call_frame frame(dev_, args, expected, initial_inputs(task));
  frame.load(args);
  dev_.sync_device();
  // The runner under ncu: its socket, ncu's log (and, started ahead, its report) in this
  // sandbox's own folder ($TMPDIR, the scratch folder the engine gave it).
  const auto dir = std::filesystem::temp_directory_path();
  const auto device = dev_.is_cuda() ? "cuda" : "cpu";
  std::unique_ptr<profile_runner> started;
  if (profile_spare_ && profile_spare_->serves(ncu_argv)) {
    started = std::move(profile_spare_);
    // One that failed while it waited (its ncu gone, its runner's start refused) is replaced; a
    // start takes about a second, so one not up in 30 s never will be.
    if (!started->process().ready(std::min(until, clock_type::now() + std::chrono::seconds(30))).empty()) started.reset();
  }
  profile_spare_.reset();  // started under another command: of no use now
  if (!started) started = std::make_unique<profile_runner>(runner_program_, device, ncu_argv, dir, ++profiles_, false);
  auto& runner = started->process();
  if (tracing()) {
    const auto sections = std::count(ncu_argv.begin(), ncu_argv.end(), std::string("--section"));
    const auto metrics = std::find(ncu_argv.begin(), ncu_argv.end(), std::string("--metrics"));
    const auto listed = metrics == ncu_argv.end() || metrics + 1 == ncu_argv.end() ? 0 : 1 + std::count(metrics[1].begin(), metrics[1].end(), ',');
    trace_phase(("profile: ncu with " + std::to_string(sections) + " section(s) and " + std::to_string(listed) +
                 " metric(s), its runner " + (started->started_ahead() ? "started ahead" : "started now"))
                    .c_str());
  }
  // Whatever happens to the call, ncu's exit and output are part of the reply: they say why a
  // profile is missing (no permission for the counters, a report not written...). A profile that
  // passed, asked with report_later, replies once its runner is gone and leaves ncu to finish.
  auto finished = [&](nlohmann::json r) {
    const bool passed = r.value("verdict", "") == "pass";
    if (passed && report_later) {
      if (runner.quit_and_await_close(until)) {
        trace_phase("profile: the runner gone (ncu writes its report)");
        r["report"] = "pending";
        pending_report_ = pending_report{std::move(started), ncu_argv, next_argv, until};
        return r;
      }
      // Not gone by the deadline: ncu's wait below kills it and says so.
    }
    r["ncu"] = finish_profile(*started, ncu_argv, next_argv, passed, until);
    return r;
  };
  if (const auto err = runner.ready(until); !err.empty())
    return finished(fail("error", "runner", "the profiled runner did not start: " + err));
  trace_phase("profile: the runner up under ncu");
  if (auto bad = map_failure(runner.map(frame.arena(), until)); !bad.is_null()) return finished(bad);
  const auto loaded = runner.load(path, until);
  if (!loaded.replied()) return finished(call_failure(lost_call(loaded, "loading")));
  if (loaded.body.result != runner::status::ok) return finished(fail("fail", "load", runner_message(loaded.body)));
  // A first call outside the range: the candidate's module loading and first-touch costs stay out
  // of what ncu measures.
  const auto warm = runner.call(frame.descriptors(), frame.n_in(), frame.n_out(), /*two_phase=*/false, until);
  if (!warm.replied()) return finished(call_failure(lost_call(warm, "the warm-up call")));
  if (warm.body.result != runner::status::ok) return finished(call_failure(status_failure(warm.body, "in the warm-up call")));
  if (warm.body.rc != 0) return finished(fail("fail", "return_code", "kb_forward returned " + std::to_string(warm.body.rc)));
  trace_phase("profile: warm-up call");
  frame.load(args);
  dev_.sync_device();
  const auto call = runner.profiled_call(frame.descriptors(), frame.n_in(), frame.n_out(), until);
  trace_phase("profile: the profiled call (ncu's replay passes)");
  if (!call.replied()) return finished(call_failure(lost_call(call, "the profiled call")));
  if (call.body.result != runner::status::ok) return finished(call_failure(status_failure(call.body, "in the profiled call")));
  if (call.body.rc != 0) return finished(fail("fail", "return_code", "kb_forward returned " + std::to_string(call.body.rc)));
  return finished({{"verdict", "pass"}, {"nvtx_range", runner::profile_range}});
}

}  // namespace kblaster::harness
