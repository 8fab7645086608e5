// The harness's requests: verify (several seeds, every guard), time (candidate and reference,
// same method), evaluate (verify, then time if correct), profile_run (one call inside an NVTX
// range), ping. One session per process; requests are handled one at a time.
#pragma once

#include "harness/candidate.h"
#include "harness/device.h"
#include "harness/reference.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace kblaster::harness {

/// Speedups above this are flagged for review rather than trusted.
constexpr double review_speedup = 10.0;

/// State kept across requests: the device, loaded libraries and references.
class session {
 public:
  explicit session(const std::string& device);
  /// Handles one request and returns its reply (never throws, except fatal_device_error).
  nlohmann::json handle(const nlohmann::json& request);
  device_context& device() { return dev_; }

 private:
  device_context dev_;
  std::map<std::string, std::unique_ptr<candidate_library>> libraries_;
  std::map<std::string, std::unique_ptr<reference_model>> references_;
  std::uint64_t requests_ = 0;

  candidate_library& library(const std::string& path, bool allow_libraries, bool screen);
  reference_model& reference(const engine::task_spec& task, const std::string& kernel_library);
  nlohmann::json verify(const engine::task_spec& task, kb_forward_fn fn, reference_model& ref, std::uint64_t seed_base);
  nlohmann::json time(const engine::task_spec& task, kb_forward_fn fn, reference_model& ref, std::uint64_t seed,
                      const nlohmann::json& policy);
  nlohmann::json profile_run(const engine::task_spec& task, kb_forward_fn fn, reference_model& ref, std::uint64_t seed);
};

}  // namespace kblaster::harness
