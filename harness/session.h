// The harness's requests: verify (several seeds, every guard), time (candidate and reference,
// same policy), evaluate (verify, then time if correct), profile_run (one call inside an NVTX
// range), ping. One session per process; requests are handled one at a time.
//
// This process is the judge: it owns the protocol with the engine, the reference, the expected
// outputs and the verdict, and never loads a candidate (except profile_run, which runs one-shot
// under ncu and produces no verdict). Each candidate request gets a fresh kblaster-runner that
// loads the candidate and calls it on memory shared with the judge (runner_process.h); it is
// killed before the reference is timed, so nothing of the candidate runs then.
#pragma once

#include "harness/candidate.h"
#include "harness/device.h"
#include "harness/reference.h"
#include "harness/runner_process.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace kblaster::harness {

/// Speedups above this are flagged for review rather than trusted.
constexpr double review_speedup = 10.0;

/// State kept across requests: the device, the references, the next runner (already starting).
class session {
 public:
  /// `one_shot`: the process handles one request (--request FILE); only then may profile_run
  /// load a candidate into this process.
  session(const std::string& device, bool one_shot);
  /// Handles one request and returns its reply (never throws, except fatal_device_error).
  nlohmann::json handle(const nlohmann::json& request);
  device_context& device() { return dev_; }
  /// What the runners' system-call filter reports on this machine (after the first start-up).
  std::string runner_filter_state();

 private:
  using deadline = runner_process::deadline;
  device_context dev_;
  bool one_shot_ = false;
  std::string runner_program_;
  std::unique_ptr<runner_process> spare_;  // started after each request, ready for the next
  std::map<std::string, std::unique_ptr<candidate_library>> libraries_;  // profile_run only
  std::map<std::string, std::unique_ptr<reference_model>> references_;
  std::uint64_t requests_ = 0;

  std::unique_ptr<runner_process> take_runner();
  reference_model& reference(const engine::task_spec& task, const std::string& kernel_library);
  nlohmann::json verify(const engine::task_spec& task, runner_process& runner, reference_model& ref,
                        std::uint64_t seed_base, deadline until);
  /// Times the candidate in `runner`, ends the runner, then times the reference.
  nlohmann::json time(const engine::task_spec& task, std::unique_ptr<runner_process>& runner, reference_model& ref,
                      std::uint64_t seed, const nlohmann::json& policy, deadline until);
  nlohmann::json profile_run(const engine::task_spec& task, kb_forward_fn fn, reference_model& ref, std::uint64_t seed);
};

}  // namespace kblaster::harness
