// Readers of LSP params: what they accept, and the one error they give for what they do not.
#include "protocol/lsp_types.h"

#include <doctest/doctest.h>

using namespace kblaster::protocol;

namespace {

/// The message of the InvalidParams error `read` throws; fails the test otherwise.
template <class Read>
std::string invalid_params_message(Read read) {
  try {
    read();
  } catch (const rpc_error& e) {
    CHECK(e.code() == error_code::invalid_params);
    return e.what();
  }
  FAIL("no error");
  return "";
}

}  // namespace

TEST_CASE("client capabilities: the flags the server uses, absent ones false") {
  const auto c = lsp::client_capabilities::from(json::parse(R"({"capabilities":{"window":{"workDoneProgress":true},
      "textDocument":{"hover":{"contentFormat":["plaintext","markdown"]}}}})"));
  CHECK(c.work_done_progress);
  CHECK(c.markdown_hover);
  CHECK_FALSE(c.hierarchical_symbols);
  const auto none = lsp::client_capabilities::from(json::parse(R"({"capabilities":{"window":null}})"));
  CHECK_FALSE(none.work_done_progress);
}

// Found by fuzz_lsp_params (regressions/fuzz_lsp_params/capabilities-params-not-an-object): the
// reader throws for a part of the wrong type, which initialize then answers as InvalidParams.
TEST_CASE("client capabilities: a part that is not an object is named in an InvalidParams error") {
  CHECK(invalid_params_message([] { lsp::client_capabilities::from(json(1e36)); }) ==
        "invalid params: 'params' must be an object");
  CHECK(invalid_params_message([] { lsp::client_capabilities::from(json::parse(R"({"capabilities":5})")); }) ==
        "invalid params: 'capabilities' must be an object");
  CHECK(invalid_params_message([] {
          lsp::client_capabilities::from(json::parse(R"({"capabilities":{"window":[]}})"));
        }) == "invalid params: 'capabilities.window' must be an object");
}
