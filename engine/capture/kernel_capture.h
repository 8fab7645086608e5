// One recorded kernel launch: what libkblaster-capture.so (capture/) wrote into a capture folder,
// read back and checked. The folder's format is docs/capture-format.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kblaster::engine {

/// A capture folder that cannot be used (malformed, inconsistent, files missing); says why.
class capture_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A device address inside a parameter's bytes, to relocate at replay.
struct captured_pointer {
  std::size_t at = 0;            // byte offset in the parameter (0 for a plain pointer)
  std::size_t allocation = 0;    // index into kernel_capture::allocations
  std::uint64_t offset = 0;      // from the allocation's start (interior pointers)
};

struct captured_parameter {
  std::size_t offset = 0, size = 0;       // the driver's layout (cuKernelGetParamInfo)
  std::vector<unsigned char> bytes;       // the value passed
  std::vector<captured_pointer> pointers;
};

/// One device allocation a parameter points into, whole (cuMemGetAddressRange).
struct captured_allocation {
  std::uint64_t bytes = 0;
  std::string before;  // absolute path of its contents before the launch
  std::string after;   // after the launch; empty when the launch left it unchanged
  bool written = false;
  // The agent ran the launch a second time from the same memory and this allocation came out
  // different (atomics in floating point, a race): `again` is the second run's contents.
  bool varies = false;
  std::string again;   // absolute path; empty unless `varies`
};

/// Whether the agent ran the launch twice to see if the original gives the same results.
struct determinism_check {
  bool checked = false;
  std::string reason;  // why not, when not checked ("turned off (KBLASTER_CAPTURE_REPEAT=0)", …)
};

/// Why the agent refused to capture (managed memory, too large, not launched, …).
struct capture_refusal {
  std::string reason;   // a stable word: "managed_memory", "not_launched", …
  std::string message;  // a sentence naming the kernel
};

/// A captured grid or block as the user reads it: "(63, 63, 1)".
std::string dims_text(const std::array<unsigned, 3>& d);

struct kernel_capture {
  std::string dir;
  std::string requested;  // the kernel name the capture was asked for
  std::string name;       // the demangled name, e.g. "stencil2d(float const*, float*, int, int)"
  std::string mangled;
  long launch = 0;        // which launch of the kernel, from 0
  std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::uint64_t shared_bytes = 0;
  double time_ms = 0;     // the launch's time in the program (CUDA events behind a blocking kernel: docs/capture-format.md)
  // time_ms is the kernel's time a call as the judge measures a candidate when the agent could
  // time it so (calls back to back on fresh copies of its memory, cold: capture.json's
  // batch_timing), else the lone launch's; both are kept.
  double lone_launch_ms = 0;  // the program's own launch, timed alone
  int batch_calls = 0;        // > 0: time_ms is the batch's figure a call, from this many calls
  bool l2_cold = false;       // L2 was flushed before the lone launch was timed (older captures: warm)
  /// How time_ms was measured, for the user: " (…)".
  std::string timing_note() const;
  std::string device_name, compute_capability;
  int sm_count = 0;
  std::vector<captured_parameter> params;
  std::vector<captured_allocation> allocations;
  bool hidden_pointers = false;  // some pointer sits inside a by-value struct
  // Absent in captures from an agent that ran the launch once (before the check existed).
  std::optional<determinism_check> determinism;
  std::optional<capture_refusal> refusal;

  std::uint64_t total_bytes() const;
};

/// Reads DIR/capture.json and checks it against the folder: every index in range, every
/// pointer inside its allocation, every file present with its allocation's size (a varying
/// allocation's second run included, and only when the determinism check ran). A refused
/// capture reads fine (its `refusal` is set). Throws capture_error.
kernel_capture read_capture(const std::string& dir);

}  // namespace kblaster::engine
