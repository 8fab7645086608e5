// Profiling a program's kernels from their captured launches rather than the whole program
// under Nsight Compute: each kernel's launch is captured (cached, as Optimize's capture is),
// and the original kernel is replayed alone on the captured memory through the harness, under
// ncu. The profile then describes exactly the launch Optimize works on, and costs one launch's
// replay however long the program runs and however many other kernels it launches.
#pragma once

#include "engine/capture/program_capture.h"
#include "engine/evaluate/harness_evaluator.h"
#include "engine/state/profile_pipeline.h"

#include <functional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

struct captured_profile_options {
  capture_request base;              // the program and how it runs; the kernel is set per kernel
  std::vector<std::string> kernels;  // short names, in the file's order
  std::size_t max_kernels = 4;       // a save profiles at most this many (each is a build and a run)
  optimize::harness_evaluator_options evaluator;  // harness, ncu, watchdog
  std::function<void(const std::string&)> progress;
};

/// Where a kernel's profile on save came from, as the hover shows it: the launch, its grid and
/// block, how it was captured, and its time in the program. `reused`: ncu's pages were kept from an
/// earlier profile of the same kernel on the same captured data, so no GPU time went into this one.
std::string captured_profile_origin(const capture_result& captured, bool reused);

/// One classified view per kernel that was captured and profiled, each with its origin (which
/// launch, its time in the program). A kernel that cannot be captured or profiled gets its reason
/// in `not_profiled`, never an error of the whole: the file's other kernels still count.
/// Throws optimize::evaluation_error when the harness cannot run here at all.
profile_outcome profile_captured_launches(const captured_profile_options& options, std::stop_token stop);

}  // namespace kblaster::engine
