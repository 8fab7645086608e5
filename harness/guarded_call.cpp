// The guards of a single call, in the order that gives the most specific reason.
#include "harness/guarded_call.h"

#include "harness/trace.h"

#include <chrono>
#include <thread>

namespace kblaster::harness {

call_result guarded_call(device_context& dev, kb_forward_fn fn, const std::vector<torch::Tensor>& args,
                         const std::vector<torch::Tensor>& reference_outputs, int side_work_wait_ms) {
  call_result r;
  // The candidate gets its own copies; the originals show whether it wrote to its inputs.
  std::vector<torch::Tensor> inputs, originals;
  for (const auto& a : args) {
    inputs.push_back(a.clone());
    originals.push_back(a);
  }
  // Allocated while the reference's outputs are alive, so the allocator cannot hand their memory
  // back to us already holding the right answer (a KernelBench loophole).
  auto buffers = make_outputs(reference_outputs);
  for (std::size_t i = 0; i < buffers.outputs.size(); ++i) {
    for (const auto& t : inputs)
      if (overlaps(buffers.storage[i], t)) {
        r.check = "aliasing";
        r.reason = "output " + std::to_string(i) + " would share memory with an input";
        return r;
      }
    for (const auto& t : reference_outputs)
      if (overlaps(buffers.storage[i], t)) {
        r.check = "aliasing";
        r.reason = "output " + std::to_string(i) + " would share memory with the reference's output";
        return r;
      }
  }
  dl_views in(inputs), out(buffers.outputs);
  dev.sync_device();  // inputs and poison are in place before the candidate starts
  trace_phase("call: inputs copied, outputs poisoned");

  const int rc = fn(in.data(), in.size(), out.data(), out.size(), dev.stream());
  if (rc != 0) {
    dev.sync_device();
    r.check = "return_code";
    r.reason = "kb_forward returned " + std::to_string(rc) + (dev.is_cuda() ? " (" + dev.take_error() + ")" : "");
    return r;
  }
  // What the outputs hold once the candidate's own stream is done (CPU: at return).
  dev.sync_stream();
  std::vector<torch::Tensor> at_return;
  trace_phase("call: kb_forward returned, its stream done");
  for (const auto& o : buffers.outputs) at_return.push_back(o.clone());
  if (dev.is_cuda()) {
    dev.sync_device();
  } else if (side_work_wait_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(side_work_wait_ms));
  }
  if (const auto err = dev.take_error(); !err.empty()) {
    r.check = "return_code";
    r.reason = "a CUDA error after kb_forward returned: " + err;
    return r;
  }
  for (std::size_t i = 0; i < buffers.outputs.size(); ++i)
    if (!same_bits(at_return[i], buffers.outputs[i])) {
      r.check = "side_work";
      r.reason = "output " + std::to_string(i) +
                 " changed after kb_forward returned (and after its stream finished): work was left running on "
                 "another stream or thread, which the timer would not see";
      return r;
    }
  if (const int i = out.changed(); i >= 0) {
    r.check = "descriptor_changed";
    r.reason = "kb_forward changed the descriptor of output " + std::to_string(i) +
               " (its data pointer, shape or strides): outputs must be written in place";
    return r;
  }
  if (const int i = in.changed(); i >= 0) {
    r.check = "descriptor_changed";
    r.reason = "kb_forward changed the descriptor of input " + std::to_string(i);
    return r;
  }
  if (const int i = buffers.damaged_canary(); i >= 0) {
    r.check = "canary";
    r.reason = "kb_forward wrote past the end of output " + std::to_string(i) + " (the canary after it was overwritten)";
    return r;
  }
  trace_phase("call: outputs, descriptors and canaries checked");
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!same_bits(inputs[i], originals[i])) {
      r.check = "input_modified";
      r.reason = "kb_forward modified input " + std::to_string(i) + " (inputs must be left unchanged)";
      return r;
    }
  r.outputs = buffers.outputs;
  return r;
}

}  // namespace kblaster::harness
