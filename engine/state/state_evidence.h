// What the KB is told about a classified kernel: the signature's primary bottleneck and
// characteristics weighed by their evidence, and the facts technique preconditions name
// (kb/evidence.h). One place turns a signature into KB evidence, for the editor and the loop.
#pragma once

#include "engine/state/performance_signature.h"
#include "kb/evidence.h"

namespace kblaster::engine {

/// The evidence of `s`. Weights: ncu's estimated speedup over 100 where a rule gave one;
/// launch_bound by how far under the launch overhead (5 us) the kernel is; otherwise
/// kb::default_characteristic_weight. Facts: several_launches (more than one launch in the run),
/// short_launch (under 5 us), matrix_product (its name or its profile says so), data_reuse, many_blocks
/// (a grid of at least 8 blocks per SM). A static signature
/// gives unmeasured evidence: resource characteristics only, no state to claim.
kb::kernel_evidence kb_evidence(const performance_signature& s);

}  // namespace kblaster::engine
