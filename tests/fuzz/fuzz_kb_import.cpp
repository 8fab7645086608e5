// libFuzzer target: KB JSON import (kb/kb_json.cpp, `kblaster kb import FILE`), which merges a
// document someone else exported into the user's KB. A bad document must be a kb_error and
// leave the KB usable.
//
// Opening a KB creates its schema, which costs far more than an import, so one KB in a scratch
// folder (tmpfs when there is one) serves many inputs and is replaced every `reuse` inputs to
// keep it small; each import is its own transaction, so a failed one leaves no trace.
#include "fuzz_input.h"
#include "kb/knowledge_base.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

namespace {

namespace fs = std::filesystem;
using kblaster::kb::knowledge_base;

constexpr int reuse = 256;

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const fs::path d = base / ("kblaster-fuzz-kb-" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] { std::error_code ec; fs::remove_all(scratch_dir(), ec); });
    return d;
  }();
  return dir;
}

knowledge_base& fresh_kb() {
  const fs::path& dir = scratch_dir();
  static std::optional<knowledge_base> kb;
  static int uses = 0;
  if (!kb || ++uses % reuse == 0) {
    kb.reset();
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(dir / (std::string("kb.sqlite") + suffix), ec);
    kblaster::kb::open_options options;
    options.seed = false;
    kb.emplace(knowledge_base::open(dir / "kb.sqlite", options));
    kb->db().exec("PRAGMA synchronous = OFF");  // a scratch KB: durability buys nothing here
  }
  return *kb;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto doc = kblaster::fuzz::as_json(kblaster::fuzz::as_text(data, size));
  if (!doc) return 0;
  auto& kb = fresh_kb();
  try {
    kb.import_json(*doc, {"import", "fuzz", {}});
  } catch (const kblaster::kb::kb_error&) {
  }
  (void)kb.summary();  // still usable
  return 0;
}
