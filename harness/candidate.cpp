// Loading candidates with dlopen after the library check.
#include "harness/candidate.h"

#include "harness/candidate_screen.h"
#include "harness/elf_imports.h"

#include <dlfcn.h>

namespace kblaster::harness {

void check_candidate(const std::string& path, bool allow_libraries, bool screen) {
  elf_imports imports;
  try {
    imports = read_elf_imports(path);
  } catch (const std::exception& e) {
    throw candidate_rejected("load", std::string("cannot read the candidate: ") + e.what());
  }
  if (!allow_libraries) {
    const auto reason = forbidden_library_reason(imports);
    if (!reason.empty()) throw candidate_rejected("forbidden_library", "forbidden library: the candidate " + reason);
  }
  if (screen)
    if (const auto refusal = screen_candidate(imports))
      throw candidate_rejected("screening", "refused before running: the candidate " + refusal->reason);
}

candidate_library::candidate_library(const std::string& path, bool allow_libraries, bool screen) : path_(path) {
  check_candidate(path, allow_libraries, screen);
  // RTLD_NODELETE: see the class comment. RTLD_LOCAL: candidates do not see each other.
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle_) throw candidate_rejected("load", std::string("cannot load the candidate: ") + dlerror());
  forward_ = reinterpret_cast<kb_forward_fn>(dlsym(handle_, "kb_forward"));
  if (!forward_)
    throw candidate_rejected("load", "the candidate has no extern \"C\" kb_forward (see docs/harness.md, \"Candidate ABI\")");
}

}  // namespace kblaster::harness
