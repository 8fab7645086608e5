// Carrying a rewritten launch configuration from the task's launcher to the program's call
// sites. The launcher names the kernel's parameters as locals (`const int rows = 2048;`), so a
// configuration the rewrite computes from them, `dim3((rows + 7) / 8, 1, 1), dim3(256, 1, 1), 0,
// kb_stream`, is carried to a call site `row_sum<<<rows, 256>>>(x, out, rows, cols)` by putting
// each argument in place of its parameter and the site's stream in place of kb_stream:
// `row_sum<<<dim3(((rows) + 7) / 8, 1, 1), dim3(256, 1, 1)>>>(x, out, rows, cols)`. An element
// the rewrite left as generated keeps the site's own expression. What cannot be carried in
// general is refused with the reason, never guessed: a name only the launcher knows, a constant
// where the site computes the value (it would hold for the captured shape only), an argument
// with side effects that the configuration would evaluate again.
#pragma once

#include <string>
#include <vector>

namespace kblaster::engine {

struct carried_launch {
  std::string edited;     // the program with every call site's configuration replaced
  int sites = 0;          // call sites changed
  std::string refusal;    // non-empty: why the launch could not be carried (`edited` is empty)
};

/// `program`: the program with the rewritten kernel in place (up to `code_end`, the code the
/// rewrite wrote and the call sites may use); `generated` and `rewritten`: the launcher's
/// configuration as generated and as rewritten (between <<< and >>>); `parameters`: the
/// kernel's parameter names in order.
carried_launch carry_launch(const std::string& program, std::size_t code_end, const std::string& kernel_name,
                            const std::vector<std::string>& parameters, const std::string& generated,
                            const std::string& rewritten);

/// The top-level comma-separated parts of `text` (brackets (), [] and {} nest), trimmed.
std::vector<std::string> split_top_level(const std::string& text);

}  // namespace kblaster::engine
