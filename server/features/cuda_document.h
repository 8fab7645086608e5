// What the features read off an open document before any analysis: whether it is CUDA, the file
// it names, and where its kernels' names stand (for diagnostics, lenses and commands alike).
#pragma once

#include "server/document_store.h"

#include <map>
#include <string>

namespace kblaster::server {

/// True for documents the analysis applies to (.cu, .cuh, languageId cuda or cuda-cpp).
bool is_cuda_document(const document_snapshot& doc);
/// The file the document names (its URI's path), or "untitled.cu" for an unsaved buffer.
std::string document_path(const document_snapshot& doc);
/// Name ranges of the document's __global__ definitions, by short name.
std::map<std::string, protocol::range> kernel_name_ranges(const document_snapshot& doc);

}  // namespace kblaster::server
