// What a kernel's source does, in the words a KB note may need (kb::note_operation): whether it
// reduces, calls transcendentals, divides, keeps per-thread arrays, uses shared memory. A hint
// written for one of these ("the row's partial sums across the lanes", "integer division is
// slow") is not shown for a kernel that has none of it (kb::note_fits).
//
// Read from the tokens of the device code only (the bodies of __global__ and __device__
// functions, as the kernel locator finds them): a program's host code, which divides sizes and
// sums checks, says nothing of its kernels. A lexical reading, not a compiler's: it looks for
// the forms a CUDA engineer writes, and errs towards finding an operation (a note shown that
// does not apply costs less than a right one hidden).
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace kblaster::engine {

/// The kb::note_operation names that the device code of `source` shows:
///   reduction         a value accumulated in a loop (`acc += …`, `m = fmaxf(m, …)` into a plain
///                     variable, not the loop's own counter), a shared-memory tree (`s[t] += s[t + k]`),
///                     atomics, warp shuffles or __reduce_*_sync
///   transcendental    exp, log, pow, the trigonometric and hyperbolic functions, erf, sqrt and
///                     rsqrt, in any of their spellings (expf, __expf, exp2f, …)
///   division          `%`, or `/` by something other than a floating-point literal
///   per_thread_array  an array declared inside a function body (`float acc[8][8];`), shared
///                     memory excepted
///   shared_memory     `__shared__`
/// Empty for a source with no device function.
std::set<std::string> kernel_operations(std::string_view source);

}  // namespace kblaster::engine
