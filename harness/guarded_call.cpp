// The guards of a single call, in the order that gives the most specific reason.
#include "harness/guarded_call.h"

#include "harness/trace.h"
#include "support/untrusted_text.h"

#include <chrono>
#include <cstring>
#include <thread>

namespace kblaster::harness {

call_result lost_call(const runner_reply& r, const std::string& during) {
  call_result c;
  c.runner_lost = true;
  c.check = r.lost_check();
  c.reason = r.lost_reason(during);
  return c;
}

std::string runner_message(const runner::reply& b) {
  return support::candidate_text(std::string_view(b.message, ::strnlen(b.message, sizeof b.message)));
}

call_result status_failure(const runner::reply& b, const std::string& when) {
  call_result c;
  switch (b.result) {
    case runner::status::exception: c.check = "exception"; break;
    case runner::status::out_of_memory: c.check = "out_of_memory"; break;
    case runner::status::cuda_error:
      c.check = b.fatal ? "cuda_fatal" : "return_code";
      c.runner_lost = b.fatal != 0;  // its context is gone: the judge ends it
      break;
    default: c.check = "runner"; break;
  }
  c.reason = (b.result == runner::status::cuda_error ? "a CUDA error " + when + ": " : std::string()) + runner_message(b);
  return c;
}

namespace {

// The judge's own copy of an output: on the device where there is room for it (twice over: the
// comparison's chunks and the next seed's copy come after), else in host memory. A KernelBench
// output can hold several GB beside the reference's inputs and outputs and the call's arena; a
// host copy is slower (seconds per call at those sizes), so it is the fallback, not the rule.
// Comparisons read a host copy chunk by chunk (compare.cpp).
torch::Tensor judge_copy(const device_context& dev, const torch::Tensor& t) {
  if (t.nbytes() <= std::size_t{256} << 20) return t.clone();
  // Room is what the driver has once LibTorch's cached blocks are back (the inputs' and
  // comparisons' temporaries would otherwise count as taken).
  dev.release_cached_memory();
  if (t.nbytes() <= dev.free_bytes() / 2) return t.clone();
  // copy=true: on a CPU device the host copy must still be a copy, not the output itself.
  return t.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace

call_result guarded_call(device_context& dev, runner_process& runner, call_frame& frame,
                         const std::vector<torch::Tensor>& args, runner_process::deadline until, int side_work_wait_ms) {
  call_result r;
  frame.load(args);
  dev.sync_device();  // inputs and poison are in place before the candidate starts
  trace_phase("call: inputs copied, outputs poisoned");
  const int threads_before = runner.threads();

  const auto first = runner.call(frame.descriptors(), frame.n_in(), frame.n_out(), /*two_phase=*/true, until);
  if (!first.replied()) return lost_call(first, "the call");
  // What the outputs hold once the candidate's own stream is done (CPU: at return).
  std::vector<torch::Tensor> at_return;
  for (const auto& o : frame.outputs().outputs) at_return.push_back(judge_copy(dev, o));
  dev.sync_device();
  trace_phase("call: kb_forward returned, its stream done");
  const auto second = runner.finish(until);
  if (!second.replied()) return lost_call(second, "the call (waiting for the device)");
  if (first.body.result != runner::status::ok) return status_failure(first.body, "in kb_forward");
  if (first.body.rc != 0) {
    r.check = "return_code";
    r.reason = "kb_forward returned " + std::to_string(first.body.rc) +
               (first.body.message[0] ? " (" + runner_message(first.body) + ")" : "");
    return r;
  }
  if (second.body.result != runner::status::ok) return status_failure(second.body, "after kb_forward returned");
  if (!dev.is_cuda() && side_work_wait_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(side_work_wait_ms));
  dev.barrier();
  for (std::size_t i = 0; i < frame.outputs().outputs.size(); ++i)
    if (!same_bits(at_return[i], frame.outputs().outputs[i])) {
      r.check = "side_work";
      r.reason = "output " + std::to_string(i) +
                 " changed after kb_forward returned (and after its stream finished): work was left running on "
                 "another stream or thread, which the timer would not see";
      return r;
    }
  if (const int after = runner.threads(); threads_before > 0 && after > threads_before) {
    r.check = "side_work";
    r.reason = "kb_forward left " + std::to_string(after - threads_before) +
               " thread(s) running in its process after it returned (" + std::to_string(after) + " threads, " +
               std::to_string(threads_before) + " before the call)";
    return r;
  }
  if (const int i = second.body.descriptor_changed; i >= 0) {
    r.check = "descriptor_changed";
    r.reason = i < frame.n_in() ? "kb_forward changed the descriptor of input " + std::to_string(i)
                                : "kb_forward changed the descriptor of output " + std::to_string(i - frame.n_in()) +
                                      " (its data pointer, shape or strides): outputs must be written in place";
    return r;
  }
  if (const int i = frame.outputs().damaged_canary(); i >= 0) {
    r.check = "canary";
    r.reason = "kb_forward wrote past the end of output " + std::to_string(i) + " (the canary after it was overwritten)";
    return r;
  }
  trace_phase("call: outputs, descriptors and canaries checked");
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!same_bits(frame.inputs()[i], args[i])) {
      r.check = "input_modified";
      r.reason = "kb_forward modified input " + std::to_string(i) + " (inputs must be left unchanged)";
      return r;
    }
  // The outputs still hold what they held at return (the side-work check above compared every
  // bit after the device was idle), so the snapshot is the judge's copy: one copy, not two.
  r.outputs = std::move(at_return);
  return r;
}

}  // namespace kblaster::harness
