// The block size of a kernel's launch as written in the source, when it is a constant
// expression: what static occupancy can use instead of an assumed block, with no run.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kblaster::engine {

/// A launch's block, evaluated.
struct launch_block {
  int threads = 0;            ///< threads per block (the product of a dim3's dimensions)
  std::string configuration;  ///< the launch's `<<<…>>>` text as written, e.g. "(n + 255) / 256, 256"
};

/// The value of the integer constant expression `expr` in `source`'s terms: literals (256,
/// 0x100, 256u), + - * / % and parentheses, `dim3(a, b, c)` (the product), and names defined in
/// `source` as object-like macros (`#define BLOCK 256`), const/constexpr integers or dim3
/// variables initialised with constant expressions. nullopt for anything else (a runtime value).
std::optional<long long> constant_value(std::string_view source, std::string_view expr);

/// The block of the launches of `kernel` (its unqualified name) in `source` whose block argument
/// is a constant expression; nullopt when none is, or when those launches disagree.
std::optional<launch_block> constant_launch_block(std::string_view source, std::string_view kernel);

}  // namespace kblaster::engine
