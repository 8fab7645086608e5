// libFuzzer target: the readers of LSP params, the typed binder's `Params::from` (protocol/
// lsp_types.h) and the server's other readers of client JSON: command arguments, editor
// settings, file URIs. Every reader sees the same value; a bad field may only be an
// rpc_error(invalid_params) naming it.
#include "fuzz_input.h"
#include "protocol/lsp_types.h"
#include "server/features/commands.h"
#include "server/features/editor_settings.h"
#include "server/features/uri_path.h"

#include <cstdlib>

namespace {

namespace lsp = kblaster::protocol::lsp;
using kblaster::protocol::error_code;
using kblaster::protocol::json;
using kblaster::protocol::rpc_error;

template <class Read>
void expect_params_error_only(Read read) {
  try {
    read();
  } catch (const rpc_error& e) {
    if (e.code() != error_code::invalid_params) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto params = kblaster::fuzz::as_json(kblaster::fuzz::as_text(data, size));
  if (!params) return 0;
  expect_params_error_only([&] { (void)lsp::text_document_position_params::from(*params); });
  expect_params_error_only([&] { (void)lsp::did_open_params::from(*params); });
  expect_params_error_only([&] { (void)lsp::did_change_params::from(*params); });
  expect_params_error_only([&] { (void)lsp::document_uri_params::from(*params); });
  expect_params_error_only([&] { (void)lsp::code_action_params::from(*params); });
  // A capability under a part that is not an object names that part (InvalidParams): initialize
  // answers so (found by this target: the check had read it as never throwing).
  expect_params_error_only([&] { (void)lsp::client_capabilities::from(*params); });
  std::vector<std::string> problems;
  (void)kblaster::server::read_editor_settings(*params, &problems);
  const json arguments = params->is_object() ? params->value("arguments", json()) : *params;
  expect_params_error_only([&] { (void)kblaster::server::command_args::from("kblaster.optimize", arguments, true, true); });
  if (params->is_object())
    if (const auto uri = params->find("uri"); uri != params->end() && uri->is_string())
      if (const auto path = kblaster::server::uri_to_path(uri->get<std::string>()))
        (void)kblaster::server::path_to_uri(*path);
  return 0;
}
