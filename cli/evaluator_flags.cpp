// The evaluator flags' definitions and their translation.
#include "cli/evaluator_flags.h"

namespace kblaster::cli {

void evaluator_flags::add_to(CLI::App& app, const std::string& watchdog_help) {
  app.add_option("--harness-replay", replay, "serve GPU results from these recordings instead of measuring")
      ->check(CLI::ExistingFile);
  app.add_option("--replay-pace", replay_pace,
                 "with --harness-replay: take this fraction of each recorded GPU time (1: as recorded)")
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--harness-record", record, "record every GPU result to this file (for --harness-replay)");
  app.add_option("--harness", harness, "the kblaster-harness executable");
  app.add_option("--device", device, "cuda, cpu (host C++ candidates) or auto")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--ncu", ncu, "ncu executable, or none for static profiles");
  app.add_option("--watchdog", watchdog_s, watchdog_help)->check(CLI::Range(0.1, 3600.0));
  app.add_option("--profile-timeout", profile_timeout_s,
                 "seconds one ncu profile may take (a large task's kernel replays are slow); past it the "
                 "version keeps its static profile and the run says so")
      ->check(CLI::Range(1, 86400));
  app.add_flag("--profile-full-shape", profile_full_shape,
               "profile a slow kernel at the task's own shape (by default a candidate over 25 ms a call whose "
               "tensors share a leading dimension is profiled at a fraction of it, so that ncu's replay passes stay "
               "short; verdicts and timings are always of the task's shape)");
}

engine::optimize::evaluator_settings evaluator_flags::settings() const {
  engine::optimize::evaluator_settings e;
  e.replay.assign(replay.begin(), replay.end());
  e.replay_pace = replay_pace;
  e.record = record;
  e.harness = harness;
  e.ncu = ncu;
  e.device = device;
  e.watchdog = std::chrono::milliseconds(static_cast<long long>(watchdog_s * 1000));
  e.profile_timeout = std::chrono::seconds(profile_timeout_s);
  e.profile_full_shape = profile_full_shape;
  return e;
}

}  // namespace kblaster::cli
