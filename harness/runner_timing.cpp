// Timing in a runner, as a few named steps: map the batch, warm up and size the batches, measure
// an empty exchange where nothing cancels it, sample, settle the judge's own figure.
#include "harness/runner_timing.h"

#include "harness/guarded_call.h"
#include "harness/judge_replies.h"
#include "harness/trace.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace kblaster::harness {
namespace {

using clock_type = std::chrono::steady_clock;

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// A batch's reply that reports a failure of the call, as the reply to give; null when the calls
/// ran and returned 0.
nlohmann::json batch_failure(const runner::reply& body) {
  if (body.result != runner::status::ok) {
    call_result c;
    c.check = body.result == runner::status::cuda_error ? (body.fatal ? "cuda_fatal" : "return_code")
              : body.result == runner::status::out_of_memory ? "out_of_memory" : "exception";
    c.runner_lost = body.fatal != 0;
    c.reason = runner_message(body) + " (while timed)";
    return call_failure(c);
  }
  if (body.rc != 0) return fail("fail", "return_code", "kb_forward returned " + std::to_string(body.rc) + " while timed");
  return nullptr;
}

/// The state of one timing in a runner, and its steps.
class batch_sampler {
 public:
  batch_sampler(device_context& dev, runner_process& runner, timed_batch& batch, std::uint64_t seed,
                const std::function<void(int)>& check, runner_process::deadline until)
      : dev_(dev), runner_(runner), batch_(batch), check_(check), until_(until), rng_(seed) {}

  /// The batch's memory mapped into the runner; the runner's threads counted before any call.
  void map_batch() {
    if (auto bad = map_failure(runner_.map(batch_.arena(), until_)); !bad.is_null()) throw sample_failed{bad};
    out_.threads_before = runner_.threads();
  }

  /// Warm-up one call at a time; its fastest call sets how many calls a batch makes (`calls` when
  /// given: the reference's batches are the candidate's). Then one whole batch untimed: the
  /// warm-up touched slot 0 only, and a slot's first call in this runner pays for mapping its pages.
  void warm_up_and_size(const timing_policy& policy, int calls) {
    double fastest = std::numeric_limits<double>::infinity();
    warm_up(policy, [&] {
      prepare(1);
      fastest = std::min(fastest, exchange(1, false).ms);
    });
    out_.calls = calls > 0 ? std::min(calls, batch_.slots())
                           : calls_per_batch(fastest, timing_rules::batch_target_ms, batch_.slots());
    spin_ms_ = std::isfinite(fastest) ? fastest * out_.calls : 0;
    half_ = out_.calls / 2;
    if (out_.calls > 1) {
      prepare(out_.calls);
      exchange(out_.calls, false);
    }
    trace_phase("time: warm-up calls");
  }

  /// Whether full and half batches alternate, so that their difference cancels the exchange's cost
  /// (the GPU, a batch of more than one call).
  bool differenced() const { return dev_.is_cuda() && half_ > 0; }

  /// The cost of the exchange itself, measured the same way with nothing called (the same views
  /// built and checked, the GPU held about as long as a batch: empty_kernel.cu says why). The
  /// judge's figure needs it where no half batch cancels it: a call alone in its batch, the CPU
  /// (the runner's CPU time in an empty exchange), or too few batches of either kind (a candidate
  /// stopped early). On the GPU with half batches it is therefore taken only in that last case,
  /// after the sampling: 15 empty exchanges of a batch's length were 0.09-0.13 s of every
  /// candidate's timing on an H100, for a figure the difference of the batches does not read.
  void measure_exchange() {
    const auto last = out_.last;  // the last timed batch's reply, which the judge's checks read
    std::vector<double> overhead;
    const long long cpu_before_empty = runner_.cpu_ns();
    for (int i = 0; i < timing_rules::empty_exchanges; ++i) {
      prepare(0);
      const auto e = exchange(out_.calls, true);
      overhead.push_back(std::max(0.0, e.host_ms - e.ms));
    }
    out_.empty_cpu_ms = static_cast<double>(runner_.cpu_ns() - cpu_before_empty) / 1e6 / timing_rules::empty_exchanges;
    out_.exchange_ms = median_of(overhead);
    out_.exchange_measured = true;
    out_.last = last;
    trace_phase("time: empty exchanges");
  }

  /// Batches of `calls` and batches of half as many, in an order the judge draws: the judge's
  /// figure per call is the difference of their host times' medians over the calls between them,
  /// so that every cost an exchange pays once (the socket, the switch between the judge's and the
  /// runner's contexts, the waits), known or not, cancels. Calibrating with an empty exchange alone
  /// left 0.05-0.2 ms a batch unexplained on an H200, 3-17 % of an honest 2 ms batch. The order is
  /// drawn so that a candidate cannot tell, at a batch's first call, which kind it is in, and so
  /// cannot pad the half batches alone to shrink the difference. A call alone in its batch (4 ms
  /// or more) has no half: the empty exchange is taken off it, a few percent at most there.
  void sample(const timing_policy& policy) {
    const long long cpu_before = runner_.cpu_ns();
    auto sampling = policy;
    if (half_ > 0) sampling.min_samples = std::max(policy.min_samples, timing_rules::min_samples_with_half_batches);
    out_.stats = measure_samples(dev_, [&] { return one_batch(); }, sampling);
    out_.runner_mean_ms = event_ms_total_ / static_cast<double>(std::max<long long>(1, calls_made_));
    out_.cpu_per_call_ms = (static_cast<double>(runner_.cpu_ns() - cpu_before) / 1e6 - out_.empty_cpu_ms * made_) /
                           static_cast<double>(std::max<long long>(1, calls_made_));
  }

