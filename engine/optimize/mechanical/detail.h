// Internal to the mechanical tier: one function per technique family, called by
// mechanical_variants() (mechanical.cpp) after it has parsed the source.
#pragma once

#include "engine/optimize/mechanical/mechanical.h"
#include "engine/optimize/mechanical/source.h"

namespace kblaster::engine::optimize::mech {

/// block_size_tuning (mechanical_launch.cpp).
mechanical_result block_size_variants(const parsed_source& s, const mechanical_context& c);
/// launch_bounds (mechanical_launch.cpp).
mechanical_result launch_bounds_variants(const parsed_source& s, const mechanical_context& c);
/// grid_stride_loop (mechanical_grid_stride.cpp).
mechanical_result grid_stride_variants(const parsed_source& s, const mechanical_context& c);
/// grid_size_tuning (mechanical_grid_stride.cpp).
mechanical_result grid_size_variants(const parsed_source& s, const mechanical_context& c);
/// loop_unrolling (mechanical_loops.cpp).
mechanical_result unroll_variants(const parsed_source& s, const mechanical_context& c);
/// read_only_cache (mechanical_qualifiers.cpp).
mechanical_result read_only_variants(const parsed_source& s, const mechanical_context& c);
/// fast_math_intrinsics (mechanical_fast_math.cpp).
mechanical_result fast_math_variants(const parsed_source& s, const mechanical_context& c);

/// The 1-D block size of launch `l` when it is an integer literal or a const/constexpr integer
/// declared in the launching function or at file scope; nullopt otherwise, with `why` set.
std::optional<long long> known_block_size(const parsed_source& s, const launch_info& l, std::string& why);

/// Threads per block of launch `l` for any dimensionality (a dim3 of literals counts);
/// nullopt when unknown.
std::optional<long long> known_total_block(const parsed_source& s, const launch_info& l);

/// True when tokens `r` compute blockIdx.x * blockDim.x + threadIdx.x (mechanical_index.cpp).
bool is_global_index(const parsed_source& s, token_range r);
/// True when tokens `r` compute gridDim.x * blockDim.x.
bool is_grid_stride(const parsed_source& s, token_range r);
/// True when kernel `k` holds `for (T i = <global index>; …; i += <grid stride>)`.
bool has_grid_stride_loop(const parsed_source& s, const function_info& k);

/// vectorized_memory_access (vectorize.cpp).
mechanical_result vectorize_variants(const parsed_source& s, const mechanical_context& c);

/// True when token `i` is followed by an assignment (`=`, `op=`, `++`, `--`) within `limit`
/// (grid_stride.cpp).
bool is_assignment_after(const parsed_source& s, std::size_t i, std::size_t limit);
/// Why the per-element code `r` must not run several times per thread (barriers, shared
/// memory, warp collectives, thread indices, a modified index); "" when it may.
std::string per_element_hazard(const parsed_source& s, token_range r, std::string_view index);
/// The bound of `name < bound` (less) or `name >= bound` in condition `c`; empty when the
/// condition is not of that form or the bound is not a simple expression.
token_range bound_of(const parsed_source& s, token_range c, std::string_view name, bool less);

/// Joins `reasons` with "; ", each once, in order.
std::string join_reasons(const std::vector<std::string>& reasons);

}  // namespace kblaster::engine::optimize::mech
