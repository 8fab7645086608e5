// How CUDA symbols are described to the user (symbol details, hover text). Shared by the
// documentSymbol and hover features so both say the same thing.
#pragma once

#include "engine/source/kernel_locator.h"

#include <string>

namespace kblaster::server {

/// A character of a C++ identifier (ASCII): how far a hover's or a diagnostic's word extends.
inline bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// "__global__", "__device__" or "host launcher".
std::string kind_label(const engine::cuda_symbol& symbol);

/// One line for outlines: the signature, led by the kind label unless it already starts with it.
std::string symbol_detail(const engine::cuda_symbol& symbol);

/// Markdown for a hover on `symbol`.
std::string hover_markdown(const engine::cuda_symbol& symbol);

}  // namespace kblaster::server
