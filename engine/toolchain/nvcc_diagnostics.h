// Structured diagnostics from nvcc's front end, the host compiler and ptxas, for the editor.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kblaster::engine {

/// Severity as the editor shows it.
enum class diagnostic_severity { error, warning, note };

/// "error", "warning", "note".
const char* to_string(diagnostic_severity s);

/// One diagnostic. Lines and columns are 1-based; 0 means unknown (ptxas reports no line).
struct diagnostic {
  std::string file;
  int line = 0;
  int column = 0;
  diagnostic_severity severity = diagnostic_severity::error;
  std::string code;     // "177-D", "20" … when printed
  std::string message;
  std::string tool;     // "nvcc", "ptxas", "host"
  std::string kernel;   // mangled entry for ptxas diagnostics, else empty
};

/// Parses nvcc's combined output. The column comes from the caret line under a quoted source
/// line; ptxas diagnostics carry the entry function they name.
std::vector<diagnostic> parse_nvcc_diagnostics(std::string_view output);

}  // namespace kblaster::engine
