// Phase timings on stderr, when KBLASTER_HARNESS_TRACE is set: where a slow request spends its
// time (KernelBench tensors reach gigabytes, and a watchdog kill alone does not say which step
// was slow). stdout carries the replies, so the trace never goes there.
#pragma once

namespace kblaster::harness {

/// Whether KBLASTER_HARNESS_TRACE is set: a line worth building only then.
bool tracing();

/// Starts the clock of a new request.
void trace_request(const char* op);

/// "[kblaster-harness +1.234 s] what" on stderr when tracing; the device is synchronised first,
/// so that asynchronous work is charged to the phase that queued it.
void trace_phase(const char* what);

}  // namespace kblaster::harness