  /// The judge's own figure per call: the difference of full and half batches, looked at again
  /// when it is over half the margin; else the judge's clock less an exchange.
  void settle_judge_figure() {
    out_.judge_ms = out_.stats.host_median_ms;
    if (half_ > 0 && host_full_.size() >= 3 && host_half_.size() >= 3) {
      out_.judge_ms = by_batches();
      // The samples stop once the runner's events agree among themselves, often at 20 batches:
      // ten or so of each kind, whose difference scatters more than the events do. On an H200 an
      // honest 6 us call (small_add.cu) read 1.02-1.04 times its runner's figure in ten runs, and
      // once 1.10, the margin. A figure over the runner's by more than half the margin is looked
      // at again over more batches before it stands; an honest one falls back, a forged timer's
      // does not.
      const double second_look_over = 1 + (timing_rules::judge_margin - 1) / 2;
      if (differenced() && !out_.stats.stopped_slower && out_.judge_ms > out_.stats.median_ms * second_look_over)
        look_again();
    } else if (differenced()) {
      // Too few of one kind for the difference: the judge's clock per call less an exchange, as
      // the samples would have had it with the exchange measured first.
      measure_exchange();
      std::vector<double> per_call;
      for (const double h : host_full_) per_call.push_back(std::max(0.0, h - out_.exchange_ms) / out_.calls);
      for (const double h : host_half_) per_call.push_back(std::max(0.0, h - out_.exchange_ms) / half_);
      out_.judge_ms = median_of(per_call);
    }
  }

  runner_timing result() const { return out_; }

 private:
  device_context& dev_;
  runner_process& runner_;
  timed_batch& batch_;
  const std::function<void(int)>& check_;
  runner_process::deadline until_;
  std::mt19937_64 rng_;
  runner_timing out_;
  double spin_ms_ = 0;  // the empty exchange's stand-in for a batch: about as long
  int half_ = 0;        // calls in a half batch (0: none)
  std::vector<double> host_full_, host_half_;
  int made_ = 0;        // batches sampled
  long long calls_made_ = 0;
  double event_ms_total_ = 0;

  /// One timed exchange of `k` calls: the judge's host clock runs from the request to the reply,
  /// which the runner sends only once its whole device is idle (every stream of its context: work
  /// the candidate leaves running on a stream of its own still counts). The judge's barrier
  /// follows, outside the clock: it switches the time-sliced GPU to the judge's context, which
  /// scattered the clock by a tenth of a millisecond an exchange on an H200, and the runner's
  /// context has nothing left by then that the barrier could add.
  timed_sample exchange(int k, bool empty) {
    const auto t0 = clock_type::now();
    const auto r = runner_.batch_call(batch_.first(), batch_.strides(), batch_.n_in(), batch_.n_out(), k, empty, spin_ms_,
                                      until_);
    const double host = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    if (!r.replied()) throw sample_failed{call_failure(lost_call(r, "the timed calls"))};
    dev_.barrier();
    if (auto bad = batch_failure(r.body); !bad.is_null()) throw sample_failed{bad};
    out_.last = r.body;
    return timed_sample{r.body.event_ms, host};
  }

  /// Before every exchange the L2 is flushed and persisting lines reset; before a call, its slots
  /// renewed (the empty exchange calls nothing, so nothing of it needs renewing).
  void prepare(int k) {
    if (k > 0) batch_.refresh(rng_(), k);
    dev_.reset_l2_persistence();
    dev_.flush_l2();
    dev_.sync_device();
  }

  /// One sample: a full or a half batch, checked after on a slot drawn then.
  timed_sample one_batch() {
    // The first two are one of each; after that, a coin the judge tosses.
    const bool half_batch = half_ > 0 && (made_ < 2 ? made_ == 1 : (rng_() & 1) != 0);
    const int k = half_batch ? half_ : out_.calls;
    ++made_;
    prepare(k);
    auto s = exchange(k, false);
    calls_made_ += k;
    event_ms_total_ += s.ms;
    (k == out_.calls ? host_full_ : host_half_).push_back(s.host_ms);
    // A call alone in its batch is checked once, after the last: a reference call after each
    // would double the time a slow task's timing holds the GPU.
    if (check_ && out_.calls > 1) check_(static_cast<int>(rng_() % static_cast<std::uint64_t>(k)));
    // Per call: the runner's events over the batch, and the judge's clock less one exchange
    // (where it was measured first; else the difference of full and half batches cancels it).
    return timed_sample{s.ms / k, std::max(0.0, s.host_ms - out_.exchange_ms) / k};
  }

  double by_batches() const {
    return std::max(0.0, median_of(host_full_) - median_of(host_half_)) / (out_.calls - half_);
  }

  /// Up to timing_rules::second_look_batches more batches, within second_look_time and the deadline.
  void look_again() {
    const auto look_until = std::min(until_, clock_type::now() + timing_rules::second_look_time);
    for (int i = 0; i < timing_rules::second_look_batches && clock_type::now() < look_until; ++i) {
      one_batch();
      ++out_.second_look_batches;
    }
    out_.judge_ms = by_batches();
    trace_phase("time: the judge's figure looked at again");
  }
};

}  // namespace

runner_timing time_in_runner(device_context& dev, runner_process& runner, timed_batch& batch, std::uint64_t seed,
                             const timing_policy& policy, int calls, const std::function<void(int)>& check,
                             runner_process::deadline until) {
  batch_sampler sampler(dev, runner, batch, seed, check, until);
  sampler.map_batch();
  sampler.warm_up_and_size(policy, calls);
  if (!sampler.differenced()) sampler.measure_exchange();
  sampler.sample(policy);
  sampler.settle_judge_figure();
  return sampler.result();
}

}  // namespace kblaster::harness
