// The task format: what to run (kernel source), what it must agree with (a reference), on what
// (input specs or saved tensors) and how strictly (tolerances). Read from a directory holding
// task.json, a `.json` spec, or a single `.cu` whose spec sits in a `/* kblaster-task ... */`
// comment. Depends only on nlohmann/json and the standard library, because kblaster-harness
// compiles this file too (it is built on GPU machines without the rest of the engine).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kblaster::engine {

/// A task file that cannot be used; the message names the file and the offending field.
class task_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How the expected outputs are produced.
enum class reference_kind {
  torchscript_module,  // a TorchScript file (torch.jit.save) with its weights
  torchscript_source,  // TorchScript source defining `forward`, compiled at run time
  kernel,              // another kernel with the same kb_forward ABI (an earlier version)
};

/// One input tensor: generated from a seed, or loaded from a saved tensor.
struct input_spec {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string dtype = "float32";  // float32 float16 bfloat16 float64 int32 int64 uint8 bool
  std::string init = "randn";     // randn uniform zeros ones arange randint
  double low = 0, high = 1;       // uniform: [low, high); randint: [low, high)
  double scale = 1;               // multiplies randn/uniform values
  std::string file;               // saved tensor (torch.save of one tensor), or raw bytes in a ".bin"
                                  // file read as `shape` and `dtype`; absolute path
  // Outputs only: this output's tolerance, over the task's and the dtype's (a capture widens the
  // atol of an output on which the original kernel itself varies from run to run).
  std::optional<double> atol, rtol;
  // Outputs only: the input whose contents this output holds before every call (an allocation a
  // captured kernel updates in place), put there by the harness outside the timed region; -1:
  // none (the output starts poisoned, and the candidate must write all of it).
  int initial_from = -1;
};

/// The reference side of a task.
struct reference_spec {
  reference_kind kind = reference_kind::torchscript_source;
  std::string path;      // module file or reference kernel (absolute)
  std::string cpu_path;  // reference kernel's host-code version for the CPU path (absolute)
  std::string source;    // TorchScript source (torchscript_source)
};

/// A whole task, with every path made absolute.
struct task_spec {
  std::string name;
  std::string dir;          // where relative paths were resolved
  std::string kernel;       // the CUDA candidate source (.cu)
  std::string cpu_kernel;   // host-code version of the candidate for the CPU path (.cpp), optional
  reference_spec reference;
  std::vector<input_spec> inputs;
  std::vector<input_spec> outputs;   // shapes and dtypes; needed only for a kernel reference
  std::optional<double> atol, rtol;  // overrides of the per-dtype defaults
  std::string arch;                  // e.g. "sm_90"; empty: the machine's
  bool allow_libraries = false;      // may the candidate import cuBLAS/cuDNN/CUTLASS/LibTorch?
  int seeds = 3;                     // correctness seeds, each with fresh inputs
  // Stress input sets the task declares outside its domain ("large_magnitude", "near_limits"),
  // and why: the harness skips them and says so.
  std::vector<std::string> stress_skip;
  std::string stress_skip_reason;
  std::string description;
};

/// The stress input sets the harness runs beyond the task's own distribution.
inline const std::vector<std::string>& stress_kinds() {
  static const std::vector<std::string> kinds{"large_magnitude", "near_limits"};
  return kinds;
}

/// Per-dtype tolerance: fp32/fp64 1e-4, fp16/bf16 1e-2, integers exact; the task's overrides
/// win over those, and an output's own over the task's.
struct tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
};

/// Reads a task from a directory (task.json inside), a `.json` file, or a `.cu` with an embedded
/// spec (or a sibling NAME.task.json). Throws task_error with the file and field.
task_spec load_task(const std::string& path);

/// Parses a task from JSON; relative paths are resolved against `dir`. Throws task_error.
task_spec task_from_json(const nlohmann::json& j, const std::string& dir, const std::string& origin = "task");

/// The task as JSON with absolute paths (what the engine sends to the harness).
nlohmann::json to_json(const task_spec& t);

/// The tolerance for an output of `dtype`, with the task's overrides applied.
tolerance tolerance_for(const std::string& dtype, const task_spec& t);
/// The tolerance for output `output` (of `dtype`): its own atol/rtol, else the task's, else the
/// dtype's. An index past `t.outputs` (a TorchScript reference's outputs need no specs) has none
/// of its own.
tolerance tolerance_for(const std::string& dtype, const task_spec& t, std::size_t output);

/// True for the dtype names the format accepts.
bool is_known_dtype(const std::string& dtype);
/// "output 1", or "output 1 (out, parameter 2)" when the task names its outputs: what a verdict
/// calls an output. input_label likewise.
std::string output_label(const task_spec& task, std::size_t index);
std::string input_label(const task_spec& task, std::size_t index);
/// Bytes per element of a known dtype.
std::size_t dtype_bytes(const std::string& dtype);
/// An input file of raw bytes (".bin", e.g. a capture's memory) rather than a torch.save file.
bool is_raw_tensor_file(const std::string& path);

/// "randn", "uniform", ... : true for the initialisations the format accepts.
bool is_known_init(const std::string& init);

/// What a report calls the task's reference: "the original kernel" for a kernel reference (a
/// captured program's own kernel, or an earlier version), "PyTorch" for a TorchScript one.
std::string reference_label(const task_spec& t);

/// Name of a reference kind as spelled in task files ("torchscript", "source", "kernel").
std::string to_string(reference_kind k);

}  // namespace kblaster::engine
