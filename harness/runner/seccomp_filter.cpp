// A classic-BPF seccomp program written out by hand: a short deny list needs no library, and
// the runner then builds wherever the CUDA toolkit does (the GPU machine has no libseccomp-dev).
#include "harness/runner/seccomp_filter.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

namespace kblaster::harness::runner {
namespace {

#if defined(__x86_64__)
constexpr unsigned audit_arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned audit_arch = AUDIT_ARCH_AARCH64;
#else
constexpr unsigned audit_arch = 0;
#endif

constexpr unsigned deny = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
constexpr unsigned not_there = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);  // clone3: glibc falls back to clone

// Calls refused outright.
const long denied[] = {
    SYS_ptrace,   SYS_process_vm_readv, SYS_process_vm_writev, SYS_execve,      SYS_execveat,
#ifdef SYS_fork
    SYS_fork,
#endif
#ifdef SYS_vfork
    SYS_vfork,
#endif
    SYS_tkill,    SYS_setsid,           SYS_setpgid,           SYS_unshare,     SYS_setns,
    SYS_mount,    SYS_umount2,          SYS_pivot_root,        SYS_chroot,      SYS_bpf,
    SYS_keyctl,   SYS_add_key,          SYS_request_key,       SYS_init_module, SYS_finit_module,
    SYS_delete_module, SYS_kexec_load,  SYS_reboot,            SYS_userfaultfd, SYS_perf_event_open,
    SYS_pidfd_open, SYS_pidfd_send_signal, SYS_process_madvise, SYS_kcmp,
};

sock_filter stmt(unsigned short code, unsigned k) { return BPF_STMT(code, k); }
sock_filter jump(unsigned short code, unsigned k, unsigned char jt, unsigned char jf) { return BPF_JUMP(code, k, jt, jf); }

constexpr unsigned nr_offset = offsetof(seccomp_data, nr);
constexpr unsigned arch_offset = offsetof(seccomp_data, arch);
// The low 32 bits of the first argument (little-endian on both architectures).
constexpr unsigned arg0_offset = offsetof(seccomp_data, args);

}  // namespace

std::string install_seccomp_filter() {
  if (audit_arch == 0) return "the system-call filter knows only x86-64 and aarch64";
  const auto self = static_cast<unsigned>(::getpid());
  std::vector<sock_filter> p;
  p.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arch_offset));
  p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, audit_arch, 1, 0));
  p.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  p.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, nr_offset));
#if defined(__x86_64__)
  // The x32 ABI numbers the same calls differently: refuse it whole.
  p.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
  p.push_back(stmt(BPF_RET | BPF_K, deny));
#endif
  for (const long nr : denied) {
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1));
    p.push_back(stmt(BPF_RET | BPF_K, deny));
  }
  p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(SYS_clone3), 0, 1));
  p.push_back(stmt(BPF_RET | BPF_K, not_there));
  // clone: threads only (CLONE_THREAD set).
  p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(SYS_clone), 0, 4));
  p.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg0_offset));
  p.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
  p.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  p.push_back(stmt(BPF_RET | BPF_K, deny));
  // kill and tgkill: only this process itself (abort() and raise() signal their own thread).
  for (const long nr : {static_cast<long>(SYS_kill), static_cast<long>(SYS_tgkill)}) {
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 4));
    p.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, arg0_offset));
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1));
    p.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    p.push_back(stmt(BPF_RET | BPF_K, deny));
  }
  p.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));

  sock_fprog prog{static_cast<unsigned short>(p.size()), p.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return std::string("no_new_privs: ") + std::strerror(errno);
  // TSYNC: the threads the CUDA driver has already started get the filter too.
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
    return std::string("seccomp: ") + std::strerror(errno);
  return {};
}

}  // namespace kblaster::harness::runner
