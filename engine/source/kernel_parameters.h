// A kernel's parameter list, read from its signature text (as the locator gives it, or as a
// demangled name prints it), and the task dtype a parameter's element type stands for.
#pragma once

#include <string>
#include <vector>

namespace kblaster::engine {

struct kernel_parameter {
  std::string type, name;  // "const float*", "in"; a nameless parameter has an empty name
  bool pointer = false, is_const = false;  // is_const: the pointee is const
};

/// The parameters of the last top-level parenthesised group of `signature` (so that
/// __launch_bounds__(…) is skipped), in order; defaults are dropped, "(void)" is empty.
std::vector<kernel_parameter> parameters_of(const std::string& signature);

/// `type` without cv-qualifiers, restrict, "unsigned" or '*': "const float* __restrict__" -> "float".
std::string base_type(const std::string& type);

/// The task dtype of a type's element ("float32", "int32", …), or "" when it has none.
std::string dtype_of(const std::string& type);

/// Whether `p` is an integer scalar (int, long, size_t, unsigned, …; an unnamed type counts).
bool is_integer_scalar(const kernel_parameter& p);

}  // namespace kblaster::engine
