// An empty kernel for the runner's calibration exchanges (empty_kernel.cu says why).
#pragma once

namespace kblaster::harness::runner {

/// Launches one empty kernel on `stream` (a cudaStream_t); false if the launch failed.
bool launch_empty_kernel(void* stream);

}  // namespace kblaster::harness::runner
