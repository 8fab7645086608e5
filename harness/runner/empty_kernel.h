// An empty kernel for the runner's calibration exchanges (empty_kernel.cu says why).
#pragma once

namespace kblaster::harness::runner {

/// Launches one empty kernel on `stream` (a cudaStream_t), or one that holds the GPU for
/// `spin_ns` nanoseconds; false if the launch failed.
bool launch_empty_kernel(void* stream, unsigned long long spin_ns = 0);

}  // namespace kblaster::harness::runner
