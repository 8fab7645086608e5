// The flags that say where candidates are measured (replayed, recorded, the harness, ncu, the
// device, the watchdog): one definition for `kblaster optimize` and `kblaster bench`.
#pragma once

#include "engine/optimize/run_setup.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace kblaster::cli {

struct evaluator_flags {
  /// `watchdog_default`: seconds a harness request may take beyond timing, unless --watchdog.
  explicit evaluator_flags(double watchdog_default = 10) : watchdog_s(watchdog_default) {}

  std::vector<std::string> replay;
  double replay_pace = 0;
  std::string record, harness, device = "auto", ncu;
  double watchdog_s;
  int profile_timeout_s = 300;
  bool profile_full_shape = false;

  /// Adds --harness-replay, --replay-pace, --harness-record, --harness, --device, --ncu and
  /// --watchdog to `app`; `watchdog_help` says what the default is for.
  void add_to(CLI::App& app, const std::string& watchdog_help);
  /// The engine's configuration from the flags.
  engine::optimize::evaluator_settings settings() const;
};

}  // namespace kblaster::cli
