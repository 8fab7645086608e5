// Request handling: verify, time, evaluate and profile, each through a runner of its own.
#include "harness/judge.h"

#include "harness/compare.h"
#include "harness/degenerate.h"
#include "harness/guarded_call.h"
#include "harness/shared_arena.h"
#include "harness/stress_inputs.h"
#include "harness/tensors.h"
#include "harness/timed_batch.h"
#include "harness/timing.h"
#include "harness/trace.h"

#include <torch/csrc/jit/runtime/graph_executor.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <random>

namespace kblaster::harness {
namespace {

using clock_type = std::chrono::steady_clock;

nlohmann::json fail(const std::string& verdict, const std::string& check, const std::string& reason) {
  return {{"verdict", verdict}, {"check", check}, {"reason", reason}};
}

/// A failed guarded call as a reply: a runner that did not survive is an error of the
/// candidate's making (as a harness crash was before the split), a failed guard a fail.
nlohmann::json call_failure(const call_result& c) {
  const bool error = c.runner_lost || c.check == "exception" || c.check == "out_of_memory";
  return fail(error ? "error" : "fail", c.check, c.reason);
}

std::vector<torch::Tensor> with_params(std::vector<torch::Tensor> inputs, const reference_model& ref) {
  for (const auto& p : ref.parameters()) inputs.push_back(p);
  return inputs;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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

/// The milliseconds that a deadline leaves, for the request's own default.
constexpr double default_deadline_ms = 60'000;

// Thrown out of a timing sample when the runner's call failed; carries the reply to give.
struct sample_failed {
  nlohmann::json reply;
};

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

nlohmann::json judge::verify(const engine::task_spec& task, runner_process& runner, reference_model& ref,
                               std::uint64_t seed_base, deadline until) {
  nlohmann::json seeds = nlohmann::json::array();
  std::vector<torch::Tensor> previous, last_inputs;
  std::unique_ptr<call_frame> frame;
  for (int s = 0; s < task.seeds; ++s) {
    const std::uint64_t seed = seed_base + static_cast<std::uint64_t>(s);
    const auto inputs = make_inputs(task, seed, dev_.torch_device());
    trace_phase("verify: inputs drawn");
    const auto expected = ref.run(inputs);
    trace_phase("verify: reference run");
    const auto args = with_params(inputs, ref);
    if (!frame) {
      frame = std::make_unique<call_frame>(dev_, args, expected, initial_inputs(task));
      if (const auto m = runner.map(frame->arena(), until); !m.replied()) return call_failure(lost_call(m, "mapping memory"));
      else if (m.body.result != runner::status::ok)
        return fail("error", "runner", "the runner could not map the call's memory: " + runner_message(m.body));
    }
    auto call = guarded_call(dev_, runner, *frame, args, until);
    trace_phase("verify: candidate called and guarded");
    nlohmann::json entry{{"seed", seed}};
    if (!call.check.empty()) {
      entry["ok"] = false;
      seeds.push_back(entry);
      call.reason += " (seed " + std::to_string(seed) + ")";
      auto r = call_failure(call);
      r["seeds"] = seeds;
      return r;
    }
    if (call.outputs.size() != expected.size()) throw std::logic_error("output count");
    entry["outputs"] = nlohmann::json::array();
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const auto tol = engine::tolerance_for(dtype_name(expected[i].scalar_type()), task, i);
      auto c = compare_output(call.outputs[i], expected[i], tol);
      trace_phase("verify: output compared");
      entry["outputs"].push_back(c.to_json());
      if (c.ok) continue;
      entry["ok"] = false;
      seeds.push_back(entry);
      std::string check = c.unwritten == c.elements ? "nan_poison"
                          : c.unwritten > 0         ? "partial_output"
                          : c.reason.rfind("zero", 0) == 0 || c.reason.rfind("constant", 0) == 0 ? "constant_output"
                          : c.mismatches > 0        ? "tolerance"
                                                    : "magnitude";
      std::string reason = engine::output_label(task, i) + ": " + c.reason + " (seed " + std::to_string(seed) + ")";
      // The same bits as for the previous seed's different inputs: a stored answer.
      if (!previous.empty() && same_bits(call.outputs[i], previous[i])) {
        check = "cached_result";
        reason = engine::output_label(task, i) + " is bit-identical to the previous seed's although the inputs changed: "
                 "a result cached across calls (seed " + std::to_string(seed) + ")";
      }
      auto r = fail("fail", check, reason);
      r["seeds"] = seeds;
      return r;
    }
    entry["ok"] = true;
    seeds.push_back(entry);
    previous = call.outputs;
    last_inputs = inputs;
  }
  // Then beyond the task's distribution (stress_inputs.h).
  nlohmann::json stress = nlohmann::json::array();
  for (const auto& kind : engine::stress_kinds()) {
    const auto set = make_stress_set(task, kind, last_inputs,
                                     [&](const std::vector<torch::Tensor>& in) { return ref.run(in); });
    trace_phase("verify: stress set drawn, reference run");
    nlohmann::json entry{{"kind", kind}};
    if (!set.skipped.empty()) {
      entry["skipped"] = set.skipped;
      stress.push_back(entry);
      continue;
    }
    entry["scale"] = set.scale;
    const std::string where = kind == "large_magnitude"
                                  ? "on inputs scaled ×" + std::to_string(static_cast<long long>(set.scale))
                                  : "on inputs up to " + std::to_string(set.scale) + " in magnitude";
    auto call = guarded_call(dev_, runner, *frame, with_params(set.inputs, ref), until);
    if (!call.check.empty()) {
      call.reason += " (stress set " + kind + ", " + where + ")";
      auto r = call_failure(call);
      r["seeds"] = seeds;
      return r;
    }
    entry["outputs"] = nlohmann::json::array();
    for (std::size_t i = 0; i < set.expected.size(); ++i) {
      const auto tol = engine::tolerance_for(dtype_name(set.expected[i].scalar_type()), task, i);
      const auto c = compare_stressed(call.outputs[i], set.expected[i], tol);
      entry["outputs"].push_back(c.to_json());
      if (c.ok) continue;
      auto r = fail("fail", "stress_" + kind,
                    engine::output_label(task, i) + " is wrong " + where + " (beyond the task's own distribution; "
                    "the reference stays finite there): " + c.reason);
      r["seeds"] = seeds;
      entry["ok"] = false;
      stress.push_back(entry);
      r["stress"] = stress;
      return r;
    }
    entry["ok"] = true;
    stress.push_back(entry);
  }
  return {{"verdict", "pass"}, {"seeds", seeds}, {"stress", stress}};
}

namespace {

/// The time a batch should take: long enough that the judge's exchange (a context switch of the
/// time-sliced GPU, ~0.3 ms on an H200, scattering by tens of microseconds) is a few percent of it
/// at most once divided among its calls. A call this long or longer is timed alone.
constexpr double batch_target_ms = 4.0;
/// Slots of the last batch checked against the reference after sampling, beside the one checked
/// after every batch (chosen after it ran, so the candidate cannot know which).
constexpr int final_checked_slots = 16;
/// How far below the judge's own figure a runner's may be before the judge's stands instead.
constexpr double judge_margin = 1.10;
/// A judge's figure over half that margin is looked at again over up to this many more batches
/// (a fifth of a second at most): about twenty of each kind more.
constexpr int second_look_batches = 40;
constexpr int second_look_ms = 200;

}  // namespace

judge::runner_timing judge::time_in_runner(runner_process& runner, timed_batch& batch, std::uint64_t seed,
                                               const timing_policy& policy, int calls,
                                               const std::function<void(int)>& check, deadline until) {
  runner_timing out;
  if (const auto m = runner.map(batch.arena(), until); !m.replied())
    throw sample_failed{call_failure(lost_call(m, "mapping memory"))};
  else if (m.body.result != runner::status::ok)
    throw sample_failed{fail("error", "runner", "the runner could not map the call's memory: " + runner_message(m.body))};
  out.threads_before = runner.threads();
  std::mt19937_64 rng(seed);
  // One timed exchange of `k` calls: the judge's host clock runs from the request to the reply,
  // which the runner sends only once its whole device is idle (every stream of its context: work
  // the candidate leaves running on a stream of its own still counts). The judge's barrier
  // follows, outside the clock: it switches the time-sliced GPU to the judge's context, which
  // scattered the clock by a tenth of a millisecond an exchange on an H200, and the runner's
  // context has nothing left by then that the barrier could add.
  double spin_ms = 0;  // the empty exchange's stand-in for a batch: about as long
  const auto exchange = [&](int k, bool empty) {
    const auto t0 = clock_type::now();
    const auto r = runner.batch_call(batch.first(), batch.strides(), batch.n_in(), batch.n_out(), k, empty, spin_ms, until);
    const double host = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    if (!r.replied()) throw sample_failed{call_failure(lost_call(r, "the timed calls"))};
    dev_.barrier();
    if (r.body.result != runner::status::ok) {
      call_result c;
      c.check = r.body.result == runner::status::cuda_error ? (r.body.fatal ? "cuda_fatal" : "return_code")
                : r.body.result == runner::status::out_of_memory ? "out_of_memory" : "exception";
      c.runner_lost = r.body.fatal != 0;
      c.reason = runner_message(r.body) + " (while timed)";
      throw sample_failed{call_failure(c)};
    }
    if (r.body.rc != 0)
      throw sample_failed{fail("fail", "return_code", "kb_forward returned " + std::to_string(r.body.rc) + " while timed")};
    out.last = r.body;
    return timed_sample{r.body.event_ms, host};
  };
  // Before every exchange the L2 is flushed and persisting lines reset; before a call, its slots
  // renewed (the empty exchange calls nothing, so nothing of it needs renewing).
  const auto prepare = [&](int k) {
    if (k > 0) batch.refresh(rng(), k);
    dev_.reset_l2_persistence();
    dev_.flush_l2();
    dev_.sync_device();
  };

  // Warm-up one call at a time; its fastest call sets how many calls a batch makes (the caller's
  // `calls` when given: the reference's batches are the candidate's).
  double fastest = std::numeric_limits<double>::infinity();
  warm_up(policy, [&] {
    prepare(1);
    fastest = std::min(fastest, exchange(1, false).ms);
  });
  out.calls = calls > 0 ? std::min(calls, batch.slots()) : calls_per_batch(fastest, batch_target_ms, batch.slots());
  spin_ms = std::isfinite(fastest) ? fastest * out.calls : 0;
  // One whole batch untimed: the warm-up touched slot 0 only, and a slot's first call in this
  // runner pays for mapping its pages.
  if (out.calls > 1) {
    prepare(out.calls);
    exchange(out.calls, false);
  }
  trace_phase("time: warm-up calls");
  // The cost of the exchange itself, measured the same way with nothing called (the same views
  // built and checked, the GPU held about as long as a batch: empty_kernel.cu says why). The
  // judge's figure needs it where no half batch cancels it: a call alone in its batch, the CPU
  // (the runner's CPU time in an empty exchange), or too few batches of either kind (a candidate
  // stopped early). On the GPU with half batches it is therefore taken only in that last case,
  // after the sampling: 15 empty exchanges of a batch's length were 0.09-0.13 s of every
  // candidate's timing on an H100, for a figure the difference of the batches does not read.
  const int half = out.calls / 2;
  const bool differenced = dev_.is_cuda() && half > 0;
  const auto measure_exchange = [&] {
    constexpr int empty_exchanges = 15;
    const auto last = out.last;  // the last timed batch's reply, which the judge's checks read
    std::vector<double> overhead;
    const long long cpu_before_empty = runner.cpu_ns();
    for (int i = 0; i < empty_exchanges; ++i) {
      prepare(0);
      const auto e = exchange(out.calls, true);
      overhead.push_back(std::max(0.0, e.host_ms - e.ms));
    }
    out.empty_cpu_ms = static_cast<double>(runner.cpu_ns() - cpu_before_empty) / 1e6 / empty_exchanges;
    out.exchange_ms = median(overhead);
    out.exchange_measured = true;
    out.last = last;
    trace_phase("time: empty exchanges");
  };
  if (!differenced) measure_exchange();
  const long long cpu_before = runner.cpu_ns();
  // Batches of `calls` and batches of half as many, in an order the judge draws: the judge's
  // figure per call is the difference of their host times' medians over the calls between them,
  // so that every cost an exchange pays once (the socket, the switch between the judge's and the
  // runner's contexts, the waits), known or not, cancels. Calibrating with an empty exchange alone
  // left 0.05-0.2 ms a batch unexplained on an H200, 3-17 % of an honest 2 ms batch. The order is
  // drawn so that a candidate cannot tell, at a batch's first call, which kind it is in, and so
  // cannot pad the half batches alone to shrink the difference. A call alone in its batch (4 ms
  // or more) has no half: the empty exchange is taken off it, a few percent at most there.
  std::vector<double> host_full, host_half;
  auto sampling = policy;
  if (half > 0) sampling.min_samples = std::max(policy.min_samples, 20);
  int made = 0;
  long long calls_made = 0;
  double event_ms_total = 0;
  const auto one_batch = [&] {
    // The first two are one of each; after that, a coin the judge tosses.
    const bool half_batch = half > 0 && (made < 2 ? made == 1 : (rng() & 1) != 0);
    const int k = half_batch ? half : out.calls;
    ++made;
    prepare(k);
    auto s = exchange(k, false);
    calls_made += k;
    event_ms_total += s.ms;
    (k == out.calls ? host_full : host_half).push_back(s.host_ms);
    // A call alone in its batch is checked once, after the last: a reference call after each
    // would double the time a slow task's timing holds the GPU.
    if (check && out.calls > 1) check(static_cast<int>(rng() % static_cast<std::uint64_t>(k)));
    // Per call: the runner's events over the batch, and the judge's clock less one exchange
    // (where it was measured first; else the difference of full and half batches cancels it).
    return timed_sample{s.ms / k, std::max(0.0, s.host_ms - out.exchange_ms) / k};
  };
  out.stats = measure_samples(dev_, one_batch, sampling);
  out.runner_mean_ms = event_ms_total / static_cast<double>(std::max<long long>(1, calls_made));
  out.cpu_per_call_ms = (static_cast<double>(runner.cpu_ns() - cpu_before) / 1e6 - out.empty_cpu_ms * made) /
                        static_cast<double>(std::max<long long>(1, calls_made));
  const auto by_batches = [&] {
    return std::max(0.0, median(host_full) - median(host_half)) / (out.calls - half);
  };
  out.judge_ms = out.stats.host_median_ms;
  if (half > 0 && host_full.size() >= 3 && host_half.size() >= 3) {
    out.judge_ms = by_batches();
    // The samples stop once the runner's events agree among themselves, often at 20 batches:
    // ten or so of each kind, whose difference scatters more than the events do. On an H200 an
    // honest 6 us call (small_add.cu) read 1.02-1.04 times its runner's figure in ten runs, and
    // once 1.10, the margin. A figure over the runner's by more than half the margin is looked
    // at again over more batches before it stands; an honest one falls back, a forged timer's
    // does not.
    const double second_look_over = 1 + (judge_margin - 1) / 2;
    if (differenced && !out.stats.stopped_slower && out.judge_ms > out.stats.median_ms * second_look_over) {
      const auto look_until = std::min(until, clock_type::now() + std::chrono::milliseconds(second_look_ms));
      for (int i = 0; i < second_look_batches && clock_type::now() < look_until; ++i) {
        one_batch();
        ++out.second_look_batches;
      }
      out.judge_ms = by_batches();
      trace_phase("time: the judge's figure looked at again");
    }
  } else if (differenced) {
    // Too few of one kind for the difference: the judge's clock per call less an exchange, as
    // the samples would have had it with the exchange measured first.
    measure_exchange();
    std::vector<double> per_call;
    for (const double h : host_full) per_call.push_back(std::max(0.0, h - out.exchange_ms) / out.calls);
    for (const double h : host_half) per_call.push_back(std::max(0.0, h - out.exchange_ms) / half);
    out.judge_ms = median(per_call);
  }
  return out;
}

nlohmann::json judge::check_slot(const engine::task_spec& task, timed_batch& batch, reference_model& ref, int s) {
  const auto args = batch.args(s);
  const auto seen = batch.arena_args(s);
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!same_bits(seen[i], args[i])) return fail("fail", "input_modified", "kb_forward modified an input while timed");
  std::vector<torch::Tensor> inputs(args.begin(), args.begin() + static_cast<long>(task.inputs.size()));
  const auto expected = ref.run(inputs);
  const auto outputs = batch.outputs(s);
  for (std::size_t i = 0; i < expected.size() && i < outputs.size(); ++i) {
    const auto tol = engine::tolerance_for(dtype_name(expected[i].scalar_type()), task, i);
    const auto c = compare_output(outputs[i], expected[i], tol);
    // A single value within atol of the reference is right: its relative error alone says only
    // how close to zero this call's answer fell (a sum of 2^22 draws near zero, one call in
    // thousands), and with a check after every batch that came up.
    const bool near_zero_scalar = c.elements == 1 && c.unwritten == 0 && c.mismatches == 0;
    if (!c.ok && !near_zero_scalar)
      return fail("fail", "timing_output",
                  engine::output_label(task, i) + " was wrong in a timed call (the candidate behaves differently "
                  "when called repeatedly or on inputs it has not seen): " + c.reason);
  }
  return nullptr;
}

nlohmann::json judge::time(const engine::task_spec& task, std::unique_ptr<runner_process>& runner,
                             reference_model& ref, const std::string& reference_library, std::uint64_t seed,
                             const nlohmann::json& policy_json, deadline until) {
  const auto policy = policy_from_json(policy_json);
  // The reference's median the caller already holds (the loop: the one timed with its input), when
  // it gives one: the reference is not timed again, and the speedup is judged against that figure.
  // A captured program's reference is its original kernel, timed in a runner of its own in
  // batches of each candidate's size: 0.5 s of an SpMV candidate's 1.25 s (an H200), for a figure
  // the loop never reads (it sets each candidate against its own version's median).
  const double given_reference_ms = policy_json.is_object() ? policy_json.value("reference_ms", 0.0) : 0.0;
  // A kernel reference is timed in a runner of its own: started now, and up (its CUDA context
  // created) before the candidate's timing begins, so that its start-up, GPU work of a third
  // context, overlaps the preparation below and none of the candidate's samples.
  std::unique_ptr<runner_process> ref_runner;
  std::string ref_runner_error;
  if (task.reference.kind == engine::reference_kind::kernel && given_reference_ms <= 0) ref_runner = take_runner();
  const auto inputs = make_inputs(task, seed, dev_.torch_device());
  const auto expected = ref.run(inputs);
  trace_phase("time: inputs drawn, reference run");
  const auto args = with_params(inputs, ref);
  // Each timed call gets inputs of its own, fresh for every batch (timed_batch.h): no call's
  // outputs can be known from an earlier call's.
  timed_batch batch(dev_, task, args, expected, slots_that_fit(dev_, args, expected));
  const auto check_one = [&](int s) {
    if (auto bad = check_slot(task, batch, ref, s); !bad.is_null()) throw sample_failed{bad};
  };
  if (ref_runner) ref_runner_error = ref_runner->ready(until);
  runner_timing cand;
  try {
    cand = time_in_runner(*runner, batch, seed, policy, 0, check_one, until);
  } catch (const sample_failed& f) {
    if (f.reply.value("verdict", "") == "error") runner.reset();
    return f.reply;
  }
  trace_phase("time: candidate timed");
  // Correct once is not enough: the last batch must still be right (no skipping work after the
  // first calls, no descriptors changed, inputs intact, nothing left running), in slots chosen now.
  if (cand.last.descriptor_changed >= 0)
    return fail("fail", "descriptor_changed", "kb_forward changed a tensor descriptor while timed");
  if (batch.damaged_canary(cand.calls) >= 0)
    return fail("fail", "canary", "kb_forward wrote past the end of an output while timed");
  {
    std::mt19937_64 pick(seed ^ 0x9e3779b97f4a7c15ull);
    std::vector<int> slots{cand.calls - 1};
    for (int i = 0; i < final_checked_slots && i < cand.calls - 1; ++i)
      slots.push_back(static_cast<int>(pick() % static_cast<std::uint64_t>(cand.calls - 1)));
    for (const int s : slots)
      if (auto bad = check_slot(task, batch, ref, s); !bad.is_null()) return bad;
  }
  if (const int after = runner->threads(); cand.threads_before > 0 && after > cand.threads_before)
    return fail("fail", "side_work", "kb_forward left " + std::to_string(after - cand.threads_before) +
                                         " thread(s) running in its process while timed");

  // The judge's own figure. The runner's times are the candidate's to forge; they stand only
  // while what the judge measures itself confirms them, one-sidedly (a busy machine only ever
  // makes the judge's figures larger, so only a runner claiming less than they allow is caught):
  // - GPU: the judge's host clock around each batch and a device-wide barrier, less the same
  //   difference between full and half batches, per call (time_in_runner says why), median against
  //   median. A batch holds enough calls (batch_target_ms) that the exchange's scatter is a few
  //   percent of a 5 us call at most, so the margin is judge_margin and nothing absolute
  //   (docs/results/harness-gpu-h200.txt).
  // - CPU: the runner's own CPU time from the scheduler's statistics. Its wall clock is no
  //   witness there: on a loaded machine the judge's wake-up after a CPU-bound call waits for
  //   its turn, by milliseconds.
  auto& st = cand.stats;
  const double judge_ms = cand.judge_ms;
  const double judge_floor_ms = dev_.is_cuda() ? judge_ms : std::max(0.0, cand.cpu_per_call_ms);
  // Not for a candidate that stopped clearly slower: its two batches are too few for the judge's
  // median, and nothing is gained by under-reporting there: the figure it was stopped by is
  // already 25 % over the time to beat, so the loop discards it either way.
  // On the CPU like with like: the runner's clock over every call it made against its CPU time
  // over the same calls (a mean of per-batch figures weighs a batch of one call as much as a batch
  // of three, and a lone call after the judge's preparation runs slower on a loaded CPU).
  const bool mismatch = !st.stopped_slower && (dev_.is_cuda() ? st.median_ms * judge_margin < judge_floor_ms
                                                              : cand.runner_mean_ms < judge_floor_ms * 0.9 - 0.005);
  nlohmann::json cand_json = st.to_json();
  cand_json["calls_per_sample"] = cand.calls;
  cand_json["judge_ms"] = judge_ms;
  cand_json["judge_floor_ms"] = judge_floor_ms;
  if (cand.exchange_measured) cand_json["exchange_ms"] = cand.exchange_ms;
  if (cand.second_look_batches > 0) cand_json["judge_second_look_batches"] = cand.second_look_batches;
  if (mismatch) {
    // The judge's figure: on the GPU its clock's median, on the CPU the runner's CPU time per call.
    cand_json["runner_median_ms"] = st.median_ms;
    st.median_ms = judge_floor_ms;
    cand_json["median_ms"] = st.median_ms;
  }

  // Nothing of the candidate runs while the reference is timed: its runner ends here.
  runner.reset();
  trace_phase("time: runner ended");
  // A candidate that stopped clearly slower than the time it had to beat is not set against the
  // reference: nothing reads that speedup (the loop compares it with its own version, and no
  // speedup of a slow candidate needs review), and the reference's samples would cost as much
  // again. Whatever the runner claimed to get here, it only made its own candidate look slower.
  // The reference is timed exactly as the candidate was: the same batches of the same calls on the
  // same fresh inputs; a kernel reference (a captured program's original kernel) in a runner of
  // its own, as a candidate is, so that an unchanged kernel reads 1.00x.
  std::optional<timing_stats> refst;
  std::string ref_how;
  const bool reference_given = given_reference_ms > 0 && !st.stopped_slower;
  // A kernel reference is timed in the candidate's batches (an unchanged kernel must read 1.00x);
  // a PyTorch reference in batches sized for its own speed, as a candidate's are for the
  // candidate's: in a slow candidate's batches (16 calls of an 11 us softmax) LibTorch's dispatch
  // per call set the pace, the samples scattered by 70 % and ran to the cap, and every candidate
  // of another speed paid those 2 s again. Timed once in its own batches, its figure per call
  // serves every candidate of the run (docs/results/rounds.md: 12.6 and 12.7 us in two runs, against
  // 13.2 and 19.3 us within one run before).
  const bool own_batches = !ref_runner && dev_.is_cuda();
  const std::string ref_key = task.name + '\0' + (own_batches ? std::string("own") : std::to_string(cand.calls)) + '\0' +
                              reference_library;
  if (reference_given) {
    refst = timing_stats{};
    refst->median_ms = given_reference_ms;
    ref_how = "not timed again: the figure the request gave";
  } else if (const auto kept = reference_timings_.find(ref_key);
      !st.stopped_slower && kept != reference_timings_.end() && std::chrono::steady_clock::now() - kept->second.when < std::chrono::minutes(10)) {
    refst = kept->second.stats;
    const auto age = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - kept->second.when).count();
    ref_how = kept->second.how + ", timed " + std::to_string(age) + " s ago for an earlier candidate" +
              (own_batches ? std::string() : std::string(" (batches of the same size)"));
  } else if (!st.stopped_slower) {
    auto ref_policy = policy;
    ref_policy.slower_than_ms = 0;
    if (ref_runner) {
      if (!ref_runner_error.empty()) return fail("error", "runner", "the reference's runner did not start: " + ref_runner_error);
      const auto loaded = ref_runner->load(reference_library, until);
      if (!loaded.replied() || loaded.body.result != runner::status::ok)
        return fail("error", "reference", std::string("the reference kernel could not be loaded in a runner: ") +
                                              (loaded.replied() ? loaded.body.message : "the runner died"));
      try {
        refst = time_in_runner(*ref_runner, batch, seed, ref_policy, cand.calls, {}, until).stats;
      } catch (const sample_failed& f) {
        return fail("error", "reference", "the reference kernel failed while timed: " + f.reply.value("reason", ""));
      }
      ref_how = "the original kernel in a runner of its own, exactly as the candidate";
    } else {
      std::mt19937_64 rng(seed);
      int k = 1;
      double fastest = std::numeric_limits<double>::infinity();
      // Each call's arguments are views of its slot, made once and before the clock starts: the
      // judge's own bookkeeping (a few tensor operations per argument) is not the reference's
      // time, and inside the timed loop it was host time per call as long as a small kernel, so
      // that a GPU starved by it measured the judge. The views stay valid: refresh() writes the
      // slots in place.
      std::vector<std::vector<torch::Tensor>> views;
      const auto batch_call = [&] {
        for (auto s = static_cast<int>(views.size()); s < k; ++s) {
          auto a = batch.arena_args(s);
          a.resize(task.inputs.size());
          views.push_back(std::move(a));
        }
        dev_.timer_start();
        for (int s = 0; s < k; ++s) ref.run_for_timing(views[static_cast<std::size_t>(s)]);
        return dev_.timer_stop();
      };
      warm_up(ref_policy, [&] {
        batch.refresh(rng(), 1);
        dev_.sync_device();
        fastest = std::min(fastest, batch_call());
      });
      k = own_batches ? calls_per_batch(fastest, batch_target_ms, batch.slots()) : cand.calls;
      refst = measure_samples(
          dev_,
          [&] {
            batch.refresh(rng(), k);
            dev_.reset_l2_persistence();
            dev_.flush_l2();
            dev_.sync_device();
            const double ms = batch_call();
            return timed_sample{ms / k, dev_.host_ms() / k};
          },
          ref_policy);
      ref_how = "the PyTorch reference in the judge" +
                (own_batches && k != cand.calls ? ", in batches of " + std::to_string(k) + " calls sized for its own speed"
                                                : std::string());
    }
    trace_phase("time: reference timed");
    if (refst && !refst->throttled && refst->samples >= ref_policy.min_samples)
      reference_timings_[ref_key] = {*refst, ref_how, std::chrono::steady_clock::now()};
  }
  const double speedup = refst && st.median_ms > 0 ? refst->median_ms / st.median_ms : 0;
  const std::string batches = cand.calls > 1 ? "batches of " + std::to_string(cand.calls) + " calls, each on inputs of its own"
                                             : "one call a sample";
  nlohmann::json t{
      {"candidate", cand_json},
      {"seed", seed},
      {"calls_per_sample", cand.calls},
      {"reference_kind", engine::to_string(task.reference.kind)},
      {"method", dev_.is_cuda()
                     ? "candidate: CUDA events on the legacy default stream in its own runner process over " + batches +
                           ", confirmed by the judge's host clock around each batch and a device-wide barrier (" +
                           (cand.exchange_measured ? "less an empty exchange's " + std::to_string(cand.exchange_ms) + " ms"
                                                   : std::string("full batches less half batches, which cancels the exchange")) +
                           "); reference: " + ref_how +
                           (own_batches || reference_given ? std::string() : ", the same batches") + "; L2 flushed and persisting lines reset before each batch; inputs drawn "
                           "afresh for every call"
                     : "host clock (CPU, no cache flush) over " + batches + ": the candidate's in its runner, confirmed by "
                       "its CPU time; the reference: " + ref_how + (reference_given ? "" : ", the same batches") +
                       "; inputs drawn afresh for every call"}};
  if (refst) {
    t["reference"] = reference_given ? nlohmann::json{{"median_ms", given_reference_ms}, {"given", true}} : refst->to_json();
    t["speedup"] = speedup;
  }
  nlohmann::json r{{"verdict", "pass"}, {"timing", t}};
  if (mismatch) {
    r["verdict"] = "needs_review";
    r["check"] = "timing_mismatch";
    r["reason"] = "the candidate's runner reported " + std::to_string(cand_json["runner_median_ms"].get<double>()) +
                  " ms per call but the judge measured " + std::to_string(judge_floor_ms) + " ms (" +
                  (dev_.is_cuda() ? "its own clock around each batch of calls" : "the runner's CPU time per call") +
                  "): work outside the timed stream, or a forged timer; the judge's figure is the one reported";
  } else if (speedup > review_speedup) {
    r["verdict"] = "needs_review";
    r["check"] = "speedup_review";
    r["reason"] = "speedup " + std::to_string(speedup) + "x is over " + std::to_string(static_cast<int>(review_speedup)) +
                  "x the reference: flagged for review rather than trusted";
  }
  return r;
}

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
  if (const auto m = runner.map(frame.arena(), until); !m.replied()) return finished(call_failure(lost_call(m, "mapping memory")));
  else if (m.body.result != runner::status::ok)
    return finished(fail("error", "runner", "the runner could not map the call's memory: " + runner_message(m.body)));
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
  // Where the request's time went, for the engine's per-candidate breakdown: each phase's wall
  // seconds from the previous mark (the reference's first load, the runner's start and load, the
  // checked calls, the timed ones).
  auto last_mark = received;
  auto mark = [&](const char* phase) {
    const auto now = clock_type::now();
    reply["seconds"][phase] = std::chrono::duration<double>(now - last_mark).count();
    last_mark = now;
  };
  try {
    if (op == "ping") {
      reply.update({{"ok", true}, {"device", dev_.name()}, {"cuda", dev_.is_cuda()}, {"torch", TORCH_VERSION}});
      return reply;
    }
    if (op == "profile_report") {
      reply.update(profile_report());
      mark("profile_report");
      return reply;
    }
    // A profile whose report nobody asked for is finished first: its ncu and report do not
    // outlive the next request, nor does its runner start ahead after it.
    if (pending_report_) (void)profile_report();
    const bool probe = op == "probe_reference";  // the reference alone (degenerate.h): no candidate
    if (op != "verify" && op != "time" && op != "evaluate" && op != "profile" && !probe)
      throw std::invalid_argument("unknown op '" + op +
                                  "' (ping, verify, time, evaluate, profile, profile_report, probe_reference)");
    if (!req.contains("task") || (!probe && (!req.contains("candidate") || !req["candidate"].is_string())))
      throw std::invalid_argument("a request needs 'task' (an object) and 'candidate' (the .so path)");
    const auto task = engine::task_from_json(req["task"], req["task"].value("dir", "."), "request.task");
    const std::uint64_t seed_base = req.value("seed", std::uint64_t{1000}) + 100 * ++requests_;
    const double deadline_ms = std::clamp(req.value("deadline_ms", default_deadline_ms), 100.0, 24 * 3600e3);
    const auto until = received + std::chrono::milliseconds(static_cast<long long>(deadline_ms));
    trace_request(op.c_str());
    reply["device"] = dev_.is_cuda() ? "cuda" : "cpu";
    const auto path = probe ? std::string() : req["candidate"].get<std::string>();
    // "screening": false is for tests of the sandbox behind the screening; the engine never sends it.
    const bool screen = req.value("screening", true);
    auto& ref = reference(task, req.value("reference_library", ""));
    mark("reference");
    if (probe) {
      reply.update(probe_reference(task, ref, dev_, seed_base));
      mark("probe");
      return reply;
    }
    try {
      check_candidate(path, task.allow_libraries, screen);
    } catch (const candidate_rejected& e) {
      reply.update(fail("fail", e.check(), e.what()));
      return reply;
    }
    end.candidate_request = true;
    if (op == "profile") {
      // ncu's measurement of one call, not a verdict: the runner is started under the command the
      // engine gives (ncu with its sections and report path), inside this sandbox.
      const auto ncu = req.value("ncu", std::vector<std::string>{});
      if (ncu.empty()) throw std::invalid_argument("a profile request needs 'ncu' (the command to start the runner under)");
      // 'next_ncu': the command the engine expects its next profile to ask for (the loop profiles
      // its input with ncu's sections, then each step's best for the state's counters).
      reply.update(profile(task, path, ref, seed_base, ncu, req.value("next_ncu", std::vector<std::string>{}),
                           req.value("report_later", false), until));
      mark("profile");
      return reply;
    }
    runner = take_runner();
    if (const auto err = runner->ready(until); !err.empty()) {
      reply.update(fail("error", "runner", "the candidate's runner did not start: " + err));
      return reply;
    }
    const auto loaded = runner->load(path, until);
    if (!loaded.replied()) {
      // Loading runs the candidate's initialisers: it can die or hang there as well as in a call.
      reply.update(call_failure(lost_call(loaded, "loading")));
      return reply;
    }
    if (loaded.body.result != runner::status::ok) {
      reply.update(fail("fail", "load", runner_message(loaded.body)));
      return reply;
    }
    mark("runner");
    if (op == "verify" || op == "evaluate") {
      reply.update(verify(task, *runner, ref, seed_base, until));
      mark("verify");
      if (reply["verdict"] != "pass" || op == "verify") return reply;
      // verify's frame is gone; the timed calls get their own (rotated inputs, same shapes).
    }
    reply.update(time(task, runner, ref, req.value("reference_library", ""), seed_base + 99,
                      req.value("timing", nlohmann::json::object()), until));
    mark("time");
  } catch (const fatal_device_error&) {
    throw;
  } catch (const c10::OutOfMemoryError& e) {
    reply.update({{"verdict", "error"}, {"check", "out_of_memory"}, {"reason", e.what_without_backtrace()}});
  } catch (const c10::Error& e) {
    reply.update({{"verdict", "error"}, {"check", "torch"}, {"reason", e.what_without_backtrace()}});
  } catch (const std::bad_alloc& e) {
    reply.update({{"verdict", "error"}, {"check", "out_of_memory"}, {"reason", std::string("out of host memory: ") + e.what()}});
  } catch (const std::exception& e) {
    reply.update({{"verdict", "error"}, {"check", "request"}, {"reason", e.what()}});
  } catch (...) {
    reply.update({{"verdict", "error"}, {"check", "exception"}, {"reason", "a non-standard exception in the harness"}});
  }
  return reply;
}

}  // namespace kblaster::harness
