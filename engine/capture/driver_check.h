// Whether this machine can run a capture at all: a capture runs the user's program on a GPU, and
// without the NVIDIA driver's library the program fails before its first launch with the
// loader's "error while loading shared libraries: libcuda.so.1". Checked before anything is
// built or run, by every capture path (program_capture's capture_blocker).
#pragma once

#include <string>

namespace kblaster::engine {

/// The driver library a capture needs.
inline constexpr const char* cuda_driver_library = "libcuda.so.1";

/// Empty when `library` can be loaded (dlopen, then closed again at once); else a sentence for the
/// user naming what is missing and the loader's reason: "no NVIDIA driver on this machine:
/// libcuda.so.1 cannot be loaded (...); capture runs your program on a GPU".
std::string missing_cuda_driver(const std::string& library = cuda_driver_library);

}  // namespace kblaster::engine
