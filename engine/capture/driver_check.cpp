// The driver check before a capture: dlopen the library the way the CUDA runtime will, lazily and
// locally (nothing of it joins our global symbols), and close it again.
#include "engine/capture/driver_check.h"

#include <dlfcn.h>

namespace kblaster::engine {

std::string missing_cuda_driver(const std::string& library) {
  ::dlerror();  // clear a stale error: the one read below is this call's
  if (void* handle = ::dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
    ::dlclose(handle);
    return {};
  }
  const char* why = ::dlerror();
  return "no NVIDIA driver on this machine: " + library + " cannot be loaded (" + (why ? why : "no reason given") +
         "); capture runs your program on a GPU";
}

}  // namespace kblaster::engine
