// kblaster/kernelAt {textDocument, position}: the __global__ kernel a command "at the cursor"
// acts on, so that a client's "Optimize Kernel at Cursor" sends the enclosing kernel's name
// rather than the word under the cursor (`threadIdx`, `x`, `__global__`):
//   {"kernel": "scale_half", "qualifiedName": "ops::scale_half", "range": <its name>}
// or, with the cursor in no kernel, {"kernel": null, "message": "<one sentence for the user>"}.
#include "server/features/features.h"
#include "server/lsp_server.h"

namespace kblaster::server {

using protocol::json;
namespace lsp = protocol::lsp;

namespace {

// Said by every client alike when the cursor is in no kernel.
constexpr const char* no_kernel_message =
    "The cursor is not inside a __global__ kernel: place it in a kernel's definition (or on a launch of one) "
    "and run the command again.";

}  // namespace

void register_kernel_at(feature_registry& registry, lsp_server&) {
  registry.on_typed_request<lsp::text_document_position_params>("kblaster/kernelAt", execution::concurrent,
                      [](const lsp::text_document_position_params& p, request_context& ctx) -> json {
    const auto doc = ctx.watch_document(p.uri);
    const engine::cuda_symbol* kernel =
        engine::enclosing_kernel(doc->symbols(), doc->text(), doc->lines().offset_of(p.pos));
    if (!kernel) return {{"kernel", nullptr}, {"message", no_kernel_message}};
    return {{"kernel", kernel->name},
            {"qualifiedName", kernel->qualified_name},
            {"range", doc->to_range({kernel->name_range.begin, kernel->name_range.end})}};
  });
}

}  // namespace kblaster::server
