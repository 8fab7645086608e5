// The runner's system-call filter, installed after the CUDA context exists and before the
// candidate is loaded. The sandbox (support/sandbox.h) already confines the file system,
// network and environment; this closes what a process inside it could still do to its
// neighbours in the same sandbox, the judge first of all:
//   no ptrace or process_vm_readv/writev (reading the judge's expected outputs),
//   no signals to any other process (killing the judge or the engine),
//   no new processes or programs (fork, vfork, clone without CLONE_THREAD, clone3, execve),
//   no namespace, mount, BPF, keyring or module calls.
// Threads stay allowed: the judge counts them from outside instead.
#pragma once

#include <string>

namespace kblaster::harness::runner {

/// Installs the filter on the calling process (and the threads it starts later). Returns an
/// empty string, or why it could not (an architecture the filter does not know, no seccomp).
std::string install_seccomp_filter();

}  // namespace kblaster::harness::runner
