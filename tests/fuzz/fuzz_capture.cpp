// libFuzzer target: a capture folder's capture.json (engine/capture/kernel_capture.h) and the
// launcher generated from it. The JSON comes from an agent inside someone else's program and
// may be edited or damaged since: whatever it says, reading it either fails with capture_error
// or yields pointers inside their parameters and allocations (and a second run's contents only
// where the launch ran twice and varied), and the launcher is generated or refused with
// capture_error.
#include "engine/capture/capture_launcher.h"
#include "engine/capture/kernel_capture.h"
#include "fuzz_input.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

// A folder with the allocation files the seeds name (the stencil2d capture's sizes).
const fs::path& folder() {
  static const fs::path dir = [] {
    const auto d = fs::temp_directory_path() / ("kblaster-fuzz-capture-" + std::to_string(::getpid()));
    fs::create_directories(d);
    for (const char* name : {"alloc-0.before.bin", "alloc-1.before.bin", "alloc-1.after.bin", "alloc-1.again.bin"})
      std::ofstream(d / name, std::ios::binary) << std::string(12288, '\x01');
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kblaster::engine;
  std::ofstream(folder() / "capture.json", std::ios::binary | std::ios::trunc) << kblaster::fuzz::as_text(data, size);
  kernel_capture c;
  try {
    c = read_capture(folder().string());
  } catch (const capture_error&) {
    return 0;
  }
  if (c.refusal) return 0;
  for (const auto& a : c.allocations)  // a second run's contents only where the check ran and found variation
    if ((a.varies && (a.again.empty() || !a.written || !c.determinism || !c.determinism->checked)) || (!a.varies && !a.again.empty()))
      std::abort();
  for (const auto& p : c.params) {
    if (p.bytes.size() != p.size) std::abort();
    for (const auto& q : p.pointers)
      if (q.allocation >= c.allocations.size() || q.at + 8 > p.size || q.offset > c.allocations[q.allocation].bytes) std::abort();
  }
  cuda_symbol kernel;
  kernel.name = kernel.qualified_name = c.requested.empty() ? "k" : c.requested;
  kernel.signature = "__global__ void k(const float* in, float* out, int n)";
  try {
    const auto text = generate_launcher(c, kernel, "fuzz");
    if (text.find("kb_forward") == std::string::npos) std::abort();
  } catch (const capture_error&) {
  }
  return 0;
}
