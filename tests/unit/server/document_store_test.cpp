// Document edits: full and incremental, UTF-16 positions, snapshots.
#include "server/document_store.h"

#include <doctest/doctest.h>

using namespace kblaster::server;
using kblaster::protocol::lsp::content_change;

TEST_CASE("incremental edits use UTF-16 positions, also after astral-plane characters") {
  std::string text = "// \xF0\x9F\x9A\x80 fast\n__global__ void k() {}\n";  // 🚀
  // Replace "fast" (UTF-16 columns 6..10: "// " = 3, rocket = 2, space = 1).
  apply_change(text, content_change{kblaster::protocol::range{{0, 6}, {0, 10}}, "faster"});
  CHECK(text == "// \xF0\x9F\x9A\x80 faster\n__global__ void k() {}\n");
  apply_change(text, content_change{kblaster::protocol::range{{1, 16}, {1, 17}}, "kernel"});
  CHECK(text == "// \xF0\x9F\x9A\x80 faster\n__global__ void kernel() {}\n");
  apply_change(text, content_change{std::nullopt, "all new"});
  CHECK(text == "all new");
}

TEST_CASE("inserting and deleting across lines") {
  std::string text = "a\nb\nc\n";
  apply_change(text, content_change{kblaster::protocol::range{{0, 1}, {2, 0}}, ""});
  CHECK(text == "ac\n");
  apply_change(text, content_change{kblaster::protocol::range{{0, 1}, {0, 1}}, "\nX\n"});
  CHECK(text == "a\nX\nc\n");
}

TEST_CASE("snapshots stay valid while the document changes") {
  document_store store;
  auto v1 = store.open("file:///a.cu", "cuda", 1, "__global__ void a() {}\n");
  auto v2 = store.change("file:///a.cu", 2, {content_change{std::nullopt, "__global__ void b() {}\n"}});
  CHECK(v1->text() == "__global__ void a() {}\n");
  CHECK(v2->version() == 2);
  CHECK(store.get("file:///a.cu") == v2);
  store.close("file:///a.cu");
  CHECK(store.get("file:///a.cu") == nullptr);
  CHECK_THROWS_AS(store.change("file:///a.cu", 3, {}), kblaster::protocol::rpc_error);
}

TEST_CASE("watchers are cancelled with ContentModified by the next edit only") {
  document_store store;
  store.open("file:///a.cu", "cuda", 1, "x");
  auto watching = std::make_shared<cancel_state>();
  auto finished = std::make_shared<cancel_state>();
  store.watch("file:///a.cu", watching);
  store.watch("file:///a.cu", finished);
  store.unwatch("file:///a.cu", finished);
  store.change("file:///a.cu", 2, {content_change{std::nullopt, "y"}});
  CHECK(watching->reason() == kblaster::protocol::error_code::content_modified);
  CHECK_FALSE(finished->cancelled());
}
