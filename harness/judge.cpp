// Request handling: a request read and dispatched, its runner ended and the next one started
// however it ends, its seconds divided into phases. Each request has a file of its own:
// judge_verify.cpp, judge_time.cpp (with runner_timing.cpp), judge_profile.cpp; probe_reference
// is degenerate.cpp's.
#include "harness/judge.h"

#include "harness/degenerate.h"
#include "harness/judge_replies.h"
#include "harness/trace.h"

#include <torch/csrc/jit/runtime/graph_executor.h>

#include <algorithm>

namespace kblaster::harness {
namespace {

using clock_type = std::chrono::steady_clock;

/// The milliseconds that a deadline leaves, for the request's own default.
constexpr double default_deadline_ms = 60'000;

/// The reply for the exception in flight (any but fatal_device_error, which ends the harness).
nlohmann::json exception_reply() {
  try {
    throw;
  } catch (const c10::OutOfMemoryError& e) {
    return {{"verdict", "error"}, {"check", "out_of_memory"}, {"reason", e.what_without_backtrace()}};
  } catch (const c10::Error& e) {
    return {{"verdict", "error"}, {"check", "torch"}, {"reason", e.what_without_backtrace()}};
  } catch (const std::bad_alloc& e) {
    return {{"verdict", "error"}, {"check", "out_of_memory"}, {"reason", std::string("out of host memory: ") + e.what()}};
  } catch (const std::exception& e) {
    return {{"verdict", "error"}, {"check", "request"}, {"reason", e.what()}};
  } catch (...) {
    return {{"verdict", "error"}, {"check", "exception"}, {"reason", "a non-standard exception in the harness"}};
  }
}

}  // namespace

judge::judge(const std::string& device) : dev_(device) {
  // Run TorchScript references op by op, as eager PyTorch would: no fusion or graph
  // specialisation that would make the reference faster than what users compare against.
  torch::jit::setGraphExecutorOptimize(false);
  // On the CPU the judge and the runner share the cores: a LibTorch thread pool spinning after
  // the judge's last operation would delay the runner by scheduling slices that its own clock does
  // not see and the judge's does, and the two figures would disagree for no fault of the candidate.
  if (!dev_.is_cuda()) at::set_num_threads(1);
  runner_program_ = runner_program();
  spare_ = std::make_unique<runner_process>(runner_program_, dev_.is_cuda() ? "cuda" : "cpu");
}

std::unique_ptr<runner_process> judge::take_runner() {
  if (spare_) return std::move(spare_);
  return std::make_unique<runner_process>(runner_program_, dev_.is_cuda() ? "cuda" : "cpu");
}

std::string judge::runner_filter_state() {
  if (!spare_) spare_ = take_runner();
  if (const auto err = spare_->ready(clock_type::now() + std::chrono::seconds(60)); !err.empty()) {
    spare_.reset();
    return "the runner did not start: " + err;
  }
  return spare_->filter_state();
}

reference_model& judge::reference(const engine::task_spec& task, const std::string& kernel_library) {
  auto spec = engine::to_json(task);
  // A TorchScript reference is the same whatever shapes it is called with: a profile at a smaller
  // batch (the engine's profile_shape.h) keeps the loaded module, its weights and its warm state.
  // A kernel reference fills buffers shaped by the task's outputs, so its shapes stay in the key.
  if (task.reference.kind != engine::reference_kind::kernel) {
    spec.erase("inputs");
    spec.erase("outputs");
  }
  const auto key = spec.dump() + "#" + kernel_library;
  // One task's reference at a time: a conversation optimizes one task, and a bench goes from
  // problem to problem, whose weights (a GEMM's, on the GPU) would otherwise accumulate.
  for (auto it = references_.begin(); it != references_.end();) it = it->first == key ? std::next(it) : references_.erase(it);
  auto& slot = references_[key];
  if (!slot) slot = std::make_unique<reference_model>(task, dev_, kernel_library);
  return *slot;
}

judge::task_request judge::read_task_request(const nlohmann::json& req, const std::string& op,
                                             clock_type::time_point received) {
  const bool probe = op == "probe_reference";  // the reference alone (degenerate.h): no candidate
  if (op != "verify" && op != "time" && op != "evaluate" && op != "profile" && !probe)
    throw std::invalid_argument("unknown op '" + op +
                                "' (ping, verify, time, evaluate, profile, profile_report, probe_reference)");
  if (!req.contains("task") || (!probe && (!req.contains("candidate") || !req["candidate"].is_string())))
    throw std::invalid_argument("a request needs 'task' (an object) and 'candidate' (the .so path)");
  task_request r;
  r.task = engine::task_from_json(req["task"], req["task"].value("dir", "."), "request.task");
  r.seed_base = req.value("seed", std::uint64_t{1000}) + 100 * ++requests_;
  const double deadline_ms = std::clamp(req.value("deadline_ms", default_deadline_ms), 100.0, 24 * 3600e3);
  r.until = received + std::chrono::milliseconds(static_cast<long long>(deadline_ms));
  return r;
}

nlohmann::json judge::start_candidate(runner_process& runner, const std::string& path, deadline until) {
  if (const auto err = runner.ready(until); !err.empty())
    return fail("error", "runner", "the candidate's runner did not start: " + err);
  const auto loaded = runner.load(path, until);
  // Loading runs the candidate's initialisers: it can die or hang there as well as in a call.
  if (!loaded.replied()) return call_failure(lost_call(loaded, "loading"));
  if (loaded.body.result != runner::status::ok) return fail("fail", "load", runner_message(loaded.body));
  return nullptr;
}

void judge::serve(const nlohmann::json& req, const std::string& op, clock_type::time_point received,
                  std::unique_ptr<runner_process>& runner, bool& candidate_request, nlohmann::json& reply) {
  // Where the request's time went, for the engine's per-candidate breakdown: each phase's wall
  // seconds from the previous mark (the reference's first load, the runner's start and load, the
  // checked calls, the timed ones).
  auto last_mark = received;
  auto mark = [&](const char* phase) {
    const auto now = clock_type::now();
    reply["seconds"][phase] = std::chrono::duration<double>(now - last_mark).count();
    last_mark = now;
  };
  if (op == "profile_report") {
    reply.update(profile_report());
    mark("profile_report");
    return;
  }
  // A profile whose report nobody asked for is finished first: its ncu and report do not
  // outlive the next request, nor does its runner start ahead after it.
  if (pending_report_) (void)profile_report();
  const auto r = read_task_request(req, op, received);
  trace_request(op.c_str());
  reply["device"] = dev_.is_cuda() ? "cuda" : "cpu";
  const bool probe = op == "probe_reference";
  const auto path = probe ? std::string() : req["candidate"].get<std::string>();
  // "screening": false is for tests of the sandbox behind the screening; the engine never sends it.
  const bool screen = req.value("screening", true);
  auto& ref = reference(r.task, req.value("reference_library", ""));
  mark("reference");
  if (probe) {
    reply.update(probe_reference(r.task, ref, dev_, r.seed_base));
    mark("probe");
    return;
  }
  try {
    check_candidate(path, r.task.allow_libraries, screen);
  } catch (const candidate_rejected& e) {
    reply.update(fail("fail", e.check(), e.what()));
    return;
  }
  candidate_request = true;
  if (op == "profile") {
    // ncu's measurement of one call, not a verdict: the runner is started under the command the
    // engine gives (ncu with its sections and report path), inside this sandbox.
    const auto ncu = req.value("ncu", std::vector<std::string>{});
    if (ncu.empty()) throw std::invalid_argument("a profile request needs 'ncu' (the command to start the runner under)");
    // 'next_ncu': the command the engine expects its next profile to ask for (the loop profiles
    // its input with ncu's sections, then each step's best for the state's counters).
    reply.update(profile(r.task, path, ref, r.seed_base, ncu, req.value("next_ncu", std::vector<std::string>{}),
                         req.value("report_later", false), r.until));
    mark("profile");
    return;
  }
  runner = take_runner();
  if (auto bad = start_candidate(*runner, path, r.until); !bad.is_null()) {
    reply.update(bad);
    return;
  }
  mark("runner");
  if (op == "verify" || op == "evaluate") {
    reply.update(verify(r.task, *runner, ref, r.seed_base, r.until));
    mark("verify");
    if (reply["verdict"] != "pass" || op == "verify") return;
    // verify's frame is gone; the timed calls get their own (rotated inputs, same shapes).
  }
  reply.update(time(r.task, runner, ref, req.value("reference_library", ""), r.seed_base + 99,
                    req.value("timing", nlohmann::json::object()), r.until));
  mark("time");
}

nlohmann::json judge::handle(const nlohmann::json& req) {
  nlohmann::json reply{{"id", req.value("id", nlohmann::json())}};
  const std::string op = req.value("op", "");
  const auto received = clock_type::now();
  std::unique_ptr<runner_process> runner;
  // However the request ends, its runner ends with it, and the next one starts now, while the
  // engine reads this reply.
  struct request_end {
    judge& s;
    std::unique_ptr<runner_process>& runner;
    bool candidate_request = false;
    ~request_end() {
      runner.reset();
      s.dev_.release_cached_memory();
      if (s.spare_ || !candidate_request) return;
      try {
        s.spare_ = s.take_runner();
      } catch (const std::exception&) {
        // No spare: the next request starts its runner itself and reports why that fails.
      }
    }
  } end{*this, runner};
  try {
    if (op == "ping") {
      reply.update({{"ok", true}, {"device", dev_.name()}, {"cuda", dev_.is_cuda()}, {"torch", TORCH_VERSION}});
      return reply;
    }
    serve(req, op, received, runner, end.candidate_request, reply);
  } catch (const fatal_device_error&) {
    throw;
  } catch (...) {
    reply.update(exception_reply());
  }
  return reply;
}

}  // namespace kblaster::harness
