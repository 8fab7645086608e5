// What the features read off an open document: CUDA or not, its file, its kernels' names.
#include "server/features/cuda_document.h"

#include "server/features/uri_path.h"

namespace kblaster::server {

bool is_cuda_document(const document_snapshot& doc) {
  const auto& id = doc.language_id();
  const auto& uri = doc.uri();
  const auto ends_with = [&](const std::string& tail) {
    return uri.size() >= tail.size() && uri.compare(uri.size() - tail.size(), tail.size(), tail) == 0;
  };
  return id == "cuda" || id == "cuda-cpp" || ends_with(".cu") || ends_with(".cuh");
}

std::string document_path(const document_snapshot& doc) {
  // An unsaved buffer has no path: compile it under a name of its own.
  if (const auto p = uri_to_path(doc.uri())) return *p;
  return "untitled.cu";
}

std::map<std::string, protocol::range> kernel_name_ranges(const document_snapshot& doc) {
  std::map<std::string, protocol::range> out;
  for (const auto& s : doc.symbols())
    if (s.kind == engine::cuda_symbol_kind::global_kernel && s.is_definition && !out.count(s.name))
      out.emplace(s.name, doc.to_range(s.name_range));
  return out;
}

}  // namespace kblaster::server
