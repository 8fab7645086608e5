// A replay that takes time: waits a fraction of each evaluation's recorded GPU time before
// answering, so a replayed run unfolds like the recorded one (for demos, and for tests that
// must interrupt a run midway, which an instant replay finishes before any signal arrives).
#pragma once

#include "engine/evaluate/evaluator.h"
#include "support/stop_wait.h"

#include <algorithm>
#include <chrono>

namespace kblaster::engine::optimize {

/// Wraps `inner`, sleeping `factor` x the evaluation's gpu_seconds (at most `cap`) per call.
class paced_evaluator final : public evaluator {
 public:
  paced_evaluator(evaluator& inner, double factor, std::chrono::milliseconds cap = std::chrono::seconds(30))
      : inner_(inner), factor_(factor), cap_(cap) {}
  evaluation evaluate(const std::string& task, const std::string& source, const evaluation_request& r) override {
    auto e = inner_.evaluate(task, source, r);
    const auto wait = std::chrono::milliseconds(static_cast<long long>(1000 * factor_ * e.gpu_seconds));
    // The pause ends early at a stop: a replay is as quick to cancel as a live run.
    support::sleep_unless_stopped(std::min(wait, cap_), r.stop);
    return e;
  }
  void prepare(const std::string& task, const std::string& source) override { inner_.prepare(task, source); }
  std::string describe() const override { return inner_.describe() + ", paced"; }
  int parallelism() const override { return inner_.parallelism(); }

 private:
  evaluator& inner_;
  double factor_;
  std::chrono::milliseconds cap_;
};

}  // namespace kblaster::engine::optimize
