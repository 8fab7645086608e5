// Finds the CUDA entry points in a source file: __global__ kernels, __device__ functions and
// host functions that launch kernels, with exact byte ranges.
//
// A hand-written lexer, not a compiler: it must be right on comments, string and raw-string
// literals, templates, macros, attributes such as __launch_bounds__(256, 2), extern "C",
// namespaces and multi-line signatures, and fast enough to run on every keystroke of a 2 MB
// file. It works in byte offsets; the LSP layer maps them to UTF-16 positions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kblaster::engine {

enum class cuda_symbol_kind {
  global_kernel,    // __global__
  device_function,  // __device__ (and __host__ __device__)
  host_launcher,    // a host function whose body contains a <<<...>>> launch
};

/// Half-open byte range [begin, end) in the source.
struct byte_range {
  std::size_t begin = 0;
  std::size_t end = 0;
  friend bool operator==(const byte_range&, const byte_range&) = default;
};

/// One located function. Ranges are byte offsets into the source that was located.
struct cuda_symbol {
  std::string name;            // unqualified, e.g. "matmul_tiled"; "operator()", "~buffer"
  std::string qualified_name;  // with enclosing namespaces and classes and any written
                               // qualifier, e.g. "ops::matmul_tiled", "vec3::dot"; anonymous
                               // namespaces add nothing
  cuda_symbol_kind kind = cuda_symbol_kind::global_kernel;
  byte_range full_range;       // from the template<...> or first specifier to the closing brace
                               // (or the ';' of a declaration)
  byte_range name_range;       // the name token
  std::string signature;       // first specifier (after template<…>) to the parameter list's ')',
                               // comments dropped, whitespace runs as one space, none just
                               // inside brackets or before ',', e.g.
                               // "__global__ void __launch_bounds__(256, 2) k(float* a, int n)"
  std::vector<std::string> template_parameters;  // e.g. {"typename T", "int TILE = 32"}
  std::string launch_bounds;   // arguments of __launch_bounds__, e.g. "256, 2"; empty if none
  bool extern_c = false;
  bool is_definition = true;   // false for a declaration ending in ';'
};

/// Every symbol in `source`, in source order. Never fails on malformed code (it finds what it
/// can); throws std::length_error only for a source of 4 GiB or more.
///
/// Conventions: `#if 0` groups are skipped, both branches of other conditionals are read; a
/// line-leading `MACRO(args)` with nothing after it on its line is taken for a macro statement
/// and left out of the next declaration; explicit instantiations are not listed.
std::vector<cuda_symbol> locate_cuda_symbols(std::string_view source);

/// The symbol whose name token contains `offset`, or whose name a call at `offset` names
/// (for hover on a kernel name at a launch site: `k<<<…>>>(…)`, `k<T><<<…>>>(…)`, `f(…)`);
/// nullptr when none. `symbols` must come from locate_cuda_symbols(source). A cursor just
/// after a name counts as on it; names in comments and strings never resolve. Among several
/// symbols of that name it prefers one whose qualified name matches a written `ns::`, a
/// kernel at a launch site, and a definition over a declaration.
const cuda_symbol* symbol_at(const std::vector<cuda_symbol>& symbols, std::string_view source,
                             std::size_t offset);

/// The __global__ kernel "at" `offset` as a command means it: the kernel definition whose full
/// range holds the offset (its body, its signature, its template head), else a kernel named at
/// the offset (a launch site `k<<<…>>>`); nullptr when the offset is in neither. Unlike
/// symbol_at, a cursor on `threadIdx` or a local variable inside a kernel gives that kernel.
const cuda_symbol* enclosing_kernel(const std::vector<cuda_symbol>& symbols, std::string_view source,
                                    std::size_t offset);

}  // namespace kblaster::engine
