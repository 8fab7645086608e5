// The screening rules: named deny lists first (so that a refusal says what the import is for),
// then an allow-list every other import must be on.
#include "harness/candidate_screen.h"

#include <regex>
#include <set>
#include <vector>

namespace kblaster::harness {
namespace {

struct rule {
  const char* name;
  const char* why;
  std::vector<std::string> exact;
  std::vector<std::string> prefixes;
};

const std::vector<rule>& deny_rules() {
  static const std::vector<rule> rules{
      {"dynamic_loading", "loads code at run time (a vendor library behind the harness's back)",
       {"dlopen", "dlmopen", "dlsym", "dlvsym"}, {}},
      {"processes", "starts or controls processes",
       {"fork", "vfork", "clone", "clone3", "execve", "execveat", "execv", "execvp", "execvpe", "execl", "execlp",
        "execle", "posix_spawn", "posix_spawnp", "system", "popen", "daemon", "setsid", "setpgid", "ptrace", "prctl"},
       {}},
      {"threads", "starts threads (work that can outlive the call and escape the timer)",
       {"pthread_create", "thrd_create"}, {"_ZNSt6thread", "_ZNSt3_V26thread"}},
      {"network", "uses the network",
       {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "send", "sendto", "sendmsg", "recv",
        "recvfrom", "recvmsg", "getaddrinfo", "gethostbyname", "gethostbyname_r"},
       {}},
      {"signals", "sends or handles signals",
       {"kill", "killpg", "tkill", "tgkill", "signal", "sigaction", "sigprocmask", "pthread_kill", "pthread_sigmask",
        "alarm", "setitimer", "timer_create"},
       {}},
      {"file_system", "opens or changes files",
       {"open", "open64", "openat", "openat64", "creat", "creat64", "fopen", "fopen64", "freopen", "fdopen", "unlink",
        "unlinkat", "remove", "rename", "renameat", "renameat2", "mkdir", "mkdirat", "rmdir", "chmod", "fchmod",
        "chown", "fchown", "truncate", "ftruncate", "symlink", "link", "mknod", "mount", "umount", "umount2",
        "chdir", "fchdir", "opendir", "readdir", "write", "pwrite", "read", "pread", "dup", "dup2", "dup3", "ioctl"},
       {"_ZNSt10filesystem", "_ZNSt14basic_ofstream", "_ZNSt14basic_ifstream", "_ZNSt13basic_fstream",
        "_ZNSt12__basic_file", "_ZNSt13basic_filebuf"}},
      {"memory_protection", "changes memory mappings or protections (code written at run time)",
       {"mmap", "mmap64", "mremap", "mprotect", "pkey_mprotect", "memfd_create", "shm_open", "madvise"}, {}},
      {"raw_syscalls", "makes raw system calls", {"syscall"}, {}},
      {"environment", "reads or changes the environment", {"getenv", "secure_getenv", "setenv", "putenv", "unsetenv",
                                                          "clearenv"}, {}},
  };
  return rules;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// What a kernel's shared object legitimately imports.
bool allowed(const std::string& sym) {
  static const std::vector<std::string> prefixes{
      "cuda", "__cuda",  // the CUDA runtime
      "_Z",              // the C++ runtime (operator new, exceptions, std::); the deny rules run first
      "__cxa_", "__gxx_", "_Unwind_", "_ITM_", "__gmon_start__", "__stack_chk_fail", "__assert_fail",
      "__tls_get_addr", "__errno_location", "mem", "str", "__mem", "__str"};
  static const std::set<std::string> exact{
      "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "printf", "fprintf", "sprintf",
      "snprintf", "vprintf", "vfprintf", "vsnprintf", "puts", "putchar", "fputs", "fputc", "fwrite", "fflush",
      "stderr", "stdout", "__printf_chk", "__fprintf_chk", "__sprintf_chk", "__snprintf_chk", "__vsnprintf_chk",
      "abort", "exit", "qsort", "bsearch", "abs", "labs", "llabs", "rand", "srand", "div", "ldiv", "atoi", "atol",
      "strtol", "strtod", "strtof"};
  static const std::regex math(
      "(a?sinh?|a?cosh?|a?tanh?|atan2|exp2?|exp10|expm1|log|log2|log10|log1p|logb|pow|sqrt|rsqrt|cbrt|fabs|floor|ceil|"
      "round|lround|llround|trunc|fmod|remainder|fmin|fmax|fma|fdim|erfc?|lgamma|tgamma|hypot|ldexp|frexp|modf|"
      "copysign|nan|rint|lrint|nearbyint|scalbn|ilogb|sincos|__isnan|__isinf|__finite|isnan|isinf)(f|l)?(32|64)?x?");
  if (exact.count(sym)) return true;
  for (const auto& p : prefixes)
    if (starts_with(sym, p)) return true;
  return std::regex_match(sym, math);
}

}  // namespace

std::optional<screening_refusal> screen_candidate(const elf_imports& imports) {
  for (const auto& sym : imports.undefined)
    for (const auto& r : deny_rules()) {
      bool hit = false;
      for (const auto& e : r.exact) hit = hit || sym == e;
      for (const auto& p : r.prefixes) hit = hit || starts_with(sym, p);
      if (hit) return screening_refusal{r.name, sym, "imports " + sym + ", which " + r.why + " (rule " + r.name + ")"};
    }
  for (const auto& sym : imports.undefined)
    if (!allowed(sym))
      return screening_refusal{"import_not_allowed", sym,
                               "imports " + sym +
                                   ", which is not on the allow-list of CUDA runtime, C++ runtime, allocation, "
                                   "printing and math entry points (rule import_not_allowed)"};
  // The build's own load-time functions: the C runtime's frame_dummy and one registration of the
  // fat binary per CUDA translation unit. Anything beyond runs before kb_forward is ever called.
  std::uint64_t registrations = 0;
  for (const auto& sym : imports.symbols)
    if (sym.find("__sti____cudaRegisterAll") != std::string::npos) ++registrations;
  if (imports.init_array_entries > 1 + registrations)
    return screening_refusal{"constructors", ".init_array",
                             ".init_array runs " + std::to_string(imports.init_array_entries - 1 - registrations) +
                                 " function(s) of its own when loaded (a global with a constructor, "
                                 "__attribute__((constructor)), or a header such as <iostream> that adds one): "
                                 "nothing may run before kb_forward (rule constructors)"};
  if (imports.fini_array_entries > 1)
    return screening_refusal{"constructors", ".fini_array",
                             ".fini_array runs function(s) of its own when unloaded (__attribute__((destructor))) (rule constructors)"};
  if (imports.writable_executable)
    return screening_refusal{"writable_executable", "PT_LOAD",
                             "has a PT_LOAD segment that is both writable and executable (rule writable_executable)"};
  if (imports.executable_stack)
    return screening_refusal{"writable_executable", "PT_GNU_STACK",
                             "asks for an executable stack (PT_GNU_STACK) (rule writable_executable)"};
  return std::nullopt;
}

}  // namespace kblaster::harness
