// The harness's requests: verify (several seeds, every guard), time (candidate and reference,
// same policy), evaluate (verify, then time if correct), profile (one call inside an NVTX range,
// by a runner started under ncu), profile_report (ncu's report of a profile that replied before
// ncu had written it), probe_reference (the reference alone over a few draws: is the task
// degenerate? degenerate.h), ping. One judge per process; requests are handled one at a
// time.
//
// This process is the judge: it owns the protocol with the engine, the reference, the expected
// outputs and the verdict, and never loads a candidate. Each candidate request gets a fresh kblaster-runner that
// loads the candidate and calls it on memory shared with the judge (runner_process.h); it is
// killed before the reference is timed, so nothing of the candidate runs then.
#pragma once

#include "harness/candidate.h"
#include "harness/device.h"
#include "harness/profile_runner.h"
#include "harness/reference.h"
#include "harness/runner_process.h"
#include "harness/runner_timing.h"
#include "harness/timing.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <vector>
#include <string>

namespace kblaster::harness {

class timed_batch;

/// Speedups above this are flagged for review rather than trusted.
constexpr double review_speedup = 10.0;

/// The reference's figure a candidate's timing is set against (judge_time.cpp): none for a
/// candidate that stopped clearly slower; `failure` set when the reference could not be timed.
struct reference_figure {
  std::optional<timing_stats> stats;
  std::string how;           // where the figure comes from, as the reply's method says it
  bool given = false;        // the request's own figure (timing_policy::reference_ms)
  bool own_batches = false;  // a PyTorch reference on the GPU, in batches sized for its own speed
  nlohmann::json failure;    // null, or the reply to give instead
};

/// The judge: state kept across requests (the device, the references, the next runner, already
/// starting) and the handling of each.
class judge {
 public:
  explicit judge(const std::string& device);
  /// Handles one request and returns its reply (never throws, except fatal_device_error).
  nlohmann::json handle(const nlohmann::json& request);
  device_context& device() { return dev_; }
  /// What the runners' system-call filter reports on this machine (after the first start-up).
  std::string runner_filter_state();

 private:
  using deadline = runner_process::deadline;
  device_context dev_;
  std::string runner_program_;
  std::unique_ptr<runner_process> spare_;  // started after each request, ready for the next
  // Started under ncu when a profile ends, for the next profile request (profile_runner.h).
  std::unique_ptr<profile_runner> profile_spare_;
  // A profile that replied once its runner was gone, its ncu still writing the report: finished
  // by the next profile_report request (or before any other request).
  struct pending_report {
    std::unique_ptr<profile_runner> runner;
    std::vector<std::string> ncu_argv, next_argv;
    deadline until;
  };
  std::optional<pending_report> pending_report_;
  std::map<std::string, std::unique_ptr<reference_model>> references_;
  // The reference's timing of a task, kept for the next candidates of the same task and batch
  // size: the reference does not change between candidates, and timing it again cost as much as
  // timing the candidate (about a second of a bench's 2.3 s a candidate). Kept when the GPU did not
  // throttle and the samples either converged or ran to the policy's cap (a PyTorch reference's
  // samples often scatter too much to converge, and a second more of them would say no more: the
  // H100 trace of vector_add timed its reference for the whole second of every candidate), and
  // for timing_rules::reference_reuse (ten minutes) at most, so that a GPU whose clocks moved is
  // timed afresh; the reply says which figure was reused.
  struct reference_timing {
    timing_stats stats;
    std::string how;
    std::chrono::steady_clock::time_point when;
  };
  std::map<std::string, reference_timing> reference_timings_;
  std::uint64_t requests_ = 0;
  std::uint64_t profiles_ = 0;

  std::unique_ptr<runner_process> take_runner();
  reference_model& reference(const engine::task_spec& task, const std::string& kernel_library);

  /// A candidate or probe request as read before anything runs: its task, its seeds, its deadline.
  struct task_request {
    engine::task_spec task;
    std::uint64_t seed_base = 0;
    deadline until;
  };
  /// Checks the request's op and fields (throws std::invalid_argument) and reads its task.
  task_request read_task_request(const nlohmann::json& req, const std::string& op,
                                 std::chrono::steady_clock::time_point received);
  /// Every op but ping and profile_report, into `reply`; `runner` is the request's candidate
  /// runner once it has one, `candidate_request` set once the candidate passed its screening.
  void serve(const nlohmann::json& req, const std::string& op, std::chrono::steady_clock::time_point received,
             std::unique_ptr<runner_process>& runner, bool& candidate_request, nlohmann::json& reply);
  /// The candidate's runner up with its library loaded; null when so, else the failing reply.
  nlohmann::json start_candidate(runner_process& runner, const std::string& path, deadline until);

  /// The candidate in `runner` on the task's seeds under every guard, then on the stress sets
  /// (judge_verify.cpp): pass, or the first failure with the seeds and sets so far.
  nlohmann::json verify(const engine::task_spec& task, runner_process& runner, reference_model& ref,
                        std::uint64_t seed_base, deadline until);
  /// Times the candidate in `runner`, ends the runner, then times the reference the same way.
  nlohmann::json time(const engine::task_spec& task, std::unique_ptr<runner_process>& runner, reference_model& ref,
                      const std::string& reference_library, std::uint64_t seed, const nlohmann::json& policy,
                      deadline until);
  /// A kernel reference's runner, started with the candidate's timing (null for any other
  /// reference), and why it did not start.
  struct reference_runner {
    runner_process* process = nullptr;
    std::string start_error;
  };
  /// The reference's figure for a candidate timed as `cand`: the request's, one kept from an
  /// earlier candidate, or timed now in `batch` (reference_timings_ keeps it).
  reference_figure reference_figure_for(const engine::task_spec& task, reference_model& ref,
                                        const reference_runner& kernel_runner, timed_batch& batch, std::uint64_t seed,
                                        const timing_policy& policy, const runner_timing& cand,
                                        const std::string& reference_library, deadline until);
  /// A kernel reference timed in its own runner in batches of `calls`, into `out`.
  void time_kernel_reference(const reference_runner& kernel_runner, timed_batch& batch, std::uint64_t seed,
                             const timing_policy& policy, int calls, const std::string& reference_library,
                             deadline until, reference_figure& out);
  /// One call of the candidate at `path` inside the NVTX range, by a runner started under
  /// `ncu_argv` (which profiles it and writes the report it was told to); ncu's exit and log come
  /// back with the reply. No verdict: a profile describes a candidate already judged. The runner
  /// started ahead serves it when it was started under the same command; after a profile that
  /// passed, one is started under `next_argv` (empty: the same command) for the next.
  /// `report_later`: a profile that passed replies as soon as its runner has exited (the GPU is
  /// free then), with "report": "pending"; ncu's exit, log and report come with the next
  /// profile_report request. ncu writes its report after its target is gone, 0.2 s on an H100,
  /// which a caller that holds the GPU for the request need not hold it for.
  nlohmann::json profile(const engine::task_spec& task, const std::string& path, reference_model& ref,
                         std::uint64_t seed, const std::vector<std::string>& ncu_argv,
                         const std::vector<std::string>& next_argv, bool report_later, deadline until);
  /// Waits for the ncu of a profile that passed, takes its exit and log, delivers its report, and
  /// starts the next profile's runner ahead: the profile's "ncu" object.
  nlohmann::json finish_profile(profile_runner& started, const std::vector<std::string>& ncu_argv,
                                const std::vector<std::string>& next_argv, bool passed, deadline until);
  /// A profile_report request: the pending profile finished (an error when none is pending).
  nlohmann::json profile_report();
};

}  // namespace kblaster::harness
