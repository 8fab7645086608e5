// Descriptions of CUDA symbols for the editor.
#include "server/features/cuda_symbol_text.h"

namespace kblaster::server {

std::string kind_label(const engine::cuda_symbol& symbol) {
  switch (symbol.kind) {
    case engine::cuda_symbol_kind::global_kernel: return "__global__";
    case engine::cuda_symbol_kind::device_function: return "__device__";
    case engine::cuda_symbol_kind::host_launcher: return "host launcher";
  }
  return "";
}

std::string symbol_detail(const engine::cuda_symbol& symbol) {
  const std::string label = kind_label(symbol);
  if (symbol.signature.rfind(label, 0) == 0) return symbol.signature;
  return label + " " + symbol.signature;
}

std::string hover_markdown(const engine::cuda_symbol& symbol) {
  std::string title;
  switch (symbol.kind) {
    case engine::cuda_symbol_kind::global_kernel: title = "kernel"; break;
    case engine::cuda_symbol_kind::device_function: title = "device function"; break;
    case engine::cuda_symbol_kind::host_launcher: title = "host launcher"; break;
  }
  std::string md = "**" + title + "** `" + symbol.qualified_name + "`";
  if (!symbol.is_definition) md += " (declaration)";
  md += "\n\n```cuda\n";
  if (!symbol.template_parameters.empty() && symbol.signature.rfind("template", 0) != 0) {
    md += "template <";
    for (std::size_t i = 0; i < symbol.template_parameters.size(); ++i)
      md += (i ? ", " : "") + symbol.template_parameters[i];
    md += ">\n";
  }
  md += symbol.signature + "\n```\n";
  if (!symbol.template_parameters.empty()) {
    md += "\nTemplate parameters:\n";
    for (const auto& p : symbol.template_parameters) md += "- `" + p + "`\n";
  }
  if (!symbol.launch_bounds.empty()) md += "\nLaunch bounds: `" + symbol.launch_bounds + "`\n";
  if (symbol.extern_c) md += "\nC linkage (`extern \"C\"`)\n";
  return md;
}

}  // namespace kblaster::server
